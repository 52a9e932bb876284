import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { add, f32, floormod, int, lt, mul, v } from '../ir/expr';
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
  const wraps = lt(floormod(add(mul(v('t'), 6), v('i')), 7), 5);
  const outerOnly = lt(v('t'), 2);
  for (const cond of [wraps, outerOnly]) {
    const body: Stmt[] = [loop('t', 3, 'parallel', [loop('i', 6, 'unroll', [{ k: 'if', cond, body: [store('i')] }])])];
    assert.is(JSON.stringify(partitionTails(body)), JSON.stringify(body), printExpr(cond));
  }
});

test.run();
