// Converters of ONNX's indexing and shape-producing operators: Gather (TOPI's take),
// GatherElements, GatherND, ScatterElements, ScatterND, TopK, ArgMax/ArgMin, CumSum, OneHot
// on computed tensors; Shape, Size, Range, ConstantOfShape, NonZero, Unique, Constant and
// Dropout (with its mask) at import time. Static inputs fold here (shape arithmetic); a computed index tensor becomes a
// graph op whose kernel wraps negative indices and clamps out-of-range ones (topi/indexing.ts).

import type { DType } from '../../ir/expr';
import type { ScatterReduction } from '../../topi/indexing';
import { numElements } from '../../ir/tensor';
import { UnsupportedError, nodeValue, staticValue, type NodeView, type Value } from './context';
import { applyOp } from './convert-logic';
import type { Converter } from './convert-tensor';
import { floatTensor, gatherStatic, intTensor, normAxis } from './static';
import type { StaticTensor } from './tensor';

const isStatic = (v: Value): v is Extract<Value, { kind: 'static' }> => v.kind === 'static';

/** Elements above which a static result is made a graph constant directly (integers would be a JS number array). */
const MAX_STATIC_INTS = 1 << 20;

/** An index input as int32: int tensors as they are; bool refused (ONNX indices are int32/int64). */
function indicesOf(n: NodeView, i: number, what: string): Value {
  const t = n.dtype(i);
  if (t !== 'int32') throw new Error(`${n.opType}: ${what} are ${t}, not an integer type`);
  return n.input(i);
}

const gather: Converter = {
  attrs: ['axis'],
  convert(n) {
    const data = n.input(0), indices = indicesOf(n, 1, 'indices');
    const rank = n.shape(0).length;
    const axis = normAxis(n.attr.int('axis', 0), rank, 'Gather axis');
    // Shape arithmetic (Shape -> Gather) and small static tables fold here; the checked static path refuses a bad index.
    if (isStatic(data) && isStatic(indices) && numElements(data.t.shape) <= MAX_STATIC_INTS) return [staticValue(gatherStatic(data.t, indices.t, axis))];
    return [n.op('take', [n.node(0), n.node(1)], { axis })];
  },
};

const gatherElements: Converter = {
  attrs: ['axis'],
  convert(n) {
    const rank = n.shape(0).length;
    const axis = normAxis(n.attr.int('axis', 0), rank, 'GatherElements axis');
    return [applyOp(n, 'gather_elements', [n.input(0), indicesOf(n, 1, 'indices')], { axis })];
  },
};

const gatherNd: Converter = {
  attrs: ['batch_dims'],
  convert(n) {
    return [applyOp(n, 'gather_nd', [n.input(0), indicesOf(n, 1, 'indices')], { batchDims: n.attr.int('batch_dims', 0) })];
  },
};

function argReduce(kind: 'argmax' | 'argmin'): Converter {
  return {
    attrs: ['axis', 'keepdims', 'select_last_index'],
    convert(n) {
      const rank = n.shape(0).length;
      if (rank === 0) throw new UnsupportedError(`${n.opType} of a scalar`);
      const axis = normAxis(n.attr.int('axis', 0), rank, `${n.opType} axis`);
      return [applyOp(n, kind, [n.input(0)], { axis, keepdims: n.attr.int('keepdims', 1) === 1, selectLast: n.attr.int('select_last_index', 0) === 1 })];
    },
  };
}

/** Steps above which a CumSum (quadratic in its axis) is refused. */
const MAX_CUMSUM_STEPS = 1 << 28;

