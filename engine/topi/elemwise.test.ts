// Broadcasting binary operators and elementwise activations against hand-computed values
// and a naive NumPy-style broadcast written here. Tolerance as in nn.test.ts:
// |got - want| <= 1e-6 * (|want| + 1) against float64.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { numElements, placeholder, type Tensor } from '../ir/tensor';
import { affine, binary, broadcastShape, clip, leakyRelu, math, relu, sigmoid, tanh, type BinaryKind } from './elemwise';

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

function run(out: Tensor, inputs: [Tensor, ArrayLike<number>][]): Float32Array {
  return evaluate(new ComputeDAG([out]), new Map(inputs.map(([t, d]) => [t, Float32Array.from(d)]))).get(out.name) as Float32Array;
}

function close(got: ArrayLike<number>, want: ArrayLike<number>, what: string, tol = 1e-6): void {
  assert.is(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= tol * (Math.abs(want[i]) + 1))) {
      assert.unreachable(`${what}: element ${i} is ${got[i]}, expected ${want[i]}`);
    }
  }
}

const F: Record<BinaryKind, (a: number, b: number) => number> = {
  add: (a, b) => a + b,
  subtract: (a, b) => a - b,
  multiply: (a, b) => a * b,
  divide: (a, b) => a / b,
  maximum: Math.max,
  minimum: Math.min,
};

/** out[i] = f(a[bcast(i)], b[bcast(i)]) by NumPy's rule: align right, size-1 dims repeat. */
function naiveBroadcast(f: (a: number, b: number) => number, a: ArrayLike<number>, as: number[], b: ArrayLike<number>, bs: number[]): Float64Array {
  const rank = Math.max(as.length, bs.length);
  const pa = [...Array<number>(rank - as.length).fill(1), ...as], pb = [...Array<number>(rank - bs.length).fill(1), ...bs];
  const os = pa.map((d, i) => Math.max(d, pb[i]));
  const out = new Float64Array(numElements(os));
  for (let flat = 0; flat < out.length; flat++) {
    let rest = flat, ia = 0, ib = 0, sa = 1, sb = 1;
    for (let d = rank - 1; d >= 0; d--) {
      const idx = rest % os[d];
      rest = Math.floor(rest / os[d]);
      ia += (pa[d] === 1 ? 0 : idx) * sa; sa *= pa[d];
      ib += (pb[d] === 1 ? 0 : idx) * sb; sb *= pb[d];
    }
    out[flat] = f(a[ia], b[ib]);
  }
  return out;
}

test('by hand: [1, 3] + [2, 1] -> [2, 3], and [3] * scalar-like [1]', () => {
  const a = placeholder('a', [1, 3]), b = placeholder('b', [2, 1]);
  assert.equal([...run(binary('add', a, b), [[a, [1, 2, 3]], [b, [10, 20]]])], [11, 12, 13, 21, 22, 23]);
  const c = placeholder('c', [3]), d = placeholder('d', [1]);
  assert.equal([...run(binary('multiply', c, d), [[c, [1, 2, 3]], [d, [-2]]])], [-2, -4, -6]);
  assert.equal([...run(binary('subtract', c, d), [[c, [1, 2, 3]], [d, [-2]]])], [3, 4, 5]);
  assert.equal([...run(binary('divide', c, d), [[c, [1, 2, 3]], [d, [-2]]])], [-0.5, -1, -1.5]);
  assert.equal([...run(binary('maximum', c, d), [[c, [-3, -2, -1]], [d, [-2]]])], [-2, -2, -1]);
  assert.equal([...run(binary('minimum', c, d), [[c, [-3, -2, -1]], [d, [-2]]])], [-3, -2, -2]);
});

test('every binary op with same-rank and rank-different broadcasting', () => {
  const pairs: [number[], number[]][] = [
    [[2, 3, 4], [2, 3, 4]],
    [[2, 3, 4], [1, 3, 1]],
    [[2, 3, 4], [4]],
    [[3, 1], [2, 1, 4]],
    [[1, 3, 1, 1], [2, 1, 4, 1]],
    [[1, 1, 1, 5], [1, 2, 2, 5]],
    [[5], [1]],
  ];
  pairs.forEach(([as, bs], i) => {
    const ad = random(numElements(as), 200 + i);
    // Keep divisors away from zero.
    const bd = random(numElements(bs), 300 + i).map((x) => (x >= 0 ? x + 0.5 : x - 0.5));
    for (const kind of Object.keys(F) as BinaryKind[]) {
      const a = placeholder('a', as), b = placeholder('b', bs);
      const out = binary(kind, a, b);
      assert.is(out.name, `T_${kind}`);
      assert.equal(out.shape, broadcastShape(as, bs));
      close(run(out, [[a, ad], [b, bd]]), naiveBroadcast(F[kind], ad, as, bd, bs), `${kind} [${as}] [${bs}]`);
    }
  });
});

