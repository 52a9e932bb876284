// Reductions over a set of axes (TOPI's reduction.h: sum, max, min, prod, and the composite
// forms ONNX defines: mean, sum of squares, L1, L2, log-sum, log-sum-exp). Each is one
// reduction stage (tag `comm_reduce`, TVM's CommReduce) whose source may apply an
// elementwise map to the input (|x|, x*x), followed where needed by an elementwise stage
// on the reduced values (/count, sqrt, log), as TOPI builds `mean` from `sum` and a divide.
// Log-sum-exp reduces twice, as softmax does: the max first, then the sum of exp(x - max).

import {
  add, call, cast, div, f32, load, maxReduce, minReduce, mul, prodReduce, sub, sum, type Expr, type IterVar, type Var,
} from '../ir/expr';
import { compute, type Tensor } from '../ir/tensor';

export type ReduceKind = 'sum' | 'mean' | 'max' | 'min' | 'prod' | 'sum_square' | 'l1' | 'l2' | 'log_sum' | 'log_sum_exp';

export const REDUCE_KINDS: readonly ReduceKind[] = ['sum', 'mean', 'max', 'min', 'prod', 'sum_square', 'l1', 'l2', 'log_sum', 'log_sum_exp'];

/** Kinds whose result is only defined for float data (a divide or a transcendental function). */
export const FLOAT_ONLY_KINDS: ReadonlySet<ReduceKind> = new Set(['mean', 'l1', 'l2', 'log_sum', 'log_sum_exp']);

const asVar = (axis: IterVar): Var => ({ k: 'var', name: axis.name });

/** The reduced axes in range and sorted (negative ones count from the end); throws on an axis out of range. */
export function normalizeAxes(axes: readonly number[], rank: number, what = 'reduce'): number[] {
  const out = [...new Set(axes.map((a) => (a < 0 ? a + rank : a)))].sort((x, y) => x - y);
  if (out.some((a) => !Number.isInteger(a) || a < 0 || a >= rank)) throw new Error(`${what}: axes [${axes.join(', ')}] out of range for rank ${rank}`);
  return out;
}

/**
 * The geometry of a reduction of `shape` over `axes` (sorted, in range): the output shape
 * (reduced axes kept with extent 1 under keepdims, else dropped), one reduce axis per
 * reduced dim, and the input index of an output position (`source`) and of a reduced
 * value from a full-rank position (`reducedIndex`, for broadcasting a result back).
 */
export interface ReduceGeometry {
  readonly shape: number[];
  readonly raxes: IterVar[];
  readonly count: number;
  source(out: readonly Expr[], raxes?: readonly IterVar[]): Expr[];
}

export function reduceGeometry(shape: readonly number[], axes: readonly number[], keepdims: boolean, prefix = 'k'): ReduceGeometry {
  const raxes = axes.map((a, i) => ({ name: `${prefix}${i}`, extent: shape[a] }));
  const outShape = shape.flatMap((d, i) => (axes.includes(i) ? (keepdims ? [1] : []) : [d]));
  const count = axes.reduce((acc, a) => acc * shape[a], 1);
  const source = (out: readonly Expr[], r: readonly IterVar[] = raxes): Expr[] => {
    let j = 0;
    return shape.map((_, i) => {
      const k = axes.indexOf(i);
      if (k >= 0) {
        if (keepdims) j++;
        return asVar(r[k]);
      }
      return out[j++];
    });
  };
  return { shape: outShape, raxes, count, source };
}

const names = (rank: number): string[] => Array.from({ length: rank }, (_, i) => `ax${i}`);

/**
 * `kind` over `axes` of `data`. With no axes, the reduction of each element alone: the
 * elementwise part of the kind (x for sum/mean/max/min/prod, x*x, |x|, log x), as ONNX's
 * noop_with_empty_axes defines it.
 */
export function reduce(data: Tensor, kind: ReduceKind, axes: readonly number[], keepdims = true): Tensor {
  const rank = data.shape.length;
  const red = normalizeAxes(axes, rank, kind);
  if (red.length === 0) return elementwise(data, kind);
  const g = reduceGeometry(data.shape, red, keepdims);
  const out = names(g.shape.length);
  const x = (ax: Expr[]): Expr => load(data, g.source(ax));
  const stage = (name: string, body: (ax: Expr[]) => Expr): Tensor => compute(name, g.shape, out, (...ax) => body(ax), 'comm_reduce');
  const epilogue = (name: string, input: Tensor, f: (v: Expr) => Expr): Tensor =>
    compute(name, g.shape, out, (...ax) => f(load(input, ax)), 'elemwise');
  if (data.dtype === 'bool') {
    // A bool max / min (any / all): over the 0/1 values as int32, the result back to bool.
    if (kind !== 'max' && kind !== 'min') throw new Error(`${kind}: of bool data`);
    const r = stage(`T_${kind}`, (ax) => (kind === 'max' ? maxReduce : minReduce)(cast('int32', x(ax)), g.raxes));
    return epilogue(`T_${kind}_bool`, r, (v) => cast('bool', v));
  }
  switch (kind) {
    case 'sum': return stage('T_sum', (ax) => sum(x(ax), g.raxes));
    case 'max': return stage('T_max', (ax) => maxReduce(x(ax), g.raxes));
    case 'min': return stage('T_min', (ax) => minReduce(x(ax), g.raxes));
    case 'prod': return stage('T_prod', (ax) => prodReduce(x(ax), g.raxes));
    case 'sum_square': return stage('T_sum_square', (ax) => sum(mul(x(ax), x(ax)), g.raxes));
    case 'l1': return stage('T_l1', (ax) => sum(call('fabs', x(ax)), g.raxes));
    case 'mean': return epilogue('T_mean', stage('T_sum', (ax) => sum(x(ax), g.raxes)), (v) => div(v, f32(g.count)));
    case 'l2': return epilogue('T_l2', stage('T_sum_square', (ax) => sum(mul(x(ax), x(ax)), g.raxes)), (v) => call('sqrt', v));
    case 'log_sum': return epilogue('T_log_sum', stage('T_sum', (ax) => sum(x(ax), g.raxes)), (v) => call('log', v));
    case 'log_sum_exp': {
      // log(sum(exp(x - m))) + m with m the max: no overflow for large x.
      const m = stage('T_log_sum_exp_max', (ax) => maxReduce(x(ax), g.raxes));
      const s = stage('T_log_sum_exp_sum', (ax) => sum(call('exp', sub(x(ax), load(m, ax))), g.raxes));
      return compute('T_log_sum_exp', g.shape, out, (...ax) => add(call('log', load(s, ax)), load(m, ax)), 'elemwise');
    }
  }
}

function elementwise(data: Tensor, kind: ReduceKind): Tensor {
  const f: (e: Expr) => Expr = {
    sum: (e: Expr) => e, mean: (e: Expr) => e, max: (e: Expr) => e, min: (e: Expr) => e, prod: (e: Expr) => e,
    // log(exp(x - x)) + x is x exactly.
    log_sum_exp: (e: Expr) => e,
    sum_square: (e: Expr) => mul(e, e),
    l1: (e: Expr) => call('fabs', e),
    l2: (e: Expr) => call('fabs', e),
    log_sum: (e: Expr) => call('log', e),
  }[kind];
  return compute(`T_${kind}`, data.shape, names(data.shape.length), (...ax) => f(load(data, ax)), 'elemwise');
}
