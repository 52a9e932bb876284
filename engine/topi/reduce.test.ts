// The reductions of topi/reduce.ts by the reference evaluator against naive float64 loops
// over the definitions, plus a few values by hand. Tolerance: the evaluator rounds each
// stage's elements to float32, so |got - want| <= 1e-6 * (|want| + 1).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { printStage } from '../ir/printer';
import { numElements, placeholder, type Tensor } from '../ir/tensor';
import { random, run } from './check.fixture';
import { reduce, REDUCE_KINDS, type ReduceKind } from './reduce';


const runOn = (out: Tensor, x: Tensor, data: Float32Array): Float32Array => run(out, [[x, data]]);

/** Naive reduction: fold every element into its output slot, then finish. */
function naive(data: Float32Array, shape: number[], kind: ReduceKind, axes: number[]): number[] {
  const red = axes.map((a) => (a < 0 ? a + shape.length : a));
  const outShape = shape.map((d, i) => (red.includes(i) ? 1 : d));
  const n = numElements(outShape);
  const groups: number[][] = Array.from({ length: n }, () => []);
  const idx = new Array<number>(shape.length).fill(0);
  for (let f = 0; f < data.length; f++) {
    let o = 0;
    for (let i = 0; i < shape.length; i++) o = o * outShape[i] + (red.includes(i) ? 0 : idx[i]);
    groups[o].push(data[f]);
    for (let d = shape.length - 1; d >= 0; d--) { if (++idx[d] < shape[d]) break; idx[d] = 0; }
  }
  const s = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
  return groups.map((xs) => {
    switch (kind) {
      case 'sum': return s(xs);
      case 'mean': return s(xs) / xs.length;
      case 'max': return Math.max(...xs);
      case 'min': return Math.min(...xs);
      case 'prod': return xs.reduce((a, b) => a * b, 1);
      case 'sum_square': return s(xs.map((x) => x * x));
      case 'l1': return s(xs.map(Math.abs));
      case 'l2': return Math.sqrt(s(xs.map((x) => x * x)));
      case 'log_sum': return Math.log(s(xs));
      case 'log_sum_exp': return Math.log(s(xs.map(Math.exp)));
    }
  });
}

const close = (got: ArrayLike<number>, want: ArrayLike<number>, what: string): void => {
  assert.is(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= 1e-6 * (Math.abs(want[i]) + 1))) assert.unreachable(`${what}[${i}]: ${got[i]}, want ${want[i]}`);
  }
};

for (const kind of REDUCE_KINDS) {
  test(`reduce ${kind}: axes subsets, keepdims on and off, negative axes`, () => {
    const shape = [2, 3, 4, 5];
    const x = placeholder('x', shape);
    // log_sum needs positive sums.
    const data = random(numElements(shape), 7, kind === 'log_sum' ? 0.1 : -1, kind === 'prod' ? 1.2 : 1);
    for (const axes of [[1], [0, 2], [-1], [1, 2, 3], [0, 1, 2, 3]]) {
      const want = naive(data, shape, kind, axes);
      const kept = reduce(x, kind, axes, true);
      assert.equal(kept.shape, shape.map((d, i) => (axes.map((a) => (a + 4) % 4).includes(i) ? 1 : d)));
      close(runOn(kept, x, data), want, `${kind} [${axes.join(', ')}] keepdims`);
      const dropped = reduce(x, kind, axes, false);
      assert.equal(dropped.shape, shape.filter((_, i) => !axes.map((a) => (a + 4) % 4).includes(i)));
      close(runOn(dropped, x, data), want, `${kind} [${axes.join(', ')}]`);
    }
  });
}

test('reduce by hand: prod, log_sum_exp of large values, l2, and no axes (the elementwise part)', () => {
  const x = placeholder('x', [2, 3]);
  const data = Float32Array.from([1, -2, 3, 0.5, 2, 4]);
  close(runOn(reduce(x, 'prod', [1], false), x, data), [-6, 4], 'prod');
  close(runOn(reduce(x, 'l2', [0], false), x, data), [Math.sqrt(1.25), Math.sqrt(8), 5], 'l2');
  // exp(1000) overflows; the max is subtracted first.
  const big = Float32Array.from([1000, 1000, 999, -1, -2, -3]);
  close(runOn(reduce(x, 'log_sum_exp', [1], false), x, big), [1000 + Math.log(2 + Math.exp(-1)), -1 + Math.log(1 + Math.exp(-1) + Math.exp(-2))], 'log_sum_exp');
  close(runOn(reduce(x, 'sum_square', [], true), x, data), [1, 4, 9, 0.25, 4, 16], 'sum_square, no axes');
  close(runOn(reduce(x, 'l1', [], true), x, data), [1, 2, 3, 0.5, 2, 4], 'l1, no axes');
  close(runOn(reduce(x, 'log_sum_exp', [], true), x, data), data, 'log_sum_exp, no axes');
});

test('reduce max / min of bool data (any / all) is bool', () => {
  const x = placeholder('x', [2, 3], 'bool');
  const data = Int32Array.from([0, 1, 0, 1, 1, 1]);
  for (const [kind, want] of [['max', [1, 1]], ['min', [0, 1]]] as const) {
    const y = reduce(x, kind, [1], false);
    assert.is(y.dtype, 'bool');
    assert.equal([...(evaluate(new ComputeDAG([y]), new Map([[x, data]])).get(y.name) as Int32Array)], want, kind);
  }
  assert.throws(() => reduce(x, 'sum', [1]), /bool/);
});

test('reduce: a reduction over every axis without keepdims is a scalar; stages print as TOPI-style reductions', () => {
  const x = placeholder('x', [3, 4]);
  const y = reduce(x, 'prod', [0, 1], false);
  assert.equal(y.shape, []);
  const data = random(12, 3, 0.5, 1.5);
  close(runOn(y, x, data), naive(data, [3, 4], 'prod', [0, 1]), 'prod to a scalar');
  const text = new ComputeDAG([reduce(x, 'log_sum_exp', [1], true)]).stages.map((t) => printStage(t)).join('\n');
  assert.match(text, /T_log_sum_exp_max\(ax0, ax1\) max= x\[ax0, k0\]/);
  assert.match(text, /T_log_sum_exp_sum\(ax0, ax1\) \+= /);
  assert.match(printStage(y), /T_prod\(\) \*= x\[k0, k1\]/);
  assert.throws(() => reduce(x, 'sum', [2]), /out of range/);
});

test.run();
