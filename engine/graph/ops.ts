// The graph-level operator registry: for each operator, its fusion pattern (TVM's
// OpPatternKind) and the TOPI compute that defines it. Graph nodes name an operator
// from here; shapes are inferred by running the compute on placeholders.

import type { Tensor } from '../ir/tensor';
import * as nn from '../topi/nn';
import * as ew from '../topi/elemwise';
import * as tr from '../topi/transform';
import * as rz from '../topi/resize';
import * as norm from '../topi/normalization';
import * as red from '../topi/reduce';
import * as lg from '../topi/logic';
import * as ix from '../topi/indexing';
import * as qz from '../topi/quantize';
import * as ex from '../topi/extra';
import { gridSample, type GridSampleOptions } from '../topi/grid-sample';
import { narrowSoftmax, type NarrowFloat } from '../topi/narrow-softmax';
import type { DType } from '../ir/expr';
import { conv2dWinogradNHWC, type WinogradTile } from '../topi/winograd';
import { conv3dNCDHW, conv3dNDHWC, type Conv3dParams } from '../topi/conv3d';
import { convTranspose, subpixelGather } from '../topi/conv-transpose';
import * as pl from '../topi/pool';
import type { Layout3d } from '../topi/pool';

/** Fusion patterns, ordered as in TVM (lower fuses more freely). */
export enum OpPattern {
  ElemWise = 0,
  Broadcast = 1,
  Injective = 2,
  CommReduce = 3,
  OutEWiseFusable = 4,
  Opaque = 8,
}

export type Attrs = Record<string, unknown>;

export interface OpDef {
  readonly pattern: OpPattern;
  /** Build the output tensor from input tensors (in node input order). */
  compute(inputs: readonly Tensor[], attrs: Attrs): Tensor;
}

const num = (attrs: Attrs, key: string): number => attrs[key] as number;
const pair = (attrs: Attrs, key: string, dflt: [number, number]): [number, number] => (attrs[key] as [number, number] | undefined) ?? dflt;
const quad = (attrs: Attrs, key: string): [number, number, number, number] =>
  (attrs[key] as [number, number, number, number] | undefined) ?? [0, 0, 0, 0];
const layoutOf = (attrs: Attrs): nn.Layout => (attrs.layout as nn.Layout | undefined) ?? 'NHWC';

function conv2d([data, kernel]: readonly Tensor[], attrs: Attrs): Tensor {
  const p: nn.Conv2dParams = { strides: pair(attrs, 'strides', [1, 1]), padding: quad(attrs, 'padding'), dilation: pair(attrs, 'dilation', [1, 1]) };
  const groups = (attrs.groups as number | undefined) ?? 1;
  const layout = layoutOf(attrs);
  const channels = layout === 'NHWC' ? data.shape[3] : data.shape[1];
  if (groups > 1 && groups === channels) {
    return layout === 'NHWC' ? nn.depthwiseConv2dNHWC(data, kernel, p) : nn.depthwiseConv2dNCHW(data, kernel, p);
  }
  return layout === 'NHWC' ? nn.conv2dNHWC(data, kernel, p, groups) : nn.conv2dNCHW(data, kernel, p, groups);
}

function pool(kind: 'max' | 'avg') {
  return ([data]: readonly Tensor[], attrs: Attrs): Tensor => (attrs.dilation !== undefined || attrs.ceilPadding !== undefined ? poolNd(kind)([data], attrs) : nn.pool2d(data, {
    kind,
    kernel: pair(attrs, 'kernel', [1, 1]),
    strides: pair(attrs, 'strides', [1, 1]),
    padding: quad(attrs, 'padding'),
    countIncludePad: attrs.countIncludePad as boolean | undefined,
    layout: layoutOf(attrs),
  }));
}

