// substFold against the two-pass foldExpr(substitute(...)) it replaces in the C renderer.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  add, and, eq, f32, floordiv, floormod, int, load, lt, mul, not, select, sub, substitute, v, type Expr,
} from '../ir/expr';
import { printExpr } from '../ir/printer';
import { placeholder } from '../ir/tensor';
import { rng } from '../costmodel/gbdt';
import { constBindings, foldExpr, substFold } from './fold';

const X = placeholder('x', [64]);
const VARS = ['i', 'j', 'k', 'lane'];

function intExpr(r: () => number, depth: number): Expr {
  const pick = Math.floor(r() * (depth <= 0 ? 2 : 7));
  switch (pick) {
    case 0: return int(Math.floor(r() * 7) - 1);
    case 1: return v(VARS[Math.floor(r() * VARS.length)]);
    case 2: return add(intExpr(r, depth - 1), intExpr(r, depth - 1));
    case 3: return mul(intExpr(r, depth - 1), int(Math.floor(r() * 3)));
    case 4: return floordiv(intExpr(r, depth - 1), int(1 + Math.floor(r() * 3)));
    case 5: return floormod(intExpr(r, depth - 1), int(1 + Math.floor(r() * 3)));
    default: return select(boolExpr(r, depth - 1), intExpr(r, depth - 1), intExpr(r, depth - 1));
  }
}

function boolExpr(r: () => number, depth: number): Expr {
  const pick = Math.floor(r() * (depth <= 0 ? 1 : 3));
  if (pick === 0) return eq(intExpr(r, depth - 1), intExpr(r, depth - 1));
  if (pick === 1) return and(boolExpr(r, depth - 1), lt(intExpr(r, depth - 1), int(3)));
  return not(boolExpr(r, depth - 1));
}

function floatExpr(r: () => number, depth: number): Expr {
  const pick = Math.floor(r() * (depth <= 0 ? 2 : 5));
  switch (pick) {
    case 0: return f32(Math.floor(r() * 5) - 2);
    case 1: return load(X, [intExpr(r, 2)]);
    case 2: return add(floatExpr(r, depth - 1), floatExpr(r, depth - 1));
    case 3: return mul(floatExpr(r, depth - 1), floatExpr(r, depth - 1));
    default: return select(boolExpr(r, depth - 1), floatExpr(r, depth - 1), floatExpr(r, depth - 1));
  }
}

test('substFold gives what foldExpr(substitute(...)) gives, on 2000 random expressions', () => {
  const r = rng(20261129);
  for (let n = 0; n < 2000; n++) {
    const e = r() < 0.5 ? intExpr(r, 5) : floatExpr(r, 5);
    const bindings = new Map<string, Expr>();
    for (const name of VARS) {
      const c = r();
      if (c < 0.4) bindings.set(name, int(Math.floor(r() * 4)));
      else if (c < 0.6) bindings.set(name, add(int(Math.floor(r() * 3)), v('lane')));
    }
    const expected = printExpr(foldExpr(substitute(e, bindings)));
    assert.is(printExpr(substFold(e, bindings)), expected, printExpr(e));
  }
});

test('substFold with no bindings is foldExpr; constBindings binds integer constants', () => {
  const e = add(mul(v('i'), 4), select(eq(v('j'), 1), int(2), sub(v('k'), 1)));
  assert.is(printExpr(substFold(e, new Map())), printExpr(foldExpr(e)));
  const at = new Map([['i', 2], ['j', 1]]);
  assert.is(printExpr(substFold(e, constBindings(at))), printExpr(foldExpr(substitute(e, new Map([['i', int(2)], ['j', int(1)]])))));
  assert.is(printExpr(substFold(e, constBindings(at))), '10');
  assert.is(constBindings(at), constBindings(at), 'made once per map');
});

test('a select ruled out by its condition is not walked', () => {
  // The dead branch holds a binding that would throw if it were substituted and folded.
  const trap: Expr = { get k(): never { throw new Error('walked the dead branch'); } } as unknown as Expr;
  const e: Expr = { k: 'select', cond: eq(v('eps'), 0), t: load(X, [v('i')]), f: trap, dtype: 'float32' };
  assert.is(printExpr(substFold(e, constBindings(new Map([['eps', 0]])))), 'x[i]');
});

test.run();
