// Runs the ONNX node test cases through the real pipeline, in this one process: each case
// imported with loadOnnx (as `tensortune compile` reads a model file, its symbolic
// dimensions fixed to the case's input shapes), then cases that import are compiled in
// batches: the graphs of up to `batchSize` cases side by side in one graph (their tensors
// renamed `c<k>/...`), through the steps compileNetwork takes without records (optimize,
// partition, Winograd by TVM's rule, compileModel with the default schedules, kernels
// through an object cache), into one model.so that one tt_bench process runs once, with the
// cases' inputs as --input files and the outputs saved. A batch that fails to compile, crashes
// or runs past its time limit is split in two and each half run again, down to the one
// case that fails. `parallel` batches are in flight at once (one imports and lowers while
// the other's kernels compile or run).
//
// Each case ends as one Outcome (classify.ts): refused (the runner cannot feed its values,
// or the importer or compiler refused it with a UserError), wrong (an output differs from the
// expected one at the case's rtol/atol), crash (any other exception, generated C that does not
// compile, tt_bench dying or tt_run failing), hang (tt_bench or a compiler call past its time
// limit), passed. Time spent in this process's own code (import, lowering) cannot be
// interrupted; a case that loops there stops the suite rather than counting as hung.

import { promises as fs, readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { chooseWinograd } from '../compile/choose-winograd';
import { readManifest, type Manifest } from '../compile/manifest';
import { compileModel } from '../compile/model';
import { UserError } from '../errors';
import { loadOnnx, type OnnxModel } from '../frontend/onnx/import';
import { partition, type FusedGroup } from '../graph/fuse';
import { Graph, isOpNode, type ConstantNode } from '../graph/graph';
import { optimize } from '../graph/passes';
import type { DType } from '../ir/expr';
import { checkBenchVersion } from '../native/bench';
import { loadExeca, nativeBinary } from '../native/build';
import { hardwareFingerprint, parseTarget, type Target } from '../target';
import { caseDir, type ConformanceCase } from './cases';
import { caseRefusal, compareOutput, decodeValue, modelWords, outsideInt32, refusalOf, type CaseResult } from './classify';

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
  /** Batches in flight at once (default 2). */
  parallel?: number;
  /** The model's threads in tt_bench (default 2). */
  threads?: number;
  /** Time limit of one case's run in tt_bench (default 10 s; a batch gets 10 s + 1 s per case), and of each compiler call (default 60 s). */
  caseTimeoutMs?: number;
  compilerTimeoutMs?: number;
  /** Progress lines. */
  log?: (line: string) => void;
  /** Each case's result as it ends. */
  onResult?: (r: CaseResult) => void;
}

/** A case that imported: its graph in compile's layout, and the values it feeds and expects. */
interface Prepared {
  c: ConformanceCase;
  model: OnnxModel;
  /** Input name -> case value (with its file's absolute path). */
  inputs: Map<string, { file: string; value: ConformanceCase['data_sets'][0]['inputs'][0] }>;
  /** The expected outputs' bytes, in graph output order. */
  expected: Uint8Array[];
}

const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e));
const firstLine = (s: string): string => s.trim().split('\n')[0]?.trim() ?? '';

/** The outcome of an exception thrown while importing or compiling one case. */
export function failureOf(e: unknown, file: string): Pick<CaseResult, 'outcome' | 'reason' | 'issues'> {
  const msg = messageOf(e);
  if (e instanceof UserError) {
    // A compiler that failed on generated C or ran past its limit is ours to fix, not a refusal.
    if (/^(compiling kernel|linking model\.so)/.test(msg)) {
      const why = msg.split('\n').slice(1).find((l) => /error|did not finish|timed out/i.test(l)) ?? firstLine(msg);
      return /did not finish|timed out/i.test(why) ? { outcome: 'hang', reason: `the C compiler ran past its time limit: ${why.trim()}` }
        : { outcome: 'crash', reason: `the generated C does not compile: ${why.trim()}` };
    }
    return { outcome: 'refused', ...refusalOf(msg, file) };
  }
  return { outcome: 'crash', reason: `${e instanceof Error ? e.name : 'error'}: ${firstLine(msg)}` };
}