/** Pools with dilations or ceil_mode's extra padding (2-D), and the 3-D pools (topi/pool.ts). */
function poolNd(kind: 'max' | 'avg' | 'lp') {
  return ([data]: readonly Tensor[], attrs: Attrs): Tensor => {
    const spatial = data.shape.length - 2;
    return pl.poolNd(data, {
      kind,
      kernel: attrs.kernel as number[],
      strides: (attrs.strides as number[] | undefined) ?? new Array<number>(spatial).fill(1),
      dilation: attrs.dilation as number[] | undefined,
      padding: (attrs.padding as number[] | undefined) ?? new Array<number>(2 * spatial).fill(0),
      ceilPadding: attrs.ceilPadding as number[] | undefined,
      countIncludePad: attrs.countIncludePad as boolean | undefined,
      p: attrs.p as number | undefined,
      channelsLast: pl.channelsLast((attrs.layout as string | undefined) ?? (spatial === 3 ? 'NDHWC' : 'NHWC')),
    });
  };
}

function conv3d([data, kernel]: readonly Tensor[], attrs: Attrs): Tensor {
  const p: Conv3dParams = {
    strides: (attrs.strides as Conv3dParams['strides'] | undefined) ?? [1, 1, 1],
    padding: (attrs.padding as Conv3dParams['padding'] | undefined) ?? [0, 0, 0, 0, 0, 0],
    dilation: (attrs.dilation as Conv3dParams['dilation'] | undefined) ?? [1, 1, 1],
  };
  const groups = (attrs.groups as number | undefined) ?? 1;
  return ((attrs.layout as string | undefined) ?? 'NDHWC') === 'NCDHW' ? conv3dNCDHW(data, kernel, p, groups) : conv3dNDHWC(data, kernel, p, groups);
}

function convTransposeOp([data, kernel]: readonly Tensor[], attrs: Attrs): Tensor {
  const spatial = data.shape.length - 2;
  const ones = new Array<number>(spatial).fill(1), zeros = new Array<number>(spatial).fill(0);
  return convTranspose(data, kernel, {
    strides: (attrs.strides as number[] | undefined) ?? ones,
    dilation: (attrs.dilation as number[] | undefined) ?? ones,
    padding: (attrs.padding as number[] | undefined) ?? [...zeros, ...zeros],
    outputPadding: (attrs.outputPadding as number[] | undefined) ?? zeros,
    groups: (attrs.groups as number | undefined) ?? 1,
    channelsLast: pl.channelsLast((attrs.layout as string | undefined) ?? (spatial === 3 ? 'NDHWC' : 'NHWC')),
  });
}

const binary = (kind: ew.BinaryKind): OpDef => ({ pattern: OpPattern.Broadcast, compute: ([a, b]) => ew.binary(kind, a, b) });

