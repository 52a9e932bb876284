// Reduction operators (conv2d, depthwise, dense, batch_matmul, pooling, softmax,
// batch_norm) evaluated by the reference evaluator on small shapes, against
//  - a few cases computed by hand (the numbers can be checked by eye), and
//  - naive float64 implementations written here with plain loops over the mathematical
//    definition (they share nothing with the IR).
// Tolerance: the evaluator computes in float64 and rounds each stored element to float32,
// so results agree with float64 to about 1e-7 relative; we allow |got - want| <= 1e-6 *
// (|want| + 1).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { numElements, placeholder, type Tensor } from '../ir/tensor';
import {
  adaptivePool2d, batchMatmul, batchNorm, conv2dNCHW, conv2dNHWC, dense, depthwiseConv2dNCHW, depthwiseConv2dNHWC,
  pool2d, softmax, type Conv2dParams, type Layout, type Pool2dParams,
} from './nn';

// ---------------------------------------------------------------- helpers

/** Deterministic uniform values in [-1, 1) (mulberry32). */
function random(n: number, seed: number): Float32Array {
  let s = seed >>> 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    out[i] = (((t ^ (t >>> 14)) >>> 0) / 4294967296) * 2 - 1;
  }
  return out;
}

/** Evaluate the DAG of `out` with the given input data; returns `out`'s buffer. */
function run(out: Tensor, inputs: [Tensor, ArrayLike<number>][]): Float32Array {
  const result = evaluate(new ComputeDAG([out]), new Map(inputs.map(([t, d]) => [t, Float32Array.from(d)])));
  return result.get(out.name) as Float32Array;
}

function close(got: ArrayLike<number>, want: ArrayLike<number>, what: string, tol = 1e-6): void {
  assert.is(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= tol * (Math.abs(want[i]) + 1))) {
      assert.unreachable(`${what}: element ${i} is ${got[i]}, expected ${want[i]}`);
    }
  }
}

const conv = (s: [number, number], p: [number, number, number, number], d: [number, number] = [1, 1]): Conv2dParams =>
  ({ strides: s, padding: p, dilation: d });

const outDim = (n: number, k: number, s: number, d: number, p0: number, p1: number): number =>
  Math.floor((n + p0 + p1 - d * (k - 1) - 1) / s) + 1;

// ---------------------------------------------------------------- naive references

/** conv2d, data NHWC, kernel HWIO with I = C/groups, output NHWC. */
function naiveConvNHWC(x: Float32Array, [N, H, W, C]: number[], k: Float32Array, [KH, KW, KC, CO]: number[],
  [sh, sw]: number[], [pt, pl, pb, pr]: number[], [dh, dw]: number[], groups: number): Float64Array {
  const OH = outDim(H, KH, sh, dh, pt, pb), OW = outDim(W, KW, sw, dw, pl, pr);
  const out = new Float64Array(N * OH * OW * CO);
  for (let n = 0; n < N; n++) for (let oh = 0; oh < OH; oh++) for (let ow = 0; ow < OW; ow++) for (let co = 0; co < CO; co++) {
    const g = Math.floor(co / (CO / groups));
    let acc = 0;
    for (let kh = 0; kh < KH; kh++) for (let kw = 0; kw < KW; kw++) for (let kc = 0; kc < KC; kc++) {
      const ih = oh * sh + kh * dh - pt, iw = ow * sw + kw * dw - pl;
      if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
      const ci = g * KC + kc;
      acc += x[((n * H + ih) * W + iw) * C + ci] * k[((kh * KW + kw) * KC + kc) * CO + co];
    }
    out[((n * OH + oh) * OW + ow) * CO + co] = acc;
  }
  return out;
}

/** conv2d, data NCHW, kernel OIHW with I = C/groups, output NCHW. */
function naiveConvNCHW(x: Float32Array, [N, C, H, W]: number[], k: Float32Array, [CO, KC, KH, KW]: number[],
  [sh, sw]: number[], [pt, pl, pb, pr]: number[], [dh, dw]: number[], groups: number): Float64Array {
  const OH = outDim(H, KH, sh, dh, pt, pb), OW = outDim(W, KW, sw, dw, pl, pr);
  const out = new Float64Array(N * CO * OH * OW);
  for (let n = 0; n < N; n++) for (let co = 0; co < CO; co++) for (let oh = 0; oh < OH; oh++) for (let ow = 0; ow < OW; ow++) {
    const g = Math.floor(co / (CO / groups));
    let acc = 0;
    for (let kc = 0; kc < KC; kc++) for (let kh = 0; kh < KH; kh++) for (let kw = 0; kw < KW; kw++) {
      const ih = oh * sh + kh * dh - pt, iw = ow * sw + kw * dw - pl;
      if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
      const ci = g * KC + kc;
      acc += x[((n * C + ci) * H + ih) * W + iw] * k[((co * KC + kc) * KH + kh) * KW + kw];
    }
    out[((n * CO + co) * OH + oh) * OW + ow] = acc;
  }
  return out;
}

