// Arithmetic on static tensors, for the parts of a model that are known at import time:
// shape computations (Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as exporters
// write a flatten) and rearranged initializers (a transposed weight).

import { numElements, permute, rowMajorStrides } from '../../ir/tensor';
import type { Attrs } from '../../graph/ops';
import { evalOp } from '../../graph/run';
import { broadcastShape } from '../../topi/elemwise';
import { constantData, floatData, type StaticTensor } from './tensor';

export const intTensor = (shape: readonly number[], data: readonly number[]): StaticTensor => ({ type: 'int', shape: [...shape], data: [...data] });
export const floatTensor = (shape: readonly number[], data: Float32Array): StaticTensor => ({ type: 'float', shape: [...shape], data });

/** The same values with another shape (same element count, checked by the caller). */
export function withShape(t: StaticTensor, shape: readonly number[]): StaticTensor {
  return t.type === 'float' ? floatTensor(shape, t.data) : intTensor(shape, t.data);
}

/** Normalise a possibly negative axis; throws when out of range. */
export function normAxis(axis: number, rank: number, what = 'axis'): number {
  const a = axis < 0 ? axis + rank : axis;
  if (!Number.isInteger(a) || a < 0 || a >= rank) throw new Error(`${what} ${axis} is out of range for rank ${rank}`);
  return a;
}

/** Broadcasting elementwise arithmetic; integer division truncates, as ONNX's Div on ints. */
export function binaryStatic(op: 'Add' | 'Sub' | 'Mul' | 'Div', a: StaticTensor, b: StaticTensor): StaticTensor {
  const shape = broadcastShape(a.shape, b.shape);
  const n = numElements(shape);
  const asInt = a.type === 'int' && b.type === 'int';
  const index = (t: StaticTensor): ((o: number) => number) => {
    const ts = rowMajorStrides(t.shape), os = rowMajorStrides(shape), off = shape.length - t.shape.length;
    return (o) => {
      let k = 0;
      for (let d = 0; d < t.shape.length; d++) {
        const coord = Math.floor(o / os[d + off]) % shape[d + off];
        if (t.shape[d] !== 1) k += coord * ts[d];
      }
      return k;
    };
  };
  const ia = index(a), ib = index(b);
  const f = {
    Add: (x: number, y: number) => x + y,
    Sub: (x: number, y: number) => x - y,
    Mul: (x: number, y: number) => x * y,
    Div: (x: number, y: number) => (asInt ? Math.trunc(x / y) : x / y),
  }[op];
  const values = Array.from({ length: n }, (_, o) => f(a.data[ia(o)], b.data[ib(o)]));
  return asInt ? intTensor(shape, values) : floatTensor(shape, Float32Array.from(values));
}

/** ONNX Gather along `axis` with static indices (negative indices count from the end). */
export function gatherStatic(data: StaticTensor, indices: StaticTensor, axis: number): StaticTensor {
  const a = normAxis(axis, data.shape.length);
  const dim = data.shape[a];
  const idx = [...indices.data].map((v) => {
    const i = v < 0 ? v + dim : v;
    if (!Number.isInteger(i) || i < 0 || i >= dim) throw new Error(`Gather index ${v} is out of range for a dimension of ${dim}`);
    return i;
  });
  const outer = numElements(data.shape.slice(0, a)), inner = numElements(data.shape.slice(a + 1));
  const shape = [...data.shape.slice(0, a), ...indices.shape, ...data.shape.slice(a + 1)];
  const values: number[] = [];
  for (let o = 0; o < outer; o++) for (const i of idx) for (let k = 0; k < inner; k++) values.push(data.data[(o * dim + i) * inner + k]);
  return data.type === 'float' ? floatTensor(shape, Float32Array.from(values)) : intTensor(shape, values);
}

export function concatStatic(ts: readonly StaticTensor[], axis: number): StaticTensor {
  const rank = ts[0].shape.length;
  const a = normAxis(axis, rank);
  for (const t of ts) {
    if (t.shape.length !== rank || t.shape.some((d, i) => i !== a && d !== ts[0].shape[i])) throw new Error('Concat: shapes differ outside the axis');
  }
  const outer = numElements(ts[0].shape.slice(0, a));
  const values: number[] = [];
  for (let o = 0; o < outer; o++) {
    for (const t of ts) {
      const chunk = numElements(t.shape.slice(a));
      for (let k = 0; k < chunk; k++) values.push(t.data[o * chunk + k]);
    }
  }
  const shape = [...ts[0].shape];
  shape[a] = ts.reduce((acc, t) => acc + t.shape[a], 0);
  return ts.every((t) => t.type === 'int') ? intTensor(shape, values) : floatTensor(shape, Float32Array.from(values));
}

