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
      if (a.k === 'const') return C(e.dtype === 'float32' ? Math.fround(a.value) : Math.trunc(a.value), e.dtype);
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