/** Depthwise conv2d; output channel c*M+q reads input channel c with filter (c, q). */
function naiveDepthwise(layout: Layout, x: Float32Array, [N, H, W, C]: number[], k: Float32Array, [KH, KW, M]: number[],
  [sh, sw]: number[], [pt, pl, pb, pr]: number[], [dh, dw]: number[]): Float64Array {
  const OH = outDim(H, KH, sh, dh, pt, pb), OW = outDim(W, KW, sw, dw, pl, pr), CO = C * M;
  const xAt = (n: number, h: number, w: number, c: number) =>
    (layout === 'NHWC' ? x[((n * H + h) * W + w) * C + c] : x[((n * C + c) * H + h) * W + w]);
  // NHWC kernel [KH, KW, C, M]; NCHW kernel [C, M, KH, KW].
  const kAt = (kh: number, kw: number, c: number, q: number) =>
    (layout === 'NHWC' ? k[((kh * KW + kw) * C + c) * M + q] : k[((c * M + q) * KH + kh) * KW + kw]);
  const out = new Float64Array(N * OH * OW * CO);
  for (let n = 0; n < N; n++) for (let oh = 0; oh < OH; oh++) for (let ow = 0; ow < OW; ow++) for (let co = 0; co < CO; co++) {
    const c = Math.floor(co / M), q = co % M;
    let acc = 0;
    for (let kh = 0; kh < KH; kh++) for (let kw = 0; kw < KW; kw++) {
      const ih = oh * sh + kh * dh - pt, iw = ow * sw + kw * dw - pl;
      if (ih >= 0 && ih < H && iw >= 0 && iw < W) acc += xAt(n, ih, iw, c) * kAt(kh, kw, c, q);
    }
    out[layout === 'NHWC' ? ((n * OH + oh) * OW + ow) * CO + co : ((n * CO + co) * OH + oh) * OW + ow] = acc;
  }
  return out;
}

/** Pooling over H, W of an [N, H, W, C] (or [N, C, H, W]) tensor; padded cells are skipped. */
function naivePool(layout: Layout, x: Float32Array, [N, H, W, C]: number[], kind: 'max' | 'avg', [KH, KW]: number[],
  [sh, sw]: number[], [pt, pl, pb, pr]: number[], countIncludePad: boolean): Float64Array {
  const OH = outDim(H, KH, sh, 1, pt, pb), OW = outDim(W, KW, sw, 1, pl, pr);
  const at = (n: number, h: number, w: number, c: number) =>
    (layout === 'NHWC' ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w);
  const outAt = (n: number, h: number, w: number, c: number) =>
    (layout === 'NHWC' ? ((n * OH + h) * OW + w) * C + c : ((n * C + c) * OH + h) * OW + w);
  const out = new Float64Array(N * OH * OW * C);
  for (let n = 0; n < N; n++) for (let oh = 0; oh < OH; oh++) for (let ow = 0; ow < OW; ow++) for (let c = 0; c < C; c++) {
    let acc = kind === 'max' ? -Infinity : 0, count = 0;
    for (let kh = 0; kh < KH; kh++) for (let kw = 0; kw < KW; kw++) {
      const ih = oh * sh + kh - pt, iw = ow * sw + kw - pl;
      if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
      const val = x[at(n, ih, iw, c)];
      acc = kind === 'max' ? Math.max(acc, val) : acc + val;
      count++;
    }
    out[outAt(n, oh, ow, c)] = kind === 'max' ? acc : acc / (countIncludePad ? KH * KW : count);
  }
  return out;
}

