// Converters of ONNX's neural-network operators (NCHW, as ONNX defines them): Conv and
// ConvTranspose (1-D as 2-D over H = 1, 2-D, 3-D), BatchNormalization, the pools (1-D as
// 2-D, 2-D, 3-D; global pools of any rank) and Softmax (Gemm, MatMul, Einsum: convert-matmul.ts; the Reduce*:
// convert-reduce.ts; the other normalizations: convert-normalization.ts). The graph keeps
// ONNX's NCHW layout; loadModel converts it to NHWC afterwards when asked.

import { numElements } from '../../ir/tensor';
import { UnsupportedError, type NodeView, type Value } from './context';
import { reshapeValue, type Converter } from './convert-tensor';
import { MATMUL_CONVERTERS } from './convert-matmul';
import { normAxis } from './static';
import { narrowFloat } from './narrow';

/** Explicit [begin..., end...] pads of the spatial axes from `pads` or `auto_pad` (ONNX's SAME_UPPER/SAME_LOWER/VALID rules). */
function windowPads(n: NodeView, input: readonly number[], kernel: readonly number[], strides: readonly number[], dilations: readonly number[]): number[] {
  const dims = input.length;
  const autoPad = n.attr.string('auto_pad', 'NOTSET');
  if (autoPad === 'NOTSET') {
    const pads = n.attr.ints('pads') ?? new Array<number>(2 * dims).fill(0);
    if (pads.length !== 2 * dims) throw new Error(`pads has ${pads.length} values, ${dims}-D windows need ${2 * dims}`);
    if (pads.some((p) => p < 0)) throw new UnsupportedError('negative pads');
    return pads;
  }
  if (autoPad === 'VALID') return new Array<number>(2 * dims).fill(0);
  if (autoPad !== 'SAME_UPPER' && autoPad !== 'SAME_LOWER') throw new UnsupportedError(`auto_pad '${autoPad}'`);
  const before: number[] = [], after: number[] = [];
  for (let i = 0; i < dims; i++) {
    const out = Math.ceil(input[i] / strides[i]);
    const total = Math.max(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - input[i]);
    const small = Math.floor(total / 2);
    before.push(autoPad === 'SAME_UPPER' ? small : total - small);
    after.push(autoPad === 'SAME_UPPER' ? total - small : small);
  }
  return [...before, ...after];
}

/** A per-spatial-axis attribute (strides, dilations): `dims` positive integers, default all 1. */
function perAxis(n: NodeView, name: string, dims: number): number[] {
  const v = n.attr.ints(name) ?? new Array<number>(dims).fill(1);
  if (v.length !== dims || v.some((x) => !Number.isInteger(x) || x < 1)) throw new UnsupportedError(`${name} [${v.join(', ')}] (${dims} positive values for ${dims}-D windows)`);
  return v;
}

/** Input `i` of rank 3 to 5 (1-D, 2-D or 3-D images): its shape. */
function requireImage(n: NodeView, i: number, what: string): readonly number[] {
  const s = n.shape(i);
  if (s.length < 3 || s.length > 5) throw new UnsupportedError(`${what} of rank ${s.length} (1-D, 2-D and 3-D images only: rank 3 to 5)`);
  return s;
}

const idOf = (v: Value): number => (v as { id: number }).id;

/** A 1-D window as a 2-D one over H = 1: [N, C, L] -> [N, C, 1, L] (a static tensor is reshaped here). */
const as2d = (n: NodeView, v: Value, suffix: string): number => {
  const shape = v.kind === 'node' ? n.graph.node(v.id).shape : v.t.shape;
  return n.nodeOf(reshapeValue(n, v, [shape[0], shape[1], 1, shape[2]], suffix), suffix);
};

