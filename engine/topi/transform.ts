// Injective operators: padding, reshape, flatten, transpose, concatenate.

import { add, all, int, floordiv, floormod, ge, f32, ifThenElse, load, lt, mul, sub, type Expr } from '../ir/expr';
import { compute, numElements, rowMajorStrides, type Tensor } from '../ir/tensor';

const axisNames = (rank: number, prefix: string): string[] => Array.from({ length: rank }, (_, i) => `${prefix}${i}`);

/**
 * Which TOPI `pad` a declaration mirrors; they print differently. `python`
 * (topi/nn/pad.py, used by conv2d): axes `i0..`, a padded dimension checks both bounds.
 * `cpp` (topi/nn.h, used by pooling): axes `ax0..`, only the padded sides are checked.
 */
export type PadStyle = 'python' | 'cpp';

/**
 * Constant padding. With no padding at all this is still a stage (an identity copy), as
 * TOPI's conv2d writes it; lowering inlines it.
 */
export function pad(
  data: Tensor, before: readonly number[], after: readonly number[], name = 'PadInput', value = 0, style: PadStyle = 'python',
): Tensor {
  const rank = data.shape.length;
  if (before.length !== rank || after.length !== rank) throw new Error(`pad: ${rank}-d data needs ${rank} pad widths on each side`);
  const shape = data.shape.map((d, i) => d + before[i] + after[i]);
  return compute(name, shape, axisNames(rank, style === 'python' ? 'i' : 'ax'), (...ax) => {
    const conds: Expr[] = [];
    const idx = ax.map((a, i) => {
      if (before[i] === 0 && after[i] === 0) return a;
      if (style === 'python' || before[i] !== 0) conds.push(ge(a, before[i]));
      if (style === 'python' || after[i] !== 0) conds.push(lt(a, before[i] + data.shape[i]));
      return sub(a, before[i]);
    });
    const cond = all(conds);
    return cond ? ifThenElse(cond, load(data, idx), f32(value)) : load(data, idx);
  }, 'injective');
}

/** Reshape to `newShape` (same element count, row-major). */
export function reshape(data: Tensor, newShape: readonly number[], name = 'T_reshape'): Tensor {
  if (numElements(newShape) !== numElements(data.shape)) {
    throw new Error(`reshape: [${data.shape.join(', ')}] has ${numElements(data.shape)} elements, [${newShape.join(', ')}] has ${numElements(newShape)}`);
  }
  const outStrides = rowMajorStrides(newShape), inStrides = rowMajorStrides(data.shape);
  return compute(name, newShape, axisNames(newShape.length, 'ax'), (...ax) => {
    const flat = ax.reduce<Expr>((acc, a, i) => add(acc, newShape[i] === 1 ? 0 : mul(a, outStrides[i])), int(0));
    return load(data, data.shape.map((d, j) => {
      if (d === 1) return 0;
      const q = floordiv(flat, inStrides[j]);
      return j === 0 ? q : floormod(q, d);
    }));
  }, 'injective');
}

/** batch_flatten: [N, ...] -> [N, prod(...)]. */
export function batchFlatten(data: Tensor): Tensor {
  return reshape(data, [data.shape[0], numElements(data.shape.slice(1))], 'T_batch_flatten');
}

/** transpose by a permutation of the axes (output axis i reads input axis perm[i]). */
export function transpose(data: Tensor, perm: readonly number[]): Tensor {
  const rank = data.shape.length;
  if (perm.length !== rank || [...perm].sort((x, y) => x - y).some((p, i) => p !== i)) throw new Error(`transpose: [${perm.join(', ')}] is not a permutation of ${rank} axes`);
  return compute('T_transpose', perm.map((p) => data.shape[p]), axisNames(rank, 'ax'), (...ax) => {
    const idx = new Array<Expr>(rank);
    perm.forEach((p, i) => { idx[p] = ax[i]; });
    return load(data, idx);
  }, 'injective');
}

/** concatenate along `axis`. */
export function concatenate(inputs: readonly Tensor[], axis: number): Tensor {
  if (inputs.length === 0) throw new Error('concatenate: no inputs');
  const rank = inputs[0].shape.length;
  const a = axis < 0 ? axis + rank : axis;
  if (!Number.isInteger(a) || a < 0 || a >= rank) throw new Error(`concatenate: axis ${axis} out of range for rank ${rank}`);
  for (const t of inputs) {
    if (t.shape.length !== rank || t.shape.some((d, i) => i !== a && d !== inputs[0].shape[i])) {
      throw new Error(`concatenate: shapes ${inputs.map((x) => `[${x.shape.join(', ')}]`).join(', ')} differ outside axis ${a}`);
    }
  }
  const offsets: number[] = [];
  let total = 0;
  for (const t of inputs) { offsets.push(total); total += t.shape[a]; }
  const shape = [...inputs[0].shape];
  shape[a] = total;
  return compute('T_concat', shape, axisNames(rank, 'ax'), (...ax) => {
    // Last input first, each earlier one in the else branch: ax >= offset ? last : (...).
    let body: Expr = load(inputs[0], ax);
    for (let i = 1; i < inputs.length; i++) {
      const idx: Expr[] = [...ax];
      idx[a] = sub(ax[a], offsets[i]);
      body = ifThenElse(ge(ax[a], offsets[i]), load(inputs[i], idx), body);
    }
    return body;
  }, 'injective');
}
