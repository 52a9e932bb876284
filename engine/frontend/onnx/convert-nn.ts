// Converters of ONNX's neural-network operators (NCHW, as ONNX defines them): Conv,
// BatchNormalization, the pools and Softmax (Gemm, MatMul, Einsum: convert-matmul.ts; the Reduce*:
// convert-reduce.ts; the other normalizations: convert-normalization.ts). The graph keeps
// ONNX's NCHW layout; loadModel converts it to NHWC afterwards when asked.

import { numElements } from '../../ir/tensor';
import { UnsupportedError, type NodeView, type Value } from './context';
import { reshapeValue, type Converter } from './convert-tensor';
import { MATMUL_CONVERTERS } from './convert-matmul';
import { normAxis } from './static';

type Quad = [number, number, number, number];

/** Explicit [top, left, bottom, right] pads from `pads` or `auto_pad` (ONNX's SAME_UPPER/SAME_LOWER/VALID rules). */
function windowPads(n: NodeView, input: readonly number[], kernel: readonly number[], strides: readonly number[], dilations: readonly number[]): Quad {
  const autoPad = n.attr.string('auto_pad', 'NOTSET');
  if (autoPad === 'NOTSET') {
    const pads = n.attr.ints('pads') ?? [0, 0, 0, 0];
    if (pads.length !== 4) throw new Error(`pads has ${pads.length} values, 2-D windows need 4`);
    if (pads.some((p) => p < 0)) throw new UnsupportedError('negative pads');
    return pads as Quad;
  }
  if (autoPad === 'VALID') return [0, 0, 0, 0];
  if (autoPad !== 'SAME_UPPER' && autoPad !== 'SAME_LOWER') throw new UnsupportedError(`auto_pad '${autoPad}'`);
  const before: number[] = [], after: number[] = [];
  for (let i = 0; i < 2; i++) {
    const out = Math.ceil(input[i] / strides[i]);
    const total = Math.max(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - input[i]);
    const small = Math.floor(total / 2);
    before.push(autoPad === 'SAME_UPPER' ? small : total - small);
    after.push(autoPad === 'SAME_UPPER' ? total - small : small);
  }
  return [before[0], before[1], after[0], after[1]];
}

function pair(n: NodeView, name: string): [number, number] {
  const v = n.attr.ints(name) ?? [1, 1];
  if (v.length !== 2 || v.some((x) => !Number.isInteger(x) || x < 1)) throw new UnsupportedError(`${name} [${v.join(', ')}] (2-D windows with positive values only)`);
  return [v[0], v[1]];
}

function require4d(n: NodeView, i: number, what: string): readonly number[] {
  const s = n.shape(i);
  if (s.length !== 4) throw new UnsupportedError(`${what} of rank ${s.length} (only 2-D images, rank 4)`);
  return s;
}

const conv: Converter = {
  attrs: ['auto_pad', 'dilations', 'group', 'kernel_shape', 'pads', 'strides'],
  convert(n) {
    const x = require4d(n, 0, 'input');
    const wv = n.input(1, 'weight');
    const w = require4d(n, 1, 'weight');
    const groups = n.attr.int('group', 1);
    const kernel = n.attr.ints('kernel_shape');
    if (kernel && (kernel.length !== 2 || kernel[0] !== w[2] || kernel[1] !== w[3])) throw new Error(`kernel_shape [${kernel.join(', ')}] differs from the weight's [${w[2]}, ${w[3]}]`);
    if (groups < 1 || x[1] % groups !== 0 || w[0] % groups !== 0 || w[1] * groups !== x[1]) {
      throw new Error(`weight [${w.join(', ')}] and group ${groups} do not fit ${x[1]} input channels`);
    }
    const strides = pair(n, 'strides'), dilation = pair(n, 'dilations');
    const padding = windowPads(n, x.slice(2), w.slice(2), strides, dilation);
    // Depthwise: ONNX's [C*m, 1, kh, kw] is our [C, m, kh, kw] (output channel c*m + q), same data.
    const depthwise = groups > 1 && groups === x[1];
    const weight = depthwise ? n.nodeOf(reshapeValue(n, wv, [x[1], w[0] / x[1], w[2], w[3]], '_weight'), '_weight') : n.node(1);
    let y = n.op('conv2d', [n.node(0), weight], { layout: 'NCHW', strides, padding, dilation, groups });
    if (n.optional(2)) {
      const bias = reshapeValue(n, n.input(2, 'bias'), [w[0], 1, 1], '_bias');
      y = n.op('add', [idOf(y), n.nodeOf(bias, '_bias')], {}, '_bias_add');
    }
    return [y];
  },
};