const cumsum: Converter = {
  attrs: ['exclusive', 'reverse'],
  convert(n) {
    const rank = n.shape(0).length;
    const a = n.ints(1, 'axis');
    if (a.length !== 1) throw new Error(`CumSum: axis has ${a.length} values, expected one`);
    if (n.dtype(0) === 'bool') throw new Error('CumSum of a bool tensor');
    const axis = normAxis(a[0], rank, 'CumSum axis');
    // The compute sums the whole axis for every element (no scans in the IR): bound that.
    const steps = numElements(n.shape(0)) * n.shape(0)[axis];
    if (steps > MAX_CUMSUM_STEPS) throw new UnsupportedError(`CumSum of ${steps} steps (the elements x the axis length; at most ${MAX_CUMSUM_STEPS})`);
    return [applyOp(n, 'cumsum', [n.input(0)], { axis, exclusive: n.attr.int('exclusive', 0) === 1, reverse: n.attr.int('reverse', 0) === 1 })];
  },
};

const oneHot: Converter = {
  attrs: ['axis'],
  convert(n) {
    const depth = n.static(1, 'depth');
    if (depth.data.length !== 1) throw new Error('OneHot: depth must have one element');
    const d = Math.trunc(depth.data[0]);
    if (!(d >= 1)) throw new UnsupportedError(`OneHot depth ${depth.data[0]}`);
    const values = n.static(2, 'values');
    if (values.data.length !== 2) throw new Error('OneHot: values must be [off_value, on_value]');
    const dtype: DType = values.type === 'float' ? 'float32' : values.bool ? 'bool' : 'int32';
    let indices = n.input(0);
    // Float indices (ONNX allows any numeric type) are truncated, as ONNX Runtime casts them to int64.
    if (n.dtype(0) === 'float32') indices = applyOp(n, 'cast', [indices], { dtype: 'int32' }, '_indices');
    if (n.dtype(0) === 'bool') throw new Error('OneHot: bool indices');
    const rank = n.shape(0).length + 1;
    const axis = normAxis(n.attr.int('axis', -1), rank, 'OneHot axis');
    return [applyOp(n, 'one_hot', [indices], { depth: d, off: values.data[0], on: values.data[1], axis, dtype })];
  },
};

const range: Converter = {
  attrs: [],
  convert(n) {
    const [start, limit, delta] = [0, 1, 2].map((i) => {
      const t = n.static(i, ['start', 'limit', 'delta'][i]);
      if (t.data.length !== 1) throw new Error(`Range: ${['start', 'limit', 'delta'][i]} must be a scalar`);
      return t;
    });
    const [a, b, c] = [start.data[0], limit.data[0], delta.data[0]];
    if (c === 0) throw new Error('Range: delta 0');
    const count = Math.max(Math.ceil((b - a) / c), 0);
    if (count === 0) throw new UnsupportedError('Range with no elements (an empty tensor)');
    if (count > MAX_STATIC_INTS) throw new UnsupportedError(`Range of ${count} elements`);
    if (start.type === 'float') return [staticValue(floatTensor([count], Float32Array.from({ length: count }, (_, i) => a + i * c)))];
    return [staticValue(intTensor([count], Array.from({ length: count }, (_, i) => a + i * c)))];
  },
};

const shape: Converter = {
  attrs: ['start', 'end'],
  convert(n) {
    const dims = n.shape(0);
    const r = dims.length;
    const clamp = (v: number): number => Math.min(Math.max(v < 0 ? v + r : v, 0), r);
    const out = dims.slice(clamp(n.attr.int('start', 0)), clamp(n.attr.int('end', r)));
    if (out.length === 0 && r > 0) throw new UnsupportedError('Shape with start >= end (an empty tensor)');
    return [staticValue(intTensor([out.length], out))];
  },
};

const size: Converter = {
  attrs: [],
  convert: (n) => [staticValue(intTensor([], [numElements(n.shape(0))]))],
};