test('broadcast indices print as TOPI does (broadcast dims read 0, missing leading dims dropped)', () => {
  const out = binary('add', placeholder('p0', [2, 3, 4]), placeholder('p1', [3, 1]));
  assert.is(new ComputeDAG([out]).print().split('\n')[2], 'T_add(ax0, ax1, ax2) = (p0[ax0, ax1, ax2] + p1[ax1, 0])');
});

test('broadcastShape: NumPy rule and a clear error', () => {
  assert.equal(broadcastShape([8, 1, 6, 1], [7, 1, 5]), [8, 7, 6, 5]);
  assert.equal(broadcastShape([1], [3, 2]), [3, 2]);
  assert.throws(() => broadcastShape([2, 3], [3, 2]), /cannot broadcast \[2, 3\] with \[3, 2\]/);
});

test('relu / clip / leaky_relu by hand', () => {
  const x = placeholder('x', [6]);
  const xd = [-2, -0.5, 0, 0.25, 3, 7];
  assert.equal([...run(relu(x), [[x, xd]])], [0, 0, 0, 0.25, 3, 7]);
  assert.equal([...run(clip(x, 0, 6), [[x, xd]])], [0, 0, 0, 0.25, 3, 6]);
  assert.equal([...run(clip(x, -1, 1), [[x, xd]])], [-1, -0.5, 0, 0.25, 1, 1]);
  close(run(leakyRelu(x, 0.1), [[x, xd]]), [-0.2, -0.05, 0, 0.25, 3, 7], 'leaky');
  close(run(affine(x, 2, -1), [[x, xd]]), [-5, -2, -1, -0.5, 5, 13], 'affine');
});

test('sigmoid / tanh / exp / log / sqrt / rsqrt / fabs / erf against known values', () => {
  const x = placeholder('x', [5]);
  const xd = [-2, -0.5, 0, 0.5, 2];
  close(run(sigmoid(x), [[x, xd]]), [0.11920292202211755, 0.3775406687981454, 0.5, 0.6224593312018546, 0.8807970779778823], 'sigmoid');
  close(run(tanh(x), [[x, xd]]), [-0.9640275800758169, -0.46211715726000974, 0, 0.46211715726000974, 0.9640275800758169], 'tanh');
  close(run(math('exp', x), [[x, xd]]), [0.1353352832366127, 0.6065306597126334, 1, 1.6487212707001282, 7.38905609893065], 'exp');
  close(run(math('fabs', x), [[x, xd]]), [2, 0.5, 0, 0.5, 2], 'fabs');
  close(run(math('erf', x), [[x, xd]]), [-0.9953222650189527, -0.5204998778130465, 0, 0.5204998778130465, 0.9953222650189527], 'erf');
  const y = placeholder('y', [3]);
  close(run(math('log', y), [[y, [1, Math.E, 10]]]), [0, 1, 2.302585092994046], 'log');
  close(run(math('sqrt', y), [[y, [4, 2, 0.25]]]), [2, Math.SQRT2, 0.5], 'sqrt');
  close(run(math('rsqrt', y), [[y, [4, 2, 0.25]]]), [0.5, Math.SQRT1_2, 2], 'rsqrt');
  // Saturation, no NaN.
  const z = placeholder('z', [2]);
  assert.equal([...run(sigmoid(z), [[z, [-1000, 1000]]])], [0, 1]);
  assert.equal([...run(tanh(z), [[z, [-1000, 1000]]])], [-1, 1]);
});

test('activations print as TOPI does', () => {
  const x = placeholder('p0', [4]);
  const line = (t: Tensor) => new ComputeDAG([t]).print().split('\n')[1];
  assert.is(line(relu(x)), 'T_relu(ax0) = max(p0[ax0], 0f)');
  assert.is(line(clip(x, 0, 6)), 'T_clip(ax0) = max(min(p0[ax0], 6f), 0f)');
  assert.is(line(leakyRelu(x, 0.1)), 'T_leaky_relu(ax0) = select((p0[ax0] > 0f), p0[ax0], (p0[ax0]*0.1f))');
  assert.is(line(sigmoid(x)), 'T_sigmoid(ax0) = tir.sigmoid(p0[ax0])');
});

test.run();