/** Adaptive pooling: output cell i covers input [floor(i*in/out), ceil((i+1)*in/out)). */
function naiveAdaptive(layout: Layout, x: Float32Array, [N, H, W, C]: number[], [OH, OW]: number[], kind: 'max' | 'avg'): Float64Array {
  const at = (n: number, h: number, w: number, c: number) =>
    (layout === 'NHWC' ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w);
  const outAt = (n: number, h: number, w: number, c: number) =>
    (layout === 'NHWC' ? ((n * OH + h) * OW + w) * C + c : ((n * C + c) * OH + h) * OW + w);
  const out = new Float64Array(N * OH * OW * C);
  for (let n = 0; n < N; n++) for (let oh = 0; oh < OH; oh++) for (let ow = 0; ow < OW; ow++) for (let c = 0; c < C; c++) {
    const h0 = Math.floor((oh * H) / OH), h1 = Math.ceil(((oh + 1) * H) / OH);
    const w0 = Math.floor((ow * W) / OW), w1 = Math.ceil(((ow + 1) * W) / OW);
    let acc = kind === 'max' ? -Infinity : 0;
    for (let h = h0; h < h1; h++) for (let w = w0; w < w1; w++) {
      acc = kind === 'max' ? Math.max(acc, x[at(n, h, w, c)]) : acc + x[at(n, h, w, c)];
    }
    out[outAt(n, oh, ow, c)] = kind === 'max' ? acc : acc / ((h1 - h0) * (w1 - w0));
  }
  return out;
}

// ---------------------------------------------------------------- hand-computed cases

// x = 1 2 3      k = 1 2
//     4 5 6          3 4
//     7 8 9
const X33 = [1, 2, 3, 4, 5, 6, 7, 8, 9];
const K22 = [1, 2, 3, 4];

test('by hand: 1x3x3x1 conv with a 2x2 kernel, no padding', () => {
  const x = placeholder('x', [1, 3, 3, 1]), k = placeholder('k', [2, 2, 1, 1]);
  // out[0,0] = 1*1 + 2*2 + 4*3 + 5*4 = 37, then 47, 67, 77
  assert.equal([...run(conv2dNHWC(x, k, conv([1, 1], [0, 0, 0, 0])), [[x, X33], [k, K22]])], [37, 47, 67, 77]);
});

test('by hand: same conv with padding 1 and stride 2', () => {
  const x = placeholder('x', [1, 3, 3, 1]), k = placeholder('k', [2, 2, 1, 1]);
  // windows start at rows/cols -1 and 1:
  //   (-1,-1): only x[0,0]*k[1,1] = 1*4 = 4       (-1, 1): x[0,1]*k[1,0] + x[0,2]*k[1,1] = 6 + 12 = 18
  //   ( 1,-1): x[1,0]*k[0,1] + x[2,0]*k[1,1] = 8 + 28 = 36     (1, 1): 5*1 + 6*2 + 8*3 + 9*4 = 77
  assert.equal([...run(conv2dNHWC(x, k, conv([2, 2], [1, 1, 1, 1])), [[x, X33], [k, K22]])], [4, 18, 36, 77]);
  // NCHW with OIHW kernel: a single channel, so the same numbers.
  const xc = placeholder('x', [1, 1, 3, 3]), kc = placeholder('k', [1, 1, 2, 2]);
  assert.equal([...run(conv2dNCHW(xc, kc, conv([2, 2], [1, 1, 1, 1])), [[xc, X33], [kc, K22]])], [4, 18, 36, 77]);
});

test('by hand: dilation 2 takes the corners of a 3x3 window', () => {
  const x = placeholder('x', [1, 3, 3, 1]), k = placeholder('k', [2, 2, 1, 1]);
  // taps x[0,0], x[0,2], x[2,0], x[2,2] = 1*1 + 3*2 + 7*3 + 9*4 = 64
  assert.equal([...run(conv2dNHWC(x, k, conv([1, 1], [0, 0, 0, 0], [2, 2])), [[x, X33], [k, K22]])], [64]);
});