function prepare(dir: string, c: ConformanceCase): Prepared | CaseResult {
  const done = (r: Pick<CaseResult, 'outcome' | 'reason' | 'issues'>): CaseResult => ({ name: c.name, operator: c.operator, ...r });
  const refusal = caseRefusal(c);
  if (refusal) return done({ outcome: 'refused', reason: refusal });
  const folder = caseDir(dir, c.name);
  const file = path.join(folder, 'model.onnx');
  const [{ inputs, outputs }] = c.data_sets;
  let model: OnnxModel;
  try {
    model = loadOnnx(file, { inputShapes: inputs.map((v) => ({ name: v.name, shape: v.shape! })) });
  } catch (e) {
    return done(failureOf(e, file));
  }
  const byName = new Map(inputs.map((v) => [v.name, { file: path.join(folder, v.file!), value: v }]));
  for (const inp of model.inputs) {
    const given = byName.get(inp.name);
    if (!given) return done({ outcome: 'refused', reason: `the case gives no value for input '${inp.name}'` });
    const words = modelWords(given.value, readFileSync(given.file), inp.dtype);
    if (typeof words === 'string') return done({ outcome: 'refused', reason: words });
  }
  const expected = outputs.map((v) => new Uint8Array(readFileSync(path.join(folder, v.file!))));
  for (const [i, v] of outputs.entries()) {
    if (v.dtype === 'float32' || v.dtype === 'bool') continue;
    const big = outsideInt32(decodeValue(expected[i], v.dtype!));
    if (big !== undefined) return done({ outcome: 'refused', reason: `output '${v.name}' (${v.dtype}) holds ${big}, outside the int32 range int64 values are carried in` });
  }
  return { c, model, inputs: byName, expected };
}

/** The prefix of batch member k's tensor names. */
const prefixOf = (k: number): string => `c${k}/`;

/** The graphs of `cases` side by side in one graph; inputs, constants and nodes renamed with their case's prefix. */
export function mergeGraphs(graphs: readonly { graph: Graph; outputs: readonly string[] }[]): { graph: Graph; outputs: string[] } {
  const g = new Graph();
  const outputs: string[] = [];
  graphs.forEach(({ graph, outputs: names }, k) => {
    const p = prefixOf(k);
    const ids = new Map<number, number>();
    for (const n of graph.nodes) {
      let id: number;
      if (isOpNode(n)) id = g.op(n.op, n.inputs.map((i) => ids.get(i)!), n.attrs, p + n.name);
      else if (n.op === 'input') id = g.input(p + n.name, n.shape, n.dtype);
      else id = g.constant(p + n.name, n.shape, (n as ConstantNode).data, n.dtype);
      ids.set(n.id, id);
    }
    g.outputs.push(...graph.outputs.map((id) => ids.get(id)!));
    outputs.push(...names.map((o) => p + o));
  });
  return { graph: g, outputs };
}

interface Compiled { dir: string; manifest: Manifest }

async function compileBatch(batch: readonly Prepared[], outDir: string, target: Target, fingerprint: string, opts: RunOptions): Promise<Compiled> {
  const merged = mergeGraphs(batch.map((p) => ({ graph: p.model.graph, outputs: p.model.outputs })));
  // compileNetwork's steps without records: the graph passes, the partition, Winograd where
  // TVM's rule picks it, then compileModel with each task's default schedule.
  let graph = optimize(merged.graph);
  let groups: readonly FusedGroup[] = partition(graph);
  const choice = await chooseWinograd(graph, groups, new Map(), { target: target.text, fingerprint, files: [], entries: [] }, target.vectorLanes);
  ({ graph, groups } = choice);
  await compileModel({
    name: path.basename(outDir), graph: merged.graph, outputNames: merged.outputs, target, outDir,
    cacheDir: opts.cacheDir, partitioned: { graph, groups }, fingerprint, timeoutMs: opts.compilerTimeoutMs ?? 60_000,
    warn: () => undefined,
  });
  try {
    return { dir: outDir, manifest: readManifest(outDir) };
  } catch (e) {
    // Compile wrote a folder its own reader refuses: ours to fix (a crash), not a refusal.
    throw new Error(`the compiled model's manifest is refused by readManifest: ${messageOf(e).split(`${path.join(outDir, 'manifest.json')}: `).join('')}`);
  }
}

