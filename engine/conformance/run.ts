// Runs the ONNX node test cases through the real pipeline: each case imported with loadOnnx
// (as `tensortune compile` reads a model file, its symbolic dimensions fixed to the case's
// input shapes), then cases that import are compiled in batches: the graphs of up to
// `batchSize` cases side by side in one graph (their tensors renamed `c<k>/...`), through the
// steps compileNetwork takes without records (pipeline.ts), into one model.so that one
// tt_bench process runs once, with the cases' inputs as --input files and the outputs saved.
// A batch that fails to compile, crashes or runs past a time limit is split in two and each
// half run again, down to the one case that fails. `parallel` batches are in flight at once
// (one imports or runs while the other compiles: compile jobs take turns, as compileModel
// already compiles two kernels at once, one per core, and two compileModel calls of one
// process would race on the object cache's temporary file names).
//
// The import and compile work of each lane runs in a worker thread (worker.ts), so that our
// own TypeScript is bounded too: a case's import (with its retries with inputs frozen) may
// take `workTimeoutMs`; a batch's compile may not block its worker's event loop for longer
// than that (graph passes, partition, lowering, code generation: a heartbeat), nor run past
// `batchTimeoutMs` in all (C compiler calls included, each with its own limit). A worker past
// a limit is terminated and replaced; the case (or batch, then split) is `hang`.
//
// Each case ends as one Outcome (classify.ts): refused (the runner cannot feed its values,
// or the importer or compiler refused it with a UserError), wrong (an output differs from the
// expected one at the case's rtol/atol), crash (any other exception, generated C that does not
// compile, tt_bench dying or tt_run failing), hang (our own code, tt_bench or a compiler call
// past its time limit), passed. A case refused for a non-constant input may be run with its
// integer inputs frozen (pipeline.ts); its result says so (`frozen`).

import { promises as fs, readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import type { Manifest } from '../compile/manifest';
import type { DType } from '../ir/expr';
import { checkBenchVersion } from '../native/bench';
import { loadExeca, nativeBinary } from '../native/build';
import { caseDir, type ConformanceCase } from './cases';
import { caseRefusal, compareOutput, modelWords, type CaseResult } from './classify';
import { failureOf, prefixOf, type CompileJob, type Failure, type PreparedInfo } from './pipeline';
import type { WorkerJob, WorkerMessage, WorkerReply, WorkerRequest } from './worker';

export { failureOf, mergeGraphs } from './pipeline';

export interface RunOptions {
  /** The cases folder (cases.ts) and the cases to run. */
  dir: string;
  cases: readonly ConformanceCase[];
  /** Where batches are compiled (a fresh folder per batch, removed after it ran). */
  workDir: string;
  /** Object cache of the kernels (compileModel's cacheDir). */
  cacheDir: string;
  /** Target string (default "llvm -mcpu=native", compile's default). */
  target?: string;
  /** Cases per model.so (default 16). */
  batchSize?: number;
  /** Batches in flight at once, each lane with its worker thread (default 2). */
  parallel?: number;
  /** The model's threads in tt_bench (default 2). */
  threads?: number;
  /** Time limit of one case's run in tt_bench (default 10 s; a batch gets 10 s + 1 s per case), and of each compiler call (default 60 s). */
  caseTimeoutMs?: number;
  compilerTimeoutMs?: number;
  /** Time limit of one case's import, and the longest a batch's compile may block its worker (default 30 s). */
  workTimeoutMs?: number;
  /** Time limit of a batch's whole compile, C compiler calls included (default 120 s + 15 s per case). */
  batchTimeoutMs?: number;
  /** A module each worker requires before its work (tests stub the pipeline with it). */
  workerPreload?: string;
  /** Progress lines. */
  log?: (line: string) => void;
  /** Each case's result as it ends. */
  onResult?: (r: CaseResult) => void;
}

const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e));
const firstLine = (s: string): string => s.trim().split('\n')[0]?.trim() ?? '';

/** A case that imported: what it feeds and expects. */
interface Prepared {
  c: ConformanceCase;
  info: PreparedInfo;
  /** Input name -> case value (with its file's absolute path). */
  inputs: Map<string, { file: string; value: ConformanceCase['data_sets'][0]['inputs'][0] }>;
  /** The expected outputs' bytes, in graph output order. */
  expected: Uint8Array[];
}

/** A case's result, with the inputs it froze. */
const resultOf = (p: Prepared, r: Failure | Pick<CaseResult, 'outcome' | 'reason' | 'max_abs_error'>): CaseResult =>
  ({ name: p.c.name, operator: p.c.operator, ...r, ...(p.info.frozen ? { frozen: p.info.frozen } : {}) });