test('by hand: pooling on the 3x3 grid', () => {
  const x = placeholder('x', [1, 3, 3, 1]);
  const p = (o: Partial<Pool2dParams>): Pool2dParams =>
    ({ kind: 'max', kernel: [2, 2], strides: [1, 1], padding: [0, 0, 0, 0], layout: 'NHWC', ...o });
  assert.equal([...run(pool2d(x, p({})), [[x, X33]])], [5, 6, 8, 9]);
  assert.equal([...run(pool2d(x, p({ kind: 'avg' })), [[x, X33]])], [3, 4, 6, 7]);
  // 3x3 window, padding 1: corner (0,0) sees 1 2 4 5 = 12
  const avg = (countIncludePad: boolean) =>
    run(pool2d(x, p({ kind: 'avg', kernel: [3, 3], padding: [1, 1, 1, 1], countIncludePad })), [[x, X33]]);
  close(avg(false), [12 / 4, 21 / 6, 16 / 4, 27 / 6, 45 / 9, 33 / 6, 24 / 4, 39 / 6, 28 / 4], 'exclude pad');
  close(avg(true), [12 / 9, 21 / 9, 16 / 9, 27 / 9, 45 / 9, 33 / 9, 24 / 9, 39 / 9, 28 / 9], 'include pad');
});

test('by hand: dense, softmax, adaptive 5 -> 3, batch norm', () => {
  const a = placeholder('a', [2, 2]), w = placeholder('w', [3, 2]);
  // [1 2; 3 4] x [1 0; 0 1; 1 1]^T
  assert.equal([...run(dense(a, w), [[a, [1, 2, 3, 4]], [w, [1, 0, 0, 1, 1, 1]]])], [1, 2, 3, 3, 4, 7]);
  // softmax(0, ln 2, ln 3) = (1, 2, 3) / 6
  const s = placeholder('s', [1, 3]);
  close(run(softmax(s), [[s, [0, Math.log(2), Math.log(3)]]]), [1 / 6, 2 / 6, 3 / 6], 'softmax');
  // width 5 -> 3: windows [0,2) [1,4) [3,5)
  const r = placeholder('r', [1, 1, 5, 1]);
  close(run(adaptivePool2d(r, [1, 3], 'avg', 'NHWC'), [[r, [1, 2, 3, 4, 5]]]), [1.5, 3, 4.5], 'adaptive avg');
  assert.equal([...run(adaptivePool2d(r, [1, 3], 'max', 'NHWC'), [[r, [1, 2, 3, 4, 5]]])], [2, 4, 5]);
  // (2 - 1) / sqrt(3 + 1) * 2 + 1 = 2 ; (5 - 1) / 2 * 2 + 1 = 5
  const x = placeholder('x', [2, 1]);
  const g = placeholder('g', [1]), b = placeholder('b', [1]), m = placeholder('m', [1]), vr = placeholder('v', [1]);
  assert.equal([...run(batchNorm(x, g, b, m, vr, 1, 1), [[x, [2, 5]], [g, [2]], [b, [1]], [m, [1]], [vr, [3]]])], [2, 5]);
});

// ---------------------------------------------------------------- against naive loops

test('conv2d NHWC: stride 2, asymmetric padding, dilation 2, groups 2', () => {
  const cases: { x: number[]; k: number[]; s: [number, number]; p: [number, number, number, number]; d: [number, number]; g: number }[] = [
    { x: [1, 7, 6, 3], k: [3, 3, 3, 4], s: [2, 2], p: [1, 0, 2, 1], d: [1, 1], g: 1 },
    { x: [2, 7, 7, 2], k: [3, 2, 2, 3], s: [1, 2], p: [2, 2, 2, 2], d: [2, 2], g: 1 },
    { x: [1, 6, 5, 4], k: [3, 3, 2, 6], s: [2, 1], p: [0, 1, 1, 0], d: [1, 2], g: 2 },
  ];
  cases.forEach((c, i) => {
    const x = placeholder('x', c.x), k = placeholder('k', c.k);
    const xd = random(numElements(c.x), 10 + i), kd = random(numElements(c.k), 20 + i);
    const out = conv2dNHWC(x, k, conv(c.s, c.p, c.d), c.g);
    close(run(out, [[x, xd], [k, kd]]), naiveConvNHWC(xd, c.x, kd, c.k, c.s, c.p, c.d, c.g), `case ${i}`);
    assert.is(out.name, c.g === 1 ? 'conv2d_nhwc' : 'group_conv2d_nhwc');
  });
});

