// Converters of ONNX's elementwise, shape and data-movement operators. Each converter
// names the attributes it understands (any other attribute makes the node unsupported)
// and returns one value per node output. When every input is known at import time the
// result is computed here (static), which is what makes exporters' Shape/Gather/Concat
// flatten patterns disappear.

import { numElements, placeholder } from '../../ir/tensor';
import { computeNode } from '../../graph/graph';
import type { Attrs } from '../../graph/ops';
import { broadcastShapes } from '../../topi/transform';
import { UnsupportedError, staticValue, type Converter, type NodeView, type Value } from './context';
import { RESIZE_CONVERTERS } from './convert-resize';
import {
  binaryStatic, concatStatic, floatTensor, foldOp, intTensor, normAxis, reshapeTarget, stridedStatic, transposeStatic, withShape,
} from './static';
import { DataType } from './schema';
import type { StaticTensor } from './tensor';

export type { Converter } from './context';

const FLOAT_MAX = 3.4028234663852886e38;

const isStatic = (v: Value): v is Extract<Value, { kind: 'static' }> => v.kind === 'static';

/** Reshape a value: static data is reshaped here, a node gets a reshape (batch_flatten for [N, rest]). */
export function reshapeValue(n: NodeView, v: Value, shape: readonly number[], suffix = ''): Value {
  if (isStatic(v)) return staticValue(withShape(v.t, shape));
  const input = n.graph.node(v.id).shape;
  if (input.length === shape.length && input.every((d, i) => d === shape[i])) return v;
  if (shape.length === 2 && input.length > 2 && shape[0] === input[0]) return n.op('batch_flatten', [v.id], {}, suffix);
  return n.op('reshape', [v.id], { newShape: [...shape] }, suffix);
}

const BINARY: Record<string, string> = { Add: 'add', Sub: 'subtract', Mul: 'multiply', Div: 'divide' };

function binary(onnx: 'Add' | 'Sub' | 'Mul' | 'Div'): Converter {
  return {
    attrs: [],
    convert(n) {
      const a = n.input(0), b = n.input(1);
      if (isStatic(a) && isStatic(b) && (a.t.type === 'int' || b.t.type === 'int' || numElements(a.t.shape) <= 64)) {
        return [staticValue(binaryStatic(onnx, a.t, b.t))];
      }
      return [n.op(BINARY[onnx], [n.node(0), n.node(1)])];
    },
  };
}

function unary(op: string, attrs: readonly string[] = [], read: (n: NodeView) => Record<string, number> = () => ({})): Converter {
  return { attrs, convert: (n) => [n.op(op, [n.node(0)], read(n))] };
}

const identity: Converter = { attrs: [], convert: (n) => [n.input(0)] };

const clip: Converter = {
  attrs: ['min', 'max'],
  convert(n) {
    const bound = (i: number, attr: string, dflt: number): number => {
      if (n.opset < 11) return n.attr.float(attr, dflt);
      const v = n.optional(i);
      if (!v) return dflt;
      const t = n.static(i, `${attr} (input ${i})`);
      if (t.data.length !== 1) throw new UnsupportedError(`${attr} must be a scalar`);
      return t.data[0];
    };
    const lo = bound(1, 'min', -FLOAT_MAX), hi = bound(2, 'max', FLOAT_MAX);
    return [n.op('clip', [n.node(0)], { min: lo, max: hi })];
  },
};

/**
 * Apply graph op `op` to inputs `values`: folded now when every input is static (and the
 * result is integer of at most 2^24 elements, or no bigger than max(2^16, the inputs)),
 * else a node of the graph.
 */
export function applyOp(n: NodeView, op: string, values: readonly Value[], attrs: Attrs, suffix = ''): Value {
  if (values.every(isStatic)) {
    const tensors = values.map((v) => (v as Extract<Value, { kind: 'static' }>).t);
    const inElements = tensors.reduce((acc, t) => acc + numElements(t.shape), 0);
    const out = computeNode({ op, attrs }, tensors.map((t, i) => placeholder(`in${i}`, t.shape, t.type === 'float' ? 'float32' : t.bool ? 'bool' : 'int32')));
    const size = numElements(out.shape);
    if ((out.dtype !== 'float32' && size <= 2 ** 24) || size <= Math.max(2 ** 16, inElements)) return staticValue(foldOp(op, attrs, tensors, `${n.opType} '${n.name}'`));
  }
  return n.op(op, values.map((v, i) => n.nodeOf(v, `_in${i}`)), attrs, suffix);
}