/** The bias input (2) added over the channel axis of an NC... output. */
function withBias(n: NodeView, y: Value, channels: number, spatial: number): Value {
  if (!n.optional(2)) return y;
  const bias = reshapeValue(n, n.input(2, 'bias'), [channels, ...new Array<number>(spatial).fill(1)], '_bias');
  return n.op('add', [idOf(y), n.nodeOf(bias, '_bias')], {}, '_bias_add');
}

const conv: Converter = {
  attrs: ['auto_pad', 'dilations', 'group', 'kernel_shape', 'pads', 'strides'],
  convert(n) {
    const x = requireImage(n, 0, 'input');
    const dims = x.length - 2;
    const wv = n.input(1, 'weight');
    const w = n.shape(1);
    if (w.length !== x.length) throw new Error(`weight of rank ${w.length} for an input of rank ${x.length}`);
    const groups = n.attr.int('group', 1);
    const kernel = n.attr.ints('kernel_shape');
    if (kernel && (kernel.length !== dims || kernel.some((k, i) => k !== w[2 + i]))) throw new Error(`kernel_shape [${kernel.join(', ')}] differs from the weight's [${w.slice(2).join(', ')}]`);
    if (groups < 1 || x[1] % groups !== 0 || w[0] % groups !== 0 || w[1] * groups !== x[1]) {
      throw new Error(`weight [${w.join(', ')}] and group ${groups} do not fit ${x[1]} input channels`);
    }
    const strides = perAxis(n, 'strides', dims), dilation = perAxis(n, 'dilations', dims);
    const pads = windowPads(n, x.slice(2), w.slice(2), strides, dilation);
    if (dims === 3) {
      const y = n.op('conv3d', [n.node(0), n.node(1)], { layout: 'NCDHW', strides, padding: pads, dilation, groups });
      return [withBias(n, y, w[0], 3)];
    }
    // 1-D: a conv2d over H = 1 (TVM's ONNX frontend did the same before conv1d), so the
    // conv2d schedules and the layout pass apply.
    const one = dims === 1;
    const data = one ? as2d(n, n.input(0), '_2d') : n.node(0);
    const w4 = one ? [w[0], w[1], 1, w[2]] : w;
    const weightValue = one ? reshapeValue(n, wv, w4, '_weight2d') : wv;
    // Depthwise: ONNX's [C*m, 1, kh, kw] is our [C, m, kh, kw] (output channel c*m + q), same data.
    const depthwise = groups > 1 && groups === x[1];
    const weight = depthwise
      ? n.nodeOf(reshapeValue(n, weightValue, [x[1], w4[0] / x[1], w4[2], w4[3]], '_weight'), '_weight')
      : one ? n.nodeOf(weightValue, '_weight2d') : n.node(1);
    const attrs = one
      ? { layout: 'NCHW', strides: [1, strides[0]], padding: [0, pads[0], 0, pads[1]], dilation: [1, dilation[0]], groups }
      : { layout: 'NCHW', strides, padding: pads, dilation, groups };
    const y = withBias(n, n.op('conv2d', [data, weight], attrs, one ? '_conv2d' : ''), w[0], 2);
    if (!one) return [y];
    const s = n.graph.node(idOf(y)).shape;
    return [reshapeValue(n, y, [s[0], s[1], s[3]])];
  },
};