export function transposeStatic(t: StaticTensor, perm: readonly number[]): StaticTensor {
  const shape = perm.map((p) => t.shape[p]);
  const data = permute(floatData(t), t.shape, perm);
  return t.type === 'float' ? floatTensor(shape, data) : intTensor(shape, [...data]);
}

/** ONNX Slice on the first axes of a static tensor (starts/ends clamped, steps of any sign). */
export function sliceStatic(t: StaticTensor, starts: number[], ends: number[], axes: number[], steps: number[]): StaticTensor {
  const rank = t.shape.length;
  const ranges = t.shape.map((d) => ({ start: 0, step: 1, count: d }));
  axes.forEach((axis, k) => {
    const a = normAxis(axis, rank), d = t.shape[a], step = steps[k] ?? 1;
    if (step === 0) throw new Error('Slice step 0');
    const clamp = (v: number, lo: number, hi: number): number => Math.min(Math.max(v < 0 ? v + d : v, lo), hi);
    const start = step > 0 ? clamp(starts[k], 0, d) : clamp(starts[k], -1, d - 1);
    const end = step > 0 ? clamp(ends[k], 0, d) : clamp(ends[k], -1, d - 1);
    const count = Math.max(0, Math.ceil((end - start) / step));
    ranges[a] = { start, step, count };
  });
  const shape = ranges.map((r) => r.count);
  const ts = rowMajorStrides(t.shape), os = rowMajorStrides(shape);
  const values = Array.from({ length: numElements(shape) }, (_, o) => {
    let k = 0;
    for (let d = 0; d < rank; d++) k += (ranges[d].start + (Math.floor(o / os[d]) % shape[d]) * ranges[d].step) * ts[d];
    return t.data[k];
  });
  return t.type === 'float' ? floatTensor(shape, Float32Array.from(values)) : intTensor(shape, values);
}

/** ONNX Reshape's target shape: 0 copies the input dimension (unless allowzero), one -1 is inferred. */
export function reshapeTarget(input: readonly number[], target: readonly number[], allowzero: boolean): number[] {
  const out = target.map((d, i) => {
    if (d === 0 && !allowzero) {
      if (i >= input.length) throw new Error(`Reshape: 0 at position ${i} copies a dimension the input (rank ${input.length}) does not have`);
      return input[i];
    }
    return d;
  });
  const unknown = out.filter((d) => d === -1).length;
  if (unknown > 1 || out.some((d) => d < -1 || !Number.isInteger(d))) throw new Error(`Reshape: bad target shape [${target.join(', ')}]`);
  const known = numElements(out.filter((d) => d !== -1));
  const total = numElements(input);
  if (unknown === 1) {
    if (known === 0 || total % known !== 0) throw new Error(`Reshape: cannot reshape [${input.join(', ')}] to [${target.join(', ')}]`);
    out[out.indexOf(-1)] = total / known;
  }
  if (numElements(out) !== total) throw new Error(`Reshape: [${input.join(', ')}] has ${total} elements, [${out.join(', ')}] has ${numElements(out)}`);
  return out;
}

/**
 * A graph operator applied to static tensors now, by the reference evaluator on the op's
 * own compute (data movement of shapes and small constants: Split, Expand, Tile, Slice...).
 * Integers go through int32 (constantData refuses a value outside it); bools stay bools.
 */
export function foldOp(op: string, attrs: Attrs, inputs: readonly StaticTensor[], what = op): StaticTensor {
  const consts = inputs.map((t) => ({ shape: t.shape, ...constantData(t, what) }));
  const { shape, dtype, data } = evalOp({ op, attrs }, consts);
  if (dtype === 'float32') return floatTensor(shape, data as Float32Array);
  const ints = intTensor(shape, Array.from(data));
  return dtype === 'bool' ? { ...ints, bool: true } as StaticTensor : ints;
}

/** A strided slice of a static tensor: per axis its first index, step and count (any integers, no int32 limit). */
export function stridedStatic(t: StaticTensor, ranges: readonly { start: number; step: number; count: number }[]): StaticTensor {
  const shape = ranges.map((r) => r.count);
  const ts = rowMajorStrides(t.shape), os = rowMajorStrides(shape);
  const values = Array.from({ length: numElements(shape) }, (_, o) => {
    let k = 0;
    for (let d = 0; d < shape.length; d++) k += (ranges[d].start + (Math.floor(o / os[d]) % shape[d]) * ranges[d].step) * ts[d];
    return t.data[k];
  });
  if (t.type === 'float') return floatTensor(shape, Float32Array.from(values));
  return t.bool ? { type: 'int', shape, data: values, bool: true } : intTensor(shape, values);
}