/** ONNX Slice's clamped start, step and element count on each axis (all axes, untouched ones whole). */
export function sliceRanges(shape: readonly number[], starts: readonly number[], ends: readonly number[], axes: readonly number[], steps: readonly number[]): { start: number; step: number; count: number }[] {
  const rank = shape.length;
  const ranges = shape.map((d) => ({ start: 0, step: 1, count: d }));
  if (starts.length !== ends.length || axes.length !== starts.length || steps.length !== starts.length) throw new Error(`Slice: ${starts.length} starts, ${ends.length} ends, ${axes.length} axes, ${steps.length} steps`);
  const seen = new Set<number>();
  axes.forEach((axis, k) => {
    const a = normAxis(axis, rank, 'Slice axis'), d = shape[a], step = steps[k];
    if (seen.has(a)) throw new Error(`Slice: axis ${axis} given twice`);
    seen.add(a);
    if (step === 0) throw new Error('Slice step 0');
    const clamp = (v: number, lo: number, hi: number): number => Math.min(Math.max(v < 0 ? v + d : v, lo), hi);
    const start = step > 0 ? clamp(starts[k], 0, d) : clamp(starts[k], -1, d - 1);
    const end = step > 0 ? clamp(ends[k], 0, d) : clamp(ends[k], -1, d - 1);
    ranges[a] = { start, step, count: Math.max(0, Math.ceil((end - start) / step)) };
  });
  return ranges;
}

/** A strided slice of a value (static: folded; whole: the value itself). */
function sliceValue(n: NodeView, v: Value, ranges: readonly { start: number; step: number; count: number }[], suffix = ''): Value {
  const shape = ranges.map((r) => r.count);
  if (shape.some((d) => d === 0)) throw new UnsupportedError(`an empty result (shape [${shape.join(', ')}])`);
  const input = isStatic(v) ? v.t.shape : n.graph.node(v.id).shape;
  if (ranges.every((r, i) => r.start === 0 && r.step === 1 && r.count === input[i])) return v;
  if (isStatic(v)) return staticValue(stridedStatic(v.t, ranges));
  return applyOp(n, 'strided_slice', [v], { begin: ranges.map((r) => r.start), step: ranges.map((r) => r.step), shape }, suffix);
}

const slice: Converter = {
  attrs: ['starts', 'ends', 'axes'],
  convert(n) {
    const v = n.input(0);
    const starts = n.opset < 10 ? n.attr.ints('starts') ?? [] : n.ints(1, 'starts');
    const ends = n.opset < 10 ? n.attr.ints('ends') ?? [] : n.ints(2, 'ends');
    const axes = (n.opset < 10 ? n.attr.ints('axes') : n.optional(3) && n.ints(3, 'axes')) || starts.map((_, i) => i);
    const steps = (n.opset >= 10 && n.optional(4) && n.ints(4, 'steps')) || starts.map(() => 1);
    return [sliceValue(n, v, sliceRanges(n.shape(0), starts, ends, axes, steps))];
  },
};

const split: Converter = {
  attrs: ['axis', 'split', 'num_outputs'],
  convert(n) {
    const shape = n.shape(0);
    const axis = normAxis(n.attr.int('axis', 0), shape.length, 'Split axis');
    const d = shape[axis];
    let sizes = n.opset < 13 ? n.attr.ints('split') : n.optional(1) && n.ints(1, 'split');
    const count = n.outputs.length;
    if (!sizes) {
      const parts = n.opset >= 18 && n.attr.has('num_outputs') ? n.attr.int('num_outputs', count) : count;
      if (parts < 1 || parts !== count) throw new Error(`Split: num_outputs ${parts} for ${count} outputs`);
      if (n.opset >= 18) {
        // Opset 18: chunks of ceil(d / parts), the last one smaller.
        const chunk = Math.ceil(d / parts);
        sizes = Array.from({ length: parts }, (_, i) => Math.max(0, Math.min(chunk, d - i * chunk)));
      } else {
        if (d % parts !== 0) throw new Error(`Split: axis ${axis} of ${d} does not split evenly into ${parts}`);
        sizes = new Array<number>(parts).fill(d / parts);
      }
    }
    if (sizes.length !== count) throw new Error(`Split: ${sizes.length} sizes for ${count} outputs`);
    if (sizes.reduce((a, b) => a + b, 0) !== d || sizes.some((s) => s < 0)) throw new Error(`Split: sizes [${sizes.join(', ')}] do not add up to ${d}`);
    const v = n.input(0);
    let start = 0;
    return sizes.map((size, i) => {
      const ranges = shape.map((e, a) => (a === axis ? { start, step: 1, count: size } : { start: 0, step: 1, count: e }));
      start += size;
      return sliceValue(n, v, ranges, `_${i}`);
    });
  },
};