const convTranspose: Converter = {
  attrs: ['auto_pad', 'dilations', 'group', 'kernel_shape', 'output_padding', 'output_shape', 'pads', 'strides'],
  convert(n) {
    const x = requireImage(n, 0, 'input');
    const rank = x.length, dims = rank - 2;
    const w = n.shape(1);
    if (w.length !== rank) throw new Error(`weight of rank ${w.length} for an input of rank ${rank}`);
    const groups = n.attr.int('group', 1);
    if (groups < 1 || x[1] % groups !== 0 || w[0] !== x[1]) throw new Error(`weight [${w.join(', ')}] and group ${groups} do not fit ${x[1]} input channels`);
    const kernel = n.attr.ints('kernel_shape');
    if (kernel && (kernel.length !== dims || kernel.some((k, i) => k !== w[2 + i]))) throw new Error(`kernel_shape [${kernel.join(', ')}] differs from the weight's [${w.slice(2).join(', ')}]`);
    const ks = w.slice(2), inDims = x.slice(2);
    const strides = perAxis(n, 'strides', dims), dilation = perAxis(n, 'dilations', dims);
    const outputPadding = n.attr.ints('output_padding') ?? new Array<number>(dims).fill(0);
    if (outputPadding.length !== dims || outputPadding.some((p, i) => p < 0 || p >= Math.max(strides[i], dilation[i]))) {
      throw new Error(`output_padding [${outputPadding.join(', ')}] (each must be below its stride or dilation)`);
    }
    const natural = (i: number): number => strides[i] * (inDims[i] - 1) + outputPadding[i] + (ks[i] - 1) * dilation[i] + 1;
    const autoPad = n.attr.string('auto_pad', 'NOTSET');
    let shapeAttr = n.attr.ints('output_shape');
    if (shapeAttr && shapeAttr.length === rank) shapeAttr = shapeAttr.slice(2);
    if (shapeAttr && shapeAttr.length !== dims) throw new Error(`output_shape [${shapeAttr.join(', ')}] for ${dims}-D windows`);
    if (!['NOTSET', 'SAME_UPPER', 'SAME_LOWER', 'VALID'].includes(autoPad)) throw new UnsupportedError(`auto_pad '${autoPad}'`);
    let pads: number[];
    const target = shapeAttr ?? (autoPad === 'SAME_UPPER' || autoPad === 'SAME_LOWER' ? inDims.map((d, i) => d * strides[i]) : undefined);
    if (target) {
      // ONNX: the pads that give this output; an odd total puts the extra one at the end
      // for SAME_UPPER, at the beginning otherwise (as ONNX Runtime does).
      // An output_shape above what the convolution gives is framed in zeros (ONNX's rule:
      // negative pads; ONNX Runtime refuses such a model). SAME without output_shape never pads so
      // (ONNX Runtime then keeps the convolution's size, ONNX's reference does not): refused.
      const total = target.map((o, i) => natural(i) - o);
      if (!shapeAttr && total.some((t) => t < 0)) throw new UnsupportedError(`auto_pad ${autoPad} asking for an output [${target.join(', ')}] larger than the convolution gives ([${inDims.map((_, i) => natural(i)).join(', ')}])`);
      const upper = autoPad === 'SAME_UPPER';
      pads = [...total.map((t) => (upper ? Math.floor(t / 2) : t - Math.floor(t / 2))), ...total.map((t) => (upper ? t - Math.floor(t / 2) : Math.floor(t / 2)))];
    } else if (autoPad === 'VALID') pads = new Array<number>(2 * dims).fill(0);
    else {
      pads = n.attr.ints('pads') ?? new Array<number>(2 * dims).fill(0);
      if (pads.length !== 2 * dims) throw new Error(`pads has ${pads.length} values, ${dims}-D windows need ${2 * dims}`);
      if (pads.some((p) => p < 0)) throw new UnsupportedError('negative pads');
    }
    if (inDims.some((_, i) => natural(i) - pads[i] - pads[dims + i] < 1)) throw new Error(`pads [${pads.join(', ')}] leave an empty output`);
    const attrs = { strides, dilation, padding: pads, outputPadding, groups };
    if (dims === 3) return [withBias(n, n.op('conv3d_transpose', [n.node(0), n.node(1)], { layout: 'NCDHW', ...attrs }), w[1] * groups, 3)];
    if (dims === 2) return [withBias(n, n.op('conv2d_transpose', [n.node(0), n.node(1)], { layout: 'NCHW', ...attrs }), w[1] * groups, 2)];
    // 1-D: a conv2d_transpose over H = 1.
    const y = withBias(n, n.op('conv2d_transpose', [as2d(n, n.input(0), '_2d'), as2d(n, n.input(1), '_weight2d')], {
      layout: 'NCHW', strides: [1, strides[0]], dilation: [1, dilation[0]], padding: [0, pads[0], 0, pads[1]], outputPadding: [0, outputPadding[0]], groups,
    }, '_conv2d'), w[1] * groups, 2);
    const s = n.graph.node(idOf(y)).shape;
    return [reshapeValue(n, y, [s[0], s[1], s[3]])];
  },
};

