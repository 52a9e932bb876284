// Softmax of float16 and bfloat16 values (which run as float32), computed in the type: each
// intermediate that a computation in the type stores is rounded to it, as ONNX's reference
// implementation (numpy on float16 / ml_dtypes bfloat16 arrays) and a kernel holding the
// type in memory give. The stages, each value rounded to the type R:
//   m = max(x)                     (a value of x: exact)
//   e = R(exp(R(x - m)))           (the shifted value, then its exponential)
//   s = R(sum(e))                  (float16: the sum accumulates in float32, rounded once;
//                                   bfloat16: each partial sum rounded, in axis order)
//   y = R(e / s)                   (log_softmax: R(log(y)), the log of that softmax)
// `safe` is ONNX Attention's softmax: a row whose maximum is -inf (fully masked) takes 0 for
// it, and a sum of 0 is taken as 1, so such a row is 0 instead of NaN.
//
// The sums follow the reference's: numpy's float16 sum along a row's contiguous axis adds in
// float32 (pairwise) and rounds once, which a float32 accumulator rounded after is; ml_dtypes'
// bfloat16 sum rounds every partial sum to bfloat16, from +0 in the axis's order, which the
// ordered combiner sum_bf16 is (ir/ordered.ts: schedules keep it one serial accumulation).

import { call, div, eq, f32, load, maxReduce, reduceAxis, select, sub, sum, type Expr } from '../ir/expr';
import { sumBf16 } from '../ir/ordered';
import { compute, type Tensor } from '../ir/tensor';

export type NarrowFloat = 'float16' | 'bfloat16';

/** The intrinsic (and the graph op of the same name) that rounds a float32 value to each narrow type. */
export const NARROW_ROUNDING: Record<NarrowFloat, 'round_f16' | 'round_bf16'> = { float16: 'round_f16', bfloat16: 'round_bf16' };

export interface NarrowSoftmaxOptions {
  /** ONNX Attention's softmax: fully masked rows (maximum -inf) are 0. */
  safe?: boolean;
  /** LogSoftmax: the log of the softmax, rounded. */
  log?: boolean;
}

/** Softmax (or log-softmax) along `axis` of `x`, whose values are of `type`, with the type's roundings (see above). */
export function narrowSoftmax(x: Tensor, axis: number, type: NarrowFloat, opts: NarrowSoftmaxOptions = {}): Tensor {
  if (x.dtype !== 'float32') throw new Error(`narrow_softmax: input is ${x.dtype}, expected float32`);
  const rank = x.shape.length;
  const a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) throw new Error(`narrow_softmax: axis ${axis} out of range for rank ${rank}`);
  const round = (e: Expr): Expr => call(NARROW_ROUNDING[type], e);
  const names = x.shape.map((_, i) => `i${i}`);
  const reducedNames = names.slice(0, rank - 1);
  const reducedShape = x.shape.filter((_, i) => i !== a);
  const k = reduceAxis('k', x.shape[a]);
  const withK = (outer: readonly Expr[]): Expr[] => {
    const idx = [...outer];
    idx.splice(a, 0, { k: 'var', name: k.name });
    return idx;
  };
  const drop = (ax: readonly Expr[]): Expr[] => ax.filter((_, i) => i !== a);
  const maxelem = compute('T_narrow_softmax_maxelem', reducedShape, reducedNames, (...o) => maxReduce(load(x, withK(o)), [k]), 'softmax');
  const exp = compute('T_narrow_softmax_exp', x.shape, names, (...ax) => {
    const m = load(maxelem, drop(ax));
    return round(call('exp', round(sub(load(x, ax), opts.safe ? select(eq(m, f32(-Infinity)), f32(0), m) : m))));
  }, 'softmax');
  const expsum = compute('T_narrow_softmax_expsum', reducedShape, reducedNames, (...o) => (type === 'bfloat16' ? sumBf16 : sum)(load(exp, withK(o)), [k]), 'softmax');
  return compute(opts.log ? 'T_narrow_log_softmax' : 'T_narrow_softmax_norm', x.shape, names, (...ax) => {
    const s = round(load(expsum, drop(ax)));
    const y = round(div(load(exp, ax), opts.safe ? select(eq(s, f32(0)), f32(1), s) : s));
    return opts.log ? round(call('log', y)) : y;
  }, 'softmax');
}
