// convertLayout(graph, 'NHWC'): run an NCHW network's convs and pools in NHWC (or the
// reverse), as TVM's ConvertLayout does, keeping the model's boundary layout.
//
// Every 4-d and 5-d value is tracked in the layout it is available in. Layout-carrying ops
// (conv2d, conv2d_transpose, pools; conv3d, conv3d_transpose, 3-D pools) are rebuilt in the
// target layout, with constant weights permuted (OIHW -> HWIO, depthwise [C, m, kh, kw] ->
// HWOI, OIDHW -> DHWIO, a transposed conv's [Ci, Co, k...] -> [k..., Ci, Co]); element-wise
// ops, batch norm, pad and concatenate follow their inputs' layout (constants are permuted,
// axes remapped); anything else, and the graph outputs, get the original layout back
// through a `transpose`, inserted once per value and only where needed.
//
// 3-D ops follow the 2-D ones: 'NHWC' asks for channels last at every rank, so a 3-D
// network converted to NHWC runs its convs and pools in NDHWC (the channel vector
// innermost, as the 2-D default schedules want it), with its input and output transposed
// once at the boundary, rather than in NCDHW between transposes. A 1-D conv or pool is a
// 2-D one over H = 1 (the importer's reshape to [N, C, 1, L]); the reshapes around it read
// and write NCHW, so it gets a transpose on each side.

import { permute } from '../../ir/tensor';
import type { Layout } from '../../topi/nn';
import { channelsLast } from '../../topi/pool';
import { REDUCE_KINDS } from '../../topi/reduce';
import { isOpNode, type Graph, type OpNode } from '../graph';
import { OPS, OpPattern } from '../ops';
import { constantOf, rebuild, type Rebuilder } from '../rewrite';
import { BINARY_OPS } from './canonicalize-bias';

/** Ops over 3-D images: layout 'NCDHW' or 'NDHWC'; the others 'NCHW' or 'NHWC'. */
const LAYOUT_OPS_3D = new Set(['conv3d', 'conv3d_transpose', 'max_pool3d', 'avg_pool3d', 'lp_pool3d', 'global_avg_pool3d', 'global_max_pool3d']);
const LAYOUT_OPS = new Set(['conv2d', 'conv2d_transpose', 'max_pool2d', 'avg_pool2d', 'lp_pool2d', 'global_avg_pool2d', 'global_max_pool2d', 'adaptive_avg_pool2d', ...LAYOUT_OPS_3D]);
/** Per-axis attributes (a quantization axis, a target shape): not free to follow a layout. */
const AXIS_BOUND = new Set(['broadcast_to', 'quantize_linear', 'requantize', 'dequantize_linear', 'dynamic_qparams']);
/** Elementwise ops (one input, output[i] = f(input[i])): they follow their input's layout. */
const isUnary = (op: string): boolean => !AXIS_BOUND.has(op) && OPS[op]?.pattern === OpPattern.ElemWise;
/** Broadcasting elementwise ops (add, comparisons, where, prelu, pow, ...): they follow it too, constants permuted. */
const isBroadcast = (op: string): boolean => BINARY_OPS.has(op) || (!AXIS_BOUND.has(op) && OPS[op]?.pattern === OpPattern.Broadcast);
/** Ops with an `axis` attribute (default -1), and ops with an `axes` list (topi/reduce.ts, topi/normalization.ts). */
const AXIS_OPS = new Set(['softmax', 'log_softmax', 'narrow_softmax', 'hardmax', 'lrn', 'instance_norm']);
const AXES_OPS = new Set(['mean', 'mean_variance_normalization', ...REDUCE_KINDS.filter((k) => k !== 'mean').map((k) => `reduce_${k}`)]);

/** The permutation that moves channels last ([0, 2, 3, 1] for rank 4), or first. */
const toLast = (rank: number): number[] => [0, ...Array.from({ length: rank - 2 }, (_, i) => i + 2), 1];
const toFirst = (rank: number): number[] => [0, rank - 1, ...Array.from({ length: rank - 2 }, (_, i) => i + 1)];

