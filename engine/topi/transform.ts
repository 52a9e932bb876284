// Injective operators: padding (constant, and reflect / edge / wrap), reshape, flatten,
// transpose, concatenate, strided slice, broadcast_to, tile, depth_to_space /
// space_to_depth, trilu and reverse_sequence. Each takes its element type from its input.

import {
  add, all, bool, int, floordiv, floormod, ge, f32, ifThenElse, load, lt, max, min, mul, sub, type DType, type Expr,
} from '../ir/expr';
import { compute, numElements, rowMajorStrides, type Tensor } from '../ir/tensor';

/** A constant of `dtype` (the fill value of a pad, the zero of trilu). */
export function constOf(dtype: DType, value: number): Expr {
  if (dtype === 'float32') return f32(value);
  if (dtype === 'bool') return bool(value !== 0);
  return int(Math.trunc(value));
}

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
    return cond ? ifThenElse(cond, load(data, idx), constOf(data.dtype, value)) : load(data, idx);
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

export type PadMode = 'reflect' | 'edge' | 'wrap';

/**
 * Padding that reads the data itself (ONNX Pad's reflect, edge and wrap modes; numpy's
 * `reflect`, `edge`, `wrap`): index `i - before` folded back into [0, d). Reflect mirrors
 * without repeating the edge element and has period 2(d - 1), so any width works.
 */
export function padMode(data: Tensor, before: readonly number[], after: readonly number[], mode: PadMode): Tensor {
  const rank = data.shape.length;
  if (before.length !== rank || after.length !== rank) throw new Error(`pad: ${rank}-d data needs ${rank} pad widths on each side`);
  if ([...before, ...after].some((w) => w < 0)) throw new Error(`pad ${mode}: negative widths`);
  const shape = data.shape.map((d, i) => d + before[i] + after[i]);
  return compute(`${mode === 'reflect' ? 'MirrorPad' : mode === 'edge' ? 'EdgePad' : 'WrapPad'}Input`, shape, axisNames(rank, 'ax'), (...ax) => load(data, ax.map((a, i) => {
    const d = data.shape[i];
    if (before[i] === 0 && after[i] === 0) return a;
    const x = sub(a, before[i]);
    if (d === 1) return 0;
    if (mode === 'edge') return min(max(x, 0), d - 1);
    if (mode === 'wrap') return floormod(x, d);
    const m = floormod(x, 2 * (d - 1));
    return ifThenElse(lt(m, d), m, sub(2 * (d - 1), m));
  })), 'injective');
}

/**
 * Strided slice: output element `ax` reads `begin + ax * step` on each axis (a negative
 * step walks backwards); the caller clamps begin and sizes the output (ONNX Slice, Split).
 */
export function stridedSlice(data: Tensor, begin: readonly number[], step: readonly number[], shape: readonly number[], name = 'T_strided_slice'): Tensor {
  const rank = data.shape.length;
  if (begin.length !== rank || step.length !== rank || shape.length !== rank) throw new Error(`strided_slice: ${rank}-d data needs ${rank} begins, steps and sizes`);
  shape.forEach((n, i) => {
    const last = begin[i] + (n - 1) * step[i];
    if (begin[i] < 0 || begin[i] >= data.shape[i] || last < 0 || last >= data.shape[i]) {
      throw new Error(`strided_slice: axis ${i} reads ${begin[i]}..${last} of ${data.shape[i]}`);
    }
  });
  return compute(name, shape, axisNames(rank, 'ax'), (...ax) => load(data, ax.map((a, i) => add(begin[i], step[i] === 1 ? a : mul(a, step[i])))), 'injective');
}

/** The shape two shapes broadcast to (numpy rules, right-aligned); throws when they do not. */
export function broadcastShapes(a: readonly number[], b: readonly number[]): number[] {
  const rank = Math.max(a.length, b.length);
  return Array.from({ length: rank }, (_, i) => {
    const x = a[i - rank + a.length] ?? 1, y = b[i - rank + b.length] ?? 1;
    if (x !== y && x !== 1 && y !== 1) throw new Error(`cannot broadcast [${a.join(', ')}] with [${b.join(', ')}]`);
    return x === 1 ? y : x;
  });
}

/** broadcast_to: `data` repeated along its 1-extent and missing leading axes up to `shape` (which must be its broadcast). */
export function broadcastTo(data: Tensor, shape: readonly number[]): Tensor {
  const out = broadcastShapes(data.shape, shape);
  if (out.some((d, i) => d !== shape[i]) || out.length !== shape.length) throw new Error(`broadcast_to: [${data.shape.join(', ')}] does not broadcast to [${shape.join(', ')}]`);
  const off = shape.length - data.shape.length;
  return compute('T_broadcast_to', shape, axisNames(shape.length, 'ax'), (...ax) => load(data, data.shape.map((d, i) => (d === 1 ? 0 : ax[i + off]))), 'broadcast');
}

