// Small expression utilities for the renderers: substitute loop variables (by constants when
// unrolling, by `base + lane` when vectorising) and fold what became constant, in one walk;
// and read the coefficient of one variable in an affine index.

import { children, int, type BinOp, type Expr } from '../ir/expr';

const bindingsOf = new WeakMap<ReadonlyMap<string, number>, ReadonlyMap<string, Expr>>();

/** `consts` as a substitution (variable to integer constant), made once per map (which must not change after). */
export function constBindings(consts: ReadonlyMap<string, number>): ReadonlyMap<string, Expr> {
  let b = bindingsOf.get(consts);
  if (!b) {
    b = new Map([...consts].map(([name, value]) => [name, int(value)]));
    bindingsOf.set(consts, b);
  }
  return b;
}

/** The value of an integer or boolean constant, else undefined. */
export function constValue(e: Expr): number | undefined {
  return e.k === 'const' && e.dtype !== 'float32' ? e.value : undefined;
}

const C = (value: number, dtype: 'int32' | 'bool' | 'float32'): Expr => ({ k: 'const', value, dtype });

function foldBin(op: BinOp, a: number, b: number, float: boolean): number | undefined {
  const r = (x: number): number => (float ? Math.fround(x) : x);
  switch (op) {
    case '+': return r(a + b);
    case '-': return r(a - b);
    case '*': return r(a * b);
    case '/': return float ? Math.fround(a / b) : undefined;
    case 'floordiv': return b === 0 ? undefined : Math.floor(a / b);
    case 'floormod': return b === 0 ? undefined : a - Math.floor(a / b) * b;
    case 'min': return Math.min(a, b);
    case 'max': return Math.max(a, b);
    case '==': return a === b ? 1 : 0;
    case '!=': return a !== b ? 1 : 0;
    case '<': return a < b ? 1 : 0;
    case '<=': return a <= b ? 1 : 0;
    case '>': return a > b ? 1 : 0;
    case '>=': return a >= b ? 1 : 0;
    case '&&': return a && b ? 1 : 0;
    case '||': return a || b ? 1 : 0;
  }
}

const isInt = (e: Expr, value: number): boolean => e.k === 'const' && e.dtype === 'int32' && e.value === value;

const NO_BINDINGS: ReadonlyMap<string, Expr> = new Map();

/** Fold constant sub-expressions and the integer identities x+0, x*1, x*0, true&&x, ... */
export function foldExpr(e: Expr): Expr {
  return substFold(e, NO_BINDINGS);
}

/**
 * `foldExpr(substitute(e, vars))` in one walk. The branch of a select whose condition folds
 * to a constant is neither substituted nor folded, which is most of the work on an unrolled
 * Winograd transform: its matrices are select chains over (row, column) that the unrolled
 * loop variables decide.
 */
export function substFold(e: Expr, vars: ReadonlyMap<string, Expr>): Expr {
  switch (e.k) {
    case 'const': return e;
    case 'var': {
      const bound = vars.get(e.name);
      return bound === undefined ? e : substFold(bound, NO_BINDINGS);
    }
    case 'bin': {
      const a = substFold(e.a, vars), b = substFold(e.b, vars);
      if (a.k === 'const' && b.k === 'const') {
        const v = foldBin(e.op, a.value, b.value, e.dtype === 'float32');
        if (v !== undefined && Number.isFinite(v)) return C(v, e.dtype);
      }
      if (e.dtype === 'int32') {
        if (e.op === '+' && isInt(b, 0)) return a;
        if (e.op === '+' && isInt(a, 0)) return b;
        if (e.op === '-' && isInt(b, 0)) return a;
        if (e.op === '*' && (isInt(b, 1) || isInt(a, 0))) return a;
        if (e.op === '*' && (isInt(a, 1) || isInt(b, 0))) return b;
        if (e.op === 'floordiv' && isInt(b, 1)) return a;
        if (e.op === 'floormod' && isInt(b, 1)) return C(0, 'int32');
        if ((e.op === 'floordiv' || e.op === 'floormod') && b.k === 'const' && b.value > 1) {
          const divided = divideAffine(e.op, a, b.value);
          if (divided) return divided;
        }
        // (x + c1) + c2 -> x + (c1 + c2): keeps unrolled offsets together.
        if (e.op === '+' && b.k === 'const' && a.k === 'bin' && a.op === '+' && a.b.k === 'const') {
          return foldExpr({ ...e, a: a.a, b: C(a.b.value + b.value, 'int32') });
        }
      }
      if (e.op === '&&') {
        if (a.k === 'const') return a.value ? b : C(0, 'bool');
        if (b.k === 'const') return b.value ? a : C(0, 'bool');
      }
      if (e.op === '||') {
        if (a.k === 'const') return a.value ? C(1, 'bool') : b;
        if (b.k === 'const') return b.value ? C(1, 'bool') : a;
      }
      return a === e.a && b === e.b ? e : { ...e, a, b };
    }
    case 'not': {
      const a = substFold(e.a, vars);
      return a.k === 'const' ? C(a.value ? 0 : 1, 'bool') : { ...e, a };
    }
    case 'cast': {
      const a = substFold(e.a, vars);
      if (a.k === 'const') return C(e.dtype === 'float32' ? Math.fround(a.value) : e.dtype === 'bool' ? (a.value !== 0 ? 1 : 0) : Math.trunc(a.value), e.dtype);
      return { ...e, a };
    }
    case 'select': case 'if': {
      const cond = substFold(e.cond, vars);
      if (cond.k === 'const') return substFold(cond.value ? e.t : e.f, vars);
      return { ...e, cond, t: substFold(e.t, vars), f: substFold(e.f, vars) };
    }
    case 'call': return { ...e, args: e.args.map((x) => substFold(x, vars)) };
    case 'load': return { ...e, indices: e.indices.map((x) => substFold(x, vars)) };
    case 'reduce': return { ...e, source: substFold(e.source, vars) };
  }
}

