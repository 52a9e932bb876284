// The local measurer (measure/types.ts Measurer): build a batch of candidates in parallel,
// run them one at a time in the native worker (MeasureWorker), check each output against
// the task's reference before its time counts, and classify what went wrong:
//
//   invalid_schedule  steps fail the schema, replay or lowering          (builder)
//   compile_error     the C compiler fails or runs too long               (builder)
//   runtime_error     the kernel crashes, fails to load or returns != 0   (worker)
//   timeout           the run takes longer than timeoutMs, or than a run of
//                     SLOW_CUTOFF_FACTOR x the task's fastest so far; worker killed (worker)
//   wrong_answer      the output differs from the reference evaluator     (verify)
//
// A bad candidate never throws: it is an outcome with its class and the first lines of
// what went wrong. Only a broken setup (no C compiler) throws.

import { promises as fs } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import type { Task } from '../graph/extract';
import { UserError } from '../errors';
import { numElements } from '../ir/tensor';
import { readFloat32File, writeFloat32File } from '../runtime/rawfile';
import type { Step } from '../schedule/steps';
import type { MeasureOutcome } from '../records/outcome';
import type { MeasureOptions, Measurer } from './types';
import { isGpu, type Target } from '../target';
import { ownedTempDir } from '../temp-dirs';
import { meanCost, measuredCost } from '../records/best';
import { Builder, type BuiltCandidate } from './builder';
import { HostRate, keepRetake, MAX_RETAKES, NEW_BEST_SHARE, offSpeed, PROBE_MS, type HostMoves } from './host-rate';
import { KeptLibraries } from './kept-libraries';
import { compareOutput, inputWords, measureInput, ReferenceCache, toleranceFor, type Tolerance } from './verify';
import { MeasureWorker, type MeasureBuffer, type WorkerOptions } from './worker';

export const DEFAULT_MEASURE_OPTIONS: Readonly<MeasureOptions> = {
  number: 1,
  repeat: 3,
  minRepeatMs: 10,
  timeoutMs: 10_000,
  flush: false,
  buildJobs: availableParallelism(),
  threads: 1,
};

/**
 * Once a task has a verified time, a candidate whose run in the worker (a warm-up and
 * `repeat` timed runs) lasts as long as that of a schedule this many times slower than the
 * task's fastest so far is cut off as a timeout, though never before SLOW_CUTOFF_FLOOR_MS
 * (and never after timeoutMs). Such a candidate cannot win, and the search learns as much
 * from its error. Without the cut, random samples of a Winograd task's sketches that run
 * 1000x slower than its best each held the worker for the whole 10 s timeout: a
 * resnet-18 tune limited to 25 minutes spent them on its 12 Winograd tasks at about 3 minutes
 * per 64 trials, and measured only 4 of those tasks.
 * CPU targets only: a GPU candidate's run includes building its program for the device
 * (PoCL compiles OpenCL C when the worker loads it), seconds however fast the kernel is.
 */
export const SLOW_CUTOFF_FACTOR = 100;
export const SLOW_CUTOFF_FLOOR_MS = 2_000;

export interface LocalMeasurerOptions extends Partial<MeasureOptions> {
  /** Seed of the random inputs (default 0); the reference is computed for it. */
  seed?: number;
  tolerance?: Tolerance;
  /** Where libraries and output files go (default: a fresh tt-measure temp directory, removed by close()). */
  workDir?: string;
  /** Per compiler process (default 60 s). */
  buildTimeoutMs?: number;
  /** Passed to the worker (binary, start timeout); threads come from `threads`. */
  worker?: Omit<WorkerOptions, 'threads'>;
  /** Judges each CPU candidate's probe (default: a fresh HostRate; tests script one). */
  hostRate?: HostRate;
  /** What `flush` evicts: the task's weights (default, coldInputs), or every buffer but the
   *  first, as TVM's enable_cpu_cache_flush does (kept for bench/flush-vs-network.ts). */
  evict?: 'weights' | 'all-but-first';
}

/** The task fields the measurer needs. */
export type MeasuredTask = Pick<Task, 'dag' | 'constInputs'>;