const idOf = (v: Value): number => (v as { id: number }).id;

const batchNorm: Converter = {
  attrs: ['epsilon', 'momentum', 'training_mode', 'spatial', 'is_test', 'consumed_inputs'],
  convert(n) {
    if (n.attr.int('training_mode', 0) !== 0) throw new UnsupportedError('training_mode=1 (inference only)');
    if (n.outputs.slice(1).some((o) => o)) throw new UnsupportedError('the running mean/var outputs (inference only)');
    if (n.shape(0).length < 2) throw new Error('BatchNormalization needs an input of rank >= 2');
    const params = [1, 2, 3, 4].map((i) => n.node(i, ['', 'scale', 'B', 'input_mean', 'input_var'][i]));
    return [n.op('batch_norm', [n.node(0), ...params], { axis: 1, epsilon: n.attr.float('epsilon', 1e-5) })];
  },
};

function pool(kind: 'max' | 'avg'): Converter {
  return {
    attrs: ['auto_pad', 'ceil_mode', 'dilations', 'kernel_shape', 'pads', 'strides', 'storage_order', 'count_include_pad'],
    convert(n) {
      const x = require4d(n, 0, 'input');
      if (n.outputs[1]) throw new UnsupportedError('the Indices output of MaxPool');
      const kernel = n.attr.ints('kernel_shape');
      if (!kernel || kernel.length !== 2) throw new UnsupportedError(`kernel_shape [${(kernel ?? []).join(', ')}] (2-D windows only)`);
      const [kh, kw] = kernel;
      const strides = pair(n, 'strides');
      const dil = pair(n, 'dilations');
      if (dil[0] !== 1 || dil[1] !== 1) throw new UnsupportedError('pooling with dilations');
      const padding = windowPads(n, x.slice(2), kernel, strides, [1, 1]);
      const countIncludePad = n.attr.int('count_include_pad', 0) === 1;
      if (n.attr.int('ceil_mode', 0) === 1) {
        // Extend the bottom/right padding so that floor division gives ceil's count; the
        // last window must still start inside the input or its leading padding.
        for (const [axis, k, s, before, after] of [[0, kh, strides[0], 0, 2], [1, kw, strides[1], 1, 3]] as const) {
          const span = x[2 + axis] + padding[before] + padding[after] - k;
          const out = Math.ceil(span / s) + 1;
          if ((out - 1) * s >= x[2 + axis] + padding[before]) throw new UnsupportedError('ceil_mode with a last window that starts in the padding');
          const extra = (out - 1) * s - span;
          if (extra > 0 && kind === 'avg' && countIncludePad) throw new UnsupportedError('ceil_mode with count_include_pad=1');
          padding[after] += Math.max(0, extra);
        }
      }
      return [n.op(kind === 'max' ? 'max_pool2d' : 'avg_pool2d', [n.node(0)], {
        layout: 'NCHW', kernel: [kh, kw], strides, padding, ...(kind === 'avg' ? { countIncludePad } : {}),
      })];
    },
  };
}

function globalPool(op: string): Converter {
  return {
    attrs: [],
    convert(n) {
      require4d(n, 0, 'input');
      return [n.op(op, [n.node(0)], { layout: 'NCHW' })];
    },
  };
}

const softmax: Converter = {
  attrs: ['axis'],
  convert(n) {
    const shape = n.shape(0);
    const rank = shape.length;
    const a = normAxis(n.attr.int('axis', n.opset >= 13 ? -1 : 1), rank, 'Softmax axis');
    const trailing = numElements(shape.slice(a + 1));
    if (n.opset >= 13 || a === rank - 1 || trailing === 1) return [n.op('softmax', [n.node(0)], { axis: a === rank - 1 ? -1 : a })];
    // Before opset 13, Softmax normalises the 2-D [prod(dims < axis), prod(dims >= axis)] view.
    const flat = reshapeValue(n, n.input(0), [numElements(shape.slice(0, a)), numElements(shape.slice(a))], '_2d');
    const y = n.op('softmax', [idOf(flat)], { axis: -1 }, '_softmax');
    return [reshapeValue(n, y, shape)];
  },
};

export const NN_CONVERTERS: Record<string, Converter> = {
  Conv: conv,
  ...MATMUL_CONVERTERS,
  BatchNormalization: batchNorm,
  MaxPool: pool('max'),
  AveragePool: pool('avg'),
  GlobalAveragePool: globalPool('global_avg_pool2d'),
  GlobalMaxPool: globalPool('global_max_pool2d'),
  Softmax: softmax,
};