/** An integer expression as a sum of terms (an atom times a constant) and a constant. */
interface Affine { terms: { atom: Expr; coef: number }[]; constant: number }

/** `e` as sums and differences of atoms times constants (an atom: anything else); its terms are in order. */
function affineTerms(e: Expr, scale: number, out: Affine): void {
  if (e.k === 'const' && e.dtype === 'int32') { out.constant += scale * e.value; return; }
  if (e.k === 'bin' && e.dtype === 'int32') {
    if (e.op === '+' || e.op === '-') {
      affineTerms(e.a, scale, out);
      affineTerms(e.b, e.op === '+' ? scale : -scale, out);
      return;
    }
    if (e.op === '*' && e.b.k === 'const') { affineTerms(e.a, scale * e.b.value, out); return; }
    if (e.op === '*' && e.a.k === 'const') { affineTerms(e.b, scale * e.a.value, out); return; }
  }
  if (scale !== 0) out.terms.push({ atom: e, coef: scale });
}

const gcd = (a: number, b: number): number => (b === 0 ? Math.abs(a) : gcd(b, a % b));
const floorDiv = (a: number, b: number): number => Math.floor(a / b);
const bin = (op: BinOp, a: Expr, b: Expr): Expr => ({ k: 'bin', op, a, b, dtype: 'int32' });

/** `terms` (each divided by `by`) plus `constant`, in their order. */
function rebuild(terms: Affine['terms'], by: number, constant: number): Expr {
  let out: Expr | undefined;
  for (const { atom, coef } of terms) {
    const term = coef / by === 1 ? atom : bin('*', atom, C(coef / by, 'int32'));
    out = out === undefined ? term : bin('+', out, term);
  }
  if (out === undefined) return C(constant, 'int32');
  return constant === 0 ? out : bin('+', out, C(constant, 'int32'));
}

/**
 * floordiv and floormod of a sum whose terms share a factor with the divisor `d`, as the
 * renderer meets them when a tile of output positions (fused rows and columns) is cut by
 * the image's width. With g the gcd of the terms' coefficients, S their sum and k the
 * constant:
 *  - g a multiple of d: floordiv(S + k, d) = S/d + floordiv(k, d), floormod = floormod(k, d);
 *  - d a multiple of g (g > 1), k = g*kq + kr with 0 <= kr < g:
 *    floordiv(S + k, d) = floordiv(S/g + kq, d/g), floormod = floormod(S/g + kq, d/g)*g + kr.
 * Exact for every integer value of the atoms (floor division). A 14-position tile of a
 * 7-wide image then reads position i at row 2t + floordiv(i, 7), column floormod(i, 7),
 * constants apart from one base, where before each position's row and column were
 * divisions of their own, which GCC kept in 14 registers and spilled; of a 56-wide image,
 * at row floordiv(t, 4), column floormod(t, 4)*14 + i.
 */
function divideAffine(op: 'floordiv' | 'floormod', e: Expr, d: number): Expr | undefined {
  const sum: Affine = { terms: [], constant: 0 };
  affineTerms(e, 1, sum);
  if (sum.terms.length === 0) return undefined;
  const g = sum.terms.reduce((acc, t) => gcd(acc, t.coef), 0);
  if (g % d === 0) {
    return op === 'floordiv' ? foldExpr(rebuild(sum.terms, d, floorDiv(sum.constant, d))) : C(sum.constant - floorDiv(sum.constant, d) * d, 'int32');
  }
  if (g === 1 || d % g !== 0) return undefined;
  const kq = floorDiv(sum.constant, g), kr = sum.constant - kq * g;
  const inner = rebuild(sum.terms, g, kq);
  if (op === 'floordiv') return foldExpr(bin('floordiv', inner, C(d / g, 'int32')));
  return foldExpr(bin('+', bin('*', bin('floormod', inner, C(d / g, 'int32')), C(g, 'int32')), C(kr, 'int32')));
}

/** Whether variable `name` occurs in `e`. */
export function mentions(e: Expr, name: string): boolean {
  return e.k === 'var' ? e.name === name : children(e).some((c) => mentions(c, name));
}

/** Coefficient of variable `name` in `e` if `e` is affine in it (0 when absent); undefined otherwise. */
export function affineIn(e: Expr, name: string): number | undefined {
  if (!mentions(e, name)) return 0;
  if (e.k === 'var') return 1;
  if (e.k !== 'bin') return undefined;
  if (e.op === '+' || e.op === '-') {
    const a = affineIn(e.a, name), b = affineIn(e.b, name);
    if (a === undefined || b === undefined) return undefined;
    return e.op === '+' ? a + b : a - b;
  }
  if (e.op === '*') {
    if (e.a.k === 'const' && e.a.dtype === 'int32') { const b = affineIn(e.b, name); return b === undefined ? undefined : e.a.value * b; }
    if (e.b.k === 'const' && e.b.dtype === 'int32') { const a = affineIn(e.a, name); return a === undefined ? undefined : e.b.value * a; }
  }
  return undefined;
}