const expand: Converter = {
  attrs: [],
  convert(n) {
    const target = n.ints(1, 'shape');
    if (target.some((t) => t < 0)) throw new Error(`Expand: bad shape [${target.join(', ')}]`);
    const shape = broadcastShapes(n.shape(0), target);
    if (shape.some((t) => t === 0)) throw new UnsupportedError(`an empty result (shape [${shape.join(', ')}])`);
    const v = n.input(0);
    if (shape.length === n.shape(0).length && shape.every((t, i) => t === n.shape(0)[i])) return [v];
    return [applyOp(n, 'broadcast_to', [v], { shape })];
  },
};

const tile: Converter = {
  attrs: [],
  convert(n) {
    const reps = n.ints(1, 'repeats');
    const rank = n.shape(0).length;
    if (reps.length !== rank || reps.some((r) => r < 0)) throw new Error(`Tile: repeats [${reps.join(', ')}] for rank ${rank}`);
    if (reps.some((r) => r === 0)) throw new UnsupportedError('an empty result (a repeat of 0)');
    if (reps.every((r) => r === 1)) return [n.input(0)];
    return [applyOp(n, 'tile', [n.input(0)], { reps })];
  },
};

const depthToSpace: Converter = {
  attrs: ['blocksize', 'mode'],
  convert(n) {
    const block = n.attr.int('blocksize', 0);
    const mode = n.opset >= 11 ? n.attr.string('mode', 'DCR') : 'DCR';
    if (mode !== 'DCR' && mode !== 'CRD') throw new Error(`DepthToSpace: mode '${mode}'`);
    const shape = n.shape(0);
    if (shape.length !== 4) throw new UnsupportedError(`input of rank ${shape.length} (only 4)`);
    if (block < 1 || shape[1] % (block * block) !== 0) throw new Error(`DepthToSpace: ${shape[1]} channels with blocksize ${block}`);
    return [applyOp(n, 'depth_to_space', [n.input(0)], { block, mode })];
  },
};

const spaceToDepth: Converter = {
  attrs: ['blocksize', 'mode'],
  convert(n) {
    const block = n.attr.int('blocksize', 0);
    const mode = n.opset >= 28 ? n.attr.string('mode', 'DCR') : 'DCR';
    if (mode !== 'DCR' && mode !== 'CRD') throw new Error(`SpaceToDepth: mode '${mode}'`);
    const shape = n.shape(0);
    if (shape.length !== 4) throw new UnsupportedError(`input of rank ${shape.length} (only 4)`);
    if (block < 1 || shape[2] % block !== 0 || shape[3] % block !== 0) throw new Error(`SpaceToDepth: [${shape.join(', ')}] with blocksize ${block}`);
    return [applyOp(n, 'space_to_depth', [n.input(0)], { block, mode })];
  },
};

const eyeLike: Converter = {
  attrs: ['dtype', 'k'],
  convert(n) {
    const shape = n.shape(0);
    if (shape.length !== 2) throw new Error(`EyeLike: input of rank ${shape.length} (must be 2)`);
    const k = n.attr.int('k', 0);
    const to = n.attr.has('dtype') ? n.attr.int('dtype', DataType.FLOAT) : undefined;
    const float = to === undefined ? n.dtype(0) === 'float32' : to === DataType.FLOAT || to === DataType.DOUBLE || to === DataType.FLOAT16;
    const values = Array.from({ length: shape[0] * shape[1] }, (_, i) => (i % shape[1] - Math.floor(i / shape[1]) === k ? 1 : 0));
    if (float) return [staticValue(floatTensor(shape, Float32Array.from(values)))];
    const bool = to === DataType.BOOL || (to === undefined && n.dtype(0) === 'bool');
    return [staticValue(bool ? { type: 'int', shape: [...shape], data: values, bool: true } : intTensor(shape, values))];
  },
};

