// `benchmark DIR --compare onnxruntime`: a compiled model and ONNX Runtime side by side,
// on identical weights, the same seeded input and the same thread count.
//
// Which ONNX file: `onnx` when given; else the compiled model's own source when it was
// compiled from an ONNX file (the manifest's `model_file`, relative to the model directory,
// which must still hash to its `model_sha256`); else, for a builtin network, the network
// is exported here with the weights `compile` gives it (seed 0, TVM's identity batch-norm
// statistics), in the compiled model's input layout, batch and image size.
//
// Timing: `rounds` interleaved rounds A B A B ...; each round times our model with the
// native runner (tt_bench, `repeat` measurements of `number` runs) and then ONNX Runtime
// (the same number of measurements of the same number of runs); medians over all
// measurements, and the median over rounds of each round's ratio (pairedRatio). Outputs:
// one run of each on the same input, max absolute and relative error per output, and
// whether the top-1 class (argmax of the last axis of the first output, per batch row)
// agrees.

import { existsSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { fileSha256, manifestFiles, readManifest, type Manifest } from '../compile/manifest';
import { UserError } from '../errors';
import { isOpNode, type Graph } from '../graph/graph';
import { rebuild } from '../graph/rewrite';
import { asFloatWords, numElements, type TensorData } from '../ir/tensor';
import { isOnnxPath } from '../frontend/load';
import { getNetwork, NETWORK_NAMES, NO_IMAGE_NETWORKS } from '../frontend/networks';
import { writeOnnxFile } from '../frontend/onnx/export';
import { runBench } from '../native/bench';
import { outputFileName } from '../runtime/abi';
import { readFloat32File, writeFloat32File } from '../runtime/rawfile';
import { modelInput } from '../runtime/random';
import { duration } from '../units';
import { ownedTempDir } from '../temp-dirs';
import { openOrtSession, timeOrtRuns, type OrtRunner } from './ort';

export interface CompareOptions {
  /** Output directory of `tensortune compile`. */
  modelDir: string;
  /** The ONNX file to give ONNX Runtime (default: found from the manifest, see above). */
  onnx?: string;
  /** Threads for both engines (tt_set_num_threads; ORT intraOpNumThreads). */
  threads: number;
  /** Interleaved rounds (default 5). */
  rounds?: number;
  /** Measurements per engine and round (default 3). */
  repeat?: number;
  /** Runs per measurement for both (default: what tt_bench picks for minRepeatMs). */
  number?: number;
  minRepeatMs?: number;
  /** Seed of the input (default 0): input i is uniform(size, seed, i) in [0, 1), as tt_bench fills it. */
  seed?: number;
  log?: (line: string) => void;
}

export interface OutputError { name: string; shape: number[]; max_abs_err: number; max_rel_err: number; max_abs_value: number }

export interface CompareReport {
  /** When it was measured (ISO 8601); absent from reports written before it was recorded. */
  time?: string;
  /** sha256 of the compared model.so (the manifest's library_sha256), so a report can tell a comparison of another build; absent from older reports. */
  library_sha256?: string;
  model_dir: string;
  onnx: string;
  onnx_source: 'option' | 'manifest' | 'exported builtin network';
  onnxruntime_version: string;
  threads: number;
  rounds: number;
  number: number;
  tensortune_median_ms: number;
  onnxruntime_median_ms: number;
  /** tensortune / onnxruntime (below 1: tensortune is faster). */
  ratio: number;
  /** The median over rounds of each round's ratio of medians (pairedRatio); absent from reports written before it was added. */
  paired_ratio?: number;
  tensortune_runs_ms: number[];
  onnxruntime_runs_ms: number[];
  outputs: OutputError[];
  /** Argmax of the first output's rows, when it is a float [batch, classes] tensor (`applies`); else empty lists that agree. */
  top1: { tensortune: number[]; onnxruntime: number[]; agree: boolean; applies?: boolean };
}

/** The graph with a final softmax removed: its outputs are the logits. */
export function withoutSoftmax(g: Graph): Graph {
  return rebuild(g, () => undefined, (b, id) => {
    const n = g.node(id);
    return b.map(isOpNode(n) && n.op === 'softmax' ? n.inputs[0] : id);
  });
}

/** The ONNX file for a compiled model, and where it came from. */
async function findOnnx(opts: CompareOptions, m: Manifest, work: string): Promise<{ file: string; source: CompareReport['onnx_source'] }> {
  if (opts.onnx) {
    if (!existsSync(opts.onnx)) throw new UserError(`--onnx ${opts.onnx}: file not found`);
    return { file: path.resolve(opts.onnx), source: 'option' };
  }
  if (m.model_file !== undefined) {
    // Where the model file was, relative to the model directory, and its hash when compiled.
    const file = path.resolve(opts.modelDir, m.model_file);
    if (!existsSync(file)) throw new UserError(`${opts.modelDir}: compiled from ${m.model_file} (relative to it), which is not there (pass --onnx FILE)`);
    if (m.model_sha256 !== undefined && fileSha256(file) !== m.model_sha256) {
      throw new UserError(`${file}: changed since ${opts.modelDir} was compiled from it (sha256 differs); compile it again, or pass --onnx FILE`);
    }
    return { file, source: 'manifest' };
  }
  if (isOnnxPath(m.name) && path.isAbsolute(m.name)) {
    // A manifest written before model_file: its name is the file's absolute path.
    if (!existsSync(m.name)) throw new UserError(`${opts.modelDir}: compiled from ${m.name}, which no longer exists (pass --onnx FILE)`);
    return { file: m.name, source: 'manifest' };
  }
  if (!NETWORK_NAMES.includes(m.name)) {
    throw new UserError(`${opts.modelDir}: compiled from '${m.name}', neither an ONNX file nor a builtin network; pass --onnx FILE`);
  }
  const shape = m.inputs[0].shape;
  // An image [N, 3, H, W] or a clip [N, 3, D, H, W] is NCHW; the width (= height) is the image size.
  const layout = shape.length >= 4 && shape[1] === 3 ? 'NCHW' : 'NHWC';
  const imageSize = NO_IMAGE_NETWORKS.includes(m.name) ? undefined : layout === 'NCHW' ? shape[shape.length - 1] : shape[shape.length - 2];
  const net = getNetwork(m.name, { batch: shape[0], layout, imageSize });
  const file = path.join(work, `${m.name}.onnx`);
  writeOnnxFile(file, net.graph);
  return { file, source: 'exported builtin network' };
}

const ascending = (xs: readonly number[]): number[] => [...xs].sort((a, b) => a - b);

export const median = (xs: readonly number[]): number => {
  const s = ascending(xs);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

/** Max absolute error, and max relative error |a-b|/|b| over the elements with |b| >= 1e-6 * max|b|. */
export function outputError(got: ArrayLike<number>, want: ArrayLike<number>): { maxAbs: number; maxRel: number; maxValue: number } {
  let maxAbs = 0, maxRel = 0, maxValue = 0;
  for (let i = 0; i < want.length; i++) maxValue = Math.max(maxValue, Math.abs(want[i]));
  const floor = 1e-6 * maxValue;
  for (let i = 0; i < want.length; i++) {
    const err = Math.abs(got[i] - want[i]);
    if (!(err <= maxAbs)) maxAbs = Number.isNaN(err) ? NaN : Math.max(maxAbs, err);
    if (Math.abs(want[i]) >= floor && floor > 0) maxRel = Math.max(maxRel, err / Math.abs(want[i]));
  }
  return { maxAbs, maxRel, maxValue };
}

/** argmax over the last axis, per row. */
export function top1(values: ArrayLike<number>, classes: number): number[] {
  const rows = Math.floor(values.length / classes);
  return Array.from({ length: rows }, (_, r) => {
    let best = 0;
    for (let c = 1; c < classes; c++) if (values[r * classes + c] > values[r * classes + best]) best = c;
    return best;
  });
}

export async function compareWithOnnxRuntime(opts: CompareOptions): Promise<CompareReport> {
  const dir = path.resolve(opts.modelDir);
  const m = readManifest(dir);
  const log = opts.log ?? (() => undefined);
  const rounds = opts.rounds ?? 5, repeat = opts.repeat ?? 3, seed = opts.seed ?? 0;
  const work = ownedTempDir('tt-compare');
  try {
    const onnx = await findOnnx(opts, m, work);
    log(`ONNX model: ${onnx.file} (${onnx.source})`);
    const session = await openOrtSession(onnx.file, opts.threads, m.inputs.map((i) => i.shape));
    try {
      const inputs = m.inputs.map((inp, i) => modelInput(inp.dtype, numElements(inp.shape), seed, i));
      const inputFiles: Record<string, string> = {};
      await Promise.all(m.inputs.map(async (inp, i) => {
        inputFiles[inp.name] = path.join(work, `input${i}.bin`);
        await writeFloat32File(inputFiles[inp.name], asFloatWords(inputs[i]));
      }));
      const files = manifestFiles(dir, m);
      const bench = { model: files.library, params: files.params, threads: opts.threads, inputs: inputFiles };

      // Outputs, once each.
      const saved = path.join(work, 'outputs');
      await fs.mkdir(saved);
      const first = await runBench({ ...bench, repeat: 1, number: opts.number, minRepeatMs: opts.minRepeatMs, saveOutputs: saved });
      const ours = await Promise.all(m.outputs.map(async (o): Promise<TensorData> => {
        const words = await readFloat32File(path.join(saved, `${outputFileName(o.name)}.bin`));
        return o.dtype === 'float32' ? words : new Int32Array(words.buffer, words.byteOffset, words.length);
      }));
      const theirs = await session.run(inputs);
      if (theirs.length !== ours.length) throw new UserError(`${onnx.file}: ONNX Runtime gives ${theirs.length} output(s), the compiled model ${ours.length}`);
      const outputs = m.outputs.map((o, k) => {
        if (theirs[k].length !== ours[k].length) throw new UserError(`output ${k}: ${ours[k].length} values here, ${theirs[k].length} from ONNX Runtime`);
        const e = outputError(ours[k], theirs[k]);
        return { name: o.name, shape: o.shape, max_abs_err: e.maxAbs, max_rel_err: e.maxRel, max_abs_value: e.maxValue };
      });
      const classes = m.outputs[0].shape[m.outputs[0].shape.length - 1];
      // A class index means something for a classifier's [batch, classes] scores only (not for hidden states, images, ids).
      const applies = m.outputs[0].shape.length === 2 && m.outputs[0].dtype === 'float32' && classes > 1;
      const a = applies ? top1(ours[0], classes) : [], b = applies ? top1(theirs[0], classes) : [];

      // Interleaved timing with the same runs per measurement on both sides.
      const number = opts.number ?? compareNumber(first.number, await ortRunMs(session, inputs), opts.minRepeatMs ?? first.min_repeat_ms);
      const oursMs: number[] = [], ortMs: number[] = [];
      for (let r = 0; r < rounds; r++) {
        const res = await runBench({ ...bench, repeat, number, minRepeatMs: 0 });
        oursMs.push(...res.runs_ms);
        await session.run(inputs); // warm
        for (let k = 0; k < repeat; k++) ortMs.push(await timeOrtRuns(session, inputs, number));
        log(`round ${r + 1}/${rounds}: tensortune ${duration(median(res.runs_ms))}, onnxruntime ${duration(median(ortMs.slice(-repeat)))}`);
      }
      const oursMedian = median(oursMs), ortMedian = median(ortMs);
      return {
        time: new Date().toISOString(), library_sha256: m.library_sha256,
        model_dir: dir, onnx: onnx.file, onnx_source: onnx.source, onnxruntime_version: session.version, threads: opts.threads,
        rounds, number, tensortune_median_ms: oursMedian, onnxruntime_median_ms: ortMedian, ratio: oursMedian / ortMedian,
        paired_ratio: pairedRatio(oursMs, ortMs, repeat),
        tensortune_runs_ms: oursMs, onnxruntime_runs_ms: ortMs, outputs,
        top1: { tensortune: a, onnxruntime: b, agree: a.every((c, i) => c === b[i]), applies },
      };
    } finally {
      await session.release();
    }
  } finally {
    await fs.rm(work, { recursive: true, force: true });
  }
}

/** The most runs per measurement a comparison picks by itself (each engine makes as many). */
export const COMPARE_MAX_NUMBER = 10_000;

/**
 * The runs per measurement of both engines, when not given: what tt_bench grew to for
 * `minRepeatMs` on our model (`benchNumber`), but no more than COMPARE_MAX_NUMBER nor than
 * lets one ONNX Runtime measurement (`ortMs` a run) last about 4 x minRepeatMs. A model that
 * takes ~0 ms (outputs copied from its inputs) gets tens of millions of runs from tt_bench,
 * and ONNX Runtime, microseconds a run, spent minutes on each of its measurements.
 */
export function compareNumber(benchNumber: number, ortMs: number, minRepeatMs: number): number {
  const byOrt = ortMs > 0 && minRepeatMs > 0 ? Math.max(1, Math.ceil((4 * minRepeatMs) / ortMs)) : Infinity;
  return Math.max(1, Math.min(benchNumber, COMPARE_MAX_NUMBER, byOrt));
}

/** ONNX Runtime's ms per run, from runs back to back until they last 20 ms (at most 1,000). */
async function ortRunMs(session: Pick<OrtRunner, 'run'>, inputs: readonly TensorData[]): Promise<number> {
  await session.run(inputs);
  let n = 1, ms = 0;
  for (;;) {
    ms = await timeOrtRuns(session, inputs, n);
    if (ms * n >= 20 || n >= 1000) return ms;
    n = Math.min(1000, n * 4);
  }
}

const fmt = (x: number): string => (x === 0 ? '0' : Math.abs(x) >= 0.01 && Math.abs(x) < 1e4 ? x.toPrecision(4) : x.toExponential(2));

/** The `q` quantile (nearest rank) of values sorted in ascending order. */
const quantile = (sorted: readonly number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];

/**
 * Fastest and 90th-percentile measurement. On a shared machine (a VM whose host runs other
 * guests) one run can take 1.8x the fastest (mobilenet at 1 thread, 16.0 to 29.3 ms in 40
 * runs on a 2-core EPYC), and one engine may be hit more than the other:
 * the median ratio is the figure, this says how far to trust it.
 */
function spread(xs: readonly number[]): string {
  const s = ascending(xs);
  return `min ${duration(s[0])}, 90% within ${duration(quantile(s, 0.9))}`;
}

/**
 * The median over rounds of (our median / ONNX Runtime's median) within the round, for
 * measurements listed round by round, `perRound` of each engine per round. A round takes
 * about a second, and a shared host's speed changes less often than that: on a Xeon VM
 * whole runs of mobilenet took 12.7 or 19 to 21 ms depending on the
 * minute, for ONNX Runtime alike. A slow phase that hits one engine's share of the
 * measurements more than the other's moves the ratio of overall medians; within a round
 * both are timed in the same phase, so this figure moves less.
 */
export function pairedRatio(ours: readonly number[], theirs: readonly number[], perRound: number): number {
  if (perRound < 1 || ours.length !== theirs.length || ours.length === 0 || ours.length % perRound !== 0) {
    throw new Error(`pairedRatio: ${ours.length} and ${theirs.length} measurements are not whole rounds of ${perRound}`);
  }
  const ratios: number[] = [];
  for (let i = 0; i < ours.length; i += perRound) ratios.push(median(ours.slice(i, i + perRound)) / median(theirs.slice(i, i + perRound)));
  return median(ratios);
}

/** Fastest tensortune measurement / fastest ONNX Runtime measurement. */
export const minRatio = (r: Pick<CompareReport, 'tensortune_runs_ms' | 'onnxruntime_runs_ms'>): number =>
  Math.min(...r.tensortune_runs_ms) / Math.min(...r.onnxruntime_runs_ms);

/** The first classes of a batch, then how many more. */
const classList = (xs: readonly number[]): string => (xs.length <= 8 ? xs.join(', ') : `${xs.slice(0, 8).join(', ')}, ... (${xs.length} rows)`);

export function formatCompareReport(r: CompareReport): string {
  const lines = [
    `Comparison with ONNX Runtime ${r.onnxruntime_version} (${r.threads} thread${r.threads > 1 ? 's' : ''}, ${r.rounds} interleaved rounds, ${r.number} run(s) per measurement)`,
    `  ONNX model:   ${r.onnx} (${r.onnx_source})`,
    `  tensortune:   median ${duration(r.tensortune_median_ms)}`,
    `  onnxruntime:  median ${duration(r.onnxruntime_median_ms)}`,
    `  ratio:        ${r.ratio.toFixed(3)} (tensortune / onnxruntime; below 1 is faster)${r.paired_ratio === undefined ? '' : `; paired by round ${r.paired_ratio.toFixed(3)}`}`,
    `  spread:       ${spread(r.tensortune_runs_ms)} (tensortune), ${spread(r.onnxruntime_runs_ms)} (onnxruntime); ratio of the fastest ${minRatio(r).toFixed(3)}`,
    ...r.outputs.map((o) => `  output ${o.name} [${o.shape.join(', ')}]: max abs err ${fmt(o.max_abs_err)}, max rel err ${fmt(o.max_rel_err)} (max |value| ${fmt(o.max_abs_value)})`),
    r.top1.applies === false
      ? '  top-1:        n/a (the first output is not a [batch, classes] score tensor)'
      : `  top-1:        ${r.top1.agree ? 'agrees' : 'DIFFERS'} (tensortune ${classList(r.top1.tensortune)}; onnxruntime ${classList(r.top1.onnxruntime)})`,
  ];
  return lines.join('\n');
}
