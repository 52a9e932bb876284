// The reference evaluator's edge cases: integer division semantics, guarded loads,
// reduction identities, select/casts, math accuracy, and how inputs are passed.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from './dag';
import { evaluate } from './evaluate';
import {
  add, and, bool, call, cast, dtypeOf, eq, f32, floordiv, floormod, ge, gt, ifThenElse, int, load, lt, max, maxReduce, min,
  minReduce, mul, ne, not, or, reduceAxis, select, sub, sum, v, type Expr, type MathFn,
} from './expr';
import { compute, placeholder, type Tensor } from './tensor';

/** Evaluate the DAG of `out`; returns `out`'s values as a plain array. */
function run(out: Tensor, inputs: [Tensor | string, ArrayLike<number>][] = []): number[] {
  const data = new Map<Tensor | string, Float32Array>(inputs.map(([t, d]) => [t, Float32Array.from(d)]));
  return [...evaluate(new ComputeDAG([out]), data).get(out.name)!];
}

/** A float32 stage over i in [0, n) whose value is `f(i)` (an int expression cast to float32 when needed). */
function over(n: number, f: (i: Expr) => Expr): Tensor {
  return compute('out', [n], ['i'], (i) => {
    const e = f(i);
    return dtypeOf(e) === 'float32' ? e : cast('float32', e);
  });
}

test('floordiv / floormod round toward -infinity, for negative dividends and divisors', () => {
  // i - 5 runs over -5 .. 4
  const range = Array.from({ length: 10 }, (_, i) => i - 5);
  assert.equal(run(over(10, (i) => floordiv(sub(i, 5), 3))), range.map((a) => Math.floor(a / 3)));
  assert.equal(run(over(10, (i) => floormod(sub(i, 5), 3))), [1, 2, 0, 1, 2, 0, 1, 2, 0, 1]);
  // Python semantics with a negative divisor: -5 // -3 = 1, -5 % -3 = -2, 4 % -3 = -2
  assert.equal(run(over(10, (i) => floordiv(sub(i, 5), -3))), range.map((a) => Math.floor(a / -3)));
  assert.equal(run(over(10, (i) => floormod(sub(i, 5), -3))), [-2, -1, 0, -2, -1, 0, -2, -1, 0, -2]);
  // Constant folding agrees with the evaluator.
  assert.equal(floordiv(int(-7), int(2)), int(-4));
  assert.equal(floormod(int(-7), int(2)), int(1));
  assert.equal(floordiv(int(7), int(-2)), int(-4));
  assert.equal(floormod(int(7), int(-2)), int(-1));
  assert.equal(min(int(-3), int(2)), int(-3));
  assert.equal(max(int(-3), int(2)), int(2));
});

test('if_then_else guards a load that would be out of bounds (or alias another element)', () => {
  const x = placeholder('x', [3, 4]);
  const xd = Array.from({ length: 12 }, (_, i) => i + 1);
  // Shift right by one column: x[i, j - 1]. At j = 0 the flat index i*4 - 1 is x[i - 1, 3]
  // for i > 0 (valid memory, wrong element) and -1 for i = 0.
  const shifted = compute('s', [3, 4], ['i', 'j'], (i, j) => ifThenElse(ge(j, 1), load(x, [i, sub(j, 1)]), f32(-1)));
  assert.equal(run(shifted, [[x, xd]]), [-1, 1, 2, 3, -1, 5, 6, 7, -1, 9, 10, 11]);
  // Past the end.
  const ahead = compute('a', [3, 4], ['i', 'j'], (i, j) => ifThenElse(lt(add(i, 1), 3), load(x, [add(i, 1), j]), f32(0)));
  assert.equal(run(ahead, [[x, xd]]), [5, 6, 7, 8, 9, 10, 11, 12, 0, 0, 0, 0]);
});

test('reductions start from their identity: max of negatives, min of positives, sum to a scalar', () => {
  const x = placeholder('x', [2, 3]);
  const xd = [-5, -2, -9, 4, 7, 3];
  const k = reduceAxis('k', 3);
  const mx = compute('mx', [2], ['i'], (i) => maxReduce(load(x, [i, v('k')]), [k]));
  assert.equal(run(mx, [[x, xd]]), [-2, 7]);
  const mn = compute('mn', [2], ['i'], (i) => minReduce(load(x, [i, v('k')]), [k]));
  assert.equal(run(mn, [[x, xd]]), [-9, 3]);
  // A 0-d output summing over two axes.
  const r = reduceAxis('r', 2), c = reduceAxis('c', 3);
  const total = compute('total', [], [], () => sum(load(x, [v('r'), v('c')]), [r, c]));
  assert.equal(total.shape, []);
  assert.equal(run(total, [[x, xd]]), [-2]);
  // Evaluating twice gives the same answer (no state carried between runs).
  assert.equal(run(total, [[x, xd]]), [-2]);
});