type Answer = WorkerReply | { hang: string } | { died: string };

/** One worker thread (worker.ts) and its limits: a job past them terminates it; the next job starts a fresh one. */
class CaseWorker {
  private worker: Worker | undefined;
  private ready: Promise<void> | undefined;
  private lastBeat = 0;
  private nextId = 0;
  private pending: { id: number; settle: (a: Answer) => void } | undefined;
  /** The longest time between two heartbeats seen during a job (our own code holding the worker). */
  longestBlockMs = 0;

  constructor(private readonly preload: string | undefined, private readonly beatMs: number) {}

  private start(): Promise<void> {
    const file = path.join(__dirname, `worker${path.extname(__filename)}`);
    const workerData = { beatMs: this.beatMs, preload: this.preload };
    // Under tsx (tests, `npm run conformance`) the worker loads the TypeScript sources as this thread does.
    const w = file.endsWith('.ts')
      ? new Worker(`require(${JSON.stringify(require.resolve('tsx/cjs'))}); require(${JSON.stringify(file)});`, { eval: true, workerData })
      : new Worker(file, { workerData });
    this.worker = w;
    const gone = (why: string): void => {
      if (this.worker !== w) return;
      this.worker = undefined;
      this.ready = undefined;
      const p = this.pending;
      this.pending = undefined;
      p?.settle({ died: why });
    };
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => { void w.terminate(); gone('did not start'); reject(new Error('conformance: a worker thread did not start within 120 s')); }, 120_000);
      w.on('message', (m: WorkerMessage) => {
        if ('beat' in m) { this.lastBeat = performance.now(); return; }
        if ('ready' in m) { clearTimeout(timer); this.lastBeat = performance.now(); resolve(); return; }
        if (this.pending?.id === m.id) { const p = this.pending; this.pending = undefined; p.settle(m); }
      });
      w.on('error', (e) => { clearTimeout(timer); gone(`the worker thread failed: ${firstLine(messageOf(e))}`); reject(e); });
      w.on('exit', (code) => { clearTimeout(timer); gone(`the worker thread exited (code ${code})`); reject(new Error(`conformance: a worker thread exited (code ${code})`)); });
    });
  }

  /** Runs one job: its reply, or `hang` (a limit passed: the worker is terminated), or `died`. */
  async call(req: WorkerJob, stallMs: number, totalMs: number): Promise<Answer> {
    this.ready ??= this.start();
    await this.ready;
    const w = this.worker!;
    const id = this.nextId++;
    const started = performance.now();
    this.lastBeat = started;
    let lastCheck = started;
    return new Promise<Answer>((resolve) => {
      const check = setInterval(() => {
        const now = performance.now();
        // This thread blocked itself (its beats queued behind it): its lag is not the worker's.
        if (now - lastCheck > stallMs / 2) this.lastBeat = now;
        lastCheck = now;
        this.longestBlockMs = Math.max(this.longestBlockMs, now - this.lastBeat);
        const why = now - this.lastBeat > stallMs ? `our own code held its worker for more than ${stallMs / 1000} s`
          : now - started > totalMs ? `it ran past ${totalMs / 1000} s` : undefined;
        if (!why) return;
        this.pending = undefined;
        this.worker = undefined;
        this.ready = undefined;
        void w.terminate();
        clearInterval(check);
        resolve({ hang: why });
      }, Math.max(10, Math.min(1000, stallMs / 4)));
      this.pending = { id, settle: (a) => { clearInterval(check); resolve(a); } };
      w.postMessage({ ...req, id });
    });
  }

  forget(names: string[]): void {
    this.worker?.postMessage({ kind: 'forget', names } satisfies WorkerRequest);
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    this.ready = undefined;
    await w?.terminate();
  }
}