/**
 * The inputs (by position in the DAG's inputs) that a flushed run starts with out of the
 * caches: the task's constants. In a network each layer reads its weights cold, since the
 * other layers' weights pass through the caches between two of its calls, while its
 * activations were written by the kernels just before it. A task without weights
 * (attention's q·kᵀ and probs·V, softmax, pooling) therefore runs warm. Flushing every
 * buffer but the first (TVM's rule) timed BERT-base's q·kᵀ default at 0.316 ms alone
 * against 0.244 in the network, and the tuner picked a schedule that runs 0.275 there;
 * warm, the two timed 0.234 and 0.237 (`bench/flush-vs-network.ts --network bert-base`,
 * AVX-512 EPYC, 1 thread).
 */
export function coldInputs(task: MeasuredTask): Set<number> {
  const constants = new Set(task.constInputs ?? []);
  return new Set(task.dag.inputs.flatMap((t, i) => (constants.has(t.name) ? [i] : [])));
}

export class LocalMeasurer implements Measurer {
  readonly options: Readonly<MeasureOptions>;
  private readonly seed: number;
  /** The tolerance asked for; else each task's own (verify.ts toleranceFor). */
  private readonly tolerance: Tolerance | undefined;
  private readonly workDir: string;
  private readonly ownsWorkDir: boolean;
  private readonly builder: Builder;
  /** Batches whose candidates are being run and timed, and who waits for none to be (whenIdle). */
  private timing = 0;
  private readonly idleWaiters: (() => void)[] = [];
  private readonly worker: MeasureWorker;
  private readonly references: ReferenceCache;
  private outputSeq = 0;
  /** Each task's fastest verified mean time so far (ms), for the slow-candidate cut-off (CPU targets). */
  private readonly fastest = new WeakMap<MeasuredTask['dag'], number>();
  /** Workload key -> the files of its int32/bool inputs (integerInputFiles). */
  private readonly intInputs = new Map<string, (string | undefined)[]>();
  private readonly cutSlow: boolean;
  /** Each task's fastest candidates' libraries, kept for the confirmation pass; the rest are removed once timed. */
  private readonly keptLibraries = new KeptLibraries();
  /** The machine's usual speed, from the worker's probe around each CPU candidate (host-rate.ts); undefined for device targets. */
  private readonly hostRate: HostRate | undefined;
  private readonly evictAll: boolean;
  private readonly moves = { retaken: 0, keptOffSpeed: 0, newBests: 0, newBestsNotHeld: 0 };

  constructor(target: Target, opts: LocalMeasurerOptions = {}) {
    const { seed, tolerance, workDir, buildTimeoutMs, worker, hostRate, evict, ...measure } = opts;
    this.evictAll = evict === 'all-but-first';
    this.options = { ...DEFAULT_MEASURE_OPTIONS, ...measure };
    this.seed = seed ?? 0;
    this.references = new ReferenceCache(this.seed);
    this.tolerance = tolerance;
    this.ownsWorkDir = workDir === undefined;
    this.workDir = workDir ?? ownedTempDir('tt-measure'); // a killed run's is swept by the next one
    this.builder = new Builder(target, { workDir: this.workDir, jobs: this.options.buildJobs, timeoutMs: buildTimeoutMs });
    this.worker = new MeasureWorker({ ...worker, threads: this.options.threads });
    this.cutSlow = !isGpu(target);
    this.hostRate = isGpu(target) ? undefined : hostRate ?? new HostRate();
  }

  /**
   * Timings taken again (host-rate.ts): those taken while the machine ran off its usual
   * speed (retaken), of which kept an off-speed time after MAX_RETAKES retakes
   * (keptOffSpeed); new bests timed twice (newBests), of which the second timing was more
   * than 1 / NEW_BEST_SHARE slower (newBestsNotHeld).
   */
  get hostMoves(): HostMoves {
    return { ...this.moves };
  }

  /** Worker restarts so far (one per crash or timeout). */
  get workerRestarts(): number {
    return this.worker.restarts;
  }

  async measure(task: MeasuredTask, candidates: readonly Step[][]): Promise<MeasureOutcome[]> {
    return this.run(task, await this.builder.build(task.dag, candidates, new Set(task.constInputs ?? [])));
  }

  /** Compiles hand-written translation units (exporting CANDIDATE_SYMBOL) and measures them like candidates. */
  async measureSources(task: MeasuredTask, sources: readonly { steps: Step[]; code: string }[]): Promise<MeasureOutcome[]> {
    return this.run(task, await this.builder.buildSources(sources));
  }

