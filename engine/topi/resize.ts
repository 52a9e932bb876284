// Resize (ONNX Resize and Upsample; TVM's topi.image.resize) as a table-driven gather.
//
// Every resized axis k has, per output position o, `taps` source positions (1 for
// nearest, 2 for linear, 4 for cubic) in an int32 table I_k [out_k, taps (+1)] and, unless
// nearest, their weights in a float table W_k [out_k, taps]. The output is the sum over
// every combination of taps of the product of the axes' weights times the input element
// there: separable n-linear / n-cubic interpolation over any set of axes. The tables are
// computed when the model is imported, in float32 as ONNX Runtime computes its own
// (frontend/onnx/convert-resize.ts), so the rounding of a nearest index or of a coordinate
// at a pixel edge is decided once, identically for the reference and the compiled kernel.
// With `extrapolate`, I_k has one more column, 1 where the source coordinate lies inside
// the input and 0 outside (tf_crop_and_resize): any axis outside gives `value`. A nearest
// axis whose indices are floor((a*o + b) / c) (a 2x upsample: o / 2) takes that
// expression instead of a table: no integer input, and an index the lowering can analyse.

import { add, and, floordiv, ifThenElse, load, mul, ne, type Expr } from '../ir/expr';
import { compute, type Tensor } from '../ir/tensor';
import { constOf } from './transform';

export interface ResizeAxis {
  readonly axis: number;
  /** int32 [out, taps] source indices (+ one inside/outside column when extrapolating). */
  readonly index?: Tensor;
  /** Instead of `index` (nearest, no extrapolation): the source index of o is floor((a*o + b) / c). */
  readonly affine?: readonly [number, number, number];
  /** The output length of an affine axis. */
  readonly length?: number;
  /** float32 [out, taps] weights; absent for nearest (taps 1). */
  readonly weight?: Tensor;
}

export function resize(data: Tensor, axes: readonly ResizeAxis[], taps: number, extrapolation?: number): Tensor {
  const rank = data.shape.length;
  const shape = [...data.shape];
  const seen = new Set<number>();
  for (const a of axes) {
    if (!Number.isInteger(a.axis) || a.axis < 0 || a.axis >= rank || seen.has(a.axis)) throw new Error(`resize: bad or repeated axis ${a.axis} for rank ${rank}`);
    seen.add(a.axis);
    if (a.affine) {
      const [p, q, r] = a.affine;
      const n = a.length ?? 0;
      const first = Math.floor(q / r), last = Math.floor((p * (n - 1) + q) / r);
      if (taps !== 1 || extrapolation !== undefined || a.index || !(r >= 1) || !(n >= 1) || Math.min(first, last) < 0 || Math.max(first, last) >= data.shape[a.axis]) {
        throw new Error(`resize: axis ${a.axis}: affine index (${p}*o + ${q}) / ${r} over ${n} positions (only nearest, within the input)`);
      }
      shape[a.axis] = n;
      continue;
    }
    if (!a.index) throw new Error(`resize: axis ${a.axis} has neither an index table nor an affine index`);
    const cols = taps + (extrapolation === undefined ? 0 : 1);
    if (a.index.dtype !== 'int32' || a.index.shape.length !== 2 || a.index.shape[1] !== cols) throw new Error(`resize: axis ${a.axis} needs an int32 index table [out, ${cols}], got [${a.index.shape.join(', ')}]`);
    if ((taps > 1) !== (a.weight !== undefined)) throw new Error(`resize: axis ${a.axis}: weights go with ${taps} taps ${taps > 1 ? 'and are missing' : 'only when there are more than one'}`);
    if (a.weight && (a.weight.dtype !== 'float32' || a.weight.shape[0] !== a.index.shape[0] || a.weight.shape[1] !== taps)) throw new Error(`resize: axis ${a.axis}: weights [${a.weight.shape.join(', ')}]`);
    if (taps > 1 && data.dtype !== 'float32') throw new Error(`resize: interpolating ${data.dtype} data`);
    shape[a.axis] = a.index.shape[0];
  }
  const names = Array.from({ length: rank }, (_, i) => `ax${i}`);
  return compute('resize', shape, names, (...ax) => {
    const terms: Expr[] = [];
    const combos = taps ** axes.length;
    for (let c = 0; c < combos; c++) {
      const idx: Expr[] = [...ax];
      let w: Expr | undefined;
      let rest = c;
      for (const a of axes) {
        const t = rest % taps;
        rest = Math.floor(rest / taps);
        idx[a.axis] = a.affine ? floordiv(add(mul(ax[a.axis], a.affine[0]), a.affine[1]), a.affine[2]) : load(a.index!, [ax[a.axis], t]);
        if (a.weight) {
          const wt = load(a.weight, [ax[a.axis], t]);
          w = w ? mul(w, wt) : wt;
        }
      }
      const v = load(data, idx);
      terms.push(w ? mul(w, v) : v);
    }
    const body = terms.reduce((acc, t) => add(acc, t));
    if (extrapolation === undefined) return body;
    const inside = axes.map((a) => ne(load(a.index!, [ax[a.axis], taps]), 0)).reduce((acc, e) => and(acc, e));
    return ifThenElse(inside, body, constOf(data.dtype, extrapolation));
  }, 'injective');
}
