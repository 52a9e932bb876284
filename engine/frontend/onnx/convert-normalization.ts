// Converters of ONNX's normalizations (topi/normalization.ts computes them):
// LayerNormalization (with its optional Mean and InvStdDev outputs), InstanceNormalization,
// GroupNormalization (scale and bias per group at opset 18, per channel from opset 21),
// MeanVarianceNormalization, LRN, and LogSoftmax and Hardmax with both axis semantics:
// before opset 13 the input is coerced to the 2-D [prod(dims < axis), prod(dims >= axis)]
// (axis default 1), from 13 on one axis (default -1), as Softmax (convert-nn.ts).

import { numElements } from '../../ir/tensor';
import { UnsupportedError, type NodeView, type Value } from './context';
import { reshapeValue, type Converter } from './convert-tensor';
import { normAxis } from './static';
import { narrowFloat } from './narrow';

function requireFloat(n: NodeView, i: number): void {
  const dtype = n.dtype(i);
  if (dtype !== 'float32') throw new UnsupportedError(`${n.opType} of ${dtype} data (float only)`);
}

/** stash_type: the precision of the statistics; we compute them in float32 only (1). */
function requireStashFloat(n: NodeView): void {
  const stash = n.attr.int('stash_type', 1);
  if (stash !== 1) throw new UnsupportedError(`stash_type ${stash} (statistics in float32 only, stash_type 1)`);
}

const layerNorm: Converter = {
  attrs: ['axis', 'epsilon', 'stash_type'],
  convert(n) {
    requireFloat(n, 0);
    requireStashFloat(n);
    const rank = n.shape(0).length;
    const axis = normAxis(n.attr.int('axis', -1), rank, 'LayerNormalization axis');
    const epsilon = n.attr.float('epsilon', 1e-5);
    const inputs = [n.node(0), n.node(1, 'Scale')];
    if (n.optional(2)) inputs.push(n.node(2, 'B'));
    const outs: Value[] = [n.op('layer_norm', inputs, { axis, epsilon })];
    if (n.outputs[1]) outs[1] = n.op('layer_norm_stat', [n.node(0)], { axis, epsilon, which: 'mean' }, '_mean');
    if (n.outputs[2]) outs[2] = n.op('layer_norm_stat', [n.node(0)], { axis, epsilon, which: 'inv_std_dev' }, '_inv_std_dev');
    return outs;
  },
};

const instanceNorm: Converter = {
  attrs: ['epsilon'],
  convert(n) {
    requireFloat(n, 0);
    const shape = n.shape(0);
    if (shape.length < 3) throw new UnsupportedError(`input of rank ${shape.length} (rank >= 3: [N, C, D1, ...])`);
    for (const i of [1, 2]) {
      const s = n.shape(i);
      if (s.length !== 1 || s[0] !== shape[1]) throw new Error(`${i === 1 ? 'scale' : 'B'} has shape [${s.join(', ')}], expected [${shape[1]}]`);
    }
    return [n.op('instance_norm', [n.node(0), n.node(1, 'scale'), n.node(2, 'B')], { epsilon: n.attr.float('epsilon', 1e-5), axis: 1 })];
  },
};

const groupNorm: Converter = {
  attrs: ['epsilon', 'num_groups', 'stash_type'],
  convert(n) {
    requireFloat(n, 0);
    requireStashFloat(n);
    const shape = n.shape(0);
    if (shape.length < 2) throw new UnsupportedError(`input of rank ${shape.length} (rank >= 2: [N, C, ...])`);
    if (!n.attr.has('num_groups')) throw new Error('GroupNormalization needs num_groups');
    const groups = n.attr.int('num_groups', 1);
    if (groups < 1 || shape[1] % groups !== 0) throw new Error(`${shape[1]} channels do not split into ${groups} groups`);
    // Opset 18 (deprecated at 21): scale and bias per group; opset 21: per channel.
    const perChannel = n.opset >= 21;
    const want = perChannel ? shape[1] : groups;
    for (const i of [1, 2]) {
      const s = n.shape(i);
      if (s.length !== 1 || s[0] !== want) throw new Error(`${i === 1 ? 'scale' : 'bias'} has shape [${s.join(', ')}], expected [${want}] at opset ${n.opset}`);
    }
    return [n.op('group_norm', [n.node(0), n.node(1, 'scale'), n.node(2, 'bias')], { groups, epsilon: n.attr.float('epsilon', 1e-5), perChannel })];
  },
};