  /**
   * Runs built candidates one at a time, verifying each. Then two kinds of timing are taken
   * again (host-rate.ts): one taken while the machine ran off its usual speed (up to
   * MAX_RETAKES times), and one more than NEW_BEST_SHARE faster than the task's fastest
   * before this batch (once). Which timing a candidate keeps: keepRetake.
   */
  async run(task: MeasuredTask, built: readonly BuiltCandidate[]): Promise<MeasureOutcome[]> {
    const outcomes: MeasureOutcome[] = [];
    const bestBefore = this.hostRate ? this.fastest.get(task.dag) : undefined;
    this.timing++;
    try {
      const off: number[] = [];
      for (const b of built) {
        if ('error' in b) {
          outcomes.push({ steps: b.steps, costs_ms: [], error: b.error, message: b.message, build_ms: b.build_ms, run_ms: 0 });
          off.push(1);
          continue;
        }
        const started = performance.now();
        const { off: o, ...outcome } = await this.runOne(task, b);
        outcomes.push({ ...outcome, steps: b.steps, build_ms: b.build_ms, run_ms: performance.now() - started });
        off.push(o);
      }
      await this.retake(task, built, outcomes, off, bestBefore);
      this.moves.keptOffSpeed += off.filter(offSpeed).length;
      // The fastest so far, from the timings kept: a timing the retakes replaced does not set the slow-candidate cut-off.
      const kept = outcomes.flatMap((o, i) => {
        const cost = measuredCost(o);
        return cost !== null && !offSpeed(off[i]) ? [cost] : [];
      });
      const fastest = Math.min(bestBefore ?? Infinity, ...kept);
      if (this.cutSlow && Number.isFinite(fastest)) this.fastest.set(task.dag, fastest);
    } finally {
      if (--this.timing === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    }
    for (const lib of this.keptLibraries.afterBatch(task.dag, built, outcomes)) await fs.rm(lib, { force: true });
    return outcomes;
  }

  /**
   * Times again, after the batch, the candidates timed off speed (`off`, up to MAX_RETAKES
   * times) and those timed under NEW_BEST_SHARE of `bestBefore` (once), replacing an
   * outcome where keepRetake says so.
   */
  private async retake(task: MeasuredTask, built: readonly BuiltCandidate[], outcomes: MeasureOutcome[], off: number[], bestBefore: number | undefined): Promise<void> {
    const newBests = new Set(outcomes.flatMap((o, i) =>
      (bestBefore !== undefined && o.error === null && meanCost(o) < NEW_BEST_SHARE * bestBefore ? [i] : [])));
    for (let round = 0; round < MAX_RETAKES; round++) {
      const again = outcomes.flatMap((_, i) => (offSpeed(off[i]) || (round === 0 && newBests.has(i)) ? [i] : []));
      if (again.length === 0) return;
      for (const i of again) {
        const b = built[i] as Extract<BuiltCandidate, { lib: string }>;
        const prev = outcomes[i];
        const started = performance.now();
        const { off: o, ...outcome } = await this.runOne(task, b);
        const runMs = prev.run_ms + performance.now() - started;
        if (offSpeed(off[i])) this.moves.retaken++;
        if (round === 0 && newBests.has(i)) {
          this.moves.newBests++;
          if (outcome.error === null && meanCost(outcome) > meanCost(prev) / NEW_BEST_SHARE) this.moves.newBestsNotHeld++;
        }
        const keep = outcome.error === null ? keepRetake({ mean: meanCost(prev), off: off[i] }, { mean: meanCost(outcome), off: o }) : 'first';
        if (keep === 'again') {
          outcomes[i] = { ...outcome, steps: b.steps, build_ms: b.build_ms, run_ms: runMs };
          off[i] = o;
        } else {
          outcomes[i] = { ...prev, run_ms: runMs };
        }
      }
    }
  }

  /** For each input of `dag`: the file holding its int32/bool data (measureInput), written once per workload; undefined for a float input (the worker draws it). */
  private async integerInputFiles(dag: MeasuredTask['dag']): Promise<(string | undefined)[]> {
    if (dag.inputs.every((t) => t.dtype === 'float32')) return dag.inputs.map(() => undefined);
    let files = this.intInputs.get(dag.workloadKey);
    if (!files) {
      files = await Promise.all(dag.inputs.map(async (t, i) => {
        if (t.dtype === 'float32') return undefined;
        const file = path.join(this.workDir, `int-input-${this.intInputs.size}-${i}.bin`);
        await writeFloat32File(file, inputWords(measureInput(t, this.seed, i)));
        return file;
      }));
      this.intInputs.set(dag.workloadKey, files);
    }
    return files;
  }

  /** Resolves when no candidate is being timed (Measurer.whenIdle): builds may share the CPU, timed runs may not. */
  whenIdle(): Promise<void> {
    return this.timing === 0 ? Promise.resolve() : new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  async close(): Promise<void> {
    await this.worker.close();
    if (this.ownsWorkDir) await fs.rm(this.workDir, { recursive: true, force: true });
  }

  /**
   * Times and verifies one built candidate. `off`: how far the machine's speed around its
   * runs strayed from the usual (host-rate.ts; 1 when not probed or nothing to judge by).
   */
  private async runOne(task: MeasuredTask, b: Extract<BuiltCandidate, { lib: string }>): Promise<Pick<MeasureOutcome, 'costs_ms' | 'error' | 'message'> & { off: number }> {
    const dag = task.dag;
    const outFiles = dag.outputs.map(() => path.join(this.workDir, `out-${++this.outputSeq}.bin`));
    const o = this.options;
    const cold = o.flush && !this.evictAll ? coldInputs(task) : new Set<number>();
    const buffers: MeasureBuffer[] = [
      ...(await this.integerInputFiles(dag)).map((file, i): MeasureBuffer => ({
        kind: 'in', size: numElements(dag.inputs[i].shape), ...(file ? { file } : {}), ...(cold.has(i) ? { cold: true } : {}),
      })),
      ...dag.outputs.map((t, i): MeasureBuffer => ({ kind: 'out', size: numElements(t.shape), file: outFiles[i] })),
    ];
    const flush = o.flush && (this.evictAll || cold.size > 0);
    const fastest = this.cutSlow ? this.fastest.get(dag) : undefined;
    const cutoff = fastest === undefined ? o.timeoutMs
      : Math.min(o.timeoutMs, Math.max(SLOW_CUTOFF_FLOOR_MS, Math.ceil(SLOW_CUTOFF_FACTOR * fastest * (1 + o.repeat * o.number))));
    try {
      let result;
      try {
        result = await this.worker.run({
          lib: b.lib, symbol: b.symbol, buffers, timeoutMs: cutoff, number: o.number, repeat: o.repeat,
          minRepeatMs: o.minRepeatMs, flush, seed: this.seed, ...(this.hostRate ? { probeMs: PROBE_MS } : {}),
        });
      } catch (e) {
        if (e instanceof UserError) throw e; // the setup, not the candidate (e.g. tt_measure cannot be built)
        // The worker could not be driven (a protocol failure): the candidate cannot count.
        return { costs_ms: [], error: 'runtime_error', message: (e as Error).message, off: 1 };
      }
      if ('error' in result) {
        const cut = result.error === 'timeout' && cutoff < o.timeoutMs
          ? ` (cut off at ${SLOW_CUTOFF_FACTOR}x the run of the task's fastest schedule so far, ${fastest!.toFixed(3)} ms, instead of the ${o.timeoutMs} ms timeout)`
          : '';
        return { costs_ms: [], error: result.error, message: `${result.message ?? ''}${cut}`, off: 1 };
      }
      const ref = this.references.get(task.dag, b.layouts);
      for (let i = 0; i < outFiles.length; i++) {
        const got = await readFloat32File(outFiles[i]);
        const cmp = compareOutput(got, ref.outputs[i], this.tolerance ?? toleranceFor(dag));
        if (!cmp.ok) return { costs_ms: [], error: 'wrong_answer', message: `${dag.outputs[i].name}: ${cmp.message}`, off: 1 };
      }
      const off = this.hostRate && result.host_rate ? this.hostRate.observe(result.host_rate) : 1;
      const mean = meanCost(result);
      // An off-speed time does not move the slow-candidate cut-off (a fast phase would tighten it for the whole task).
      if (result.costs_ms.length > 0 && !offSpeed(off) && !(mean >= (fastest ?? Infinity))) this.fastest.set(dag, mean);
      return { costs_ms: result.costs_ms, error: null, off };
    } finally {
      await Promise.all(outFiles.map((f) => fs.rm(f, { force: true })));
    }
  }
}