/** A batch that failed (compiling it, or in tt_bench): for a batch of one, that case's outcome. */
type Failure = Pick<CaseResult, 'outcome' | 'reason' | 'issues'>;

async function runBatch(compiled: Compiled, batch: readonly Prepared[], opts: RunOptions, timeoutMs: number): Promise<(CaseResult | undefined)[] | Failure> {
  const { dir, manifest } = compiled;
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
      results[k] ??= { name: batch[k].c.name, operator: batch[k].c.operator, outcome: 'refused', reason: words };
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
    results[k] = bad.length === 0 ? { name: p.c.name, operator: p.c.operator, outcome: 'passed' }
      : {
        name: p.c.name, operator: p.c.operator, outcome: 'wrong', reason: bad.map((c) => c.why).join('; '),
        max_abs_error: Math.max(...bad.map((c) => c.max_abs_error ?? NaN)),
      };
  }
  return results;
}

export interface RunSummary {
  results: CaseResult[];
  seconds: number;
  /** model.so files built and tt_bench runs made (a batch split after a failure counts again). */
  libraries: number;
}

/** Runs the cases; returns one result per case, in the cases' order. */
export async function runConformance(opts: RunOptions): Promise<RunSummary> {
  const started = performance.now();
  const target = parseTarget(opts.target ?? 'llvm -mcpu=native');
  const fingerprint = hardwareFingerprint(target);
  const batchSize = Math.max(1, opts.batchSize ?? 16);
  const caseMs = opts.caseTimeoutMs ?? 10_000;
  const log = opts.log ?? (() => undefined);
  const results = new Map<string, CaseResult>();
  const finish = (r: CaseResult): void => { results.set(r.name, r); opts.onResult?.(r); };
  await fs.mkdir(opts.workDir, { recursive: true });
  let serial = 0, libraries = 0;

  const attempt = async (batch: readonly Prepared[]): Promise<void> => {
    const outDir = path.join(opts.workDir, `batch-${serial++}`);
    libraries++;
    let outcome: (CaseResult | undefined)[] | Failure;
    try {
      const compiled = await compileBatch(batch, outDir, target, fingerprint, opts);
      outcome = await runBatch(compiled, batch, opts, batch.length === 1 ? caseMs : caseMs + 1000 * batch.length);
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
      finish({ name: batch[0].c.name, operator: batch[0].c.operator, ...outcome });
      return;
    }
    // Find the case that failed: each half on its own.
    log(`conformance: a batch of ${batch.length} failed (${outcome.outcome}: ${outcome.reason ?? ''}); splitting it`);
    const half = Math.ceil(batch.length / 2);
    await attempt(batch.slice(0, half));
    await attempt(batch.slice(half));
  };

  const queue = [...opts.cases];
  let done = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const batch: Prepared[] = [];
      while (batch.length < batchSize && queue.length > 0) {
        const p = prepare(opts.dir, queue.shift()!);
        if ('model' in p) batch.push(p);
        else finish(p);
      }
      if (batch.length === 0) return;
      await attempt(batch);
      done = results.size;
      log(`conformance: ${done}/${opts.cases.length} cases done, ${((performance.now() - started) / 1000).toFixed(0)} s`);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, opts.parallel ?? 2) }, worker));
  return { results: opts.cases.map((c) => results.get(c.name)!), seconds: (performance.now() - started) / 1000, libraries };
}
