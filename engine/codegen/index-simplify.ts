// Integer index simplification with the loops' ranges, in the spirit of TVM's arith
// analyzer (its floordiv/floormod rules over bounded sums), written here for our Expr IR.
//
// A fused or reshaped loop nest reads its input at floordiv/floormod of sums of loop
// variables, as in a head split of attention: floormod(floordiv(t*384 + j, 64), 6). Left as
// they are, every element pays divisions (tt_floordiv handles negative values) and the
// compiler cannot see that consecutive j read consecutive addresses. With each variable's
// range known, most of them go away. For a divisor d > 0 and an index S + R, where every term
// of S has a coefficient that is a multiple of d:
//   1. floordiv(S + R, d) = S/d + floordiv(R, d), floormod(S + R, d) = floormod(R, d), for any integers;
//   2. R in [q*d, q*d + d): floordiv(R, d) = q, floormod(R, d) = R - q*d;
//   3. R = g*H + L with g dividing d and L in [0, g): floordiv(R, d) = floordiv(H, d/g),
//      floormod(R, d) = floormod(H, d/g)*g + L.
// Each rule is exact for every value of the variables in their ranges, so it holds under
// any guard as well.

import { dtypeOf, rewrite, type BinOp, type Expr } from '../ir/expr';

/** Bounds [lo, hi] of an integer index expression given loop extents (a variable v in [0, extent(v) - 1]); null if unknown. */
export function interval(e: Expr, extent: (v: string) => number | undefined): [number, number] | null {
  switch (e.k) {
    case 'const': return [e.value, e.value];
    case 'var': { const x = extent(e.name); return x === undefined ? null : [0, x - 1]; }
    case 'bin': {
      const a = interval(e.a, extent), b = interval(e.b, extent);
      if (!a || !b) return null;
      switch (e.op) {
        case '+': return [a[0] + b[0], a[1] + b[1]];
        case '-': return [a[0] - b[1], a[1] - b[0]];
        case '*': { const p = [a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]]; return [Math.min(...p), Math.max(...p)]; }
        case 'floordiv': return b[0] === b[1] && b[0] > 0 ? [Math.floor(a[0] / b[0]), Math.floor(a[1] / b[0])] : null;
        case 'floormod': return b[0] === b[1] && b[0] > 0 ? [0, b[0] - 1] : null;
        case 'min': return [Math.min(a[0], b[0]), Math.min(a[1], b[1])];
        case 'max': return [Math.max(a[0], b[0]), Math.max(a[1], b[1])];
        default: return null;
      }
    }
    default: return null;
  }
}

interface Term { atom: Expr; coef: number }

/** `e` as integer terms (an atom times a constant) plus a constant, or null where it is not an int32 sum. */
function sumOf(e: Expr): { terms: Term[]; constant: number } | null {
  if (dtypeOf(e) !== 'int32') return null;
  const terms: Term[] = [];
  let constant = 0;
  const walk = (x: Expr, scale: number): void => {
    if (x.k === 'const' && x.dtype === 'int32') { constant += scale * x.value; return; }
    if (x.k === 'bin' && x.dtype === 'int32') {
      if (x.op === '+' || x.op === '-') { walk(x.a, scale); walk(x.b, x.op === '+' ? scale : -scale); return; }
      if (x.op === '*' && x.b.k === 'const') { walk(x.a, scale * x.b.value); return; }
      if (x.op === '*' && x.a.k === 'const') { walk(x.b, scale * x.a.value); return; }
    }
    if (scale !== 0) terms.push({ atom: x, coef: scale });
  };
  walk(e, 1);
  return { terms, constant };
}

const C = (value: number): Expr => ({ k: 'const', value, dtype: 'int32' });
const B = (op: BinOp, a: Expr, b: Expr): Expr => ({ k: 'bin', op, a, b, dtype: 'int32' });
const gcd = (a: number, b: number): number => (b === 0 ? Math.abs(a) : gcd(b, a % b));

/** The expression of `terms` (each coefficient divided by `by`) plus `constant`. */
function build(terms: readonly Term[], constant: number, by = 1): Expr {
  let out: Expr | undefined;
  for (const { atom, coef } of terms) {
    const c = coef / by;
    const term = c === 1 ? atom : B('*', atom, C(c));
    out = out === undefined ? term : B('+', out, term);
  }
  if (out === undefined) return C(constant);
  return constant === 0 ? out : B('+', out, C(constant));
}

function rangeOf(terms: readonly Term[], constant: number, extent: (v: string) => number | undefined): [number, number] | null {
  let lo = constant, hi = constant;
  for (const { atom, coef } of terms) {
    const r = interval(atom, extent);
    if (!r) return null;
    lo += Math.min(coef * r[0], coef * r[1]);
    hi += Math.max(coef * r[0], coef * r[1]);
  }
  return [lo, hi];
}

/** floordiv or floormod of `x` by `d` > 0 by the rules above, or undefined where none applies. */
function divMod(op: 'floordiv' | 'floormod', x: Expr, d: number, extent: (v: string) => number | undefined): Expr | undefined {
  const sum = sumOf(x);
  if (!sum) return undefined;
  const multiples = sum.terms.filter((t) => t.coef % d === 0);
  const rest = sum.terms.filter((t) => t.coef % d !== 0);
  const whole = build(multiples, 0, d);
  const withWhole = (e: Expr): Expr => (multiples.length === 0 ? e : e.k === 'const' && e.value === 0 ? whole : B('+', whole, e));
  // Rule 2: what is left stays within one multiple of d.
  const range = rangeOf(rest, sum.constant, extent);
  if (range && Math.floor(range[0] / d) === Math.floor(range[1] / d)) {
    const q = Math.floor(range[0] / d);
    return op === 'floordiv' ? withWhole(C(q)) : build(rest, sum.constant - q * d);
  }
  // Rule 3: the larger terms share a factor g of d, the smaller ones and the constant stay below g.
  const sorted = [...rest].sort((a, b) => Math.abs(b.coef) - Math.abs(a.coef));
  for (let split = 1; split <= sorted.length; split++) {
    const high = sorted.slice(0, split), low = sorted.slice(split);
    const g = high.reduce((acc, t) => gcd(acc, t.coef), d);
    if (g <= 1) continue;
    const lowRange = rangeOf(low, sum.constant, extent);
    if (!lowRange || lowRange[0] < 0 || lowRange[1] >= g) continue;
    const h = build(high, 0, g);
    return op === 'floordiv'
      ? withWhole(simplifyDivMod(B('floordiv', h, C(d / g)), extent))
      : B('+', B('*', simplifyDivMod(B('floormod', h, C(d / g)), extent), C(g)), build(low, sum.constant));
  }
  // Rule 1 alone.
  if (multiples.length === 0) return undefined;
  const r = build(rest, sum.constant);
  return op === 'floordiv' ? withWhole(B('floordiv', r, C(d))) : B('floormod', r, C(d));
}

/** `e` with its floordiv/floormod by positive constants simplified, bottom-up, over variables in [0, extent(v)). */
export function simplifyDivMod(e: Expr, extent: (v: string) => number | undefined): Expr {
  return rewrite(e, (x) => {
    if (x.k !== 'bin' || (x.op !== 'floordiv' && x.op !== 'floormod') || x.dtype !== 'int32' || x.b.k !== 'const' || x.b.value <= 0) return undefined;
    return divMod(x.op, x.a, x.b.value, extent);
  });
}