/** A constant value of `shape` filled with one element of `like`'s type: static when small, else one graph constant. */
function filled(n: NodeView, shape: readonly number[], value: number, dtype: DType, suffix = ''): Value {
  const count = numElements(shape);
  if (dtype === 'float32') return staticValue(floatTensor(shape, new Float32Array(count).fill(value)));
  // Small: JS numbers (an int64 value past int32 stays exact for shape arithmetic).
  if (count <= MAX_STATIC_INTS) {
    const ints = intTensor(shape, new Array<number>(count).fill(value));
    return staticValue(dtype === 'bool' ? { ...ints, bool: true } as StaticTensor : ints);
  }
  // A big integer constant: one Int32Array, never a JS array per element.
  if (!(value >= -2147483648 && value <= 2147483647)) throw new UnsupportedError(`${n.opType}: value ${value} does not fit in int32 (integer tensors run as int32)`);
  return nodeValue(n.graph.constant(`${n.name}${suffix}`, shape, new Int32Array(count).fill(value), dtype));
}

/**
 * ConstantOfShape: a static tensor of the value's type. Float results of any size are one
 * Float32Array (AlexNet-style 4096x9216 weights included); big integer ones become a graph
 * constant directly.
 */
const constantOfShape: Converter = {
  attrs: ['value'],
  convert(n) {
    const dims = n.ints(0, 'shape');
    const v = n.attr.tensor('value') ?? floatTensor([1], Float32Array.of(0));
    if (v.data.length !== 1) throw new Error('ConstantOfShape: value must have one element');
    if (dims.some((d) => !Number.isInteger(d) || d < 0)) throw new Error(`ConstantOfShape: bad shape [${dims.join(', ')}]`);
    if (dims.some((d) => d === 0)) throw new UnsupportedError(`ConstantOfShape of an empty shape [${dims.join(', ')}]`);
    const dtype: DType = v.type === 'float' ? 'float32' : v.bool ? 'bool' : 'int32';
    return [filled(n, dims, v.data[0], dtype)];
  },
};

/** NonZero of a static tensor: the [rank, count] int coordinates of its non-zero elements, row-major. */
const nonZero: Converter = {
  attrs: [],
  convert(n) {
    const v = n.input(0);
    if (!isStatic(v)) throw new UnsupportedError('NonZero of a computed tensor (its output shape depends on the data)');
    const dims = v.t.shape, rank = dims.length;
    if (v.t.data.length > MAX_STATIC_INTS) throw new UnsupportedError(`NonZero of a constant of ${v.t.data.length} elements (at most ${MAX_STATIC_INTS})`);
    const hits: number[] = [];
    for (let i = 0; i < v.t.data.length; i++) if (v.t.data[i] !== 0) hits.push(i);
    if (hits.length === 0) throw new UnsupportedError('NonZero with no non-zero element (an empty tensor)');
    const coords: number[] = [];
    for (let d = 0; d < Math.max(rank, 1); d++) {
      const stride = numElements(dims.slice(d + 1));
      for (const h of hits) coords.push(rank === 0 ? 0 : Math.floor(h / stride) % dims[d]);
    }
    return [staticValue(intTensor([Math.max(rank, 1), hits.length], coords))];
  },
};

/**
 * Unique of a static tensor: the distinct elements (no axis) or slices along `axis`, sorted
 * ascending (slices lexicographically) or in order of first occurrence, with the first
 * occurrence of each, every element's (slice's) position in the result, and the counts.
 */
