// For the index tests (fold.test.ts, index-simplify.test.ts): the value of an integer
// expression of variables, constants, + - * floordiv floormod, at given variable values.

import type { Expr } from '../ir/expr';

export function evalInt(e: Expr, at: ReadonlyMap<string, number>): number {
  if (e.k === 'const') return e.value;
  if (e.k === 'var') return at.get(e.name)!;
  if (e.k !== 'bin') throw new Error(`evalInt: ${e.k}`);
  const a = evalInt(e.a, at), b = evalInt(e.b, at);
  switch (e.op) {
    case '+': return a + b;
    case '-': return a - b;
    case '*': return a * b;
    case 'floordiv': return Math.floor(a / b);
    case 'floormod': return a - Math.floor(a / b) * b;
    default: throw new Error(`evalInt: ${e.op}`);
  }
}
