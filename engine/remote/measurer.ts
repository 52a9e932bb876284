// The remote measurer (measure/types.ts Measurer): candidates are built here, with the
// target's (cross) compiler, exactly as for local measurement (measure/builder.ts); each
// library's bytes travel to a device of the pool, which times it and sends its outputs
// back; the outputs are checked here against the reference evaluator (measure/verify.ts),
// with the same inputs (the worker fills them with the same seeded random data) and the
// same tolerance as a local candidate. Error classes are the local measurer's, plus
// device_error: a candidate two devices failed on (pool.ts).

import { promises as fs } from 'node:fs';
import { availableParallelism } from 'node:os';
import type { Task } from '../graph/extract';
import { numElements } from '../ir/tensor';
import { Builder, type BuiltCandidate } from '../measure/builder';
import { KeptLibraries } from '../measure/kept-libraries';
import { coldInputs, DEFAULT_MEASURE_OPTIONS, type MeasuredTask } from '../measure/measurer';
import { compareOutput, ReferenceCache, toleranceFor, type Tolerance } from '../measure/verify';
import type { Step } from '../schedule/steps';
import type { MeasureOutcome } from '../records/outcome';
import type { MeasureOptions, Measurer } from '../measure/types';
import type { Target } from '../target';
import { ownedTempDir } from '../temp-dirs';
import type { RemoteDevice } from './device';
import type { RemotePool } from './pool';

/** Slack on top of the candidate's timeout for the transfer and an emulator's start. */
const TRANSFER_SLACK_MS = 30_000;

export interface RemoteMeasurerOptions extends Partial<MeasureOptions> {
  seed?: number;
  tolerance?: Tolerance;
  buildTimeoutMs?: number;
}

type Outcome = Pick<MeasureOutcome, 'costs_ms' | 'error' | 'message'>;

export class RemoteMeasurer implements Measurer {
  readonly options: Readonly<MeasureOptions>;
  private readonly seed: number;
  /** The tolerance asked for; else each task's own (verify.ts toleranceFor), as the local measurer. */
  private readonly tolerance: Tolerance | undefined;
  private readonly workDir = ownedTempDir('tt-measure');
  private readonly builder: Builder;
  private readonly references: ReferenceCache;
  /** Batches being timed on the devices, and who waits for none to be (whenIdle). */
  private timing = 0;
  private readonly idleWaiters: (() => void)[] = [];
  /** Each task's fastest candidates' libraries, kept for the confirmation pass; the rest are removed once timed. */
  private readonly keptLibraries = new KeptLibraries();

  /** `pool` is opened (RemotePool.open) by the caller and closed by close(). */
  constructor(target: Target, private readonly pool: RemotePool, opts: RemoteMeasurerOptions = {}) {
    const { seed, tolerance, buildTimeoutMs, ...measure } = opts;
    this.options = { ...DEFAULT_MEASURE_OPTIONS, buildJobs: availableParallelism(), ...measure };
    this.seed = seed ?? 0;
    this.references = new ReferenceCache(this.seed);
    this.tolerance = tolerance;
    this.builder = new Builder(target, { workDir: this.workDir, jobs: this.options.buildJobs, timeoutMs: buildTimeoutMs });
  }

  async measure(task: Task | MeasuredTask, candidates: readonly Step[][]): Promise<MeasureOutcome[]> {
    return this.run(task, await this.builder.build(task.dag, candidates, new Set(task.constInputs ?? [])));
  }

  /** Compiles hand-written translation units (exporting CANDIDATE_SYMBOL) and measures them like candidates. */
  async measureSources(task: MeasuredTask, sources: readonly { steps: Step[]; code: string }[]): Promise<MeasureOutcome[]> {
    return this.run(task, await this.builder.buildSources(sources));
  }

