// Tensors and the two kinds of operation that define them: placeholders (inputs) and
// compute stages (`name(axes) = body`, or `name(axes) += source` for a reduction).

import { dtypeOf, v, walk } from './expr';
import type { ComputeOp, DType, Expr, Tensor, Var } from './nodes';

export type { PlaceholderOp, ComputeOp, Op, Tensor } from './nodes';

export function placeholder(name: string, shape: readonly number[], dtype: DType = 'float32'): Tensor {
  checkShape(name, shape);
  return { name, shape: [...shape], dtype, op: { kind: 'placeholder' } };
}

/**
 * Declare a compute stage. `axisNames` names the spatial axes (one per output dim); `fn`
 * receives them as variables and returns the body. A reduction body (sum/maxReduce) makes
 * its axes the stage's reduce axes.
 */
export function compute(
  name: string,
  shape: readonly number[],
  axisNames: readonly string[],
  fn: (...axes: Var[]) => Expr,
  tag = 'injective',
): Tensor {
  checkShape(name, shape);
  if (axisNames.length !== shape.length) {
    throw new Error(`${name}: ${axisNames.length} axis names for a ${shape.length}-d shape`);
  }
  const axes = shape.map((extent, i) => ({ name: axisNames[i], extent }));
  const body = fn(...axisNames.map(v));
  const reduceAxes = body.k === 'reduce' ? body.axes : [];
  const names = [...axes, ...reduceAxes].map((a) => a.name);
  if (new Set(names).size !== names.length) throw new Error(`${name}: axis names are not unique: ${names.join(', ')}`);
  // Fail here, not later in the evaluator or a code generator: every variable is one of
  // the stage's axes, and a reduction is the whole body.
  walk(body, (e) => {
    if (e.k === 'var' && !names.includes(e.name)) throw new Error(`${name}: variable ${e.name} is not an axis of the stage (axes: ${names.join(', ')})`);
    if (e.k === 'reduce' && e !== body) throw new Error(`${name}: a reduction must be the whole body of a stage`);
  });
  const dtype = dtypeOf(body);
  return { name, shape: [...shape], dtype, op: { kind: 'compute', axes, reduceAxes, body, tag } };
}

function checkShape(name: string, shape: readonly number[]): void {
  for (const d of shape) {
    if (!Number.isInteger(d) || d < 1) throw new Error(`${name}: bad shape [${shape.join(', ')}]`);
  }
}

/**
 * The elements of a tensor, row-major: float32 tensors as Float32Array; int32 and bool
 * tensors as Int32Array (bool as 0/1). Every element is 4 bytes, so buffers, the memory
 * plan and the params blob stay in 4-byte words whatever the type.
 */
export type TensorData = Float32Array | Int32Array;

/** A zeroed array for `n` elements of `dtype`. */
export function allocData(dtype: DType, n: number): TensorData {
  return dtype === 'float32' ? new Float32Array(n) : new Int32Array(n);
}

/** The dtype an array stores (Int32Array: int32; pass 'bool' explicitly for masks). */
export const dataDtype = (data: TensorData): DType => (data instanceof Float32Array ? 'float32' : 'int32');

/** Whether `data` is the array type `dtype` is stored in. */
export const dataFits = (dtype: DType, data: TensorData): boolean => (dtype === 'float32') === (data instanceof Float32Array);

/** The same 4-byte words seen as float32 (for the params blob and raw files). */
export const asFloatWords = (data: TensorData): Float32Array =>
  data instanceof Float32Array ? data : new Float32Array(data.buffer, data.byteOffset, data.length);

export const isCompute = (t: Tensor): t is Tensor & { op: ComputeOp } => t.op.kind === 'compute';
export const isPlaceholder = (t: Tensor): boolean => t.op.kind === 'placeholder';
export const numElements = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);

/** Row-major strides of a shape. */
export function rowMajorStrides(shape: readonly number[]): number[] {
  const out = new Array<number>(shape.length).fill(1);
  for (let i = shape.length - 2; i >= 0; i--) out[i] = out[i + 1] * shape[i + 1];
  return out;
}

/**
 * Permute the axes of a row-major array: output axis i is input axis perm[i]
 * (numpy's `transpose(perm)`). OIHW -> HWIO is [2, 3, 1, 0]; [C, M, kh, kw] -> HWOI is [2, 3, 0, 1].
 */
export function permute<T extends TensorData>(data: T, shape: readonly number[], perm: readonly number[]): T {
  const rank = shape.length;
  if (perm.length !== rank || [...perm].sort((x, y) => x - y).some((p, i) => p !== i)) {
    throw new Error(`permute: [${perm.join(', ')}] is not a permutation of ${rank} axes`);
  }
  const inStrides = rowMajorStrides(shape);
  const outShape = perm.map((p) => shape[p]);
  const strideOf = perm.map((p) => inStrides[p]);
  const out = (data instanceof Float32Array ? new Float32Array(data.length) : new Int32Array(data.length)) as T;
  const idx = new Array<number>(rank).fill(0);
  let src = 0;
  for (let o = 0; o < out.length; o++) {
    out[o] = data[src];
    // Odometer increment over the output index, tracking the matching input offset.
    for (let d = rank - 1; d >= 0; d--) {
      idx[d]++;
      src += strideOf[d];
      if (idx[d] < outShape[d]) break;
      src -= strideOf[d] * outShape[d];
      idx[d] = 0;
    }
  }
  return out;
}