test('select, comparisons, logic', () => {
  const x = placeholder('x', [6]);
  const xd = [-2, -1, 0, 1, 2, 3];
  const xi = (i: Expr) => load(x, [i]);
  assert.equal(run(over(6, (i) => select(gt(xi(i), f32(0)), xi(i), mul(xi(i), f32(-10)))), [[x, xd]]), [20, 10, -0, 1, 2, 3]);
  // Index conditions, &&, ||, !, ==, !=
  const flag = (e: Expr) => over(6, () => select(e, f32(1), f32(0)));
  const i = v('i');
  assert.equal(run(flag(and(ge(i, 1), lt(i, 4)))), [0, 1, 1, 1, 0, 0]);
  assert.equal(run(flag(or(eq(i, 0), eq(i, 5)))), [1, 0, 0, 0, 0, 1]);
  assert.equal(run(flag(not(ne(floormod(i, 2), 0)))), [1, 0, 1, 0, 1, 0]);
  assert.equal(run(flag(bool(true))), [1, 1, 1, 1, 1, 1]);
  // A bool-valued stage read back and compared with a bool constant.
  const positive = compute('positive', [6], ['i'], (j) => gt(load(x, [j]), f32(0)));
  assert.is(positive.dtype, 'bool');
  const back = compute('back', [6], ['i'], (j) => select(eq(load(positive, [j]), bool(true)), f32(1), f32(0)));
  assert.equal(run(back, [[x, xd]]), [0, 0, 0, 1, 1, 1]);
});

test('casts: float -> int truncates toward zero, int -> float, float -> bool', () => {
  const x = placeholder('x', [6]);
  const xd = [-2.7, -0.5, 0, 0.5, 2.7, 3];
  const xi = (i: Expr) => load(x, [i]);
  assert.equal(run(over(6, (i) => cast('float32', cast('int32', xi(i)))), [[x, xd]]), [-2, -0, 0, 0, 2, 3]);
  assert.equal(run(over(6, (i) => select(cast('bool', xi(i)), f32(1), f32(0))), [[x, xd]]), [1, 1, 0, 1, 1, 1]);
  // An int index used as data: x[i] * float32(i)
  assert.equal(run(over(6, (i) => mul(xi(i), cast('float32', i))), [[x, xd]]), [-0, -0.5, 0, 1.5, Math.fround(10.8), 15]);
});

test('math intrinsics are exact to float32 (erf on both sides of its series/fraction switch)', () => {
  const xs = [0.1, 0.001, 0.5, 1, 1.5, 2, 2.49, 2.5, 2.51, 3, 3.5, 4, 6, -0.3, -2.75].map(Math.fround);
  // Reference values from CPython's math.erf / math.exp on the same float32 inputs.
  const erf = [
    0.11246291768297051, 0.0011283788445643173, 0.5204998778130465, 0.8427007929497149, 0.9661051464753108,
    0.9953222650189527, 0.9995707121541028, 0.999593047982555, 0.9996142944985171, 0.9999779095030014,
    0.9999992569016276, 0.9999999845827421, 1, -0.32862677175271543, -0.9998993780778803,
  ];
  const check = (fn: MathFn, inputs: number[], want: number[]) => {
    const x = placeholder('x', [inputs.length]);
    const got = run(over(inputs.length, (i) => call(fn, load(x, [i]))), [[x, inputs]]);
    got.forEach((g, i) => assert.is(g, Math.fround(want[i]), `${fn}(${inputs[i]})`));
  };
  check('erf', xs, erf);
  const ys = [-3, -0.1, 0.1, 3, 20].map(Math.fround);
  check('sigmoid', ys, [0.04742587317756678, 0.47502081214946074, 0.5249791878505392, 0.9525741268224334, 0.9999999979388463]);
  const zs = [-10, -0.1, 0.1, 10, 80].map(Math.fround);
  check('exp', zs, [4.5399929762484854e-05, 0.9048374166876467, 1.1051709197224806, 22026.465794806718, 5.54062238439351e+34]);
});

test('inputs by tensor or by name; the tensor wins when both are given', () => {
  const x = placeholder('x', [3]);
  const twice = compute('twice', [3], ['i'], (i) => mul(load(x, [i]), f32(2)));
  assert.equal(run(twice, [[x, [1, 2, 3]]]), [2, 4, 6]);
  assert.equal(run(twice, [['x', [1, 2, 3]]]), [2, 4, 6]);
  assert.equal(run(twice, [['x', [9, 9, 9]], [x, [1, 2, 3]]]), [2, 4, 6]);
  // Every stage comes back by name, the inputs included.
  const all = evaluate(new ComputeDAG([twice]), new Map([[x, Float32Array.from([1, 2, 3])]]));
  assert.equal([...all.keys()], ['x', 'twice']);
});

test('missing or wrongly sized inputs fail with a clear message', () => {
  const x = placeholder('x', [2, 3]), y = placeholder('y', [3]);
  const out = compute('out', [2, 3], ['i', 'j'], (i, j) => add(load(x, [i, j]), load(y, [j])));
  const dag = new ComputeDAG([out]);
  assert.throws(() => evaluate(dag, new Map([[x, new Float32Array(6)]])), /no data for input y/);
  assert.throws(() => evaluate(dag, new Map([[x, new Float32Array(5)], [y, new Float32Array(3)]])),
    /input x has 5 elements, shape \[2, 3\] needs 6/);
});

test.run();
