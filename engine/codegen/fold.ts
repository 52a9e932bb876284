// Small expression utilities for the renderers: substitute loop variables by constants
// (explicit unrolling) or by `base + lane` (vectorisation), fold what became constant,
// and read the coefficient of one variable in an affine index.

import type { BinOp, Expr } from '../ir/expr';

export interface LaneSubst { base: number; lane: string }

/** Replace variables: by an integer (`consts`) or by `base + lane` (`lanes`). */
export function substConst(e: Expr, consts: ReadonlyMap<string, number>, lanes?: ReadonlyMap<string, LaneSubst>): Expr {
  if (consts.size === 0 && !lanes?.size) return e;
  const go = (x: Expr): Expr => {
    switch (x.k) {
      case 'var': {
        const c = consts.get(x.name);
        if (c !== undefined) return { k: 'const', value: c, dtype: 'int32' };
        const l = lanes?.get(x.name);
        if (l) return { k: 'bin', op: '+', a: { k: 'const', value: l.base, dtype: 'int32' }, b: { k: 'var', name: l.lane }, dtype: 'int32' };
        return x;
      }
      case 'const': return x;
      case 'bin': { const a = go(x.a), b = go(x.b); return a === x.a && b === x.b ? x : { ...x, a, b }; }
      case 'not': case 'cast': { const a = go(x.a); return a === x.a ? x : { ...x, a }; }
      case 'select': case 'if': return { ...x, cond: go(x.cond), t: go(x.t), f: go(x.f) };
      case 'call': return { ...x, args: x.args.map(go) };
      case 'load': return { ...x, indices: x.indices.map(go) };
      case 'reduce': return { ...x, source: go(x.source) };
    }
  };
  return go(e);
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

/** Fold constant sub-expressions and the integer identities x+0, x*1, x*0, true&&x, ... */
export function foldExpr(e: Expr): Expr {
  switch (e.k) {
    case 'const': case 'var': return e;
    case 'bin': {
      const a = foldExpr(e.a), b = foldExpr(e.b);
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
      const a = foldExpr(e.a);
      return a.k === 'const' ? C(a.value ? 0 : 1, 'bool') : { ...e, a };
    }
    case 'cast': {
      const a = foldExpr(e.a);
      if (a.k === 'const') return C(e.dtype === 'float32' ? Math.fround(a.value) : Math.trunc(a.value), e.dtype);
      return { ...e, a };
    }
    case 'select': case 'if': {
      const cond = foldExpr(e.cond);
      if (cond.k === 'const') return foldExpr(cond.value ? e.t : e.f);
      return { ...e, cond, t: foldExpr(e.t), f: foldExpr(e.f) };
    }
    case 'call': return { ...e, args: e.args.map(foldExpr) };
    case 'load': return { ...e, indices: e.indices.map(foldExpr) };
    case 'reduce': return { ...e, source: foldExpr(e.source) };
  }
}

function mentions(e: Expr, name: string): boolean {
  switch (e.k) {
    case 'var': return e.name === name;
    case 'const': return false;
    case 'bin': return mentions(e.a, name) || mentions(e.b, name);
    case 'not': case 'cast': return mentions(e.a, name);
    case 'select': case 'if': return mentions(e.cond, name) || mentions(e.t, name) || mentions(e.f, name);
    case 'call': return e.args.some((a) => mentions(a, name));
    case 'load': return e.indices.some((a) => mentions(a, name));
    case 'reduce': return mentions(e.source, name);
  }
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