export const OPS: Record<string, OpDef> = {
  conv2d: { pattern: OpPattern.OutEWiseFusable, compute: conv2d },
  // A 3x3 stride-1 NHWC conv2d as Winograd, the kernel already transformed (graph/winograd.ts).
  conv2d_winograd_nhwc: {
    pattern: OpPattern.OutEWiseFusable,
    compute: ([d, w], a) => conv2dWinogradNHWC(d, w, { padding: quad(a, 'padding'), tileSize: num(a, 'tileSize') as WinogradTile }),
  },
  dense: { pattern: OpPattern.OutEWiseFusable, compute: ([d, w]) => nn.dense(d, w) },
  // transA/transB as TOPI's transpose_a/transpose_b (default false/true: the NT form); batch axes
  // broadcast; viewA/viewB read an operand through a split-reshape + transpose (nn.OperandView).
  batch_matmul: {
    pattern: OpPattern.OutEWiseFusable,
    compute: ([a, b], at) => nn.batchMatmul(a, b, {
      transA: at.transA as boolean | undefined, transB: at.transB as boolean | undefined,
      viewA: at.viewA as nn.OperandView | undefined, viewB: at.viewB as nn.OperandView | undefined,
    }),
  },
  // 3-D convs, transposed convs (2-D, 3-D) and 3-D pools: layout NCDHW/NDHWC (2-D: NCHW/NHWC) in attrs.layout.
  conv3d: { pattern: OpPattern.OutEWiseFusable, compute: conv3d },
  conv2d_transpose: { pattern: OpPattern.OutEWiseFusable, compute: convTransposeOp },
  conv3d_transpose: { pattern: OpPattern.OutEWiseFusable, compute: convTransposeOp },
  // The interleave of a transposed conv computed as a conv2d, or as one conv2d per phase (passes/conv-transpose-as-conv.ts).
  subpixel_gather: {
    pattern: OpPattern.Injective,
    compute: (xs, a) => subpixelGather(xs.length === 1 ? xs[0] : xs, a.strides as [number, number], a.padBegin as [number, number], a.out as [number, number], pl.channelsLast(a.layout as string)),
  },
  max_pool3d: { pattern: OpPattern.OutEWiseFusable, compute: poolNd('max') },
  // ONNX's LpPool: attrs as the pools' plus the exponent p.
  lp_pool2d: { pattern: OpPattern.OutEWiseFusable, compute: poolNd('lp') },
  lp_pool3d: { pattern: OpPattern.OutEWiseFusable, compute: poolNd('lp') },
  avg_pool3d: { pattern: OpPattern.OutEWiseFusable, compute: poolNd('avg') },
  global_avg_pool3d: { pattern: OpPattern.OutEWiseFusable, compute: ([d], a) => pl.globalPool3d(d, 'avg', (a.layout as Layout3d | undefined) ?? 'NDHWC') },
  global_max_pool3d: { pattern: OpPattern.OutEWiseFusable, compute: ([d], a) => pl.globalPool3d(d, 'max', (a.layout as Layout3d | undefined) ?? 'NDHWC') },
  max_pool2d: { pattern: OpPattern.OutEWiseFusable, compute: pool('max') },
  avg_pool2d: { pattern: OpPattern.OutEWiseFusable, compute: pool('avg') },
  global_avg_pool2d: { pattern: OpPattern.OutEWiseFusable, compute: ([d], a) => nn.adaptivePool2d(d, [1, 1], 'avg', layoutOf(a)) },
  global_max_pool2d: { pattern: OpPattern.OutEWiseFusable, compute: ([d], a) => nn.adaptivePool2d(d, [1, 1], 'max', layoutOf(a)) },
  adaptive_avg_pool2d: {
    pattern: OpPattern.OutEWiseFusable,
    compute: ([d], a) => nn.adaptivePool2d(d, a.outputSize as [number, number], 'avg', layoutOf(a)),
  },
  softmax: { pattern: OpPattern.Opaque, compute: ([d], a) => nn.softmax(d, (a.axis as number | undefined) ?? -1) },
  batch_norm: {
    pattern: OpPattern.OutEWiseFusable,
    compute: ([x, g, b, m, v], a) => nn.batchNorm(x, g, b, m, v, num(a, 'axis'), num(a, 'epsilon')),
  },
  add: binary('add'),
  subtract: binary('subtract'),
  multiply: binary('multiply'),
  divide: binary('divide'),
  maximum: binary('maximum'),
  minimum: binary('minimum'),
  relu: { pattern: OpPattern.ElemWise, compute: ([x]) => ew.relu(x) },
  clip: { pattern: OpPattern.ElemWise, compute: ([x], a) => ew.clip(x, num(a, 'min'), num(a, 'max')) },
  leaky_relu: { pattern: OpPattern.ElemWise, compute: ([x], a) => ew.leakyRelu(x, num(a, 'alpha')) },
  sigmoid: { pattern: OpPattern.ElemWise, compute: ([x]) => ew.sigmoid(x) },
  tanh: { pattern: OpPattern.ElemWise, compute: ([x]) => ew.tanh(x) },
  hard_sigmoid: { pattern: OpPattern.ElemWise, compute: ([x], a) => ew.hardSigmoid(x, num(a, 'alpha'), num(a, 'beta')) },
  hard_swish: { pattern: OpPattern.ElemWise, compute: ([x]) => ew.hardSwish(x) },
  mean: {
    pattern: OpPattern.CommReduce,
    compute: ([x], a) => nn.reduceMean(x, a.axes as number[], (a.keepdims as boolean | undefined) ?? true),
  },
  // reduce_sum, reduce_max, reduce_min, reduce_prod, reduce_sum_square, reduce_l1, reduce_l2,
  // reduce_log_sum, reduce_log_sum_exp (topi/reduce.ts; `mean` above): attrs axes, keepdims.
  ...Object.fromEntries(red.REDUCE_KINDS.filter((k) => k !== 'mean').map((k): [string, OpDef] => [`reduce_${k}`, {
    pattern: OpPattern.CommReduce,
    compute: ([x], a) => red.reduce(x, k, a.axes as number[], (a.keepdims as boolean | undefined) ?? true),
  }])),
  // Normalizations (topi/normalization.ts): reductions for the statistics, then elementwise.
  layer_norm: {
    pattern: OpPattern.OutEWiseFusable,
    compute: ([x, s, b], a) => norm.layerNorm(x, s, b, num(a, 'axis'), num(a, 'epsilon')),
  },
  // LayerNormalization's Mean / InvStdDev outputs (attr which: 'mean' | 'inv_std_dev').
  layer_norm_stat: {
    pattern: OpPattern.CommReduce,
    compute: ([x], a) => norm.layerNormStat(x, num(a, 'axis'), num(a, 'epsilon'), a.which as 'mean' | 'inv_std_dev'),
  },
  instance_norm: {
    pattern: OpPattern.OutEWiseFusable,
    compute: ([x, s, b], a) => norm.instanceNorm(x, s, b, num(a, 'epsilon'), (a.axis as number | undefined) ?? 1),
  },
  group_norm: {
    pattern: OpPattern.OutEWiseFusable,
    compute: ([x, s, b], a) => norm.groupNorm(x, s, b, num(a, 'groups'), num(a, 'epsilon'), a.perChannel as boolean),
  },
  mean_variance_normalization: { pattern: OpPattern.OutEWiseFusable, compute: ([x], a) => norm.meanVarianceNorm(x, a.axes as number[]) },
  lrn: {
    pattern: OpPattern.Opaque,
    compute: ([x], a) => norm.lrn(x, num(a, 'size'), num(a, 'alpha'), num(a, 'beta'), num(a, 'bias'), (a.axis as number | undefined) ?? 1),
  },
  log_softmax: { pattern: OpPattern.Opaque, compute: ([d], a) => norm.logSoftmax(d, (a.axis as number | undefined) ?? -1) },
  hardmax: { pattern: OpPattern.Opaque, compute: ([d], a) => norm.hardmax(d, (a.axis as number | undefined) ?? -1) },
  pad: {
    pattern: OpPattern.Injective,
    compute: ([x], a) => tr.pad(x, a.before as number[], a.after as number[], 'PadInput', (a.value as number | undefined) ?? 0),
  },
  reshape: { pattern: OpPattern.Injective, compute: ([x], a) => tr.reshape(x, a.newShape as number[]) },
  batch_flatten: { pattern: OpPattern.Injective, compute: ([x]) => tr.batchFlatten(x) },
  transpose: { pattern: OpPattern.Injective, compute: ([x], a) => tr.transpose(x, a.axes as number[]) },
  concatenate: { pattern: OpPattern.Injective, compute: (xs, a) => tr.concatenate(xs, num(a, 'axis')) },
  // Data movement (topi/transform.ts) and resize (topi/resize.ts).
  pad_mode: { pattern: OpPattern.Injective, compute: ([x], a) => tr.padMode(x, a.before as number[], a.after as number[], a.mode as tr.PadMode) },
  strided_slice: { pattern: OpPattern.Injective, compute: ([x], a) => tr.stridedSlice(x, a.begin as number[], a.step as number[], a.shape as number[]) },
  broadcast_to: { pattern: OpPattern.Broadcast, compute: ([x], a) => tr.broadcastTo(x, a.shape as number[]) },
  tile: { pattern: OpPattern.Injective, compute: ([x], a) => tr.tile(x, a.reps as number[]) },
  depth_to_space: { pattern: OpPattern.Injective, compute: ([x], a) => tr.depthToSpace(x, num(a, 'block'), a.mode as 'DCR' | 'CRD') },
  space_to_depth: { pattern: OpPattern.Injective, compute: ([x], a) => tr.spaceToDepth(x, num(a, 'block'), (a.mode as 'DCR' | 'CRD' | undefined) ?? 'DCR') },
  trilu: { pattern: OpPattern.Injective, compute: ([x], a) => tr.trilu(x, num(a, 'k'), a.upper as boolean) },
  reverse_sequence: { pattern: OpPattern.Injective, compute: ([x, lens], a) => tr.reverseSequence(x, lens, num(a, 'seqAxis'), num(a, 'batchAxis')) },
  // Inputs: data, then per resized axis its index table and (taps > 1) its weight table; attrs axes, taps,
  // extrapolation, and affine: per axis [a, b, c, length] for a nearest index floor((a*o + b) / c) (no tables), or null.
  resize: {
    pattern: OpPattern.Injective,
    compute: ([x, ...tables], a) => {
      const per = num(a, 'taps') > 1 ? 2 : 1;
      const affine = (a.affine as (number[] | null)[] | undefined) ?? [];
      let k = 0;
      const axes = (a.axes as number[]).map((axis, i) => {
        const f = affine[i];
        if (f) return { axis, affine: [f[0], f[1], f[2]] as const, length: f[3] };
        const t = { axis, index: tables[k], weight: per === 2 ? tables[k + 1] : undefined };
        k += per;
        return t;
      });
      return rz.resize(x, axes, num(a, 'taps'), a.extrapolation as number | undefined);
    },
  },
  // Inputs: data [N, C, d...], grid [N, o..., r] (topi/grid-sample.ts); attrs mode, padding, alignCorners.
  grid_sample: {
    pattern: OpPattern.Injective,
    compute: ([x, g], a) => gridSample(x, g, { mode: a.mode as GridSampleOptions['mode'], padding: a.padding as GridSampleOptions['padding'], alignCorners: a.alignCorners as boolean }),
  },
};

