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
import { evalInt } from './int-eval.fixture';

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

test('floordiv and floormod of sums sharing a factor with the divisor: exact for negative and positive values, on 3000 random sums', () => {
  const r = rng(7);
  const pickInt = (lo: number, hi: number): number => lo + Math.floor(r() * (hi - lo + 1));
  let rewritten = 0;
  for (let n = 0; n < 3000; n++) {
    // g * (c1*a1 + c2*a2 + ...) + k, divided by a divisor that is a multiple or a divisor of g (or neither).
    const g = pickInt(1, 16);
    const atoms: Expr[] = [v('i'), v('j'), floormod(v('k'), int(pickInt(2, 5))), floordiv(v('i'), int(3))];
    let e: Expr = int(pickInt(-40, 40));
    for (let t = pickInt(1, 3); t > 0; t--) {
      const term = mul(atoms[pickInt(0, atoms.length - 1)], int(g * pickInt(-3, 3)));
      e = r() < 0.5 ? add(e, term) : add(term, e);
      if (r() < 0.3) e = sub(e, int(pickInt(0, 9)));
    }
    const choice = r();
    const d = choice < 0.4 ? g * pickInt(1, 4) : choice < 0.8 ? Math.max(1, Math.floor(g / pickInt(1, 4))) : pickInt(2, 20);
    for (const op of [floordiv, floormod]) {
      const whole = op(e, int(d));
      const folded = foldExpr(whole);
      if (printExpr(folded) !== printExpr(whole)) rewritten += 1;
      for (let s = 0; s < 20; s++) {
        const at = new Map([['i', pickInt(-50, 50)], ['j', pickInt(-50, 50)], ['k', pickInt(-50, 50)]]);
        assert.is(evalInt(folded, at), evalInt(whole, at), `${printExpr(whole)} -> ${printExpr(folded)} at ${JSON.stringify([...at])}`);
      }
    }
  }
  assert.ok(rewritten > 2000, `rewrote ${rewritten} of 6000`);
});

test('a tile of 14 output positions: the row and column of each position are constants apart from one base', () => {
  const t = floormod(v('t'), int(4));
  // A 7-wide image (resnet's 7x7 layers): position 13 of tile t is at row 2t + 1, column 6.
  assert.is(printExpr(foldExpr(floordiv(add(mul(t, int(14)), int(13)), int(7)))), printExpr(add(mul(t, int(2)), int(1))));
  assert.is(printExpr(foldExpr(floormod(add(mul(t, int(14)), int(13)), int(7)))), '6');
  // A 56-wide image: the tile's 14 positions share a row, floordiv(t, 4), from column floormod(t, 4) * 14.
  assert.is(printExpr(foldExpr(floordiv(add(mul(v('t'), int(14)), int(5)), int(56)))), printExpr(floordiv(v('t'), int(4))));
  assert.is(printExpr(foldExpr(floormod(add(mul(v('t'), int(14)), int(5)), int(56)))), printExpr(add(mul(floormod(v('t'), int(4)), int(14)), int(5))));
  // Neither a multiple nor a divisor: left as it is.
  const odd = floordiv(add(mul(v('t'), int(6)), int(5)), int(56));
  assert.is(printExpr(foldExpr(odd)), printExpr(odd));
});

test('a select ruled out by its condition is not walked', () => {
  // The dead branch holds a binding that would throw if it were substituted and folded.
  const trap: Expr = { get k(): never { throw new Error('walked the dead branch'); } } as unknown as Expr;
  const e: Expr = { k: 'select', cond: eq(v('eps'), 0), t: load(X, [v('i')]), f: trap, dtype: 'float32' };
  assert.is(printExpr(substFold(e, constBindings(new Map([['eps', 0]])))), 'x[i]');
});

test.run();
