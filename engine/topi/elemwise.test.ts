// Broadcasting binary operators and elementwise activations against hand-computed values
// and a naive NumPy-style broadcast written here. Tolerance as in nn.test.ts:
// |got - want| <= 1e-6 * (|want| + 1) against float64 (2e-6 for the transcendental ones
// against their float64 definitions, 1e-5 for the floor mod's float32 fmod). The ONNX math
// computes also compile to C with default schedules and equal the reference within 1e-5.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { numElements, placeholder, type Tensor } from '../ir/tensor';
import { affine, binary, broadcastShape, celu, clip, elu, floatMod, gelu, leakyRelu, math, power, powerScalar, prelu, relu, selu, sigmoid, tanh, thresholdedRelu, unaryOp, UNARY_KINDS, type BinaryKind, type UnaryKind } from './elemwise';
import { State } from '../schedule/state';
import { defaultSchedule } from '../schedule/defaults';
import { lower } from '../codegen/lower';
import { renderKernel } from '../codegen/c';
import { runKernel } from '../codegen/run-c';

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
    if (!(got[i] === want[i] || Math.abs(got[i] - want[i]) <= tol * (Math.abs(want[i]) + 1))) {
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

/** The float64 definition of each UnaryKind (ONNX's, on float32 inputs). */
const UNARY_REF: Record<UnaryKind, (x: number) => number> = {
  sqrt: Math.sqrt, exp: Math.exp, log: Math.log, erf: (x) => erfRef(x), floor: Math.floor, ceil: Math.ceil,
  round: (x) => { const r = Math.round(x); return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r; },
  sin: Math.sin, cos: Math.cos, tan: Math.tan, atan: Math.atan, negative: (x) => -x, abs: Math.abs,
  sign: (x) => (x > 0 ? 1 : x < 0 ? -1 : x), reciprocal: (x) => 1 / x, softsign: (x) => x / (1 + Math.abs(x)),
  softplus: (x) => Math.log(1 + Math.exp(x)), mish: (x) => x * Math.tanh(Math.log(1 + Math.exp(x))),
  round_f16: (x) => nearestBinary(x, 10, -14), round_bf16: (x) => nearestBinary(x, 7, -126),
  // The 8/4-bit floats: [-3, 3] lies in each one's range (float4 e2m1's is [-6, 6]).
  round_f8e4m3fn: (x) => nearestBinary(x, 3, -6), round_f8e4m3fnuz: (x) => nearestBinary(x, 3, -7),
  round_f8e5m2: (x) => nearestBinary(x, 2, -14), round_f8e5m2fnuz: (x) => nearestBinary(x, 2, -15),
  round_f8e4m3fn_nosat: (x) => nearestBinary(x, 3, -6), round_f8e4m3fnuz_nosat: (x) => nearestBinary(x, 3, -7),
  round_f8e5m2_nosat: (x) => nearestBinary(x, 2, -14), round_f8e5m2fnuz_nosat: (x) => nearestBinary(x, 2, -15),
  round_f4e2m1: (x) => nearestBinary(x, 1, 0),
};
/** The nearest binary float with `fraction` fraction bits and smallest normal exponent `minExp` (finite range only), ties to even, by arithmetic. */
function nearestBinary(x: number, fraction: number, minExp: number): number {
  if (x === 0) return x;
  const ulp = 2 ** (Math.max(Math.floor(Math.log2(Math.abs(x))), minExp) - fraction);
  const q = x / ulp, r = Math.round(q);
  return (r - q === 0.5 && r % 2 !== 0 ? r - 1 : r) * ulp;
}
/** erf by its series (|x| < 3 here), independent of the evaluator's. */
function erfRef(x: number): number {
  let term = x, total = x;
  for (let n = 1; n < 200; n++) { term *= (-x * x) / n; total += term / (2 * n + 1); }
  return total * 2 / Math.sqrt(Math.PI);
}

test('ONNX unary math over [-3, 3] (positive-only ones over (0, 3]) against their definitions', () => {
  const n = 64;
  const xs = random(n, 7).map((u) => 3 * u);
  // Halves for round's ties, and 0.
  xs.set([-2.5, -1.5, -0.5, 0, 0.5, 1.5, 2.5], 0);
  for (const kind of UNARY_KINDS) {
    const data = ['sqrt', 'log'].includes(kind) ? xs.map((v) => Math.abs(v) + 0.01) : xs;
    const x = placeholder('x', [n]);
    const out = unaryOp(kind, x);
    assert.is(out.name, `T_${kind}`);
    close(run(out, [[x, data]]), [...data].map(UNARY_REF[kind]), kind, 2e-6);
  }
  const x = placeholder('x', [4]);
  assert.equal([...run(unaryOp('round', x), [[x, [-2.5, 0.5, 1.5, 2.5]]])], [-2, 0, 2, 2]);
  assert.equal([...run(unaryOp('sign', x), [[x, [-2.5, 0, 1e-30, -1e-30]]])], [-1, 0, 1, -1]);
  // softplus where e^x overflows float32 and e^-x underflows: no inf, no loss.
  close(run(unaryOp('softplus', x), [[x, [100, -100, 90, 0]]]), [100, Math.exp(-100), 90, Math.LN2], 'softplus extremes');
  close(run(unaryOp('mish', x), [[x, [100, -100, 90, 0]]]), [100, -100 * Math.exp(-100), 90, 0], 'mish extremes');
});

test('negative, abs and sign of int32 tensors stay int32; float-only kinds refuse them', () => {
  const x = placeholder('x', [5], 'int32');
  for (const [kind, want] of [['negative', [3, 0, -4, 1, -7]], ['abs', [3, 0, 4, 1, 7]], ['sign', [-1, 0, 1, -1, 1]]] as const) {
    const out = unaryOp(kind, x);
    assert.is(out.dtype, 'int32');
    assert.equal([...evaluate(new ComputeDAG([out]), new Map([[x, Int32Array.from([-3, 0, 4, -1, 7])]])).get(out.name)!], [...want]);
  }
  assert.throws(() => unaryOp('sqrt', x), /sqrt: x is int32, only float32 is implemented/);
});

test('elu, selu, celu, thresholded_relu, gelu (none, tanh), prelu, power, fmod against their definitions', () => {
  const n = 48;
  const xs = random(n, 11).map((u) => 3 * u);
  const x = placeholder('x', [n]);
  const one = (t: Tensor, f: (v: number) => number, what: string): void => close(run(t, [[x, xs]]), [...xs].map(f), what, 2e-6);
  one(elu(x, 0.7), (v) => (v >= 0 ? v : 0.7 * (Math.exp(v) - 1)), 'elu');
  one(selu(x, 1.5, 0.25), (v) => 0.25 * (v > 0 ? v : 1.5 * Math.exp(v) - 1.5), 'selu');
  one(celu(x, 0.5), (v) => Math.max(0, v) + Math.min(0, 0.5 * (Math.exp(v / 0.5) - 1)), 'celu');
  one(thresholdedRelu(x, 0.25), (v) => (v > 0.25 ? v : 0), 'thresholded_relu');
  one(gelu(x, 'none'), (v) => 0.5 * v * (1 + erfRef(v / Math.SQRT2)), 'gelu');
  one(gelu(x, 'tanh'), (v) => 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v ** 3))), 'gelu tanh');
  for (const p of [1, 2, 3, 0.5, -1.5]) {
    const data = p === 0.5 || p === -1.5 ? xs.map(Math.abs) : xs;
    close(run(powerScalar(x, p), [[x, data]]), [...data].map((v) => v ** Math.fround(p)), `x ** ${p}`, 2e-6);
  }
  // Broadcasting: prelu's [C, 1, 1] slope over [N, C, H, W]; power's and fmod's exponents / divisors.
  const a = placeholder('a', [2, 3, 2, 4]), s = placeholder('s', [3, 1, 1]), e = placeholder('e', [4]);
  const ad = random(48, 12).map((u) => 2 * u), sd = Float32Array.from([0.1, -0.5, 2]), ed = Float32Array.from([2, -1, 0.5, 3]);
  close(run(prelu(a, s), [[a, ad], [s, sd]]), naiveBroadcast((v, k) => (v < 0 ? k * v : v), ad, [...a.shape], sd, [...s.shape]), 'prelu');
  assert.throws(() => prelu(e, s), /prelu: the slope \[3, 1, 1\] does not broadcast to the input \[4\]/);
  const pos = ad.map((v) => Math.abs(v) + 0.1);
  close(run(power(a, e), [[a, pos], [e, ed]]), naiveBroadcast((v, k) => v ** k, pos, [...a.shape], ed, [...e.shape]), 'power');
  const dv = Float32Array.from([1.5, -1.5, 0.75, -2.25]);
  close(run(floatMod(a, e, 'trunc'), [[a, ad], [e, dv]]), naiveBroadcast((v, k) => v % k, ad, [...a.shape], dv, [...e.shape]), 'fmod');
  close(run(floatMod(a, e, 'floor'), [[a, ad], [e, dv]]), naiveBroadcast((v, k) => v - Math.floor(v / k) * k, ad, [...a.shape], dv, [...e.shape]), 'floor mod', 1e-5);
  // An int32 exponent tensor is read as float.
  const ie = placeholder('ie', [4], 'int32');
  const ip = power(a, ie);
  const got = evaluate(new ComputeDAG([ip]), new Map<Tensor, Float32Array | Int32Array>([[a, pos], [ie, Int32Array.from([2, -1, 0, 3])]])).get(ip.name)!;
  close(got, naiveBroadcast((v, k) => v ** k, pos, [...a.shape], [2, -1, 0, 3], [...e.shape]), 'power by int32');
});