const meanVarianceNorm: Converter = {
  attrs: ['axes'],
  convert(n) {
    requireFloat(n, 0);
    const rank = n.shape(0).length;
    const axes = (n.attr.ints('axes') ?? [0, 2, 3]).map((a) => normAxis(a, rank, 'MeanVarianceNormalization axis'));
    if (axes.length === 0) throw new UnsupportedError('empty axes');
    return [n.op('mean_variance_normalization', [n.node(0)], { axes: [...new Set(axes)].sort((a, b) => a - b) })];
  },
};

const lrn: Converter = {
  attrs: ['alpha', 'beta', 'bias', 'size'],
  convert(n) {
    requireFloat(n, 0);
    const shape = n.shape(0);
    if (shape.length < 2) throw new UnsupportedError(`input of rank ${shape.length} (rank >= 2: [N, C, ...])`);
    if (!n.attr.has('size')) throw new Error('LRN needs size');
    const size = n.attr.int('size', 1);
    if (size < 1) throw new Error(`size ${size}`);
    const bias = n.attr.float('bias', 1);
    // The power is computed as exp(beta * log(base)); the base is at least bias.
    if (!(bias > 0)) throw new UnsupportedError(`bias ${bias} (only a positive bias)`);
    const alpha = n.attr.float('alpha', 1e-4);
    if (alpha < 0) throw new UnsupportedError(`alpha ${alpha} (only alpha >= 0)`);
    return [n.op('lrn', [n.node(0)], { size, alpha, beta: n.attr.float('beta', 0.75), bias, axis: 1 })];
  },
};

/** An operator along one axis (LogSoftmax, Hardmax): one axis from opset 13, the 2-D coercion before. */
function alongAxis(op: string): Converter {
  return {
    attrs: ['axis'],
    convert(n) {
      requireFloat(n, 0);
      const shape = n.shape(0);
      const rank = shape.length;
      if (rank === 0) throw new UnsupportedError('a scalar input');
      const a = normAxis(n.attr.int('axis', n.opset >= 13 ? -1 : 1), rank, `${n.opType} axis`);
      const trailing = numElements(shape.slice(a + 1));
      // LogSoftmax of a float16 / bfloat16 input: in its type (narrow.ts); Hardmax only selects.
      const type = op === 'log_softmax' ? narrowFloat(n.onnxType(0)) : undefined;
      const apply = (id: number, axis: number, suffix?: string): Value =>
        (type ? n.op('narrow_softmax', [id], { axis, type, log: true }, suffix) : n.op(op, [id], { axis }, suffix));
      if (n.opset >= 13 || a === rank - 1 || trailing === 1) return [apply(n.node(0), a === rank - 1 ? -1 : a)];
      const flat = reshapeValue(n, n.input(0), [numElements(shape.slice(0, a)), numElements(shape.slice(a))], '_2d');
      const y = apply(n.nodeOf(flat, '_2d'), -1, `_${op}`);
      return [reshapeValue(n, y, shape)];
    },
  };
}

export const NORMALIZATION_CONVERTERS: Record<string, Converter> = {
  LayerNormalization: layerNorm,
  InstanceNormalization: instanceNorm,
  GroupNormalization: groupNorm,
  MeanVarianceNormalization: meanVarianceNorm,
  LRN: lrn,
  LogSoftmax: alongAxis('log_softmax'),
  Hardmax: alongAxis('hardmax'),
};
