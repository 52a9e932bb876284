// convertLayout(graph, 'NHWC'): run an NCHW network's convs and pools in NHWC (or the
// reverse), as TVM's ConvertLayout does, keeping the model's boundary layout.
//
// Every 4-d value is tracked in the layout it is available in. Layout-carrying ops
// (conv2d, pools) are rebuilt in the target layout, with constant weights permuted
// (OIHW -> HWIO, depthwise [C, m, kh, kw] -> HWOI); element-wise ops, batch norm, pad and
// concatenate follow their inputs' layout (constants are permuted, axes remapped);
// anything else, and the graph outputs, get the original layout back through a
// `transpose`, inserted once per value and only where needed.

import { permute } from '../../ir/tensor';
import type { Layout } from '../../topi/nn';
import { REDUCE_KINDS } from '../../topi/reduce';
import { isOpNode, type Graph, type OpNode } from '../graph';
import { constantOf, rebuild, type Rebuilder } from '../rewrite';
import { BINARY_OPS } from './canonicalize-bias';

const LAYOUT_OPS = new Set(['conv2d', 'max_pool2d', 'avg_pool2d', 'global_avg_pool2d', 'global_max_pool2d', 'adaptive_avg_pool2d']);
const UNARY = new Set(['relu', 'clip', 'leaky_relu', 'sigmoid', 'tanh', 'hard_sigmoid', 'hard_swish']);
/** Ops with an `axis` attribute (default -1), and ops with an `axes` list (topi/reduce.ts, topi/normalization.ts). */
const AXIS_OPS = new Set(['softmax', 'log_softmax', 'hardmax', 'lrn', 'instance_norm']);
const AXES_OPS = new Set(['mean', 'mean_variance_normalization', ...REDUCE_KINDS.filter((k) => k !== 'mean').map((k) => `reduce_${k}`)]);

const TO_NHWC = [0, 2, 3, 1], TO_NCHW = [0, 3, 1, 2];

