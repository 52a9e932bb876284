import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { add, f32, floordiv, floormod, ge, ifThenElse, int, load, lt, mul, sub, v, type Expr } from '../ir/expr';
import { placeholder } from '../ir/tensor';
import { printExpr } from '../ir/printer';
import type { Stmt } from './lower';
import { foldExpr } from './fold';
import { partitionTails, tightenGuardedLoops } from './partition';

const store = (i: string): Stmt => ({ k: 'store', buf: 'out', index: v(i), value: f32(1) });
/** `body` with its expressions folded, as the renderer folds them. */
const EXPR_KINDS = new Set(['const', 'var', 'bin', 'not', 'select', 'if', 'call', 'cast', 'load', 'reduce']);
const folded = (body: readonly Stmt[]): string =>
  JSON.stringify(body, (_, x) => (x && typeof x === 'object' && EXPR_KINDS.has(x.k) && !('body' in x) ? foldExpr(x) : x));
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
  // The tail is tile 2 alone: with t = 2 the guard 12 + i < 14 depends on i alone, so its
  // loop runs to 2 without it.
  assert.is(folded(tail.body), folded([loop('i', 2, 'unroll', [store('i')])]), 'the tail at its one tile, its loop cut to the guard');
});

test('a tail at one value of a fused tile index runs at that value; a tail over several values runs as lowered', () => {
  // 49 positions in tiles of 14, fused with 16 channel blocks: for ax in 0..64 (parallel):
  // for i in 0..14 (unroll): if (floormod(ax, 4)*14 + i < 49) out[floordiv(ax, 4)*49 + floormod(ax, 4)*14 + i] = 1
  const tile = floormod(v('ax'), 4);
  const position = add(mul(tile, 14), v('i'));
  const guarded = (p: Expr): Stmt[] => [loop('i', 14, 'unroll', [{
    k: 'if', cond: lt(p, 49), body: [{ k: 'store', buf: 'out', index: add(mul(floordiv(v('ax'), 4), 49), p), value: f32(1) }],
  }])];
  const body: Stmt[] = [loop('ax', 64, 'parallel', guarded(position))];
  const [, tail] = (partitionTails(body)[0] as Extract<Stmt, { k: 'for' }>).body as Extract<Stmt, { k: 'if' }>[];
  const atThree = add(mul(int(3), 14), v('i'));
  const cut: Stmt[] = [loop('i', 7, 'unroll', [{ k: 'store', buf: 'out', index: add(mul(floordiv(v('ax'), 4), 49), atThree), value: f32(1) }])];
  assert.is(folded(tail.body), folded(cut), 'floormod(ax, 4) is 3 in the tail (its 7 positions, unguarded); floordiv(ax, 4) is left');
  // 50 positions in tiles of 4 (13 tiles, the last 2 short): whole where t*4 + 3 < 50; the
  // tail is tile 12 alone. In tiles of 14 over 56 positions with a guard at 40, tiles 2 and 3 fail.
  const twoTails = lt(add(mul(v('t'), 14), v('i')), 40);
  const body2: Stmt[] = [loop('t', 4, 'parallel', [loop('i', 14, 'unroll', [{ k: 'if', cond: twoTails, body: [store('i')] }])])];
  const [, tail2] = (partitionTails(body2)[0] as Extract<Stmt, { k: 'for' }>).body as Extract<Stmt, { k: 'if' }>[];
  assert.is(JSON.stringify(tail2.body), JSON.stringify((body2[0] as Extract<Stmt, { k: 'for' }>).body), 'two tail tiles: as lowered');
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
  // The border is t = 0 alone.
  const atZero = ifThenElse(ge(add(int(0), v('d')), 1), load(x, [sub(add(int(0), v('d')), 1)]), f32(0));
  assert.is(folded(border.body), folded([loop('d', 3, 'serial', [{ k: 'store', buf: 'out', index: int(0), value: atZero }])]), 'the border as lowered, at t = 0');
  // A test on data is not a bounds test, even where it grows with an inner loop: left alone.
  const onData = ifThenElse(lt(add(load(placeholder('n', [16], 'int32'), [v('t')]), v('d')), 5), f32(0), load(x, [v('t')]));
  const dataOnly: Stmt[] = [loop('t', 15, 'parallel', [loop('d', 3, 'serial', [{ k: 'store', buf: 'out', index: add(v('t'), v('d')), value: onData }])])];
  assert.is(JSON.stringify(partitionTails(dataOnly)), JSON.stringify(dataOnly));
});


test('a loop whose whole body is a guard on its own variable runs to the guard; other guards stay', () => {
  // for j in 0..8: if (192 + j < 197 && n > 0) out[j] = 1  ->  for j in 0..5: if (n > 0) out[j] = 1
  const other = lt(int(0), v('n'));
  const cut = tightenGuardedLoops([loop('j', 8, 'serial', [{ k: 'if', cond: lt(add(int(192), v('j')), 197), body: [store('j')] }])]);
  assert.is(folded(cut), folded([loop('j', 5, 'serial', [store('j')])]), 'cut to 5, the guard gone');
  const both = tightenGuardedLoops([loop('j', 8, 'serial', [{ k: 'if', cond: { k: 'bin', op: '&&', a: lt(add(int(192), v('j')), 197), b: other, dtype: 'bool' }, body: [store('j')] }])]);
  assert.is(folded(both), folded([loop('j', 5, 'serial', [{ k: 'if', cond: other, body: [store('j')] }])]), 'the guard on n is kept');
  // A guard that never holds removes the loop; one that holds in the middle only, or that
  // reads another variable, is left; so is a body with more than the guard.
  assert.is(tightenGuardedLoops([loop('j', 8, 'serial', [{ k: 'if', cond: lt(add(int(200), v('j')), 197), body: [store('j')] }])]).length, 0);
  for (const cond of [ge(v('j'), 3), lt(add(v('t'), v('j')), 5)]) {
    const body = [loop('j', 8, 'serial', [{ k: 'if', cond, body: [store('j')] }])];
    assert.is(JSON.stringify(tightenGuardedLoops(body)), JSON.stringify(body), printExpr(cond));
  }
  const two = [loop('j', 8, 'serial', [{ k: 'if', cond: lt(v('j'), 5), body: [store('j')] }, store('j')])];
  assert.is(JSON.stringify(tightenGuardedLoops(two)), JSON.stringify(two), 'a store outside the guard');
});

test.run();