// Comparisons and logic (topi/logic.ts): bool results; cast's attr dtype is the target type.
const LOGIC_OPS: Record<string, OpDef> = {
  ...Object.fromEntries((['equal', 'not_equal', 'less', 'less_equal', 'greater', 'greater_equal'] as const).map((k): [string, OpDef] => [k, {
    pattern: OpPattern.Broadcast, compute: ([a, b]) => lg.compare(k, a, b),
  }])),
  ...Object.fromEntries((['logical_and', 'logical_or', 'logical_xor'] as const).map((k): [string, OpDef] => [k, {
    pattern: OpPattern.Broadcast, compute: ([a, b]) => lg.logical(k, a, b),
  }])),
  logical_not: { pattern: OpPattern.ElemWise, compute: ([x]) => lg.logicalNot(x) },
  floor_mod: { pattern: OpPattern.Broadcast, compute: ([a, b]) => lg.intMod('floor_mod', a, b) },
  trunc_mod: { pattern: OpPattern.Broadcast, compute: ([a, b]) => lg.intMod('trunc_mod', a, b) },
  where: { pattern: OpPattern.Broadcast, compute: ([c, x, y]) => lg.where(c, x, y) },
  // attrs.bits/signed: the int32 result stands for an 8/16-bit type and wraps into its range.
  cast: {
    pattern: OpPattern.ElemWise,
    compute: ([x], a) => lg.cast(x, a.dtype as DType, a.bits === undefined ? undefined : { bits: num(a, 'bits'), signed: a.signed as boolean }),
  },
  // Indexing (topi/indexing.ts); data-dependent indices are wrapped and clamped into range.
  take: { pattern: OpPattern.Injective, compute: ([d, i], a) => ix.take(d, i, (a.axis as number | undefined) ?? 0) },
  gather_elements: { pattern: OpPattern.Injective, compute: ([d, i], a) => ix.gatherElements(d, i, (a.axis as number | undefined) ?? 0) },
  gather_nd: { pattern: OpPattern.Injective, compute: ([d, i], a) => ix.gatherNd(d, i, (a.batchDims as number | undefined) ?? 0) },
  argmax: { pattern: OpPattern.CommReduce, compute: ([x], a) => ix.argReduce('max', x, num(a, 'axis'), a.keepdims as boolean, a.selectLast as boolean) },
  argmin: { pattern: OpPattern.CommReduce, compute: ([x], a) => ix.argReduce('min', x, num(a, 'axis'), a.keepdims as boolean, a.selectLast as boolean) },
  cumsum: { pattern: OpPattern.Opaque, compute: ([x], a) => ix.cumsum(x, num(a, 'axis'), a.exclusive as boolean, a.reverse as boolean) },
  // Inputs data, indices, updates; attrs reduction ('none' | 'add' | 'mul' | 'max' | 'min'), axis (scatter_elements).
  scatter_elements: {
    pattern: OpPattern.Opaque,
    compute: ([d, i, u], a) => ix.scatterElements(d, i, u, num(a, 'axis'), (a.reduction as ix.ScatterReduction | undefined) ?? 'none'),
  },
  scatter_nd: { pattern: OpPattern.Opaque, compute: ([d, i, u], a) => ix.scatterNd(d, i, u, (a.reduction as ix.ScatterReduction | undefined) ?? 'none') },
  // TopK's positions (the values: gather_elements of them); attrs k, axis, largest.
  topk_indices: { pattern: OpPattern.Opaque, compute: ([x], a) => ix.topkIndices(x, num(a, 'k'), num(a, 'axis'), a.largest as boolean) },
  one_hot: {
    pattern: OpPattern.OutEWiseFusable,
    compute: ([i], a) => ix.oneHot(i, num(a, 'depth'), num(a, 'off'), num(a, 'on'), num(a, 'axis'), a.dtype as DType),
  },
};
Object.assign(OPS, LOGIC_OPS);

