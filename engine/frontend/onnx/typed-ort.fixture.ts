// Test helper for converters of integer and bool tensors: import a model, run it with the
// reference evaluator on the given inputs (Float32Array for float inputs, Int32Array for
// integer and bool ones) and compare every output with ONNX Runtime fed the same values
// (openOrtSession widens int32 to the declared int64/int32/bool). Integer and bool outputs
// must be equal; float ones within |ours - ORT| <= tol * (1 + |ORT|). Without
// onnxruntime-node the ORT half is skipped with a message.

import * as assert from 'uvu/assert';
import { openOrtSession, tryLoadOnnxRuntime } from '../../compare/ort';
import { runGraph } from '../../graph/run';
import type { TensorData } from '../../ir/tensor';
import { skip } from '../../skip.fixture';
import { importOnnx, type OnnxModel } from './import';

const ort = tryLoadOnnxRuntime();

/** Seeded integers in [lo, hi] (mulberry32). */
export function randInts(n: number, seed: number, lo: number, hi: number): Int32Array {
  let s = seed >>> 0;
  const out = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    out[i] = lo + Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * (hi - lo + 1));
  }
  return out;
}

/** Seeded floats in [lo, hi); `step` rounds them to multiples of it (ties for comparisons, argmax). */
export function randFloats(n: number, seed: number, lo = -1, hi = 1, step?: number): Float32Array {
  const u = randInts(n, seed, 0, 1 << 30);
  return Float32Array.from(u, (x) => {
    const v = lo + ((hi - lo) * x) / (1 << 30);
    return step ? Math.round(v / step) * step : v;
  });
}

/** Import `bytes`, run it on `inputs` (model input order) and compare with ONNX Runtime; returns the model and our outputs. */
export async function agreesTyped(what: string, bytes: Uint8Array, inputs: readonly TensorData[], tol = 1e-5): Promise<{ model: OnnxModel; outputs: TensorData[] }> {
  const model = importOnnx(bytes, `${what}.onnx`);
  assert.is(model.inputs.length, inputs.length, `${what}: inputs`);
  const ours = runGraph(model.graph, new Map(model.inputs.map((inp, i) => [inp.name, inputs[i]])));
  if (!ort.module) { skip(`${what}: the comparison with ONNX Runtime`, ort.error); return { model, outputs: ours }; }
  const session = await openOrtSession(bytes, 1, model.inputs.map((i) => i.shape));
  const want = await session.run(inputs);
  await session.release();
  assert.is(ours.length, want.length, `${what}: number of outputs`);
  want.forEach((w, k) => {
    const got = ours[k];
    const dtype = model.graph.node(model.graph.outputs[k]).dtype;
    assert.is(dtype === 'float32', w instanceof Float32Array, `${what}: output ${k} is ${dtype}, ONNX Runtime's is ${w.constructor.name}`);
    assert.is(got.length, w.length, `${what}: output ${k} size`);
    for (let i = 0; i < w.length; i++) {
      const a = got[i], b = w[i];
      const same = dtype === 'float32' ? (Number.isNaN(b) ? Number.isNaN(a) : Math.abs(a - b) <= tol * (1 + Math.abs(b))) : a === b;
      if (!same) assert.unreachable(`${what}: output ${k}[${i}] = ${a}, ONNX Runtime ${b}`);
    }
  });
  return { model, outputs: ours };
}
