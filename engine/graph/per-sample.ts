// Running a batch one sample at a time. A network whose every operator treats axis 0 as
// independent samples (convs, pools, dense layers, norms and softmaxes over other axes,
// reshapes that keep the batch first, ...) computes the same values when its batch-1 graph
// runs once per sample. On a CPU that often pays: every intermediate is one sample's, so a
// layer's output is still in cache when the next layer reads it. MobileNet-V2 at batch 16
// moves 16 x 27 MB of activations through memory as one batch, and one sample's 27 MB are
// closer to the 32 MB L3. It costs when the weights dominate: ResNet-50's 102 MB of weights are
// then streamed once per sample instead of once per batch. `samplePlan` splits where one
// sample's activations outweigh the weights (the traffic the split saves against what it adds),
// and the records of the batch-1 tasks then apply to any batch.
//
// Which operators are separable is decided from each operator's attributes, never from the
// values of the constants, so a tune of zero weights and a compile of the real ones always
// split alike. An operator this file has no rule for keeps the whole batch.

import { Graph, isOpNode, type Node, type OpNode } from './graph';
import { partition, type FusedGroup } from './fuse';
import { OPS, OpPattern, type Attrs } from './ops';
import { numElements } from '../ir/tensor';
import { viewShape, type OperandView } from '../topi/nn';

/** The graph one sample runs, and how many samples the model runs it for (1: the whole batch at once); `groups`: its partition, where samplePlan made it. */
export interface SamplePlan { graph: Graph; samples: number; groups?: readonly FusedGroup[] }

/** The model's shape of a tensor of a graph that runs once per sample of `samples` (axis 0 the sample). */
export const batchShape = (shape: readonly number[], samples: number): number[] =>
  samples === 1 ? [...shape] : [shape[0] * samples, ...shape.slice(1)];

/** Per-sample tensors (axis 0 the sample) and tensors every sample shares (weights, what is computed from them alone). */
type Role = 'sample' | 'shared';

interface Use {
  node: OpNode;
  /** Role and shape of each input. */
  roles: readonly Role[];
  shapes: readonly (readonly number[])[];
  /** The batch. */
  n: number;
}

/** A rule: the batch-1 node's attrs (the same object when nothing changes), or undefined where the node mixes samples. */
type Rule = (u: Use) => Attrs | undefined;

const axisOf = (a: unknown, rank: number): number => { const x = a as number; return x < 0 ? x + rank : x; };
const allSample = (u: Use): boolean => u.roles.every((r) => r === 'sample');
/** Input 0 per sample, the others shared (a conv's or a dense layer's weights, a norm's scale). */
const dataFirst = (u: Use): boolean => u.roles[0] === 'sample' && u.roles.slice(1).every((r) => r === 'shared');
const layoutBatchFirst = (u: Use): boolean => u.node.attrs.layout === undefined || String(u.node.attrs.layout).startsWith('N');
/** One axis attr (`key`, `dflt` where absent) that is not the batch axis, of an input of rank `rank`. */
const axisNotBatch = (u: Use, key: string, dflt: number, rank = u.shapes[0].length): boolean =>
  axisOf(u.node.attrs[key] ?? dflt, rank) !== 0;
const axesNotBatch = (u: Use, key: string): boolean => {
  const axes = u.node.attrs[key] as number[] | undefined;
  return axes !== undefined && axes.every((a) => axisOf(a, u.shapes[0].length) !== 0);
};
const keep = (ok: (u: Use) => boolean): Rule => (u) => (ok(u) ? u.node.attrs : undefined);
/** attrs with `key`'s first entry replaced by 1 (a shape that names the batch). */
const batchOne = (attrs: Attrs, key: string): Attrs => ({ ...attrs, [key]: [1, ...(attrs[key] as number[]).slice(1)] });

/**
 * Elementwise and broadcasting operators: each per-sample input has the output's rank (its
 * axis 0 is the output's), and each shared input of that rank broadcasts along axis 0.
 */
const elementwise: Rule = (u) => {
  const rank = u.node.shape.length;
  return u.shapes.every((s, i) => (u.roles[i] === 'sample' ? s.length === rank : s.length < rank || s[0] === 1)) ? u.node.attrs : undefined;
};

/** Broadcasting operators whose attrs name an axis or a shape: not covered by the elementwise rule. */
const AXIS_BROADCASTS = new Set(['broadcast_to', 'quantize_linear', 'requantize', 'dequantize_linear', 'dynamic_qparams']);

