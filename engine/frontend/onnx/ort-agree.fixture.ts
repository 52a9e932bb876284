// Test helper for converter tests: import a model, run it with the reference evaluator in
// the model's NCHW layout and converted to NHWC (convertLayout, as loadOnnx does), and
// compare both with ONNX Runtime on the same seeded inputs:
// |ours - ORT| <= tol * (1 + |ORT|) for every element of every output. Without
// onnxruntime-node the ORT half is skipped with a message (the NCHW/NHWC agreement still runs).

import * as assert from 'uvu/assert';
import { openOrtSession, tryLoadOnnxRuntime } from '../../compare/ort';
import { convertLayout } from '../../graph/passes';
import { runGraph } from '../../graph/run';
import type { TensorData } from '../../ir/tensor';
import { uniform } from '../../runtime/random';
import { skip } from '../../skip.fixture';
import { cancelTransposes, importOnnx, type OnnxModel } from './import';

const ort = tryLoadOnnxRuntime();

export const rand = (n: number, seed: number, lo = -1, hi = 1): Float32Array => uniform(n, seed, 0).map((u) => lo + (hi - lo) * u);
const size = (s: readonly number[]): number => s.reduce((a, b) => a * b, 1);

export interface AgreeOptions {
  tol?: number;
  /** Range of the seeded inputs (default [-1, 1)). */
  range?: [number, number];
  seed?: number;
}

function compare(what: string, got: readonly TensorData[], want: readonly TensorData[], tol: number, against: string): void {
  assert.is(got.length, want.length, `${what}: number of outputs`);
  want.forEach((w, k) => {
    assert.is(got[k].length, w.length, `${what}: output ${k} size (${against})`);
    for (let i = 0; i < w.length; i++) {
      const a = got[k][i], b = w[i];
      const same = Number.isNaN(b) ? Number.isNaN(a) : Math.abs(a - b) <= tol * (1 + Math.abs(b)) || a === b;
      if (!same) assert.unreachable(`${what}: output ${k}[${i}] = ${a}, ${against} ${b}`);
    }
  });
}

/** Import `bytes`, check NCHW against NHWC and both against ONNX Runtime; returns the imported model. */
export async function agreesWithOrt(what: string, bytes: Uint8Array, opts: AgreeOptions = {}): Promise<OnnxModel> {
  const tol = opts.tol ?? 1e-5;
  const [lo, hi] = opts.range ?? [-1, 1];
  const model = importOnnx(bytes, `${what}.onnx`);
  const inputs = model.inputs.map((inp, i) => rand(size(inp.shape), (opts.seed ?? 11) + i, lo, hi));
  const feeds = new Map(model.inputs.map((inp, i) => [inp.name, inputs[i]]));
  const nchw = runGraph(model.graph, feeds);
  const nhwc = runGraph(cancelTransposes(convertLayout(model.graph, 'NHWC')), feeds);
  compare(`${what} (NHWC)`, nhwc, nchw, tol, 'NCHW');
  if (!ort.module) { skip(`${what}: the comparison with ONNX Runtime`, ort.error); return model; }
  const session = await openOrtSession(bytes, 1, model.inputs.map((i) => i.shape));
  const want = await session.run(inputs);
  await session.release();
  compare(what, nchw, want, tol, 'ONNX Runtime');
  return model;
}

/** The import error of a model that must be refused. */
export function importError(bytes: Uint8Array): string {
  try {
    importOnnx(bytes, 'm.onnx');
  } catch (e) {
    return (e as Error).message;
  }
  return assert.unreachable('the model imported') as never;
}