const trilu: Converter = {
  attrs: ['upper'],
  convert(n) {
    const k = n.optional(1) ? n.ints(1, 'k')[0] : 0;
    if (n.shape(0).length < 2) throw new Error(`Trilu: input of rank ${n.shape(0).length}`);
    return [applyOp(n, 'trilu', [n.input(0)], { k, upper: n.attr.int('upper', 1) !== 0 })];
  },
};

const reverseSequence: Converter = {
  attrs: ['batch_axis', 'time_axis'],
  convert(n) {
    const rank = n.shape(0).length;
    const batchAxis = normAxis(n.attr.int('batch_axis', 1), rank, 'ReverseSequence batch_axis');
    const seqAxis = normAxis(n.attr.int('time_axis', 0), rank, 'ReverseSequence time_axis');
    if (batchAxis === seqAxis || rank < 2) throw new Error(`ReverseSequence: batch_axis ${batchAxis} and time_axis ${seqAxis} for rank ${rank}`);
    return [applyOp(n, 'reverse_sequence', [n.input(0), n.input(1)], { seqAxis, batchAxis })];
  },
};

/** Axes of Squeeze/Unsqueeze/ReduceMean: an attribute before `inputFrom`, an optional input from then on. */
export function axesOf(n: NodeView, inputFrom: number): number[] | undefined {
  if (n.opset < inputFrom) return n.attr.ints('axes');
  return n.optional(1) ? n.ints(1, 'axes') : undefined;
}

const squeeze: Converter = {
  attrs: ['axes'],
  convert(n) {
    const shape = n.shape(0);
    const axes = (axesOf(n, 13) ?? shape.flatMap((d, i) => (d === 1 ? [i] : []))).map((a) => normAxis(a, shape.length, 'Squeeze axis'));
    for (const a of axes) if (shape[a] !== 1) throw new Error(`Squeeze: axis ${a} has extent ${shape[a]}, not 1`);
    return [reshapeValue(n, n.input(0), shape.filter((_, i) => !axes.includes(i)))];
  },
};

const unsqueeze: Converter = {
  attrs: ['axes'],
  convert(n) {
    const shape = n.shape(0);
    const axes = axesOf(n, 13);
    if (!axes) throw new Error('Unsqueeze needs axes');
    const rank = shape.length + axes.length;
    const at = axes.map((a) => normAxis(a, rank, 'Unsqueeze axis'));
    const out: number[] = [];
    let k = 0;
    for (let i = 0; i < rank; i++) out.push(at.includes(i) ? 1 : shape[k++]);
    return [reshapeValue(n, n.input(0), out)];
  },
};

const flatten: Converter = {
  attrs: ['axis'],
  convert(n) {
    const shape = n.shape(0);
    const axis = n.attr.int('axis', 1);
    const a = axis < 0 ? axis + shape.length : axis;
    if (a < 0 || a > shape.length) throw new Error(`Flatten: axis ${axis} is out of range for rank ${shape.length}`);
    return [reshapeValue(n, n.input(0), [numElements(shape.slice(0, a)), numElements(shape.slice(a))])];
  },
};

const reshape: Converter = {
  attrs: ['allowzero', 'shape'],
  convert(n) {
    const target = n.opset < 5 ? n.attr.ints('shape') ?? [] : n.ints(1, 'shape');
    return [reshapeValue(n, n.input(0), reshapeTarget(n.shape(0), target, n.attr.int('allowzero', 0) === 1))];
  },
};

const transpose: Converter = {
  attrs: ['perm'],
  convert(n) {
    const rank = n.shape(0).length;
    const perm = n.attr.ints('perm') ?? Array.from({ length: rank }, (_, i) => rank - 1 - i);
    if (perm.length !== rank || [...perm].sort((x, y) => x - y).some((p, i) => p !== i)) throw new Error(`Transpose: perm [${perm.join(', ')}] is not a permutation of ${rank} axes`);
    const v = n.input(0);
    if (isStatic(v)) return [staticValue(transposeStatic(v.t, perm))];
    return [n.op('transpose', [v.id], { axes: perm })];
  },
};

