// The prelude's vector exp, erf, tanh and sigmoid (vector-math.ts) against the reference
// evaluator, at the error bounds vector-math.ts states: a C program built from C_PRELUDE
// with the kernels' flags applies each at 4, 8 and 16 lanes to a grid over the range that
// matters (every float where the result is not yet +-1, 0 or inf), to tiny and subnormal
// inputs, and to the special values (+-0, +-inf, NaN, the overflow and underflow edges); and
// the prelude's vector max and min (x86 instructions where GCC targets them) to their rule.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { placeholder } from '../ir/tensor';
import { unaryOp } from '../topi/elemwise';
import { runPreludeLoops } from './prelude-loops.fixture';

const FNS = ['exp', 'erf', 'tanh', 'sigmoid'] as const;
type Fn = typeof FNS[number];
const WIDTHS = [4, 8, 16] as const;

/** Runs tt_v<w>_<fn> of the prelude over `xs` (a multiple of 16 long) for every fn and width: results[fn][width]. */
function runVectorMath(xs: Float32Array): Record<Fn, Record<number, Float32Array>> {
  const pairs = FNS.flatMap((fn) => WIDTHS.map((w) => ({ fn, w })));
  const outs = runPreludeLoops(xs, pairs.map(({ fn, w }) => `for (long i = 0; i < n; i += ${w}) tt_v${w}_store(&out[i], tt_v${w}_${fn}(tt_v${w}_load(&in[i])));`));
  const results = Object.fromEntries(FNS.map((fn) => [fn, {}])) as Record<Fn, Record<number, Float32Array>>;
  pairs.forEach(({ fn, w }, k) => { results[fn][w] = outs[k]; });
  return results;
}

/**
 * The reference at each of `xs` in float64: the expressions the reference evaluator computes
 * (Math.exp, Math.tanh, 1 / (1 + Math.exp(-x))), before its float32 store. erf has no Math
 * counterpart: the evaluator's own (accurate to ~1e-15) is run, its float32 output used.
 */
function reference(fn: Fn, xs: Float32Array): Float64Array {
  if (fn === 'exp') return Float64Array.from(xs, (x) => Math.exp(x));
  if (fn === 'tanh') return Float64Array.from(xs, (x) => Math.tanh(x));
  if (fn === 'sigmoid') return Float64Array.from(xs, (x) => 1 / (1 + Math.exp(-x)));
  const x = placeholder('x', [xs.length]);
  const out = unaryOp('erf', x);
  return Float64Array.from(evaluate(new ComputeDAG([out]), new Map([[x, xs]])).get(out.name) as Float32Array);
}

/** A grid of n float32 values from lo to hi, padded with copies of hi to a multiple of 16. */
function grid(lo: number, hi: number, n: number): Float32Array {
  const xs = Array.from({ length: n }, (_, i) => lo + ((hi - lo) * i) / (n - 1));
  while (xs.length % 16 !== 0) xs.push(hi);
  return Float32Array.from(xs);
}

const MIN_NORMAL = 1.1754943508222875e-38;

/** Largest absolute and relative (over normal-valued references) errors of `got` against `want`. */
function errors(got: Float32Array, want: Float64Array): { abs: number; rel: number; at: number } {
  let abs = 0, rel = 0, at = 0;
  for (let i = 0; i < want.length; i++) {
    const a = Math.abs(got[i] - want[i]);
    if (!(a <= abs)) { abs = a; at = i; }
    if (Math.abs(want[i]) >= MIN_NORMAL) rel = Math.max(rel, a / Math.abs(want[i]));
  }
  return { abs, rel, at };
}

test('vector exp: relative error <= 1.5e-7 over the normal range, subnormal results to their last bit, at 4, 8 and 16 lanes', () => {
  const normal = grid(-87.3, 88.7, 200_000);
  const sub = grid(-104, -87.4, 4_000);
  const rn = runVectorMath(normal), rs = runVectorMath(sub);
  const wn = reference('exp', normal), ws = reference('exp', sub);
  for (const w of WIDTHS) {
    const e = errors(rn.exp[w], wn);
    assert.ok(e.rel <= 1.5e-7, `exp at ${w} lanes: relative error ${e.rel} (x = ${normal[e.at]})`);
    const s = errors(rs.exp[w], ws);
    assert.ok(s.abs <= 1.5e-45, `exp at ${w} lanes, subnormal results: absolute error ${s.abs} (x = ${sub[s.at]})`);
  }
});