/** tile: `data` repeated `reps[i]` times along axis i (ONNX Tile; reps has one entry per axis). */
export function tile(data: Tensor, reps: readonly number[]): Tensor {
  if (reps.length !== data.shape.length) throw new Error(`tile: ${reps.length} repeats for a ${data.shape.length}-d tensor`);
  const shape = data.shape.map((d, i) => d * reps[i]);
  return compute('T_tile', shape, axisNames(shape.length, 'ax'), (...ax) => load(data, ax.map((a, i) => (reps[i] === 1 ? a : data.shape[i] === 1 ? 0 : floormod(a, data.shape[i])))), 'injective');
}

/**
 * depth_to_space on NCHW (ONNX DepthToSpace): out[n, c, h*b + i, w*b + j] reads channel
 * (i*b + j)*C' + c in DCR mode (depth-column-row, the default) or c*b*b + i*b + j in CRD mode.
 */
export function depthToSpace(data: Tensor, block: number, mode: 'DCR' | 'CRD'): Tensor {
  const [n, c, h, w] = data.shape;
  if (data.shape.length !== 4 || c % (block * block) !== 0) throw new Error(`depth_to_space: [${data.shape.join(', ')}] with block ${block}`);
  const oc = c / (block * block);
  return compute('depth_to_space', [n, oc, h * block, w * block], ['b', 'c', 'y', 'x'], (b, ch, y, x) => {
    const i = floormod(y, block), j = floormod(x, block);
    const channel = mode === 'DCR' ? add(mul(add(mul(i, block), j), oc), ch) : add(mul(ch, block * block), add(mul(i, block), j));
    return load(data, [b, channel, floordiv(y, block), floordiv(x, block)]);
  }, 'injective');
}

/**
 * space_to_depth on NCHW (ONNX SpaceToDepth), the inverse of depth_to_space: in[n, c, h*b + i, w*b + j]
 * goes to channel (i*b + j)*C + c in DCR mode (the default) or c*b*b + i*b + j in CRD mode (opset 28).
 */
export function spaceToDepth(data: Tensor, block: number, mode: 'DCR' | 'CRD' = 'DCR'): Tensor {
  const [n, c, h, w] = data.shape;
  if (data.shape.length !== 4 || h % block !== 0 || w % block !== 0) throw new Error(`space_to_depth: [${data.shape.join(', ')}] with block ${block}`);
  return compute('space_to_depth', [n, c * block * block, h / block, w / block], ['b', 'c', 'y', 'x'], (b, ch, y, x) => {
    const [src, q] = mode === 'DCR' ? [floormod(ch, c), floordiv(ch, c)] : [floordiv(ch, block * block), floormod(ch, block * block)];
    return load(data, [b, src, add(mul(y, block), floordiv(q, block)), add(mul(x, block), floormod(q, block))]);
  }, 'injective');
}

/** trilu: the upper (j - i >= k) or lower (j - i <= k) triangle of the last two axes, the rest zero (ONNX Trilu). */
export function trilu(data: Tensor, k: number, upper: boolean): Tensor {
  const rank = data.shape.length;
  if (rank < 2) throw new Error(`trilu: a ${rank}-d tensor (needs 2 or more axes)`);
  return compute('T_trilu', data.shape, axisNames(rank, 'ax'), (...ax) => {
    const d = sub(ax[rank - 1], ax[rank - 2]);
    return ifThenElse(upper ? ge(d, k) : lt(d, k + 1), load(data, ax), constOf(data.dtype, 0));
  }, 'injective');
}

/**
 * reverse_sequence (ONNX ReverseSequence): along `seqAxis`, the first lens[b] elements of
 * batch b in reverse order, the rest as they are; `lens` is an int32 tensor [batch] read at run time.
 */
export function reverseSequence(data: Tensor, lens: Tensor, seqAxis: number, batchAxis: number): Tensor {
  const rank = data.shape.length;
  if (lens.shape.length !== 1 || lens.shape[0] !== data.shape[batchAxis] || seqAxis === batchAxis) {
    throw new Error(`reverse_sequence: lengths [${lens.shape.join(', ')}] for data [${data.shape.join(', ')}] (batch axis ${batchAxis}, time axis ${seqAxis})`);
  }
  return compute('T_reverse_sequence', data.shape, axisNames(rank, 'ax'), (...ax) => {
    const len = min(max(load(lens, [ax[batchAxis]]), 0), data.shape[seqAxis]);
    const idx: Expr[] = [...ax];
    idx[seqAxis] = ifThenElse(lt(ax[seqAxis], len), sub(sub(len, 1), ax[seqAxis]), ax[seqAxis]);
    return load(data, idx);
  }, 'injective');
}