async function runBatch(dir: string, manifest: Manifest, batch: readonly Prepared[], opts: RunOptions, timeoutMs: number): Promise<(CaseResult | undefined)[] | Failure> {
  const inDir = path.join(dir, 'inputs'), outDir = path.join(dir, 'outputs');
  await fs.mkdir(inDir, { recursive: true });
  const args: string[] = [];
  const results: (CaseResult | undefined)[] = batch.map(() => undefined);
  for (const [j, inp] of manifest.inputs.entries()) {
    const k = Number(/^c(\d+)\//.exec(inp.name)![1]);
    const given = batch[k].inputs.get(inp.name.slice(prefixOf(k).length))!;
    if (inp.dtype === 'float32' && given.value.dtype === 'float32') { args.push('--input', `${inp.name}=${given.file}`); continue; }
    const words = modelWords(given.value, readFileSync(given.file), inp.dtype as DType);
    if (typeof words === 'string') {
      results[k] ??= resultOf(batch[k], { outcome: 'refused', reason: words });
      continue;
    }
    const file = path.join(inDir, `${j}.bin`);
    await fs.writeFile(file, new Uint8Array(words.buffer, words.byteOffset, words.byteLength));
    args.push('--input', `${inp.name}=${file}`);
  }
  const binary = await nativeBinary('tt_bench');
  await checkBenchVersion(binary);
  const { execa } = await loadExeca();
  const r = await execa(binary, [
    path.join(dir, manifest.library), path.join(dir, manifest.params),
    '--repeat', '1', '--number', '1', '--warmup', '0', '--min-repeat-ms', '0', '--threads', String(opts.threads ?? 2),
    ...args, '--save-outputs', outDir,
  ], { reject: false, timeout: timeoutMs, env: { TT_PARENT_PID: String(process.pid) } });
  if (r.timedOut) return { outcome: 'hang', reason: `tt_bench ran past ${timeoutMs / 1000} s` };
  if (r.failed) {
    const stderr = firstLine(String(r.stderr ?? ''));
    return { outcome: 'crash', reason: r.signal ? `the compiled model crashed (${r.signal})${stderr ? `: ${stderr}` : ''}` : `tt_bench failed (exit ${r.exitCode}): ${stderr || firstLine(r.message ?? '')}` };
  }
  // Outputs, each compared with its case's expected value.
  const outs = manifest.outputs;
  const want = batch.reduce((a, p) => a + p.c.data_sets[0].outputs.length, 0);
  if (outs.length !== want) throw new Error(`the compiled model has ${outs.length} output(s), the cases expect ${want}`);
  let o = 0;
  for (const [k, p] of batch.entries()) {
    const expected = p.c.data_sets[0].outputs;
    const mine = outs.slice(o, o + expected.length);
    o += expected.length;
    if (results[k]) continue;
    const checks: { ok: boolean; why?: string; max_abs_error?: number }[] = [];
    for (const [i, m] of mine.entries()) {
      let words: Float32Array | Int32Array;
      try {
        const bytes = await fs.readFile(path.join(outDir, m.file!));
        const copy = new Uint8Array(bytes);
        words = m.dtype === 'float32' ? new Float32Array(copy.buffer, 0, copy.length >> 2) : new Int32Array(copy.buffer, 0, copy.length >> 2);
      } catch (e) {
        checks.push({ ok: false, why: `output '${expected[i].name}' was not saved (${messageOf(e)})` });
        continue;
      }
      checks.push(compareOutput(expected[i], p.expected[i], words, m.dtype, m.shape, p.c.rtol, p.c.atol));
    }
    const bad = checks.filter((c) => !c.ok);
    results[k] = bad.length === 0 ? resultOf(p, { outcome: 'passed' })
      : resultOf(p, { outcome: 'wrong', reason: bad.map((c) => c.why).join('; '), max_abs_error: Math.max(...bad.map((c) => c.max_abs_error ?? NaN)) });
  }
  return results;
}

export interface RunSummary {
  results: CaseResult[];
  seconds: number;
  /** model.so files built and tt_bench runs made (a batch split after a failure counts again). */
  libraries: number;
  /** The longest our own code held a worker thread without a heartbeat (import, lowering...), in seconds. */
  longestBlock: number;
}

/** Runs the cases; returns one result per case, in the cases' order. */
export async function runConformance(opts: RunOptions): Promise<RunSummary> {
  const started = performance.now();
  const target = opts.target ?? 'llvm -mcpu=native';
  const batchSize = Math.max(1, opts.batchSize ?? 16);
  const caseMs = opts.caseTimeoutMs ?? 10_000;
  const workMs = opts.workTimeoutMs ?? 30_000;
  const batchMs = (n: number): number => opts.batchTimeoutMs ?? 120_000 + 15_000 * n;
  const log = opts.log ?? (() => undefined);
  const results = new Map<string, CaseResult>();
  const finish = (r: CaseResult): void => { results.set(r.name, r); opts.onResult?.(r); };
  await fs.mkdir(opts.workDir, { recursive: true });
  let serial = 0, libraries = 0;
  // One compile at a time (see the header); the lanes' imports and tt_bench runs overlap it.
  let compiling: Promise<unknown> = Promise.resolve();
  const oneAtATime = <T>(f: () => Promise<T>): Promise<T> => {
    const turn = compiling.then(f, f);
    compiling = turn.catch(() => undefined);
    return turn;
  };

  const attempt = async (w: CaseWorker, batch: readonly Prepared[]): Promise<void> => {
    const outDir = path.join(opts.workDir, `batch-${serial++}`);
    libraries++;
    let outcome: (CaseResult | undefined)[] | Failure;
    try {
      const job: CompileJob = { target, outDir, cacheDir: opts.cacheDir, compilerTimeoutMs: opts.compilerTimeoutMs ?? 60_000 };
      const a = await oneAtATime(() => w.call({ kind: 'compile', dir: opts.dir, cases: batch.map((p) => p.c), job }, workMs, batchMs(batch.length)));
      if ('hang' in a) outcome = { outcome: 'hang', reason: `compiling it (graph passes, partition, lowering, code generation, C compiler): ${a.hang}` };
      else if ('died' in a) outcome = { outcome: 'crash', reason: `compiling it: ${a.died}` };
      else if (a.kind !== 'compile') throw new Error('conformance: a worker answered a compile with a prepare');
      else if ('failure' in a) outcome = a.failure;
      else outcome = await runBatch(outDir, a.manifest, batch, opts, batch.length === 1 ? caseMs : caseMs + 1000 * batch.length);
    } catch (e) {
      outcome = failureOf(e, path.join(caseDir(opts.dir, batch[0].c.name), 'model.onnx'));
    } finally {
      await fs.rm(outDir, { recursive: true, force: true });
    }
    if (Array.isArray(outcome)) {
      outcome.forEach((r) => r && finish(r));
      return;
    }
    if (batch.length === 1) {
      finish(resultOf(batch[0], outcome));
      return;
    }
    // Find the case that failed: each half on its own.
    log(`conformance: a batch of ${batch.length} failed (${outcome.outcome}: ${outcome.reason ?? ''}); splitting it`);
    const half = Math.ceil(batch.length / 2);
    await attempt(w, batch.slice(0, half));
    await attempt(w, batch.slice(half));
  };

  /** A case imported in the worker (or its outcome). */
  const prepare = async (w: CaseWorker, c: ConformanceCase): Promise<Prepared | CaseResult> => {
    const done = (r: Failure): CaseResult => ({ name: c.name, operator: c.operator, ...r });
    const refusal = caseRefusal(c);
    if (refusal) return done({ outcome: 'refused', reason: refusal });
    let a: Answer;
    try {
      a = await w.call({ kind: 'prepare', dir: opts.dir, case: c }, workMs, workMs);
    } catch (e) {
      return done({ outcome: 'crash', reason: `importing it: ${firstLine(messageOf(e))}` });
    }
    if ('hang' in a) return done({ outcome: 'hang', reason: `importing it: ${a.hang}` });
    if ('died' in a) return done({ outcome: 'crash', reason: `importing it: ${a.died}` });
    if (a.kind !== 'prepare') throw new Error('conformance: a worker answered a prepare with a compile');
    if ('result' in a) return a.result;
    const folder = caseDir(opts.dir, c.name);
    const [{ inputs, outputs }] = c.data_sets;
    return {
      c, info: a.info,
      inputs: new Map(inputs.map((v) => [v.name, { file: path.join(folder, v.file!), value: v }])),
      expected: outputs.map((v) => new Uint8Array(readFileSync(path.join(folder, v.file!)))),
    };
  };

  const queue = [...opts.cases];
  const workers = Array.from({ length: Math.max(1, opts.parallel ?? 2) }, () => new CaseWorker(opts.workerPreload, Math.max(5, Math.min(500, workMs / 8))));
  const lane = async (w: CaseWorker): Promise<void> => {
    for (;;) {
      const batch: Prepared[] = [];
      while (batch.length < batchSize && queue.length > 0) {
        const p = await prepare(w, queue.shift()!);
        if ('info' in p) batch.push(p);
        else finish(p);
      }
      if (batch.length === 0) return;
      await attempt(w, batch);
      w.forget(batch.map((p) => p.c.name));
      log(`conformance: ${results.size}/${opts.cases.length} cases done, ${((performance.now() - started) / 1000).toFixed(0)} s`);
    }
  };
  try {
    await Promise.all(workers.map(lane));
  } finally {
    await Promise.all(workers.map((w) => w.close()));
  }
  return {
    results: opts.cases.map((c) => results.get(c.name)!), seconds: (performance.now() - started) / 1000, libraries,
    longestBlock: Math.max(0, ...workers.map((w) => w.longestBlockMs)) / 1000,
  };
}