test('conv2d NCHW: stride 2, asymmetric padding, dilation 2, groups 2', () => {
  const cases: { x: number[]; k: number[]; s: [number, number]; p: [number, number, number, number]; d: [number, number]; g: number }[] = [
    { x: [1, 3, 7, 6], k: [4, 3, 3, 3], s: [2, 2], p: [1, 0, 2, 1], d: [1, 1], g: 1 },
    { x: [2, 2, 7, 7], k: [3, 2, 3, 2], s: [1, 2], p: [2, 2, 2, 2], d: [2, 2], g: 1 },
    { x: [1, 4, 6, 5], k: [6, 2, 3, 3], s: [2, 1], p: [0, 1, 1, 0], d: [1, 2], g: 2 },
  ];
  cases.forEach((c, i) => {
    const x = placeholder('x', c.x), k = placeholder('k', c.k);
    const xd = random(numElements(c.x), 30 + i), kd = random(numElements(c.k), 40 + i);
    close(run(conv2dNCHW(x, k, conv(c.s, c.p, c.d), c.g), [[x, xd], [k, kd]]), naiveConvNCHW(xd, c.x, kd, c.k, c.s, c.p, c.d, c.g), `case ${i}`);
  });
});

test('conv2d: shape errors are clear', () => {
  const x = placeholder('x', [1, 4, 4, 3]);
  assert.throws(() => conv2dNHWC(x, placeholder('k', [3, 3, 2, 4]), conv([1, 1], [0, 0, 0, 0])), /2 input channels x 1 groups, data has 3/);
  assert.throws(() => conv2dNHWC(x, placeholder('k', [5, 5, 3, 4]), conv([1, 1], [0, 0, 0, 0])), /does not fit/);
  assert.throws(() => conv2dNHWC(placeholder('x', [1, 4, 4, 4]), placeholder('k', [1, 1, 2, 3]), conv([1, 1], [0, 0, 0, 0]), 2), /not divisible into 2 groups/);
});

test('depthwise NHWC / NCHW: multiplier 1 and 2, stride 2, padding, dilation', () => {
  const cases: { h: number; w: number; c: number; m: number; k: number; s: [number, number]; p: [number, number, number, number]; d: [number, number] }[] = [
    { h: 7, w: 7, c: 3, m: 1, k: 3, s: [1, 1], p: [1, 1, 1, 1], d: [1, 1] },
    { h: 7, w: 6, c: 3, m: 1, k: 3, s: [2, 2], p: [1, 1, 1, 1], d: [1, 1] },
    { h: 6, w: 7, c: 2, m: 2, k: 3, s: [2, 2], p: [0, 1, 1, 0], d: [1, 1] },
    { h: 7, w: 7, c: 2, m: 2, k: 2, s: [1, 2], p: [1, 1, 1, 1], d: [2, 2] },
  ];
  cases.forEach((c, i) => {
    const xd = random(2 * c.h * c.w * c.c, 50 + i), kd = random(c.k * c.k * c.c * c.m, 60 + i);
    const x1 = placeholder('x', [2, c.h, c.w, c.c]), k1 = placeholder('k', [c.k, c.k, c.c, c.m]);
    close(run(depthwiseConv2dNHWC(x1, k1, conv(c.s, c.p, c.d)), [[x1, xd], [k1, kd]]),
      naiveDepthwise('NHWC', xd, [2, c.h, c.w, c.c], kd, [c.k, c.k, c.m], c.s, c.p, c.d), `NHWC case ${i}`);
    const x2 = placeholder('x', [2, c.c, c.h, c.w]), k2 = placeholder('k', [c.c, c.m, c.k, c.k]);
    close(run(depthwiseConv2dNCHW(x2, k2, conv(c.s, c.p, c.d)), [[x2, xd], [k2, kd]]),
      naiveDepthwise('NCHW', xd, [2, c.h, c.w, c.c], kd, [c.k, c.k, c.m], c.s, c.p, c.d), `NCHW case ${i}`);
  });
});

test('dense: [M, K] x [N, K]^T', () => {
  const [M, N, K] = [3, 5, 7];
  const a = placeholder('a', [M, K]), w = placeholder('w', [N, K]);
  const ad = random(M * K, 70), wd = random(N * K, 71);
  const want = new Float64Array(M * N);
  for (let i = 0; i < M; i++) for (let j = 0; j < N; j++) for (let k = 0; k < K; k++) want[i * N + j] += ad[i * K + k] * wd[j * K + k];
  close(run(dense(a, w), [[a, ad], [w, wd]]), want, 'dense');
  assert.throws(() => dense(a, placeholder('w', [N, K + 1])), /K=7, weight has K=8/);
});