const unique: Converter = {
  attrs: ['axis', 'sorted'],
  convert(n) {
    const v = n.input(0);
    if (!isStatic(v)) throw new UnsupportedError('Unique of a computed tensor (its output shape depends on the data)');
    const t = v.t, dims = t.shape;
    if (t.data.length > MAX_STATIC_INTS) throw new UnsupportedError(`Unique of a constant of ${t.data.length} elements (at most ${MAX_STATIC_INTS})`);
    const hasAxis = n.attr.has('axis');
    const axis = hasAxis ? normAxis(n.attr.int('axis', 0), dims.length, 'Unique axis') : 0;
    // Each slice (an element without an axis) as its list of values.
    const outer = hasAxis ? numElements(dims.slice(0, axis)) : 1, len = hasAxis ? dims[axis] : t.data.length;
    const inner = hasAxis ? numElements(dims.slice(axis + 1)) : 1;
    const slices = Array.from({ length: len }, (_, i) => {
      const out: number[] = [];
      for (let o = 0; o < outer; o++) for (let k = 0; k < inner; k++) out.push(t.data[(o * len + i) * inner + k]);
      return out;
    });
    if (len === 0) throw new UnsupportedError('Unique of an empty tensor');
    const key = (s: number[]): string => s.join(',');
    const first = new Map<string, number>();
    slices.forEach((sl, i) => { if (!first.has(key(sl))) first.set(key(sl), i); });
    let order = [...first.values()];
    if (n.attr.int('sorted', 1) === 1) {
      const cmp = (a: number[], b: number[]): number => { for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] - b[i]; return 0; };
      order = order.sort((a, b) => cmp(slices[a], slices[b]));
    }
    const slot = new Map(order.map((i, k) => [key(slices[i]), k]));
    const inverse = slices.map((sl) => slot.get(key(sl))!);
    const counts = order.map((_, k) => inverse.filter((x) => x === k).length);
    const u = order.length;
    const values: number[] = [];
    if (hasAxis) {
      for (let o = 0; o < outer; o++) for (const i of order) for (let k = 0; k < inner; k++) values.push(slices[i][o * inner + k]);
    } else {
      for (const i of order) values.push(slices[i][0]);
    }
    const yShape = hasAxis ? dims.map((d, i) => (i === axis ? u : d)) : [u];
    const y: StaticTensor = t.type === 'float' ? floatTensor(yShape, Float32Array.from(values)) : { ...intTensor(yShape, values), ...(t.bool ? { bool: true } : {}) };
    return [staticValue(y), staticValue(intTensor([u], order)), staticValue(intTensor([len], inverse)), staticValue(intTensor([u], counts))];
  },
};

/** Dropout at inference: the output is the input; the mask is all true from opset 12 (see below). training_mode (opset 12+) must be false. */
const dropout: Converter = {
  attrs: ['seed', 'ratio', 'is_test'],
  convert(n) {
    if (n.opset < 7 && n.attr.int('is_test', 0) === 0) throw new UnsupportedError('Dropout in training (is_test = 0)');
    const training = n.opset >= 12 ? n.optional(2) : undefined;
    if (training) {
      if (!isStatic(training)) throw new UnsupportedError('Dropout with a computed training_mode');
      if (training.t.data[0]) throw new UnsupportedError('Dropout with training_mode true');
    }
    const x = n.input(0);
    // The mask is bool from opset 10, of the input's type before. Opset 12 defines it as all
    // true at inference; earlier opsets leave it unspecified ("ignored in test mode"), and
    // ONNX Runtime gives all false (zeros) there, which we follow.
    const mask = n.outputs[1] ? filled(n, n.shape(0), n.opset >= 12 ? 1 : 0, n.opset >= 10 ? 'bool' : n.dtype(0), '_mask') : undefined;
    return [x, mask];
  },
};

const constant: Converter = {
  attrs: ['value', 'value_float', 'value_floats', 'value_int', 'value_ints', 'sparse_value', 'value_string', 'value_strings'],
  convert(n) {
    const a = n.attr;
    if (a.has('value')) return [staticValue(a.tensor('value')!)];
    if (a.has('value_float')) return [staticValue(floatTensor([], Float32Array.of(a.float('value_float', 0))))];
    if (a.has('value_floats')) {
      const v = a.floats('value_floats')!;
      return [staticValue(floatTensor([v.length], Float32Array.from(v)))];
    }
    if (a.has('value_int')) return [staticValue(intTensor([], [a.int('value_int', 0)]))];
    if (a.has('value_ints')) {
      const v = a.ints('value_ints')!;
      return [staticValue(intTensor([v.length], v))];
    }
    throw new UnsupportedError(`Constant with attribute ${a.names().join(', ') || '(none)'} (only numeric tensors)`);
  },
};

/** Steps above which a scatter (|data| x the updates each position scans) is refused. */
const MAX_SCATTER_STEPS = 1 << 26;