export function convertLayout(g: Graph, target: Layout): Graph {
  const source: Layout = target === 'NHWC' ? 'NCHW' : 'NHWC';
  const forward = target === 'NHWC' ? TO_NHWC : TO_NCHW; // source -> target
  const backward = target === 'NHWC' ? TO_NCHW : TO_NHWC; // target -> source
  const layoutOf = (n: OpNode): Layout => (n.attrs.layout as Layout | undefined) ?? 'NHWC';
  if (!g.nodes.some((n) => isOpNode(n) && LAYOUT_OPS.has(n.op) && layoutOf(n) === source)) return g;

  /** Old 4-d op nodes whose new version is in the target layout. */
  const converted = new Set<number>();
  const cache = new Map<string, number>();
  const is4d = (id: number): boolean => g.node(id).shape.length === 4;
  const newAxis = (axis: number): number => forward.indexOf(axis < 0 ? axis + 4 : axis);

  /** Old node `id` in the new graph, in the target layout (`want`) or the source one; constants are permuted, values transposed. */
  const get = (b: Rebuilder, id: number, want: boolean): number => {
    if (!is4d(id) || converted.has(id) === want) return b.map(id);
    const key = `${id}:${want}`;
    let out = cache.get(key);
    if (out === undefined) {
      const c = constantOf(g, id);
      const perm = want ? forward : backward;
      out = c
        ? b.out.constant(c.name, perm.map((a) => c.shape[a]), permute(c.data, c.shape, perm))
        : b.out.op('transpose', [b.map(id)], { axes: perm }, `${g.node(id).name}_${want ? target : source}`);
      cache.set(key, out);
    }
    return out;
  };

  /** The op rebuilt in the target layout, or undefined when it must run in the source layout. */
  const convert = (n: OpNode, b: Rebuilder): number | undefined => {
    if (LAYOUT_OPS.has(n.op) && layoutOf(n) === source) {
      const inputs = [get(b, n.inputs[0], true)];
      if (n.op === 'conv2d') {
        const data = g.node(n.inputs[0]).shape;
        const groups = (n.attrs.groups as number | undefined) ?? 1;
        const depthwise = groups > 1 && groups === data[source === 'NHWC' ? 3 : 1];
        // OIHW <-> HWIO; depthwise [C, m, kh, kw] <-> HWOI [kh, kw, C, m].
        const perm = depthwise ? [2, 3, 0, 1] : target === 'NHWC' ? [2, 3, 1, 0] : [3, 2, 0, 1];
        const w = constantOf(g, n.inputs[1]);
        inputs.push(w
          ? b.out.constant(w.name, perm.map((p) => w.shape[p]), permute(w.data, w.shape, perm))
          : b.out.op('transpose', [b.map(n.inputs[1])], { axes: perm }));
      }
      return b.out.op(n.op, inputs, { ...n.attrs, layout: target }, n.name);
    }
    // A batch norm always moves to the target layout, even on a graph input (ResNet's
    // bn_data): its input is transposed once at the boundary, and the op stays one that
    // both layouts express (ONNX's BatchNormalization knows only axis 1).
    if (n.op === 'batch_norm' && n.shape.length === 4) {
      const inputs = n.inputs.map((i, k) => (k === 0 ? get(b, i, true) : b.map(i)));
      return b.out.op(n.op, inputs, { ...n.attrs, axis: newAxis(n.attrs.axis as number) }, n.name);
    }
    if (n.shape.length !== 4 || !n.inputs.some((i) => converted.has(i))) return undefined;
    const x = n.inputs[0];
    if (UNARY.has(n.op)) return b.out.op(n.op, [get(b, x, true)], n.attrs, n.name);
    // Ops over an axis or axes (softmax, LRN, instance norm over channels; a reduction with
    // keepdims) follow their input, the axes remapped to where the dims moved.
    if (AXIS_OPS.has(n.op) && is4d(x)) {
      return b.out.op(n.op, [get(b, x, true), ...n.inputs.slice(1).map((i) => b.map(i))], { ...n.attrs, axis: newAxis((n.attrs.axis as number | undefined) ?? -1) }, n.name);
    }
    if (AXES_OPS.has(n.op) && is4d(x)) return b.out.op(n.op, [get(b, x, true)], { ...n.attrs, axes: (n.attrs.axes as number[]).map(newAxis) }, n.name);
    if (n.op === 'pad') {
      const permute = (w: unknown): number[] => forward.map((a) => (w as number[])[a]);
      return b.out.op(n.op, [get(b, x, true)], { ...n.attrs, before: permute(n.attrs.before), after: permute(n.attrs.after) }, n.name);
    }
    if (n.op === 'concatenate' && n.inputs.every(is4d)) {
      return b.out.op(n.op, n.inputs.map((i) => get(b, i, true)), { ...n.attrs, axis: newAxis(n.attrs.axis as number) }, n.name);
    }
    if (BINARY_OPS.has(n.op)) {
      // Lower-rank constants broadcast as if with leading 1s: make them 4-d, then permute.
      const inputs: number[] = [];
      for (const i of n.inputs) {
        const c = constantOf(g, i);
        if (is4d(i)) inputs.push(get(b, i, true));
        else if (!c) return undefined;
        else {
          const full = [...new Array<number>(4 - c.shape.length).fill(1), ...c.shape];
          inputs.push(b.out.constant(c.name, forward.map((a) => full[a]), permute(c.data, full, forward)));
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
      // [N, C, 1, 1] and [N, 1, 1, C] flatten to the same [N, C].
      const s = g.node(n.inputs[0]).shape;
      if ((source === 'NCHW' ? [s[2], s[3]] : [s[1], s[2]]).every((d) => d === 1)) return b.out.op(n.op, [b.map(n.inputs[0])], n.attrs, n.name);
    }
    // Anything else reads its inputs in the source layout.
    return b.out.op(n.op, n.inputs.map((i) => get(b, i, false)), n.attrs, n.name);
  }, (b, o) => get(b, o, false));
}
