import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { add, f32, floormod, ge, ifThenElse, int, load, lt, mul, sub, v } from '../ir/expr';
import { placeholder } from '../ir/tensor';
import { printExpr } from '../ir/printer';
import type { Stmt } from './lower';
import { partitionTails } from './partition';

const store = (i: string): Stmt => ({ k: 'store', buf: 'out', index: v(i), value: f32(1) });
const loop = (name: string, extent: number, kind: 'serial' | 'parallel' | 'unroll', body: Stmt[]): Stmt => ({ k: 'for', v: name, extent, kind, owner: 's', body });

test('a split tail guard is versioned out of the whole tiles: whole tiles run without it, the last with it', () => {
  // for t in 0..3 (parallel): for i in 0..6 (unroll): if (t*6 + i < 14) out[t*6+i] = 1
  const guard = lt(add(mul(v('t'), 6), v('i')), 14);
  const body: Stmt[] = [loop('t', 3, 'parallel', [loop('i', 6, 'unroll', [{ k: 'if', cond: guard, body: [store('i')] }])])];
  const [outer] = partitionTails(body);
  assert.is(outer.k, 'for');
  const versions = (outer as Extract<Stmt, { k: 'for' }>).body;
  assert.is(versions.length, 2);
  const [whole, tail] = versions as Extract<Stmt, { k: 'if' }>[];
  assert.is(printExpr(whole.cond), printExpr(lt(add(mul(v('t'), 6), int(5)), 14)), 'whole where the last iteration passes');
  assert.is(JSON.stringify(whole.body), JSON.stringify([loop('i', 6, 'unroll', [store('i')])]), 'no guard left in the whole tiles');
  assert.is(tail.cond.k, 'not');
  assert.is(JSON.stringify(tail.body), JSON.stringify((body[0] as Extract<Stmt, { k: 'for' }>).body), 'the tail as lowered');
});

test('guards that are not monotone in the inner loops, or that hold no inner loop, are left as they are', () => {
  const decreasing = lt(sub(int(20), add(mul(v('t'), 6), v('i'))), 5);
  const outerOnly = lt(v('t'), 2);
  const byVariable = lt(floormod(add(mul(v('t'), 6), v('i')), v('n')), 5);
  for (const cond of [decreasing, outerOnly, byVariable]) {
    const body: Stmt[] = [loop('t', 3, 'parallel', [loop('i', 6, 'unroll', [{ k: 'if', cond, body: [store('i')] }])])];
    assert.is(JSON.stringify(partitionTails(body)), JSON.stringify(body), printExpr(cond));
  }
});

test('a floormod guard is versioned where the tile does not wrap: the whole tiles add that condition', () => {
  // for t (parallel): for i in 0..6 (unroll): if (floormod(t*6 + i, 7) < 5) ...
  const guard = lt(floormod(add(mul(v('t'), 6), v('i')), 7), 5);
  const body: Stmt[] = [loop('t', 3, 'parallel', [loop('i', 6, 'unroll', [{ k: 'if', cond: guard, body: [store('i')] }])])];
  const [whole] = (partitionTails(body)[0] as Extract<Stmt, { k: 'for' }>).body as Extract<Stmt, { k: 'if' }>[];
  const noWrap = `(floordiv((t*6), 7) == floordiv(((t*6) + 5), 7))`;
  assert.is(printExpr(whole.cond), `(${noWrap} && ${printExpr(lt(floormod(add(mul(v('t'), 6), int(5)), 7), 5))})`);
  assert.is(JSON.stringify(whole.body), JSON.stringify([loop('i', 6, 'unroll', [store('i')])]));
});

test('a bounds test inside an expression (inlined padding) is versioned: the whole tiles read without it', () => {
  // for t (parallel): for d in 0..3: out[t] = (t + d >= 1) ? x[t + d - 1] : 0
  const x = placeholder('x', [16]);
  const index = add(v('t'), v('d'));
  const guarded = ifThenElse(ge(index, 1), load(x, [sub(index, 1)]), f32(0));
  const body: Stmt[] = [loop('t', 15, 'parallel', [loop('d', 3, 'serial', [{ k: 'store', buf: 'out', index: v('t'), value: guarded }])])];
  const [whole, border] = (partitionTails(body)[0] as Extract<Stmt, { k: 'for' }>).body as Extract<Stmt, { k: 'if' }>[];
  assert.is(printExpr(whole.cond), printExpr(ge(v('t'), 1)));
  assert.is(JSON.stringify(whole.body), JSON.stringify([loop('d', 3, 'serial', [{ k: 'store', buf: 'out', index: v('t'), value: load(x, [sub(index, 1)]) }])]));
  assert.is(JSON.stringify(border.body), JSON.stringify((body[0] as Extract<Stmt, { k: 'for' }>).body), 'the border as lowered');
  // A test on data is not a bounds test, even where it grows with an inner loop: left alone.
  const onData = ifThenElse(lt(add(load(placeholder('n', [16], 'int32'), [v('t')]), v('d')), 5), f32(0), load(x, [v('t')]));
  const dataOnly: Stmt[] = [loop('t', 15, 'parallel', [loop('d', 3, 'serial', [{ k: 'store', buf: 'out', index: add(v('t'), v('d')), value: onData }])])];
  assert.is(JSON.stringify(partitionTails(dataOnly)), JSON.stringify(dataOnly));
});

test.run();