/**
 * ceil_mode: the output count ONNX gives (a last window that would start past the input
 * and its leading padding is dropped) as extra padding after the end, which floor
 * division turns into that count.
 */
function ceilPadding(input: readonly number[], kernel: readonly number[], strides: readonly number[], dilation: readonly number[], pads: readonly number[]): number[] {
  const dims = input.length;
  return input.map((size, i) => {
    const span = size + pads[i] + pads[dims + i] - ((kernel[i] - 1) * dilation[i] + 1);
    let out = Math.ceil(span / strides[i]) + 1;
    if ((out - 1) * strides[i] >= size + pads[i]) out -= 1;
    const extra = Math.max(0, (out - 1) * strides[i] - span);
    if (Math.floor((span + extra) / strides[i]) + 1 !== out) throw new UnsupportedError('ceil_mode with end pads that hold a whole window');
    return extra;
  });
}

type PoolKind = 'max' | 'avg' | 'lp';

/** MaxPool, AveragePool, LpPool; `global`: GlobalLpPool (the window is the whole image). */
function pool(kind: PoolKind, global = false): Converter {
  const attrs = global ? ['p'] : kind === 'lp' ? ['auto_pad', 'ceil_mode', 'dilations', 'kernel_shape', 'p', 'pads', 'strides']
    : ['auto_pad', 'ceil_mode', 'dilations', 'kernel_shape', 'pads', 'strides', 'storage_order', 'count_include_pad'];
  return {
    attrs,
    convert(n) {
      const x = requireImage(n, 0, 'input');
      const dims = x.length - 2;
      if (n.outputs[1]) throw new UnsupportedError('the Indices output of MaxPool');
      const kernel = global ? x.slice(2) : n.attr.ints('kernel_shape');
      if (!kernel || kernel.length !== dims || kernel.some((k) => !Number.isInteger(k) || k < 1)) throw new Error(`kernel_shape [${(kernel ?? []).join(', ')}] for ${dims}-D windows`);
      const ones = new Array<number>(dims).fill(1);
      const strides = global ? ones : perAxis(n, 'strides', dims);
      const dilation = global ? ones : perAxis(n, 'dilations', dims);
      const pads = global ? [...ones, ...ones].map(() => 0) : windowPads(n, x.slice(2), kernel, strides, dilation);
      const countIncludePad = kind === 'avg' && n.attr.int('count_include_pad', 0) === 1;
      const extra = !global && n.attr.int('ceil_mode', 0) === 1 ? ceilPadding(x.slice(2), kernel, strides, dilation, pads) : new Array<number>(dims).fill(0);
      // The extra windows of ceil_mode read padding: plain padding for max, lp and an
      // average over the input alone; with count_include_pad it must not count (ceilPadding).
      const separate = countIncludePad && extra.some((e) => e > 0);
      const padding = separate ? pads : [...pads.slice(0, dims), ...pads.slice(dims).map((p, i) => p + extra[i])];
      const dilated = dilation.some((d) => d !== 1);
      const p = kind === 'lp' ? n.attr.int('p', 2) : undefined;
      if (p !== undefined && (p < 1 || p > 16)) throw new UnsupportedError(`LpPool with p = ${p} (1 to 16)`);
      const common = {
        ...(kind === 'avg' ? { countIncludePad } : {}), ...(p !== undefined ? { p } : {}),
      };
      const op = (d: number): string => `${kind}_pool${d}d`;
      if (dims === 3) return [n.op(op(3), [n.node(0)], { layout: 'NCDHW', kernel, strides, dilation, padding, ...common, ...(separate ? { ceilPadding: extra } : {}) })];
      if (dims === 2) {
        return [n.op(op(2), [n.node(0)], { layout: 'NCHW', kernel, strides, padding, ...(dilated ? { dilation } : {}), ...common, ...(separate ? { ceilPadding: extra } : {}) })];
      }
      // 1-D: a 2-D pool over H = 1.
      const y = n.op(op(2), [as2d(n, n.input(0), '_2d')], {
        layout: 'NCHW', kernel: [1, kernel[0]], strides: [1, strides[0]], padding: [0, padding[0], 0, padding[1]],
        ...(dilated ? { dilation: [1, dilation[0]] } : {}), ...common, ...(separate ? { ceilPadding: [0, extra[0]] } : {}),
      }, '_pool2d');
      const s = n.graph.node(idOf(y)).shape;
      return [reshapeValue(n, y, [s[0], s[1], s[3]])];
    },
  };
}