test('batch_matmul: [B, M, K] x [B, N, K]^T, batch 1 broadcasts on either side', () => {
  const [M, N, K] = [2, 3, 4];
  for (const [bx, by] of [[3, 3], [1, 3], [3, 1]]) {
    const x = placeholder('x', [bx, M, K]), y = placeholder('y', [by, N, K]);
    const xd = random(bx * M * K, 80 + bx), yd = random(by * N * K, 90 + by);
    const B = Math.max(bx, by);
    const want = new Float64Array(B * M * N);
    for (let b = 0; b < B; b++) for (let i = 0; i < M; i++) for (let j = 0; j < N; j++) for (let k = 0; k < K; k++) {
      want[(b * M + i) * N + j] += xd[((bx === 1 ? 0 : b) * M + i) * K + k] * yd[((by === 1 ? 0 : b) * N + j) * K + k];
    }
    const out = batchMatmul(x, y);
    assert.equal(out.shape, [B, M, N]);
    close(run(out, [[x, xd], [y, yd]]), want, `batch ${bx} x ${by}`);
  }
  assert.throws(() => batchMatmul(placeholder('x', [2, 2, 4]), placeholder('y', [3, 2, 4])), /batch mismatch 2 vs 3/);
});

test('max / avg pool, NHWC and NCHW, with padding, count_include_pad true and false', () => {
  const cases: { k: [number, number]; s: [number, number]; p: [number, number, number, number] }[] = [
    { k: [3, 3], s: [2, 2], p: [1, 1, 1, 1] },
    { k: [2, 3], s: [1, 2], p: [0, 1, 1, 0] },
    { k: [2, 2], s: [2, 2], p: [0, 0, 0, 0] },
  ];
  const [N, H, W, C] = [2, 7, 6, 3];
  cases.forEach((c, i) => {
    const xd = random(N * H * W * C, 100 + i);
    for (const layout of ['NHWC', 'NCHW'] as const) {
      const x = placeholder('x', layout === 'NHWC' ? [N, H, W, C] : [N, C, H, W]);
      for (const [kind, cip] of [['max', false], ['avg', true], ['avg', false]] as const) {
        const out = pool2d(x, { kind, kernel: c.k, strides: c.s, padding: c.p, countIncludePad: cip, layout });
        close(run(out, [[x, xd]]), naivePool(layout, xd, [N, H, W, C], kind, c.k, c.s, c.p, cip), `case ${i} ${layout} ${kind} include_pad=${cip}`);
      }
    }
  });
});

test('max pool of all-negative data is not clipped by the padding value', () => {
  const x = placeholder('x', [1, 2, 2, 1]);
  const out = pool2d(x, { kind: 'max', kernel: [3, 3], strides: [1, 1], padding: [1, 1, 1, 1], layout: 'NHWC' });
  assert.equal([...run(out, [[x, [-5, -6, -7, -8]]])], [-5, -5, -5, -5]);
});

test('adaptive avg / max pool: uniform (4 -> 2) and non-uniform (5 -> 3, 7 -> 4, 3 -> 5) windows', () => {
  const shapes: { hw: [number, number]; out: [number, number] }[] = [
    { hw: [4, 6], out: [2, 3] },
    { hw: [5, 7], out: [3, 4] },
    { hw: [3, 5], out: [5, 2] },
  ];
  const [N, C] = [2, 3];
  shapes.forEach((s, i) => {
    const xd = random(N * s.hw[0] * s.hw[1] * C, 110 + i);
    for (const layout of ['NHWC', 'NCHW'] as const) {
      const x = placeholder('x', layout === 'NHWC' ? [N, ...s.hw, C] : [N, C, ...s.hw]);
      for (const kind of ['avg', 'max'] as const) {
        close(run(adaptivePool2d(x, s.out, kind, layout), [[x, xd]]),
          naiveAdaptive(layout, xd, [N, ...s.hw, C], s.out, kind), `${s.hw} -> ${s.out} ${layout} ${kind}`);
      }
    }
  });
});

test('global pool (adaptive to 1x1)', () => {
  const [N, H, W, C] = [2, 3, 4, 5];
  const xd = random(N * H * W * C, 120);
  for (const layout of ['NHWC', 'NCHW'] as const) {
    const x = placeholder('x', layout === 'NHWC' ? [N, H, W, C] : [N, C, H, W]);
    for (const kind of ['avg', 'max'] as const) {
      const out = adaptivePool2d(x, [1, 1], kind, layout);
      assert.equal(out.shape, layout === 'NHWC' ? [N, 1, 1, C] : [N, C, 1, 1]);
      close(run(out, [[x, xd]]), naiveAdaptive(layout, xd, [N, H, W, C], [1, 1], kind), `${layout} ${kind}`);
    }
  }
});

