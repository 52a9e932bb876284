// Comparisons, logical operators, where and cast: the computes behind ONNX's Equal, Less,
// Greater..., Not/And/Or/Xor, Where and Cast. Comparisons of float32 or int32 tensors give
// bool tensors (stored as int32 0/1); the operands broadcast as NumPy does.

import { add, and, cast as castExpr, dtypeOf, eq, floormod, ge, gt, lt, ne, not, or, select, sub, truncmod, type DType, type Expr } from '../ir/expr';
import { compute, type Tensor } from '../ir/tensor';
import { load } from '../ir/expr';
import { broadcastShape } from './elemwise';

const axisNames = (rank: number): string[] => Array.from({ length: rank }, (_, i) => `ax${i}`);
const zero: Expr = { k: 'const', value: 0, dtype: 'int32' };

/** Indices into `t` for output axes `ax` of `outShape`: broadcast dims read index 0. */
function broadcastIndex(t: Tensor, outShape: readonly number[], ax: readonly Expr[]): Expr[] {
  const offset = outShape.length - t.shape.length;
  return t.shape.map((d, i) => (d === 1 && outShape[offset + i] !== 1 ? zero : ax[offset + i]));
}

/** A bool tensor's element as a bool expression (it already is one); an int's or float's as `!= 0`. */
function truth(e: Expr): Expr {
  return dtypeOf(e) === 'bool' ? e : ne(e, dtypeOf(e) === 'float32' ? { k: 'const', value: 0, dtype: 'float32' } : zero);
}

export type CompareKind = 'equal' | 'not_equal' | 'less' | 'less_equal' | 'greater' | 'greater_equal';
const COMPARE: Record<CompareKind, (a: Expr, b: Expr) => Expr> = {
  equal: eq,
  not_equal: ne,
  less: lt,
  less_equal: (a, b) => ge(b, a),
  greater: gt,
  greater_equal: ge,
};

/** Broadcasting comparison of two tensors of one dtype (bools compare as 0/1), named T_<kind> as in TOPI; a bool tensor. */
export function compare(kind: CompareKind, a: Tensor, b: Tensor): Tensor {
  if (a.dtype !== b.dtype) throw new Error(`${kind}: operands are ${a.dtype} and ${b.dtype}`);
  const shape = broadcastShape(a.shape, b.shape);
  // Bools are compared as their 0/1 integers (C and the evaluator agree on that).
  const read = (t: Tensor, ax: Expr[]): Expr => {
    const e = load(t, broadcastIndex(t, shape, ax));
    return t.dtype === 'bool' ? castExpr('int32', e) : e;
  };
  return compute(`T_${kind}`, shape, axisNames(shape.length), (...ax) => COMPARE[kind](read(a, ax), read(b, ax)), 'broadcast');
}

export type LogicalKind = 'logical_and' | 'logical_or' | 'logical_xor';

/** Broadcasting logical and/or/xor of two tensors (non-zero is true); a bool tensor. */
export function logical(kind: LogicalKind, a: Tensor, b: Tensor): Tensor {
  const shape = broadcastShape(a.shape, b.shape);
  return compute(`T_${kind}`, shape, axisNames(shape.length), (...ax) => {
    const x = truth(load(a, broadcastIndex(a, shape, ax))), y = truth(load(b, broadcastIndex(b, shape, ax)));
    if (kind === 'logical_and') return and(x, y);
    if (kind === 'logical_or') return or(x, y);
    return ne(castExpr('int32', x), castExpr('int32', y));
  }, 'broadcast');
}

/** Logical not (non-zero is true); a bool tensor. */
export function logicalNot(x: Tensor): Tensor {
  return compute('T_logical_not', x.shape, axisNames(x.shape.length), (...ax) => not(truth(load(x, ax))), 'elemwise');
}

/**
 * ONNX Where / TOPI's where: `cond ? x : y` elementwise, the three broadcasting together.
 * `cond` is read as a truth value (non-zero is true); x and y share a dtype, the result's.
 */
export function where(cond: Tensor, x: Tensor, y: Tensor): Tensor {
  if (x.dtype !== y.dtype) throw new Error(`where: the branches are ${x.dtype} and ${y.dtype}`);
  const shape = broadcastShape(broadcastShape(cond.shape, x.shape), y.shape);
  return compute('T_where', shape, axisNames(shape.length), (...ax) =>
    select(truth(load(cond, broadcastIndex(cond, shape, ax))), load(x, broadcastIndex(x, shape, ax)), load(y, broadcastIndex(y, shape, ax))), 'broadcast');
}

/**
 * Elementwise cast (TOPI's cast): float -> int truncates toward zero (C's conversion, ONNX's
 * Cast; out-of-range floats are undefined there too), anything -> bool is `!= 0`, bool ->
 * int/float is 0/1. The same dtype gives an identity copy. `narrow`: the int32 result
 * stands for an 8- or 16-bit type, and wraps into its range.
 */
export function cast(x: Tensor, dtype: DType, narrow?: { bits: number; signed: boolean }): Tensor {
  return compute('T_cast', x.shape, axisNames(x.shape.length), (...ax) => {
    const e = load(x, ax);
    if (dtype === 'bool') return truth(e);
    const c = dtypeOf(e) === dtype ? e : castExpr(dtype, e);
    if (!narrow || dtype !== 'int32') return c;
    // Into an 8/16-bit type (carried as int32): wrap as two's complement, x mod 2^bits.
    const m = 2 ** narrow.bits, half = narrow.signed ? m / 2 : 0;
    return sub(floormod(add(c, half), m), half);
  }, 'elemwise');
}

/**
 * Broadcasting integer remainder: 'trunc_mod' is C's % (the dividend's sign, ONNX Mod with
 * fmod=1), 'floor_mod' the divisor's sign (Python's %, ONNX Mod with fmod=0). A zero
 * divisor gives 0 (truncmod), never a trap.
 */
export function intMod(kind: 'floor_mod' | 'trunc_mod', a: Tensor, b: Tensor): Tensor {
  if (a.dtype !== 'int32' || b.dtype !== 'int32') throw new Error(`${kind}: int32 operands only, not ${a.dtype} and ${b.dtype}`);
  const shape = broadcastShape(a.shape, b.shape);
  return compute(`T_${kind}`, shape, axisNames(shape.length), (...ax) => {
    const x = load(a, broadcastIndex(a, shape, ax)), y = load(b, broadcastIndex(b, shape, ax));
    const m = truncmod(x, y);
    return kind === 'trunc_mod' ? m : select(and(ne(m, 0), ne(lt(m, 0), lt(y, 0))), add(m, y), m);
  }, 'broadcast');
}