function scatterReduction(n: NodeView): ScatterReduction {
  const r = n.attr.string('reduction', 'none');
  if (!['none', 'add', 'mul', 'max', 'min'].includes(r)) throw new UnsupportedError(`${n.opType} reduction '${r}'`);
  if (r !== 'none' && n.dtype(0) === 'bool') throw new UnsupportedError(`${n.opType} reduction '${r}' of bool data`);
  return r as ScatterReduction;
}

/** ScatterElements (and opset 9-10's Scatter, the same operator): a reduction along the axis per output element. */
const scatterElements: Converter = {
  attrs: ['axis', 'reduction'],
  convert(n) {
    const rank = n.shape(0).length;
    const axis = normAxis(n.attr.int('axis', 0), rank, `${n.opType} axis`);
    const steps = numElements(n.shape(0)) * n.shape(1)[axis];
    if (steps > MAX_SCATTER_STEPS) throw new UnsupportedError(`${n.opType} of ${steps} steps (data x the updates' axis; at most ${MAX_SCATTER_STEPS})`);
    return [applyOp(n, 'scatter_elements', [n.input(0), indicesOf(n, 1, 'indices'), n.input(2)], { axis, reduction: scatterReduction(n) })];
  },
};

const scatterNd: Converter = {
  attrs: ['reduction'],
  convert(n) {
    const q = n.shape(1).slice(0, -1);
    const steps = numElements(n.shape(0)) * numElements(q);
    if (steps > MAX_SCATTER_STEPS) throw new UnsupportedError(`ScatterND of ${steps} steps (data x the index tuples; at most ${MAX_SCATTER_STEPS})`);
    return [applyOp(n, 'scatter_nd', [n.input(0), indicesOf(n, 1, 'indices'), n.input(2)], { reduction: scatterReduction(n) })];
  },
};

/**
 * TopK: k from input 1 (opset 10+) or the attribute; the positions by ranking (quadratic in
 * the axis length: refused past MAX_SCATTER_STEPS steps), the values gathered at them.
 * `sorted=0` leaves the order to the implementation; ours is sorted.
 */
const topk: Converter = {
  attrs: ['k', 'axis', 'largest', 'sorted'],
  convert(n) {
    const dims = n.shape(0);
    if (n.dtype(0) === 'bool') throw new UnsupportedError('TopK of a bool tensor');
    const axis = normAxis(n.attr.int('axis', -1), dims.length, 'TopK axis');
    const ks = n.opset < 10 ? [n.attr.int('k', 0)] : n.ints(1, 'K');
    if (ks.length !== 1) throw new Error(`TopK: K has ${ks.length} values`);
    const k = ks[0], len = dims[axis];
    if (k < 1 || k > len) throw new UnsupportedError(`TopK with k ${k} for an axis of ${len}${k === 0 ? ' (an empty result)' : ''}`);
    const steps = numElements(dims) * len;
    if (steps > MAX_SCATTER_STEPS) throw new UnsupportedError(`TopK of ${steps} steps (the elements x the axis length; at most ${MAX_SCATTER_STEPS})`);
    const largest = n.opset < 11 || n.attr.int('largest', 1) === 1;
    const indices = applyOp(n, 'topk_indices', [n.input(0)], { k, axis, largest }, '_indices');
    return [applyOp(n, 'gather_elements', [n.input(0), indices], { axis }), indices];
  },
};

export const INDEXING_CONVERTERS: Record<string, Converter> = {
  TopK: topk,
  ScatterElements: scatterElements,
  Scatter: scatterElements,
  ScatterND: scatterNd,
  Gather: gather,
  GatherElements: gatherElements,
  GatherND: gatherNd,
  ArgMax: argReduce('argmax'),
  ArgMin: argReduce('argmin'),
  CumSum: cumsum,
  OneHot: oneHot,
  Range: range,
  Shape: shape,
  Size: size,
  ConstantOfShape: constantOfShape,
  NonZero: nonZero,
  Unique: unique,
  Dropout: dropout,
  Constant: constant,
};