// Linear quantization (topi/quantize.ts) over int32-carried integers: attrs axis (per-axis
// scale / zero point), qmin/qmax (the quantized type's range; qtype names it); the zero
// point input is optional.
const QUANTIZE_OPS: Record<string, OpDef> = {
  quantize_linear: {
    pattern: OpPattern.Broadcast,
    compute: ([x, s, z], a) => qz.quantize(x, s, z, (a.axis as number | undefined) ?? 0, { qmin: num(a, 'qmin'), qmax: num(a, 'qmax') }),
  },
  requantize: {
    pattern: OpPattern.Broadcast,
    compute: ([x, m, z], a) => qz.requantize(x, m, z, (a.axis as number | undefined) ?? 0, { qmin: num(a, 'qmin'), qmax: num(a, 'qmax') }),
  },
  dequantize_linear: { pattern: OpPattern.Broadcast, compute: ([x, s, z], a) => qz.dequantize(x, s, z, (a.axis as number | undefined) ?? 0) },
  // DynamicQuantizeLinear's uint8 scale (inputs: the scalars min(x), max(x)) or zero point
  // (inputs: min(x) and that scale), attr which.
  dynamic_qparams: { pattern: OpPattern.ElemWise, compute: ([lo, hi], a) => qz.dynamicQParams(lo, hi, a.which as 'scale' | 'zero_point') },
};
Object.assign(OPS, QUANTIZE_OPS);