/** A batch_matmul operand's view, for one sample: the view reads the sample's own rows. */
function viewOfOne(view: Attrs[string], n: number): Attrs[string] | undefined | false {
  if (view === undefined) return undefined;
  const v = view as { begin?: number[]; box?: number[]; shape: number[]; perm: number[] };
  if ((v.begin?.[0] ?? 0) !== 0 || (v.box?.[0] ?? n) !== n || v.shape[0] !== n || v.perm[0] !== 0) return false;
  return { ...v, ...(v.box ? { box: [1, ...v.box.slice(1)] } : {}), shape: [1, ...v.shape.slice(1)] };
}

const RULES: Record<string, Rule> = {
  ...Object.fromEntries([
    'conv2d', 'conv2d_winograd_nhwc', 'conv3d', 'conv2d_transpose', 'conv3d_transpose',
    'max_pool2d', 'avg_pool2d', 'lp_pool2d', 'max_pool3d', 'avg_pool3d', 'lp_pool3d',
    'global_avg_pool2d', 'global_max_pool2d', 'global_avg_pool3d', 'global_max_pool3d', 'adaptive_avg_pool2d',
    'group_norm', 'depth_to_space', 'space_to_depth',
  ].map((op) => [op, keep((u) => dataFirst(u) && layoutBatchFirst(u))])),
  subpixel_gather: keep((u) => allSample(u) && layoutBatchFirst(u)),
  dense: keep(dataFirst),
  batch_norm: keep((u) => dataFirst(u) && axisNotBatch(u, 'axis', 1)),
  instance_norm: keep((u) => dataFirst(u) && axisNotBatch(u, 'axis', 1)),
  lrn: keep((u) => dataFirst(u) && axisNotBatch(u, 'axis', 1)),
  ...Object.fromEntries(['softmax', 'log_softmax', 'hardmax'].map((op) => [op, keep((u) => dataFirst(u) && axisNotBatch(u, 'axis', -1))])),
  ...Object.fromEntries(['layer_norm', 'layer_norm_stat', 'rms_norm', 'lp_normalize', 'narrow_softmax', 'cumsum', 'cumprod', 'argmax', 'argmin'].map((op) => [
    op, keep((u) => dataFirst(u) && u.node.attrs.axis !== undefined && axisNotBatch(u, 'axis', 0)),
  ])),
  ...Object.fromEntries(['mean', 'mean_variance_normalization', ...Object.keys(OPS).filter((op) => op.startsWith('reduce_'))].map((op) => [
    op, keep((u) => dataFirst(u) && axesNotBatch(u, 'axes')),
  ])),
  batch_flatten: keep(dataFirst),
  transpose: keep((u) => dataFirst(u) && (u.node.attrs.axes as number[])[0] === 0),
  concatenate: keep((u) => allSample(u) && axisNotBatch(u, 'axis', 0)),
  tile: keep((u) => dataFirst(u) && (u.node.attrs.reps as number[])[0] === 1),
  trilu: keep((u) => dataFirst(u) && u.shapes[0].length >= 3),
  ...Object.fromEntries(['pad', 'pad_mode'].map((op) => [op, keep((u) => dataFirst(u) && (u.node.attrs.before as number[])[0] === 0 && (u.node.attrs.after as number[])[0] === 0)])),
  // The batch stays axis 0 and its own extent: one sample's rows are one contiguous block before and after.
  reshape: (u) => (dataFirst(u) && u.shapes[0][0] === u.n && (u.node.attrs.newShape as number[])[0] === u.n ? batchOne(u.node.attrs, 'newShape') : undefined),
  strided_slice: (u) => {
    const a = u.node.attrs as { begin: number[]; step: number[]; shape: number[] };
    return dataFirst(u) && a.begin[0] === 0 && a.step[0] === 1 && a.shape[0] === u.n ? batchOne(u.node.attrs, 'shape') : undefined;
  },
  // An embedding lookup (shared table, per-sample ids, axis 0) or a gather from each sample along another axis.
  take: (u) => {
    const axis = axisOf(u.node.attrs.axis ?? 0, u.shapes[0].length);
    const lookup = u.roles[0] === 'shared' && u.roles[1] === 'sample' && axis === 0;
    return lookup || (dataFirst(u) && axis !== 0) ? u.node.attrs : undefined;
  },
  // Batch axes broadcast (nn.broadcastBatch): a per-sample operand of the output's rank and
  // at least 3 axes (axis 0 a batch axis, not a row), a shared one without axis 0 or of extent 1.
  batch_matmul: (u) => {
    const rank = u.node.shape.length;
    if (rank < 3) return undefined;
    const attrs = { ...u.node.attrs };
    for (const [i, key] of [[0, 'viewA'], [1, 'viewB']] as const) {
      const view = u.node.attrs[key] as OperandView | undefined;
      if (u.roles[i] === 'shared') {
        if (view !== undefined || (u.shapes[i].length >= rank && u.shapes[i][0] !== 1)) return undefined;
        continue;
      }
      const one = viewOfOne(view, u.n);
      if (one === false || viewShape(u.shapes[i], view).length !== rank) return undefined;
      if (one !== undefined) attrs[key] = one;
    }
    return attrs;
  },
};