test('vector erf and tanh: absolute and relative error <= 4e-7 and 3e-7, near 0 too; sigmoid <= 1e-7 absolute, 2e-7 relative', () => {
  const wide = grid(-9, 9, 200_000);
  // Tiny inputs (relative accuracy where erf(x) ~ 1.128 x and tanh(x) ~ x), down to the smallest normal.
  const tiny = Float32Array.from({ length: 1600 }, (_, i) => (i % 2 ? -1 : 1) * 10 ** (-37.9 + (37.9 * Math.floor(i / 2)) / 800));
  const rw = runVectorMath(wide), rt = runVectorMath(tiny);
  const bounds: Record<Exclude<Fn, 'exp'>, { abs: number; rel: number }> = {
    erf: { abs: 4e-7, rel: 4e-7 }, tanh: { abs: 3e-7, rel: 3e-7 }, sigmoid: { abs: 1e-7, rel: 2e-7 },
  };
  for (const fn of ['erf', 'tanh', 'sigmoid'] as const) {
    const ww = reference(fn, wide), wt = reference(fn, tiny);
    for (const w of WIDTHS) {
      const e = errors(rw[fn][w], ww);
      assert.ok(e.abs <= bounds[fn].abs, `${fn} at ${w} lanes: absolute error ${e.abs} (x = ${wide[e.at]})`);
      assert.ok(e.rel <= bounds[fn].rel, `${fn} at ${w} lanes: relative error ${e.rel}`);
      const t = errors(rt[fn][w], wt);
      assert.ok(t.rel <= bounds[fn].rel, `${fn} at ${w} lanes, tiny inputs: relative error ${t.rel} (x = ${tiny[t.at]})`);
    }
  }
});

test('vector exp, erf, tanh, sigmoid: special values (+-0, +-inf, NaN, overflow and underflow edges, subnormal inputs)', () => {
  const specials = [0, -0, Infinity, -Infinity, NaN, 88.72, 88.73, 89, 1000, -103.9, -104, -200, 1e-45, -1e-45, 1e-40, 4, -4];
  const xs = Float32Array.from([...specials, ...Array(16 - (specials.length % 16)).fill(0)]);
  const r = runVectorMath(xs);
  const want: Record<Fn, number[]> = {
    exp: [1, 1, Infinity, 0, NaN, Math.fround(Math.exp(Math.fround(88.72))), Infinity, Infinity, Infinity, Math.fround(Math.exp(Math.fround(-103.9))), 0, 0, 1, 1, 1, Math.fround(Math.exp(4)), Math.fround(Math.exp(-4))],
    erf: [0, -0, 1, -1, NaN, 1, 1, 1, 1, -1, -1, -1, Math.fround(1.1283791670955126 * Math.fround(1e-45)), -Math.fround(1.1283791670955126 * Math.fround(1e-45)), Math.fround(1.1283791670955126 * Math.fround(1e-40)), 1, -1],
    tanh: [0, -0, 1, -1, NaN, 1, 1, 1, 1, -1, -1, -1, Math.fround(1e-45), -Math.fround(1e-45), Math.fround(1e-40), Math.fround(Math.tanh(4)), -Math.fround(Math.tanh(4))],
    sigmoid: [0.5, 0.5, 1, 0, NaN, 1, 1, 1, 1, Math.fround(1 / (1 + Math.exp(Math.fround(103.9)))), Math.fround(1 / (1 + Math.exp(104))), 0, 0.5, 0.5, 0.5, Math.fround(1 / (1 + Math.exp(-4))), Math.fround(1 / (1 + Math.exp(4)))],
  };
  for (const fn of FNS) {
    for (const w of WIDTHS) {
      specials.forEach((x, i) => {
        const got = r[fn][w][i], expected = want[fn][i];
        const ok = Number.isNaN(expected) ? Number.isNaN(got)
          : Object.is(got, expected) || (expected !== 0 && Number.isFinite(expected) && Math.abs(got - expected) <= 3e-7 * Math.abs(expected)) || (Math.abs(expected) < MIN_NORMAL && Math.abs(got - expected) <= 1.5e-45);
        assert.ok(ok, `${fn}(${x}) at ${w} lanes: ${got}, expected ${expected}`);
      });
    }
  }
});

test('vector max and min: a > b ? a : b and a < b ? a : b bit for bit, NaN and signed zeros on either side, at 4, 8 and 16 lanes', () => {
  // Every ordered pair of these values (the clamps of exp, erf and tanh rely on max(c, NaN) being NaN).
  const values = [0, -0, 1, -1, 2.5, -3, Infinity, -Infinity, NaN, 1e-45, -1e-45, 3.4e38];
  const as: number[] = [], bs: number[] = [];
  for (const a of values) for (const b of values) { as.push(a); bs.push(b); }
  while (as.length % 16 !== 0) { as.push(0); bs.push(0); }
  const m = as.length;
  const xs = Float32Array.from([...as, ...bs]);
  const loops = WIDTHS.flatMap((w) => (['max', 'min'] as const).map((op) =>
    `for (long i = 0; i < n / 2; i += ${w}) tt_v${w}_store(&out[i], tt_v${w}_${op}(tt_v${w}_load(&in[i]), tt_v${w}_load(&in[n / 2 + i])));`));
  const outs = runPreludeLoops(xs, loops);
  const bits = (x: number): number => new Uint32Array(Float32Array.of(x).buffer)[0];
  const show = (x: number): string => (Object.is(x, -0) ? '-0' : String(x));
  WIDTHS.forEach((w, wi) => (['max', 'min'] as const).forEach((op, oi) => {
    const got = outs[wi * 2 + oi];
    for (let i = 0; i < m; i++) {
      const a = xs[i], b = xs[m + i];
      const want = op === 'max' ? (a > b ? a : b) : a < b ? a : b;
      assert.is(bits(got[i]), bits(want), `tt_v${w}_${op}(${show(a)}, ${show(b)}): ${show(got[i])}, expected ${show(want)}`);
    }
  }));
});

test.run();