// Transformer and loss computes (topi/extra.ts): NaN/inf tests, Attention's softmax (fully
// masked rows 0), RMSNormalization, RotaryEmbedding, the per-element NLL loss and its weight.
const EXTRA_OPS: Record<string, OpDef> = {
  is_nan: { pattern: OpPattern.ElemWise, compute: ([x]) => ex.isNan(x) },
  is_inf: { pattern: OpPattern.ElemWise, compute: ([x], a) => ex.isInf(x, a.positive as boolean, a.negative as boolean) },
  safe_softmax: { pattern: OpPattern.Opaque, compute: ([x]) => ex.safeSoftmax(x) },
  // Softmax of float16 / bfloat16 values with the type's intermediate roundings (topi/narrow-softmax.ts); attrs axis, type, safe, log.
  narrow_softmax: { pattern: OpPattern.Opaque, compute: ([x], a) => narrowSoftmax(x, num(a, 'axis'), a.type as NarrowFloat, { safe: a.safe === true, log: a.log === true }) },
  rms_norm: { pattern: OpPattern.OutEWiseFusable, compute: ([x, s], a) => ex.rmsNorm(x, s, num(a, 'axis'), num(a, 'epsilon')) },
  rotary_embedding: {
    pattern: OpPattern.Injective,
    compute: ([x, c, s, p], a) => ex.rotaryEmbedding(x, c, s, p, { interleaved: a.interleaved as boolean, rotaryDim: num(a, 'rotaryDim'), numHeads: num(a, 'numHeads') }),
  },
  // Inputs: scores [N, C, d...], int target [N, d...], optional weight [C]; attr ignoreIndex (optional).
  nll_loss: { pattern: OpPattern.Injective, compute: ([x, t, w], a) => ex.nllLoss(x, t, w, a.ignoreIndex as number | undefined) },
  // Inputs: int target, optional weight [C]; attrs classes (C), ignoreIndex (optional).
  nll_weight: { pattern: OpPattern.Injective, compute: ([t, w], a) => ex.nllWeight(t, w, num(a, 'classes'), a.ignoreIndex as number | undefined) },
  swish: { pattern: OpPattern.ElemWise, compute: ([x], a) => ex.swish(x, num(a, 'alpha')) },
  shrink: { pattern: OpPattern.ElemWise, compute: ([x], a) => ex.shrink(x, num(a, 'lambd'), num(a, 'bias')) },
  // attrs left, bits (8/16/32/64), signed: the ONNX type the int32 operands stand for.
  bit_shift: {
    pattern: OpPattern.Broadcast,
    compute: ([x, y], a) => ex.bitShift(x, y, a.left as boolean, { bits: num(a, 'bits') as ex.IntType['bits'], signed: a.signed as boolean }),
  },
  ...Object.fromEntries((['and', 'or', 'xor'] as const).map((k): [string, OpDef] => [`bitwise_${k}`, {
    pattern: OpPattern.Broadcast,
    compute: ([x, y], a) => ex.bitwise(k, x, y, { bits: num(a, 'bits') as ex.IntType['bits'], signed: a.signed as boolean }),
  }])),
  bitwise_not: { pattern: OpPattern.ElemWise, compute: ([x], a) => ex.bitwiseNot(x, { bits: num(a, 'bits') as ex.IntType['bits'], signed: a.signed as boolean }) },
  cumprod: { pattern: OpPattern.Opaque, compute: ([x], a) => ex.cumprod(x, num(a, 'axis'), a.exclusive as boolean, a.reverse as boolean) },
  lp_normalize: { pattern: OpPattern.OutEWiseFusable, compute: ([x], a) => ex.lpNormalize(x, num(a, 'axis'), num(a, 'p') as 1 | 2) },
};
Object.assign(OPS, EXTRA_OPS);

