// The index simplifier is exact: for each index, the simplified form has the value of the
// original at every point of the variables' ranges, negative terms and constants included;
// and it removes the divisions of a head split and merge, a fused loop cut by an image's
// width, and what its rules leave alone stays.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { add, floordiv, floormod, int, mul, sub, v, type Expr } from '../ir/expr';
import { printExpr } from '../ir/printer';
import { interval, simplifyDivMod } from './index-simplify';
import { evalInt } from './int-eval.fixture';

const countDivMod = (e: Expr): number => (printExpr(e).match(/floordiv|floormod/g) ?? []).length;

/** Every point of the ranges: the simplified index equals the original. */
function assertExact(e: Expr, extents: Record<string, number>): Expr {
  const names = Object.keys(extents);
  const simple = simplifyDivMod(e, (n) => extents[n]);
  const env = new Map<string, number>();
  const visit = (i: number): void => {
    if (i === names.length) {
      assert.is(evalInt(simple, env), evalInt(e, env), `${printExpr(e)} -> ${printExpr(simple)} at ${JSON.stringify(Object.fromEntries(env))}`);
      return;
    }
    for (let x = 0; x < extents[names[i]]; x++) { env.set(names[i], x); visit(i + 1); }
  };
  visit(0);
  return simple;
}

test('a head merge (6 heads of 64, rows of 384) reads each 16-lane group contiguously, no division left in the inner loop', () => {
  const [t, o, i] = [v('t'), v('o'), v('i')];
  const j = add(mul(o, 16), i);
  const flat = add(mul(t, 384), j);
  const head = floormod(floordiv(flat, 64), 6), row = floormod(floordiv(flat, 384), 197), col = floormod(flat, 64);
  const index = add(add(mul(head, 12608), mul(row, 64)), col);
  const simple = assertExact(index, { t: 7, o: 24, i: 16 });
  // Only floordiv(o, 4) and floormod(o, 4) remain, functions of the outer loop.
  assert.is(countDivMod(simple), 2, printExpr(simple));
  assert.not.match(printExpr(simple), /floor(div|mod)\([^()]*i/);
});

test('the rules hold on random sums with negative coefficients and constants', () => {
  let seed = 7;
  const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
  for (let k = 0; k < 300; k++) {
    const coef = (): number => [1, 2, 3, 4, 8, 16, 24, 64, -1, -4, -16][rnd(11)];
    let x: Expr = int(rnd(40) - 20);
    for (const name of ['a', 'b', 'c']) if (rnd(3) > 0) x = rnd(4) === 0 ? sub(x, mul(v(name), coef())) : add(x, mul(v(name), coef()));
    const d = [2, 3, 4, 8, 16, 64][rnd(6)];
    const inner = rnd(2) === 0 ? floordiv(x, d) : floormod(x, d);
    const outer = rnd(2) === 0 ? inner : floormod(add(mul(inner, [1, 2, 4][rnd(3)]), v('c')), [3, 4, 8][rnd(3)]);
    assertExact(outer, { a: 1 + rnd(9), b: 1 + rnd(17), c: 1 + rnd(5) });
  }
});

test('without a range only the multiples come out; an index whose range spans several multiples keeps its division', () => {
  const x = v('x'), y = v('y');
  const e = floordiv(add(mul(x, 12), y), 4);
  assert.is(printExpr(simplifyDivMod(e, () => undefined)), printExpr(add(mul(x, 3), floordiv(y, 4))));
  const spans = floormod(add(mul(x, 16), y), 197);
  assert.is(printExpr(simplifyDivMod(spans, (n) => ({ x: 13, y: 16 }[n]))), printExpr(spans));
  assert.equal(interval(add(mul(x, -2), int(3)), () => 5), [-5, 3]);
});

test.run();
