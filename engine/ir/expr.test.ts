// Expression constructors, folding, traversal, and compute()/placeholder() checks.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  add, call, cast, div, dtypeOf, f32, floordiv, int, load, lt, mul, readTensors, reduceAxis, rewrite, select, sub,
  substitute, sum, v, walk, type Expr,
} from './expr';
import { printExpr } from './printer';
import { compute, isCompute, isPlaceholder, numElements, placeholder } from './tensor';

test('constants and dtypes', () => {
  assert.throws(() => int(1.5), /int\(1.5\): not an integer/);
  assert.is(f32(0.1).value, Math.fround(0.1));
  assert.is(dtypeOf(int(3)), 'int32');
  assert.is(dtypeOf(v('i')), 'int32');
  assert.is(dtypeOf(lt(v('i'), 3)), 'bool');
  assert.is(dtypeOf(call('exp', f32(1))), 'float32');
  assert.is(dtypeOf(cast('float32', v('i'))), 'float32');
});

test('integer literals join float operands as float32; other mixes are errors', () => {
  const x = placeholder('x', [4]);
  const xi = load(x, [v('i')]);
  assert.is(printExpr(add(xi, 1)), '(x[i] + 1f)');
  assert.is(printExpr(mul(2, xi)), '(2f*x[i])');
  assert.is(printExpr(select(lt(v('i'), 2), xi, 0)), 'select((i < 2), x[i], 0f)');
  assert.throws(() => add(xi, v('i')), /dtype mismatch: float32 vs int32/);
  assert.throws(() => div(v('i'), 2), /float division; use floordiv/);
  assert.is(printExpr(div(xi, 2)), '(x[i]/2f)');
});

test('integer folding: constants fold, identities vanish, others stay', () => {
  assert.equal(add(2, 3), int(5));
  assert.equal(mul(int(4), int(-2)), int(-8));
  assert.is(printExpr(add(0, v('i'))), 'i');
  assert.is(printExpr(mul(1, v('i'))), 'i');
  assert.is(printExpr(floordiv(v('i'), 2)), 'floordiv(i, 2)');
  // Float arithmetic never folds (it prints as written).
  assert.is(printExpr(add(f32(1), f32(2))), '(1f + 2f)');
});

test('load checks its arity', () => {
  assert.throws(() => load(placeholder('x', [2, 3]), [0]), /x: 1 indices for a 2-d tensor/);
});

test('traversal: walk, readTensors, substitute, rewrite', () => {
  const a = placeholder('a', [4]), b = placeholder('b', [4]);
  const e = add(mul(load(a, [v('i')]), load(b, [v('i')])), load(a, [sub(v('i'), 1)]));
  const kinds: string[] = [];
  walk(e, (x) => kinds.push(x.k));
  assert.equal(kinds, ['bin', 'bin', 'load', 'var', 'load', 'var', 'load', 'bin', 'var', 'const']);
  assert.equal(readTensors(e).map((t) => t.name), ['a', 'b']);
  assert.is(printExpr(substitute(e, new Map<string, Expr>([['i', int(2)]]))), '((a[2]*b[2]) + a[(2 - 1)])');
  const swapped = rewrite(e, (x) => (x.k === 'load' && x.tensor === a ? load(b, x.indices) : undefined));
  assert.equal(readTensors(swapped).map((t) => t.name), ['b']);
});

test('rewrite: a subtree shared by several parents is rewritten once, and the result stays shared', () => {
  const a = placeholder('a', [4]);
  const shared = load(a, [add(v('i'), 1)]);
  const e = add(mul(shared, 2), sub(shared, mul(shared, 3)));
  let loads = 0;
  const out = rewrite(e, (x) => (x.k === 'load' ? (loads++, load(a, [int(0)])) : undefined));
  assert.is(loads, 1);
  assert.is(printExpr(out), '((a[0]*2f) + (a[0] - (a[0]*3f)))');
  if (out.k !== 'bin' || out.a.k !== 'bin' || out.b.k !== 'bin') throw new Error('shape');
  assert.is(out.a.a, out.b.a, 'one node for the three uses');
});

test('placeholder and compute: shapes, axes, reductions', () => {
  const x = placeholder('x', [2, 3]);
  assert.ok(isPlaceholder(x));
  assert.not.ok(isCompute(x));
  assert.is(numElements(x.shape), 6);
  assert.is(numElements([]), 1);
  const k = reduceAxis('k', 3);
  const s = compute('s', [2], ['i'], (i) => sum(load(x, [i, v('k')]), [k]), 'rowsum');
  assert.ok(isCompute(s));
  if (!isCompute(s)) return;
  assert.equal(s.op.axes, [{ name: 'i', extent: 2 }]);
  assert.equal(s.op.reduceAxes, [{ name: 'k', extent: 3 }]);
  assert.is(s.op.tag, 'rowsum');
  assert.is(s.dtype, 'float32');
});

test('compute rejects malformed stages with a clear message', () => {
  const x = placeholder('x', [2, 3]);
  const k = reduceAxis('k', 3);
  assert.throws(() => placeholder('p', [2, 0]), /p: bad shape \[2, 0\]/);
  assert.throws(() => placeholder('p', [2.5]), /bad shape/);
  assert.throws(() => compute('c', [2, 3], ['i'], (i) => load(x, [i, 0])), /c: 1 axis names for a 2-d shape/);
  assert.throws(() => compute('c', [2, 3], ['i', 'i'], (i) => load(x, [i, i])), /axis names are not unique: i, i/);
  assert.throws(() => compute('c', [2], ['k'], (i) => sum(load(x, [i, v('k')]), [k])), /not unique: k, k/);
  // A typo in an axis name, or a reduction buried in arithmetic, is caught at declaration.
  assert.throws(() => compute('c', [2], ['i'], (i) => sum(load(x, [i, v('kk')]), [k])), /c: variable kk is not an axis of the stage \(axes: i, k\)/);
  assert.throws(() => compute('c', [2], ['i'], (i) => add(sum(load(x, [i, v('k')]), [k]), f32(1))), /reduction must be the whole body/);
});

test.run();
