// Converters of ONNX's elementwise, shape and data-movement operators. Each converter
// names the attributes it understands (any other attribute makes the node unsupported)
// and returns one value per node output. When every input is known at import time the
// result is computed here (static), which is what makes exporters' Shape/Gather/Concat
// flatten patterns disappear.

import { numElements } from '../../ir/tensor';
import { UnsupportedError, staticValue, type NodeView, type Value } from './context';
import {
  binaryStatic, concatStatic, floatTensor, gatherStatic, intTensor, normAxis, reshapeTarget, sliceStatic, transposeStatic, withShape,
} from './static';
import { DataType } from './schema';
import { floatData, type StaticTensor } from './tensor';

export interface Converter {
  /** Attributes read by the converter; a node with any other attribute is refused. */
  readonly attrs: readonly string[];
  convert(n: NodeView): (Value | undefined)[];
}

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

const dropout: Converter = {
  attrs: ['seed', 'ratio', 'is_test'],
  convert(n) {
    if (n.outputs[1]) throw new UnsupportedError('the mask output of Dropout is not supported (inference only)');
    return [n.input(0)];
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

const constantOfShape: Converter = {
  attrs: ['value'],
  convert(n) {
    const shape = n.ints(0, 'shape');
    const v = n.attr.tensor('value') ?? floatTensor([1], Float32Array.of(0));
    if (shape.some((d) => d < 0) || numElements(shape) > 2 ** 24) throw new UnsupportedError(`ConstantOfShape of shape [${shape.join(', ')}]`);
    const count = numElements(shape);
    return [staticValue(v.type === 'float' ? floatTensor(shape, new Float32Array(count).fill(v.data[0])) : intTensor(shape, new Array<number>(count).fill(v.data[0])))];
  },
};

const shapeOp: Converter = {
  attrs: ['start', 'end'],
  convert(n) {
    const shape = n.shape(0);
    const r = shape.length;
    const clamp = (v: number): number => Math.min(Math.max(v < 0 ? v + r : v, 0), r);
    const dims = shape.slice(clamp(n.attr.int('start', 0)), clamp(n.attr.int('end', r)));
    return [staticValue(intTensor([dims.length], dims))];
  },
};

const gather: Converter = {
  attrs: ['axis'],
  convert(n) {
    const data = n.input(0);
    if (!isStatic(data)) throw new UnsupportedError('Gather of a computed tensor (only constant-foldable Gather, e.g. of a Shape, is supported)');
    return [staticValue(gatherStatic(data.t, n.static(1, 'indices'), n.attr.int('axis', 0)))];
  },
};

const cast: Converter = {
  attrs: ['to', 'saturate'],
  convert(n) {
    const to = n.attr.int('to', 0);
    const v = n.input(0);
    const toFloat = to === DataType.FLOAT || to === DataType.DOUBLE || to === DataType.FLOAT16;
    if (isStatic(v)) {
      if (toFloat) return [staticValue(floatTensor(v.t.shape, floatData(v.t)))];
      return [staticValue(intTensor(v.t.shape, [...v.t.data].map((x) => (to === DataType.BOOL ? (x ? 1 : 0) : Math.trunc(x)))))];
    }
    if (to !== DataType.FLOAT) throw new UnsupportedError(`Cast of a computed tensor to data type ${to} (only to float)`);
    return [v];
  },
};

const slice: Converter = {
  attrs: ['starts', 'ends', 'axes'],
  convert(n) {
    const v = n.input(0);
    if (!isStatic(v)) throw new UnsupportedError('Slice of a computed tensor (only constant-foldable Slice is supported)');
    const starts = n.opset < 10 ? n.attr.ints('starts') ?? [] : n.ints(1, 'starts');
    const ends = n.opset < 10 ? n.attr.ints('ends') ?? [] : n.ints(2, 'ends');
    const axes = (n.opset < 10 ? n.attr.ints('axes') : n.optional(3) && n.ints(3, 'axes')) || starts.map((_, i) => i);
    const steps = (n.opset >= 10 && n.optional(4) && n.ints(4, 'steps')) || starts.map(() => 1);
    return [staticValue(sliceStatic(v.t, starts, ends, axes, steps))];
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

const pad: Converter = {
  attrs: ['mode', 'pads', 'value'],
  convert(n) {
    const mode = n.attr.string('mode', 'constant');
    if (mode !== 'constant') throw new UnsupportedError(`Pad mode '${mode}' (only 'constant')`);
    const rank = n.shape(0).length;
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
        const full = new Array<number>(2 * rank).fill(0);
        axes.forEach((a, k) => { full[a] = pads[k]; full[a + rank] = pads[k + axes.length]; });
        pads = full;
      }
    }
    if (pads.length !== 2 * rank) throw new Error(`Pad: ${pads.length} pads for rank ${rank}`);
    if (pads.some((p) => p < 0)) throw new UnsupportedError('Pad with negative pads (cropping)');
    return [n.op('pad', [n.node(0)], { before: pads.slice(0, rank), after: pads.slice(rank), value })];
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
  Dropout: dropout,
  Constant: constant,
  ConstantOfShape: constantOfShape,
  Shape: shapeOp,
  Gather: gather,
  Cast: cast,
  Slice: slice,
  Squeeze: squeeze,
  Unsqueeze: unsqueeze,
  Flatten: flatten,
  Reshape: reshape,
  Transpose: transpose,
  Concat: concat,
  Pad: pad,
};