/** Softmax along `axis` of a row-major tensor, in float64. */
function naiveSoftmax(x: ArrayLike<number>, shape: number[], axis: number): Float64Array {
  const inner = numElements(shape.slice(axis + 1)), n = shape[axis], outer = numElements(shape.slice(0, axis));
  const out = new Float64Array(x.length);
  for (let o = 0; o < outer; o++) for (let i = 0; i < inner; i++) {
    const at = (j: number) => (o * n + j) * inner + i;
    let m = -Infinity, total = 0;
    for (let j = 0; j < n; j++) m = Math.max(m, x[at(j)]);
    for (let j = 0; j < n; j++) total += Math.exp(x[at(j)] - m);
    for (let j = 0; j < n; j++) out[at(j)] = Math.exp(x[at(j)] - m) / total;
  }
  return out;
}

test('softmax: axis -1 and axis 1, rows sum to 1, large inputs do not overflow', () => {
  const x = placeholder('x', [3, 7]);
  const xd = random(21, 130).map((v) => v * 5);
  const last = run(softmax(x), [[x, xd]]);
  close(last, naiveSoftmax(xd, [3, 7], 1), 'axis -1');
  for (let r = 0; r < 3; r++) close([last.slice(r * 7, r * 7 + 7).reduce((a, b) => a + b, 0)], [1], `row ${r} sum`);

  const y = placeholder('y', [2, 4, 3, 2]);
  const yd = random(48, 131).map((v) => v * 5);
  const mid = run(softmax(y, 1), [[y, yd]]);
  close(mid, naiveSoftmax(yd, [2, 4, 3, 2], 1), 'axis 1');
  for (let n = 0; n < 2; n++) for (let i = 0; i < 6; i++) {
    let total = 0;
    for (let c = 0; c < 4; c++) total += mid[(n * 4 + c) * 6 + i];
    close([total], [1], `column ${n},${i} sum`);
  }
  // exp(1000) overflows float64; softmax subtracts the max first.
  const big = placeholder('big', [2, 3]);
  const bigData = [1000, 1001, 1002, 3e38, 3e38, -3e38];
  const out = run(softmax(big), [[big, bigData]]);
  assert.ok(out.every(Number.isFinite), `finite: ${[...out]}`);
  close(out, naiveSoftmax(bigData.map(Math.fround), [2, 3], 1), 'large');
  close(out.slice(3), [0.5, 0.5, 0], 'ties');
  assert.throws(() => softmax(big, 2), /axis 2 out of range for rank 2/);
});

test('batch_norm (inference) over channel axes 3 and 1', () => {
  const eps = 1e-5;
  for (const [shape, axis] of [[[2, 3, 2, 4], 3], [[2, 3, 2, 4], 1], [[2, 3, 2, 4], -1]] as [number[], number][]) {
    const a = axis < 0 ? axis + shape.length : axis;
    const C = shape[a];
    const x = placeholder('x', shape);
    const [g, b, m, vr] = ['gamma', 'beta', 'mean', 'var'].map((n) => placeholder(n, [C]));
    const xd = random(numElements(shape), 140), gd = random(C, 141), bd = random(C, 142), md = random(C, 143);
    const vd = random(C, 144).map((v) => v + 1.5);
    const inner = numElements(shape.slice(a + 1));
    const want = Array.from(xd, (v, i) => {
      const c = Math.floor(i / inner) % C;
      return ((v - md[c]) / Math.sqrt(vd[c] + Math.fround(eps))) * gd[c] + bd[c];
    });
    close(run(batchNorm(x, g, b, m, vr, axis, eps), [[x, xd], [g, gd], [b, bd], [m, md], [vr, vd]]), want, `axis ${axis}`);
  }
  assert.throws(() => batchNorm(placeholder('x', [1, 3]), ...['g', 'b', 'm', 'v'].map((n) => placeholder(n, [2])) as [Tensor, Tensor, Tensor, Tensor], 1, 1e-5),
    /must have shape \[3\]/);
});

test.run();