/** GlobalAveragePool / GlobalMaxPool over every spatial axis of a rank >= 3 input. */
function globalPool(kind: 'avg' | 'max'): Converter {
  return {
    attrs: [],
    convert(n) {
      const x = n.shape(0);
      if (x.length < 3) throw new UnsupportedError(`input of rank ${x.length} (an image of rank 3 or more)`);
      if (x.length === 4) return [n.op(`global_${kind}_pool2d`, [n.node(0)], { layout: 'NCHW' })];
      if (x.length === 5) return [n.op(`global_${kind}_pool3d`, [n.node(0)], { layout: 'NCDHW' })];
      // Any other rank: the spatial axes as one, [N, C, 1, D*H*...], pooled as a 2-D image.
      const flat = reshapeValue(n, n.input(0), [x[0], x[1], 1, numElements(x.slice(2))], '_2d');
      const y = n.op(`global_${kind}_pool2d`, [n.nodeOf(flat, '_2d')], { layout: 'NCHW' }, '_pool2d');
      return [reshapeValue(n, y, [x[0], x[1], ...x.slice(2).map(() => 1)])];
    },
  };
}

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

const softmax: Converter = {
  attrs: ['axis'],
  convert(n) {
    const shape = n.shape(0);
    const rank = shape.length;
    const a = normAxis(n.attr.int('axis', n.opset >= 13 ? -1 : 1), rank, 'Softmax axis');
    const trailing = numElements(shape.slice(a + 1));
    // A float16 / bfloat16 input: the softmax in its type (narrow.ts).
    const type = narrowFloat(n.onnxType(0));
    const softmaxOf = (id: number, axis: number, suffix?: string): Value =>
      (type ? n.op('narrow_softmax', [id], { axis, type }, suffix) : n.op('softmax', [id], { axis }, suffix));
    if (n.opset >= 13 || a === rank - 1 || trailing === 1) return [softmaxOf(n.node(0), a === rank - 1 ? -1 : a)];
    // Before opset 13, Softmax normalises the 2-D [prod(dims < axis), prod(dims >= axis)] view.
    const flat = reshapeValue(n, n.input(0), [numElements(shape.slice(0, a)), numElements(shape.slice(a))], '_2d');
    const y = softmaxOf(idOf(flat), -1, '_softmax');
    return [reshapeValue(n, y, shape)];
  },
};

export const NN_CONVERTERS: Record<string, Converter> = {
  Conv: conv,
  ...MATMUL_CONVERTERS,
  BatchNormalization: batchNorm,
  MaxPool: pool('max'),
  AveragePool: pool('avg'),
  GlobalAveragePool: globalPool('avg'),
  GlobalMaxPool: globalPool('max'),
  ConvTranspose: convTranspose,
  LpPool: pool('lp'),
  GlobalLpPool: pool('lp', true),
  Softmax: softmax,
};