test('the new math compiled to C with default schedules (vector lanes, the two-argument calls included) equals the reference', () => {
  const a = placeholder('a', [4, 40]), b = placeholder('b', [40]);
  const ad = random(160, 21).map((u) => 3 * u), bd = random(40, 22).map((u) => (u >= 0 ? u + 0.5 : u - 0.5));
  const pos = ad.map((v) => Math.abs(v) + 0.1);
  const cases: [string, Tensor, Float32Array][] = [
    ...UNARY_KINDS.map((k): [string, Tensor, Float32Array] => [k, unaryOp(k, a), ['sqrt', 'log'].includes(k) ? pos : ad]),
    ['elu', elu(a, 0.7), ad], ['selu', selu(a, 1.5, 0.25), ad], ['celu', celu(a, 0.5), ad], ['thresholded_relu', thresholdedRelu(a, 0.25), ad],
    ['gelu', gelu(a, 'none'), ad], ['gelu tanh', gelu(a, 'tanh'), ad], ['x ** 3', powerScalar(a, 3), ad], ['x ** 0.5', powerScalar(a, 0.5), pos],
    ['x ** -1.5', powerScalar(a, -1.5), pos], ['power', power(a, b), pos], ['fmod', floatMod(a, b, 'trunc'), ad], ['floor mod', floatMod(a, b, 'floor'), ad],
    ['prelu', prelu(a, b), ad],
  ];
  let vectorCalls = 0;
  for (const [what, out, data] of cases) {
    const dag = new ComputeDAG([out]);
    const ins = dag.stages.filter((t) => t.op.kind === 'placeholder');
    const feed = ins.map((t) => (t === a ? data : bd));
    const kernel = lower(State.replay(dag, defaultSchedule(dag, { vectorLanes: 8 })), 'k');
    const src = renderKernel(kernel, { vectorLanes: 8 });
    if (/tt_v8_(pow|fmod)\(/.test(src)) vectorCalls++;
    const [got] = runKernel(kernel, feed, undefined, { vectorLanes: 8 });
    const want = evaluate(dag, new Map(ins.map((t, i) => [t, feed[i]]))).get(out.name)!;
    close(got, want, `${what} compiled`, 1e-5);
  }
  assert.ok(vectorCalls >= 1, 'a two-argument call was vectorised');
});

test('new math prints as TOPI does (tir intrinsics named as TVM names them)', () => {
  const x = placeholder('p0', [4]), y = placeholder('p1', [4]);
  const line = (t: Tensor) => new ComputeDAG([t]).print().split('\n').filter((l) => l.startsWith('T_'))[0];
  assert.is(line(unaryOp('round', x)), 'T_round(ax0) = tir.round(p0[ax0])');
  assert.is(line(power(x, y)), 'T_power(ax0) = tir.pow(p0[ax0], p1[ax0])');
  assert.is(line(floatMod(x, y, 'trunc')), 'T_fmod(ax0) = tir.fmod(p0[ax0], p1[ax0])');
});

test.run();
