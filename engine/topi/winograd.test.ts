// The Winograd conv against the direct conv: the matrices compute a 1-D correlation
// exactly, the weight transform is G g G^T, and the DAG evaluated by the reference
// evaluator equals conv2dNHWC within the Winograd bound (verify.ts WINOGRAD_TOLERANCE) on
// shapes whose output does not divide by m, with a bias + relu epilogue.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { numElements, placeholder, type Tensor } from '../ir/tensor';
import { WINOGRAD_TOLERANCE, compareOutput } from '../measure/verify';
import { uniform } from '../runtime/random';
import { binary, relu } from './elemwise';
import { conv2dNHWC } from './nn';
import { conv2dWinogradNHWC, winogradMatrices, winogradWeightTransform, type WinogradTile } from './winograd';

const matVec = (mat: number[][], x: number[]): number[] => mat.map((row) => row.reduce((s, c, j) => s + c * x[j], 0));

for (const m of [2, 4] as const) {
  test(`F(${m}, 3): A^T [(G g) ⊙ (B^T d)] is the correlation of d with g`, () => {
    const { alpha, BT, G, AT } = winogradMatrices(m);
    const g = [0.3, -1.2, 0.7];
    const d = Array.from({ length: alpha }, (_, i) => Math.sin(i + 1) * 2);
    const y = matVec(AT, matVec(G, g).map((u, i) => u * matVec(BT, d)[i]));
    const direct = Array.from({ length: m }, (_, o) => d[o] * g[0] + d[o + 1] * g[1] + d[o + 2] * g[2]);
    y.forEach((v, i) => assert.ok(Math.abs(v - direct[i]) < 1e-12, `output ${i}: ${v} vs ${direct[i]}`));
  });
}

test('the weight transform is G g G^T per (ci, co)', () => {
  const { alpha, G } = winogradMatrices(4);
  const [ci, co] = [2, 3];
  const kernel = uniform(9 * ci * co, 7, 0);
  const u = winogradWeightTransform(kernel, [3, 3, ci, co], 4);
  assert.is(u.length, alpha * alpha * ci * co);
  const c = 1, k = 2;
  for (let e = 0; e < alpha; e++) {
    for (let n = 0; n < alpha; n++) {
      let s = 0;
      for (let i = 0; i < 3; i++) for (let j = 0; j < 3; j++) s += G[e][i] * kernel[(i * 3 + j) * ci * co + c * co + k] * G[n][j];
      assert.ok(Math.abs(u[((e * alpha + n) * ci + c) * co + k] - s) <= 1e-6 * Math.abs(s) + 1e-7);
    }
  }
  assert.throws(() => winogradWeightTransform(kernel, [1, 1, 6, 9], 4), /\[3, 3, CI, CO\]/);
});

/** Direct and Winograd conv (+ bias + relu) on the same data; returns both outputs. */
function both(shape: [number, number, number, number], co: number, padding: [number, number, number, number], m: WinogradTile): [Float32Array, Float32Array] {
  const [, , , ci] = shape;
  const dataV = Float32Array.from(uniform(numElements(shape), 1, 0), (x) => x * 2 - 1);
  const kernelV = Float32Array.from(uniform(9 * ci * co, 1, 1), (x) => x - 0.5);
  const biasV = Float32Array.from(uniform(co, 1, 2), (x) => x - 0.5);
  const run = (build: (data: Tensor, bias: Tensor) => { out: Tensor; weight: [Tensor, Float32Array] }): Float32Array => {
    const data = placeholder('p0', shape), bias = placeholder('p2', [1, 1, 1, co]);
    const { out, weight } = build(data, bias);
    const dag = new ComputeDAG([out]);
    return evaluate(dag, new Map<Tensor, Float32Array>([[data, dataV], [weight[0], weight[1]], [bias, biasV]])).get(out.name) as Float32Array;
  };
  const direct = run((data, bias) => {
    const w = placeholder('p1', [3, 3, ci, co]);
    return { out: relu(binary('add', conv2dNHWC(data, w, { strides: [1, 1], padding, dilation: [1, 1] }), bias)), weight: [w, kernelV] };
  });
  const { alpha } = winogradMatrices(m);
  const wino = run((data, bias) => {
    const w = placeholder('p1', [alpha, alpha, ci, co]);
    return { out: relu(binary('add', conv2dWinogradNHWC(data, w, { padding, tileSize: m }), bias)), weight: [w, winogradWeightTransform(kernelV, [3, 3, ci, co], m)] };
  });
  return [direct, wino];
}

const SHAPES: [[number, number, number, number], number, [number, number, number, number]][] = [
  [[1, 8, 8, 4], 5, [1, 1, 1, 1]], // m divides 8
  [[1, 7, 7, 3], 4, [1, 1, 1, 1]], // 7: neither 2 nor 4 divides
  [[2, 5, 9, 6], 3, [1, 1, 1, 1]], // batch 2, H != W
  [[1, 6, 5, 2], 3, [0, 0, 0, 0]], // no padding: 4x3 output
  [[1, 9, 6, 3], 2, [1, 0, 2, 1]], // asymmetric padding
];

for (const m of [2, 4] as const) {
  test(`F(${m}x${m}, 3x3) + bias + relu equals the direct conv within the Winograd bound`, () => {
    for (const [shape, co, padding] of SHAPES) {
      const [direct, wino] = both(shape, co, padding, m);
      assert.is(wino.length, direct.length);
      const cmp = compareOutput(wino, direct, WINOGRAD_TOLERANCE);
      assert.ok(cmp.ok, `${shape.join('x')} pad ${padding.join(',')}: ${cmp.ok ? '' : cmp.message}`);
    }
  });
}

test('bad input: one clear message', () => {
  const data = placeholder('d', [1, 8, 8, 4]);
  assert.throws(() => conv2dWinogradNHWC(data, placeholder('k', [3, 3, 4, 4]), { padding: [1, 1, 1, 1], tileSize: 4 }), /F\(4x4, 3x3\) needs a transformed kernel of 6x6xCIxCO/);
  assert.throws(() => conv2dWinogradNHWC(data, placeholder('k', [6, 6, 5, 4]), { padding: [1, 1, 1, 1], tileSize: 4 }), /kernel has 5 input channels, data has 4/);
  assert.throws(() => winogradMatrices(3), /tile size 3 is not supported/);
});

test.run();
