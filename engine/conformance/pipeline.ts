// What the conformance runner does in our own code, as its workers (worker.ts) run it: a case
// imported with loadOnnx (its symbolic dimensions fixed to the case's input shapes), and the
// graphs of a batch of cases side by side in one graph compiled into one model.so through
// the steps compileNetwork takes without records. A case the importer refuses because an
// input must be a constant ("scales must be a constant") is imported again with its integer
// inputs (int64/int32, never float data) bound to their test values (constantInputs, as
// TVM's freeze_params), then with as few of them bound as still import; it carries the
// names it froze (`frozen`) into its outcome.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { chooseWinograd } from '../compile/choose-winograd';
import { readManifest, type Manifest } from '../compile/manifest';
import { compileModel } from '../compile/model';
import { UserError } from '../errors';
import { loadOnnx, type OnnxModel } from '../frontend/onnx/import';
import type { StaticTensor } from '../frontend/onnx/tensor';
import { partition, type FusedGroup } from '../graph/fuse';
import { Graph, isOpNode, type ConstantNode } from '../graph/graph';
import { optimize } from '../graph/passes';
import type { DType } from '../ir/expr';
import { hardwareFingerprint, parseTarget } from '../target';
import { caseDir, type ConformanceCase } from './cases';
import { caseRefusal, decodeValue, dtypeClass, modelWords, outsideInt32, refusalOf, type CaseResult } from './classify';

const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e));
const firstLine = (s: string): string => s.trim().split('\n')[0]?.trim() ?? '';

/** How a case, or a batch, failed: for a batch of one, that case's outcome. */
export type Failure = Pick<CaseResult, 'outcome' | 'reason' | 'issues'>;

/** The outcome of an exception thrown while importing or compiling one case. */
export function failureOf(e: unknown, file: string): Failure {
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

/** A refusal that a constant in place of an input can lift. */
export const NON_CONSTANT = /must be a constant|computed at run time/;

/** The numpy dtypes of the inputs that may be frozen: integers that real models carry as initializers (never float data). */
const FREEZABLE = new Set(['int64', 'int32']);

/** What the runner needs of a case that imported (the graph stays in the worker). */
export interface PreparedInfo {
  inputs: { name: string; shape: number[]; dtype: DType }[];
  outputs: string[];
  /** The inputs bound to their test values. */
  frozen?: string[];
}

export type Prepared = { model: OnnxModel; info: PreparedInfo };

/** A case imported (with inputs frozen where that lifts a non-constant refusal), or its outcome. */
export function prepareCase(dir: string, c: ConformanceCase): Prepared | CaseResult {
  const done = (r: Failure, frozen?: string[]): CaseResult => ({ name: c.name, operator: c.operator, ...r, ...(frozen ? { frozen } : {}) });
  const refusal = caseRefusal(c);
  if (refusal) return done({ outcome: 'refused', reason: refusal });
  const folder = caseDir(dir, c.name);
  const file = path.join(folder, 'model.onnx');
  const [{ inputs, outputs }] = c.data_sets;
  const inputShapes = inputs.map((v) => ({ name: v.name, shape: v.shape! }));
  const load = (constants: ReadonlyMap<string, StaticTensor>): OnnxModel | Failure => {
    try {
      return loadOnnx(file, { inputShapes, constantInputs: constants.size ? constants : undefined });
    } catch (e) {
      return failureOf(e, file);
    }
  };
  let model = load(new Map());
  let frozen: string[] | undefined;
  if ('outcome' in model) {
    const first = model;
    const ints = inputs.filter((v) => FREEZABLE.has(v.dtype!));
    if (first.outcome !== 'refused' || !NON_CONSTANT.test(first.reason ?? '') || ints.length === 0) return done(first);
    const values = new Map(ints.map((v): [string, StaticTensor] => [v.name, { type: 'int', shape: v.shape!, data: Array.from(decodeValue(new Uint8Array(readFileSync(path.join(folder, v.file!))), v.dtype!)) }]));
    // All of them, then each left out in turn while the case still imports without it.
    let kept = new Map(values);
    let best = load(kept);
    for (const name of values.keys()) {
      const fewer = new Map([...kept].filter(([n]) => n !== name));
      const m = load(fewer);
      if (!('outcome' in m)) { kept = fewer; best = m; }
    }
    if ('outcome' in best) return done(first);
    model = best;
    frozen = [...kept.keys()];
  }
  const byName = new Map(inputs.map((v) => [v.name, v]));
  for (const inp of model.inputs) {
    const given = byName.get(inp.name);
    if (!given) return done({ outcome: 'refused', reason: `the case gives no value for input '${inp.name}'` }, frozen);
    const words = modelWords(given, readFileSync(path.join(folder, given.file!)), inp.dtype);
    if (typeof words === 'string') return done({ outcome: 'refused', reason: words }, frozen);
  }
  for (const v of outputs) {
    if (dtypeClass(v.dtype) !== 'int32') continue;
    const big = outsideInt32(decodeValue(new Uint8Array(readFileSync(path.join(folder, v.file!))), v.dtype!));
    if (big !== undefined) return done({ outcome: 'refused', reason: `output '${v.name}' (${v.dtype}) holds ${big}, outside the int32 range int64 values are carried in` }, frozen);
  }
  return { model, info: { inputs: model.inputs, outputs: model.outputs, ...(frozen ? { frozen } : {}) } };
}

/** The prefix of batch member k's tensor names. */
export const prefixOf = (k: number): string => `c${k}/`;

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

export interface CompileJob {
  /** Target string ("llvm -mcpu=native" by default, compile's). */
  target: string;
  outDir: string;
  cacheDir: string;
  compilerTimeoutMs: number;
}

/** The graphs of a batch compiled into one model.so in `job.outDir`; returns its manifest. */
export async function compileBatch(models: readonly OnnxModel[], job: CompileJob): Promise<Manifest> {
  const target = parseTarget(job.target);
  const fingerprint = hardwareFingerprint(target);
  const merged = mergeGraphs(models.map((m) => ({ graph: m.graph, outputs: m.outputs })));
  // compileNetwork's steps without records: the graph passes, the partition, Winograd where
  // TVM's rule picks it, then compileModel with each task's default schedule.
  let graph = optimize(merged.graph);
  let groups: readonly FusedGroup[] = partition(graph);
  const choice = await chooseWinograd(graph, groups, new Map(), { target: target.text, fingerprint, files: [], entries: [] }, target.vectorLanes);
  ({ graph, groups } = choice);
  await compileModel({
    name: path.basename(job.outDir), graph: merged.graph, outputNames: merged.outputs, target, outDir: job.outDir,
    cacheDir: job.cacheDir, partitioned: { graph, groups }, fingerprint, timeoutMs: job.compilerTimeoutMs,
    warn: () => undefined,
  });
  try {
    return readManifest(job.outDir);
  } catch (e) {
    // Compile wrote a folder its own reader refuses: ours to fix (a crash), not a refusal.
    throw new Error(`the compiled model's manifest is refused by readManifest: ${messageOf(e).split(`${path.join(job.outDir, 'manifest.json')}: `).join('')}`);
  }
}