function ruleOf(op: string): Rule | undefined {
  const def = OPS[op];
  if (RULES[op]) return RULES[op];
  if (def && (def.pattern === OpPattern.ElemWise || def.pattern === OpPattern.Broadcast) && !AXIS_BROADCASTS.has(op)) return elementwise;
  return undefined;
}

/**
 * The graph of one sample of `g` (axis 0 of every input is the batch, of extent N > 1), node
 * for node (the same ids, names and outputs), or undefined where some node mixes samples or
 * the model's outputs are not all per sample.
 */
export function oneSampleGraph(g: Graph): SamplePlan | undefined {
  const inputs = g.nodes.filter((nd) => nd.op === 'input');
  const n = inputs[0]?.shape[0];
  if (n === undefined || n < 2 || inputs.some((nd) => nd.shape.length === 0 || nd.shape[0] !== n)) return undefined;
  const roles = new Map<number, Role>();
  const attrsOf = new Map<number, Attrs>();
  for (const node of g.nodes) {
    if (!isOpNode(node)) { roles.set(node.id, node.op === 'input' ? 'sample' : 'shared'); continue; }
    const ins = node.inputs.map((id) => roles.get(id)!);
    if (!ins.includes('sample')) { roles.set(node.id, 'shared'); continue; }
    const rule = ruleOf(node.op);
    const attrs = rule?.({ node, roles: ins, shapes: node.inputs.map((id) => g.node(id).shape), n });
    if (!attrs || node.shape[0] !== n) return undefined;
    roles.set(node.id, 'sample');
    attrsOf.set(node.id, attrs);
  }
  if (g.outputs.some((id) => roles.get(id) !== 'sample')) return undefined;
  const one = new Graph();
  const expected = (nd: Node): readonly number[] => (roles.get(nd.id) === 'sample' ? [1, ...nd.shape.slice(1)] : nd.shape);
  try {
    for (const node of g.nodes) {
      if (isOpNode(node)) one.op(node.op, node.inputs, attrsOf.get(node.id) ?? node.attrs, node.name);
      else if (node.op === 'constant') one.constant(node.name, node.shape, node.data, node.dtype);
      else one.input(node.name, expected(node), node.dtype);
      const made = one.node(node.id), want = expected(node);
      if (made.shape.length !== want.length || made.shape.some((d, i) => d !== want[i])) return undefined;
    }
  } catch {
    return undefined; // an attribute this file's rules did not adjust: keep the whole batch
  }
  one.outputs = [...g.outputs];
  return { graph: one, samples: n };
}

/**
 * The bytes a run of `g`, partitioned into `groups`, writes as activations (every group's
 * output: what fused operators keep in registers does not count) and reads as weights (the
 * constants the groups read): what running per sample saves, per sample, and what it streams
 * again.
 */
export function sampleTraffic(g: Graph, groups: readonly FusedGroup[]): { activations: number; weights: number } {
  let activations = 0;
  const constants = new Set<number>();
  for (const group of groups) {
    activations += numElements(g.node(group.output).shape) * 4;
    for (const id of group.inputs) if (g.node(id).op === 'constant') constants.add(id);
  }
  const weights = [...constants].reduce((sum, id) => sum + numElements(g.node(id).shape) * 4, 0);
  return { activations, weights };
}

/**
 * How a CPU model runs the batch of `g` (an optimised graph): per sample where that is exact
 * and one sample's activations outweigh the network's weights, else the whole batch at once.
 */
export function samplePlan(g: Graph): SamplePlan {
  const one = oneSampleGraph(g);
  if (!one) return { graph: g, samples: 1 };
  const groups = partition(one.graph);
  const { activations, weights } = sampleTraffic(one.graph, groups);
  return activations > weights ? { ...one, groups } : { graph: g, samples: 1 };
}

/**
 * The threads each kernel of a model runs on when the model runs at `threads`: a model of
 * `samples` samples (samplePlan) with at least as many samples as threads runs whole samples
 * on each thread, its kernels on one (compile/model.ts, tt_run_batch); otherwise every kernel
 * runs on all of them. Records are timed, and so ranked, at this count.
 */
export const kernelThreads = (samples: number, threads: number): number => (samples > 1 && samples >= threads ? 1 : threads);
