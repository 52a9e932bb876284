// topi/quantize.ts by the reference evaluator against plain JavaScript over the ONNX
// definitions (Math.fround for float32 steps; integer results exact): round half to even,
// quantize per tensor and per axis with uint8/int8 saturation, requantize, dequantize, and
// DynamicQuantizeLinear's scale and zero point (an all-zero input gives scale 1).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { compute, placeholder, type Tensor, type TensorData } from '../ir/tensor';
import { load } from '../ir/expr';
import { dequantize, dynamicQParams, quantize, requantize, roundHalfEven } from './quantize';
import { reduce } from './reduce';

const run = (out: Tensor, inputs: [Tensor, TensorData][]): TensorData => evaluate(new ComputeDAG([out]), new Map(inputs)).get(out.name)!;

/** Round half to even of a float32 value. */
function rint(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}
const sat = (v: number, lo: number, hi: number): number => Math.min(Math.max(v, lo), hi);

test('roundHalfEven: ties go to the even neighbour, on both signs; large values clamp to +-2^17', () => {
  const xs = [0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 2.5000002, -3.7, 3.2, 1e9, -1e9, 131071.5, 7.5, -7.5];
  const x = placeholder('x', [xs.length]);
  const out = compute('r', [xs.length], ['i'], (i) => roundHalfEven(load(x, [i])));
  assert.is(out.dtype, 'int32');
  const want = xs.map((v) => sat(rint(Math.fround(v)), -(2 ** 17), 2 ** 17));
  assert.equal([...run(out, [[x, Float32Array.from(xs)]])], want);
});

test('quantize per tensor to uint8 and int8 (saturating), and without a zero point', () => {
  const xs = Float32Array.of(0, 0.25, 0.75, -0.25, 1000, -1000, 12.3, -7.77, 0.125, 0.375);
  const x = placeholder('x', [2, 5]), s = placeholder('s', []), z = placeholder('z', [], 'int32');
  const scale = Float32Array.of(0.25);
  for (const [zp, qmin, qmax] of [[128, 0, 255], [-3, -128, 127], [0, 0, 255]]) {
    const got = run(quantize(x, s, z, 0, { qmin, qmax }), [[x, xs], [s, scale], [z, Int32Array.of(zp)]]);
    assert.equal([...got], [...xs].map((v) => sat(rint(Math.fround(v / 0.25)) + zp, qmin, qmax)), `zero point ${zp}`);
  }
  const none = run(quantize(x, s, undefined, 0, { qmin: -128, qmax: 127 }), [[x, xs], [s, scale]]);
  assert.equal([...none], [...xs].map((v) => sat(rint(Math.fround(v / 0.25)), -128, 127)));
});

test('quantize and dequantize per axis (axis 1 of [2, 3, 2])', () => {
  const x = placeholder('x', [2, 3, 2]), s = placeholder('s', [3]), z = placeholder('z', [3], 'int32');
  const xs = Float32Array.from({ length: 12 }, (_, i) => (i - 5) * 0.37);
  const sv = Float32Array.of(0.1, 0.5, 0.02), zv = Int32Array.of(10, 128, 250);
  const c = (i: number): number => Math.floor(i / 2) % 3;
  const q = run(quantize(x, s, z, 1, { qmin: 0, qmax: 255 }), [[x, xs], [s, sv], [z, zv]]);
  assert.equal([...q], [...xs].map((v, i) => sat(rint(Math.fround(v / sv[c(i)])) + zv[c(i)], 0, 255)));
  const qi = placeholder('q', [2, 3, 2], 'int32');
  const d = run(dequantize(qi, s, z, 1), [[qi, q as Int32Array], [s, sv], [z, zv]]);
  assert.equal([...d], [...q].map((v, i) => Math.fround((v - zv[c(i)]) * sv[c(i)])));
  assert.throws(() => quantize(x, placeholder('s2', [2]), undefined, 1, { qmin: 0, qmax: 255 }), /per axis it must be \[3\]/);
});

test('requantize an int32 accumulator by a per-channel multiplier', () => {
  const acc = placeholder('acc', [1, 2, 3], 'int32'), m = placeholder('m', [2]), z = placeholder('z', [], 'int32');
  const av = Int32Array.of(-5000, 0, 77, 1234, 99999, -3), mv = Float32Array.of(0.01, 0.0005);
  const got = run(requantize(acc, m, z, 1, { qmin: -128, qmax: 127 }), [[acc, av], [m, mv], [z, Int32Array.of(-1)]]);
  assert.equal([...got], [...av].map((v, i) => sat(rint(Math.fround(v * mv[Math.floor(i / 3)])) - 1, -128, 127)));
});

test('DynamicQuantizeLinear parameters: range widened to hold 0, scale (hi - lo) / 255, zero point rounded and clamped; scale 1 for an all-zero input', () => {
  const x = placeholder('x', [6]);
  const lo = reduce(x, 'min', [0], false), hi = reduce(x, 'max', [0], false);
  const scale = dynamicQParams(lo, hi, 'scale');
  const zp = dynamicQParams(lo, scale, 'zero_point');
  for (const xs of [[0, 2, -3, -2.5, 1.34, 0.5], [1, 2, 3, 4, 5, 6], [-1, -2, -3, -4, -5, -6], [0, 0, 0, 0, 0, 0], [-0.1, 0.3, 0.07, 0, 0.2, -0.05]]) {
    const data = Float32Array.from(xs);
    const mn = Math.min(0, Math.min(...data)), mx = Math.max(0, Math.max(...data));
    const want = mx === mn ? 1 : Math.fround(Math.fround(mx - mn) / 255);
    const s = run(scale, [[x, data]])[0];
    assert.is(s, want, `scale of [${xs.join(', ')}]`);
    assert.is(run(zp, [[x, data]])[0], rint(sat(Math.fround(0 - Math.fround(mn / want)), 0, 255)), `zero point of [${xs.join(', ')}]`);
  }
});

test.run();