// ONNX's math and activations (topi/elemwise.ts): sqrt, exp, log, erf, floor, ceil, round,
// sin, cos, tan, atan, negative, abs, sign, reciprocal, softsign, softplus, mish as ElemWise;
// the parameterised ones (attrs alpha, gamma, approximate, exponent); prelu, power and fmod
// broadcast their two inputs (fmod's attr mode: 'trunc' | 'floor').
const MATH_OPS: Record<string, OpDef> = {
  ...Object.fromEntries(ew.UNARY_KINDS.map((k): [string, OpDef] => [k, { pattern: OpPattern.ElemWise, compute: ([x]) => ew.unaryOp(k, x) }])),
  elu: { pattern: OpPattern.ElemWise, compute: ([x], a) => ew.elu(x, num(a, 'alpha')) },
  selu: { pattern: OpPattern.ElemWise, compute: ([x], a) => ew.selu(x, num(a, 'alpha'), num(a, 'gamma')) },
  celu: { pattern: OpPattern.ElemWise, compute: ([x], a) => ew.celu(x, num(a, 'alpha')) },
  thresholded_relu: { pattern: OpPattern.ElemWise, compute: ([x], a) => ew.thresholdedRelu(x, num(a, 'alpha')) },
  gelu: { pattern: OpPattern.ElemWise, compute: ([x], a) => ew.gelu(x, (a.approximate as 'none' | 'tanh' | undefined) ?? 'none') },
  power_scalar: { pattern: OpPattern.ElemWise, compute: ([x], a) => ew.powerScalar(x, num(a, 'exponent')) },
  prelu: { pattern: OpPattern.Broadcast, compute: ([x, s]) => ew.prelu(x, s) },
  power: { pattern: OpPattern.Broadcast, compute: ([x, y]) => ew.power(x, y) },
  fmod: { pattern: OpPattern.Broadcast, compute: ([x, y], a) => ew.floatMod(x, y, (a.mode as 'trunc' | 'floor' | undefined) ?? 'trunc') },
};
Object.assign(OPS, MATH_OPS);

export function opDef(op: string): OpDef {
  const def = OPS[op];
  if (!def) throw new Error(`unknown operator '${op}' (known: ${Object.keys(OPS).join(', ')})`);
  return def;
}