  /** Runs built candidates on the pool's devices, verifying each here. */
  async run(task: MeasuredTask, built: readonly BuiltCandidate[]): Promise<MeasureOutcome[]> {
    const runnable = built.flatMap((b, i) => ('lib' in b ? [{ b, i }] : []));
    const libs = new Map<string, Buffer>();
    for (const { b } of runnable) if (!libs.has(b.lib)) libs.set(b.lib, await fs.readFile(b.lib));
    const timings = new Map<number, number>();
    this.timing++;
    let results;
    try {
      results = await this.pool.run(runnable, async (device, { b, i }) => {
        const started = performance.now();
        const outcome = await this.runOne(device, task, b, libs.get(b.lib)!);
        timings.set(i, performance.now() - started);
        return outcome;
      });
    } finally {
      if (--this.timing === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    }
    const outcomes: MeasureOutcome[] = built.map((b) => ('error' in b
      ? { steps: b.steps, costs_ms: [], error: b.error, message: b.message, build_ms: b.build_ms, run_ms: 0 }
      : { steps: b.steps, costs_ms: [], error: 'device_error', message: 'not run', build_ms: b.build_ms, run_ms: 0 }));
    runnable.forEach(({ i }, k) => {
      const r = results[k];
      const o: Outcome = 'ok' in r ? r.ok : { costs_ms: [], error: 'device_error', message: r.lost };
      // Only what the device's outcome says: a verified candidate carries no message.
      outcomes[i] = { steps: outcomes[i].steps, build_ms: outcomes[i].build_ms, ...o, run_ms: timings.get(i) ?? 0 };
    });
    for (const lib of this.keptLibraries.afterBatch(task.dag, built, outcomes)) await fs.rm(lib, { force: true });
    return outcomes;
  }

  /** One candidate on one device. A DeviceError (no reply) propagates to the pool. */
  private async runOne(device: RemoteDevice, task: MeasuredTask, b: Extract<BuiltCandidate, { lib: string }>, lib: Buffer): Promise<Outcome> {
    const dag = task.dag;
    const o = this.options;
    // A device's worker flushes by sweeping its whole cache (it cannot evict single buffers
    // portably): a task with weights runs with everything cold, one without runs warm.
    const fields: (string | [string, Buffer])[] = [
      ['lib', lib], `symbol ${b.symbol}`,
      ...dag.inputs.map((t) => `in ${numElements(t.shape)}`),
      ...dag.outputs.map((t) => `out ${numElements(t.shape)}`),
      `number ${o.number}`, `repeat ${o.repeat}`, `min_repeat_ms ${o.minRepeatMs}`, `flush ${o.flush && coldInputs(task).size > 0 ? 1 : 0}`,
      `seed ${this.seed}`, `threads ${o.threads}`, `timeout_ms ${o.timeoutMs}`,
    ];
    const { reply, payloads } = await device.request('measure', fields, o.timeoutMs + TRANSFER_SLACK_MS);
    if (!reply.ok) {
      const error = reply.error === 'timeout' || reply.error === 'compile_error' ? reply.error : 'runtime_error';
      return { costs_ms: [], error, message: `${reply.message ?? reply.error} (on ${device.label})` };
    }
    const ref = this.references.get(dag, b.layouts);
    for (let k = 0; k < dag.outputs.length; k++) {
      const p = payloads[k];
      if (!p || p.length !== ref.outputs[k].length * 4) {
        return { costs_ms: [], error: 'wrong_answer', message: `${dag.outputs[k].name}: the device sent ${p?.length ?? 0} bytes, expected ${ref.outputs[k].length * 4}` };
      }
      const got = new Float32Array(p.buffer.slice(p.byteOffset, p.byteOffset + p.length));
      const cmp = compareOutput(got, ref.outputs[k], this.tolerance ?? toleranceFor(dag));
      if (!cmp.ok) return { costs_ms: [], error: 'wrong_answer', message: `${dag.outputs[k].name}: ${cmp.message}` };
    }
    return { costs_ms: reply.runs_ms ?? [], error: null };
  }

  /** Resolves when no device is timing a candidate (Measurer.whenIdle): the search's work
   *  beside a measurement waits, as for the local measurer (a device may be this machine:
   *  qemu-user, a loopback runner). */
  whenIdle(): Promise<void> {
    return this.timing === 0 ? Promise.resolve() : new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  async close(): Promise<void> {
    await this.pool.close();
    await fs.rm(this.workDir, { recursive: true, force: true });
  }
}
