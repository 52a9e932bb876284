// The comparisons, logic, where, cast and integer remainders of topi/logic.ts by the
// reference evaluator against plain JavaScript over the definitions (exact: integer and
// bool results, and selections of float32 elements).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { placeholder, type Tensor, type TensorData } from '../ir/tensor';
import { cast, compare, intMod, logical, logicalNot, where, type CompareKind } from './logic';

const run = (out: Tensor, inputs: [Tensor, TensorData][]): TensorData => evaluate(new ComputeDAG([out]), new Map(inputs)).get(out.name)!;

test('comparisons of floats broadcast and give bools', () => {
  const a = placeholder('a', [2, 3]), b = placeholder('b', [3]);
  const av = Float32Array.of(1, 2, 3, -1, 0, 5), bv = Float32Array.of(1, 0, 5);
  const f: Record<CompareKind, (x: number, y: number) => boolean> = {
    equal: (x, y) => x === y, not_equal: (x, y) => x !== y, less: (x, y) => x < y,
    less_equal: (x, y) => x <= y, greater: (x, y) => x > y, greater_equal: (x, y) => x >= y,
  };
  for (const kind of Object.keys(f) as CompareKind[]) {
    const out = compare(kind, a, b);
    assert.is(out.dtype, 'bool');
    assert.equal([...run(out, [[a, av], [b, bv]])], [...av].map((x, i) => (f[kind](x, bv[i % 3]) ? 1 : 0)), kind);
  }
});

test('comparisons of ints and of bools', () => {
  const a = placeholder('a', [4], 'int32'), b = placeholder('b', [1], 'int32');
  assert.equal([...run(compare('less', a, b), [[a, Int32Array.of(-3, 2, 7, 2)], [b, Int32Array.of(2)]])], [1, 0, 0, 0]);
  const p = placeholder('p', [3], 'bool'), q = placeholder('q', [3], 'bool');
  assert.equal([...run(compare('greater', p, q), [[p, Int32Array.of(1, 0, 1)], [q, Int32Array.of(0, 0, 1)]])], [1, 0, 0]);
  assert.throws(() => compare('equal', a, placeholder('f', [4])), /int32 and float32/);
});

test('not, and, or, xor (non-zero is true), broadcasting', () => {
  const p = placeholder('p', [2, 2], 'bool'), q = placeholder('q', [2], 'bool');
  const pv = Int32Array.of(0, 1, 1, 1), qv = Int32Array.of(0, 1);
  const feeds: [Tensor, TensorData][] = [[p, pv], [q, qv]];
  assert.equal([...run(logical('logical_and', p, q), feeds)], [0, 1, 0, 1]);
  assert.equal([...run(logical('logical_or', p, q), feeds)], [0, 1, 1, 1]);
  assert.equal([...run(logical('logical_xor', p, q), feeds)], [0, 0, 1, 0]);
  assert.equal([...run(logicalNot(p), feeds)], [1, 0, 0, 0]);
  const x = placeholder('x', [3]);
  assert.equal([...run(logicalNot(x), [[x, Float32Array.of(0, 0.5, -2)]])], [1, 0, 0]);
});

test('where broadcasts its three inputs', () => {
  const c = placeholder('c', [2, 1], 'bool'), x = placeholder('x', [1, 3]), y = placeholder('y', [3]);
  const out = where(c, x, y);
  assert.equal(out.shape, [2, 3]);
  assert.equal([...run(out, [[c, Int32Array.of(1, 0)], [x, Float32Array.of(1, 2, 3)], [y, Float32Array.of(-1, -2, -3)]])], [1, 2, 3, -1, -2, -3]);
  const i = placeholder('i', [3], 'int32'), j = placeholder('j', [3], 'int32');
  assert.is(where(c, i, j).dtype, 'int32');
});

test('cast: float -> int truncates toward zero, -> bool is != 0, bool -> float is 0/1', () => {
  const x = placeholder('x', [5]);
  const xv = Float32Array.of(2.7, -2.7, 0, -0.5, 3);
  assert.equal([...run(cast(x, 'int32'), [[x, xv]])], [2, -2, 0, 0, 3]);
  assert.equal([...run(cast(x, 'bool'), [[x, xv]])], [1, 1, 0, 1, 1]);
  const b = placeholder('b', [3], 'bool');
  const f = run(cast(b, 'float32'), [[b, Int32Array.of(1, 0, 1)]]);
  assert.ok(f instanceof Float32Array);
  assert.equal([...f], [1, 0, 1]);
  const i = placeholder('i', [3], 'int32');
  assert.equal([...run(cast(i, 'bool'), [[i, Int32Array.of(-4, 0, 9)]])], [1, 0, 1]);
});

test('integer remainders: floor_mod has the divisor\'s sign, trunc_mod the dividend\'s; zero divisor gives 0', () => {
  const a = placeholder('a', [6], 'int32'), b = placeholder('b', [6], 'int32');
  const av = Int32Array.of(7, -7, 7, -7, 6, 5), bv = Int32Array.of(3, 3, -3, -3, 3, 0);
  assert.equal([...run(intMod('floor_mod', a, b), [[a, av], [b, bv]])], [1, 2, -2, -1, 0, 0]);
  assert.equal([...run(intMod('trunc_mod', a, b), [[a, av], [b, bv]])], [1, -1, 1, -1, 0, 0]);
});

test.run();