/** The kernel permutation of a layout op's weight into the target layout (channels last or first). */
function kernelPerm(op: string, rank: number, depthwise: boolean, last: boolean): number[] {
  if (op === 'conv2d') return depthwise ? [2, 3, 0, 1] : last ? [2, 3, 1, 0] : [3, 2, 0, 1];
  if (op === 'conv3d') return last ? [2, 3, 4, 1, 0] : [4, 3, 0, 1, 2];
  // conv2d_transpose, conv3d_transpose: [Ci, Co/g, k...] <-> [k..., Ci, Co/g].
  const spatial = rank - 2;
  return last ? [...Array.from({ length: spatial }, (_, i) => i + 2), 0, 1] : [spatial, spatial + 1, ...Array.from({ length: spatial }, (_, i) => i)];
}

export function convertLayout(g: Graph, target: Layout): Graph {
  const source: Layout = target === 'NHWC' ? 'NCHW' : 'NHWC';
  const last = target === 'NHWC';
  const forward = (rank: number): number[] => (last ? toLast(rank) : toFirst(rank)); // source -> target
  const backward = (rank: number): number[] => (last ? toFirst(rank) : toLast(rank)); // target -> source
  const layoutOf = (n: OpNode): string => (n.attrs.layout as string | undefined) ?? (LAYOUT_OPS_3D.has(n.op) ? 'NDHWC' : 'NHWC');
  const inSource = (n: OpNode): boolean => channelsLast(layoutOf(n)) !== last;
  const targetOf = (n: OpNode): string => (LAYOUT_OPS_3D.has(n.op) ? (last ? 'NDHWC' : 'NCDHW') : target);
  if (!g.nodes.some((n) => isOpNode(n) && LAYOUT_OPS.has(n.op) && inSource(n))) return g;

  /** Old 4-d and 5-d op nodes whose new version is in the target layout. */
  const converted = new Set<number>();
  const cache = new Map<string, number>();
  const rankOf = (id: number): number => g.node(id).shape.length;
  const isImage = (id: number): boolean => rankOf(id) === 4 || rankOf(id) === 5;
  /** An image input of the same rank as `n`'s output (an op broadcasting a 4-d value to 5-d reads it in the source layout). */
  const sameRank = (n: OpNode, id: number): boolean => rankOf(id) === n.shape.length;
  const newAxis = (axis: number, rank: number): number => forward(rank).indexOf(axis < 0 ? axis + rank : axis);

  /** Old node `id` in the new graph, in the target layout (`want`) or the source one; constants are permuted, values transposed. */
  const get = (b: Rebuilder, id: number, want: boolean): number => {
    if (!isImage(id) || converted.has(id) === want) return b.map(id);
    const key = `${id}:${want}`;
    let out = cache.get(key);
    if (out === undefined) {
      const c = constantOf(g, id);
      const perm = want ? forward(rankOf(id)) : backward(rankOf(id));
      out = c
        ? b.out.constant(c.name, perm.map((a) => c.shape[a]), permute(c.data, c.shape, perm))
        : b.out.op('transpose', [b.map(id)], { axes: perm }, `${g.node(id).name}_${want ? target : source}`);
      cache.set(key, out);
    }
    return out;
  };

  /** The op rebuilt in the target layout, or undefined when it must run in the source layout. */
  const convert = (n: OpNode, b: Rebuilder): number | undefined => {
    if (LAYOUT_OPS.has(n.op) && inSource(n)) {
      const inputs = [get(b, n.inputs[0], true)];
      if (n.inputs.length > 1) {
        const data = g.node(n.inputs[0]).shape;
        const groups = (n.attrs.groups as number | undefined) ?? 1;
        const depthwise = n.op === 'conv2d' && groups > 1 && groups === data[last ? 1 : 3];
        const perm = kernelPerm(n.op, data.length, depthwise, last);
        const w = constantOf(g, n.inputs[1]);
        inputs.push(w
          ? b.out.constant(w.name, perm.map((p) => w.shape[p]), permute(w.data, w.shape, perm))
          : b.out.op('transpose', [b.map(n.inputs[1])], { axes: perm }));
      }
      return b.out.op(n.op, inputs, { ...n.attrs, layout: targetOf(n) }, n.name);
    }
    // A batch norm always moves to the target layout, even on a graph input (ResNet's
    // bn_data): its input is transposed once at the boundary, and the op stays one that
    // both layouts express (ONNX's BatchNormalization knows only axis 1).
    const rank = n.shape.length;
    if (n.op === 'batch_norm' && (rank === 4 || rank === 5)) {
      const inputs = n.inputs.map((i, k) => (k === 0 ? get(b, i, true) : b.map(i)));
      return b.out.op(n.op, inputs, { ...n.attrs, axis: newAxis(n.attrs.axis as number, rank) }, n.name);
    }
    if ((rank !== 4 && rank !== 5) || !n.inputs.some((i) => converted.has(i) && sameRank(n, i))) return undefined;
    const x = n.inputs[0];
    if (!sameRank(n, x) && !isBroadcast(n.op)) return undefined;
    if (isUnary(n.op) && n.inputs.length === 1) return b.out.op(n.op, [get(b, x, true)], n.attrs, n.name);
    // Ops over an axis or axes (softmax, LRN, instance norm over channels; a reduction with
    // keepdims) follow their input, the axes remapped to where the dims moved.
    if (AXIS_OPS.has(n.op)) {
      return b.out.op(n.op, [get(b, x, true), ...n.inputs.slice(1).map((i) => b.map(i))], { ...n.attrs, axis: newAxis((n.attrs.axis as number | undefined) ?? -1, rank) }, n.name);
    }
    if (AXES_OPS.has(n.op)) return b.out.op(n.op, [get(b, x, true)], { ...n.attrs, axes: (n.attrs.axes as number[]).map((a) => newAxis(a, rank)) }, n.name);
    if (n.op === 'pad' || n.op === 'pad_mode') {
      const permute = (w: unknown): number[] => forward(rank).map((a) => (w as number[])[a]);
      return b.out.op(n.op, [get(b, x, true)], { ...n.attrs, before: permute(n.attrs.before), after: permute(n.attrs.after) }, n.name);
    }
    // Per-axis lists move with their axes (a Split's slices, Tile, Expand of the same rank).
    const PER_AXIS: Record<string, string[]> = { strided_slice: ['begin', 'step', 'shape'], tile: ['reps'], broadcast_to: ['shape'] };
    if (PER_AXIS[n.op]) {
      const attrs = { ...n.attrs };
      for (const k of PER_AXIS[n.op]) attrs[k] = forward(rank).map((a) => (n.attrs[k] as number[])[a]);
      return b.out.op(n.op, [get(b, x, true)], attrs, n.name);
    }
    // A resize's tables belong to its axes, wherever those move.
    if (n.op === 'resize') {
      return b.out.op(n.op, [get(b, x, true), ...n.inputs.slice(1).map((i) => b.map(i))], { ...n.attrs, axes: (n.attrs.axes as number[]).map((a) => newAxis(a, rank)) }, n.name);
    }
    if (n.op === 'concatenate' && n.inputs.every((i) => sameRank(n, i))) {
      return b.out.op(n.op, n.inputs.map((i) => get(b, i, true)), { ...n.attrs, axis: newAxis(n.attrs.axis as number, rank) }, n.name);
    }
    if (isBroadcast(n.op)) {
      // Lower-rank constants broadcast as if with leading 1s: make them full rank, then permute.
      const inputs: number[] = [];
      for (const i of n.inputs) {
        const c = constantOf(g, i);
        if (sameRank(n, i)) inputs.push(get(b, i, true));
        else if (!c) return undefined;
        else {
          const full = [...new Array<number>(rank - c.shape.length).fill(1), ...c.shape];
          inputs.push(b.out.constant(c.name, forward(rank).map((a) => full[a]), permute(c.data, full, forward(rank))));
        }
      }
      return b.out.op(n.op, inputs, n.attrs, n.name);
    }
    return undefined;
  };

  return rebuild(g, (n, b) => {
    if (!isOpNode(n)) return undefined;
    const id = convert(n, b);
    if (id !== undefined) {
      converted.add(n.id);
      return id;
    }
    if (n.op === 'batch_flatten' && converted.has(n.inputs[0])) {
      // [N, C, 1, 1] and [N, 1, 1, C] flatten to the same [N, C] (and [N, C, 1, 1, 1]).
      const s = g.node(n.inputs[0]).shape;
      if ((last ? s.slice(2) : s.slice(1, -1)).every((d) => d === 1)) return b.out.op(n.op, [b.map(n.inputs[0])], n.attrs, n.name);
    }
    // Anything else reads its inputs in the source layout.
    return b.out.op(n.op, n.inputs.map((i) => get(b, i, false)), n.attrs, n.name);
  }, (b, o) => get(b, o, false));
}