const concat: Converter = {
  attrs: ['axis'],
  convert(n) {
    const values = n.inputs.map((_, i) => n.input(i));
    const axis = n.attr.int('axis', 0);
    if (values.every(isStatic)) return [staticValue(concatStatic(values.map((v) => v.t as StaticTensor), axis))];
    const rank = n.shape(0).length;
    return [n.op('concatenate', values.map((_, i) => n.node(i)), { axis: normAxis(axis, rank) })];
  },
};

const PAD_MODES = ['constant', 'reflect', 'edge', 'wrap'];

const pad: Converter = {
  attrs: ['mode', 'pads', 'value'],
  convert(n) {
    const mode = n.attr.string('mode', 'constant');
    if (!PAD_MODES.includes(mode) || (mode === 'wrap' && n.opset < 19)) throw new UnsupportedError(`Pad mode '${mode}'${mode === 'wrap' ? ' before opset 19' : ''}`);
    const shape = n.shape(0);
    const rank = shape.length;
    let pads: number[], value: number;
    if (n.opset < 11) {
      pads = n.attr.ints('pads') ?? [];
      value = n.attr.float('value', 0);
    } else {
      pads = n.ints(1, 'pads');
      value = n.optional(2) ? n.static(2, 'constant_value').data[0] ?? 0 : 0;
      if (n.optional(3)) {
        // opset 18: pads for the listed axes only.
        const axes = n.ints(3, 'axes').map((a) => normAxis(a, rank));
        if (pads.length !== 2 * axes.length) throw new Error(`Pad: ${pads.length} pads for ${axes.length} axes`);
        const full = new Array<number>(2 * rank).fill(0);
        axes.forEach((a, k) => { full[a] = pads[k]; full[a + rank] = pads[k + axes.length]; });
        pads = full;
      }
    }
    if (pads.length !== 2 * rank) throw new Error(`Pad: ${pads.length} pads for rank ${rank}`);
    let v = n.input(0);
    // Negative pads crop: a slice first, then the padding of the positive widths.
    if (pads.some((p) => p < 0)) {
      if (mode !== 'constant') throw new UnsupportedError(`Pad mode '${mode}' with negative pads`);
      const ranges = shape.map((d, i) => {
        const lo = Math.max(0, -pads[i]), hi = Math.max(0, -pads[i + rank]);
        return { start: lo, step: 1, count: d - lo - hi };
      });
      v = sliceValue(n, v, ranges, '_crop');
      pads = pads.map((p) => Math.max(p, 0));
    }
    const before = pads.slice(0, rank), after = pads.slice(rank);
    if (pads.every((p) => p === 0)) return [v];
    if (mode === 'constant') return [applyOp(n, 'pad', [v], { before, after, value })];
    return [applyOp(n, 'pad_mode', [v], { before, after, mode })];
  },
};

export const TENSOR_CONVERTERS: Record<string, Converter> = {
  Add: binary('Add'), Sub: binary('Sub'), Mul: binary('Mul'), Div: binary('Div'),
  Relu: unary('relu'),
  Sigmoid: unary('sigmoid'),
  Tanh: unary('tanh'),
  LeakyRelu: unary('leaky_relu', ['alpha'], (n) => ({ alpha: n.attr.float('alpha', 0.01) })),
  HardSigmoid: unary('hard_sigmoid', ['alpha', 'beta'], (n) => ({ alpha: n.attr.float('alpha', 0.2), beta: n.attr.float('beta', 0.5) })),
  HardSwish: unary('hard_swish'),
  Clip: clip,
  Identity: identity,
  Slice: slice,
  Squeeze: squeeze,
  Unsqueeze: unsqueeze,
  Flatten: flatten,
  Reshape: reshape,
  Transpose: transpose,
  Concat: concat,
  Pad: pad,
  Split: split,
  Expand: expand,
  Tile: tile,
  DepthToSpace: depthToSpace,
  SpaceToDepth: spaceToDepth,
  EyeLike: eyeLike,
  Trilu: trilu,
  ReverseSequence: reverseSequence,
  ...RESIZE_CONVERTERS,
};
