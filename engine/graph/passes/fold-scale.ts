// Backward scale folding (TVM's BackwardFoldScaleAxis, for the case networks need):
//
//   conv2d(x, W) [+ b1 + b2 ...] * s   ==>   conv2d(x, W * s) [+ b1*s + b2*s ...]
//
// where `s` and the `b`s are per-output-channel constants and the conv (and each add on
// the way) has no other consumer. This is how a batch-norm's scale disappears into the
// preceding conv's weights, leaving conv + bias(shift). dense works the same way (its
// output channel is the last axis).

import { isOpNode, type Graph, type OpNode } from '../graph';
import { consumerLists, floatConstantOf, opNodeOf, rebuild, sameShape, type Rebuilder } from '../rewrite';
import { axisShape } from './simplify-inference';

/** Where the output channels of a weight-carrying op live. */
interface ChannelInfo {
  /** Output axis holding channels. */
  readonly axis: number;
  readonly channels: number;
  /** Output channel of weight element `i` is floor(i / stride) % channels. */
  readonly stride: number;
}

function channelInfo(g: Graph, n: OpNode): ChannelInfo | undefined {
  if (n.op === 'dense') {
    const [units, k] = g.node(n.inputs[1]).shape;
    return { axis: n.shape.length - 1, channels: units, stride: k };
  }
  if (n.op !== 'conv2d') return undefined;
  const layout = (n.attrs.layout as string | undefined) ?? 'NHWC';
  const groups = (n.attrs.groups as number | undefined) ?? 1;
  const data = g.node(n.inputs[0]).shape, kernel = g.node(n.inputs[1]).shape;
  const nhwc = layout === 'NHWC';
  const depthwise = groups > 1 && groups === data[nhwc ? 3 : 1];
  const axis = nhwc ? 3 : 1;
  const channels = n.shape[axis];
  if (nhwc) return { axis, channels, stride: 1 }; // HWIO: O last; depthwise HWOI: (C, multiplier) flattened last
  // OIHW: O first; depthwise [C, multiplier, kh, kw]: (C, multiplier) flattened first.
  return { axis, channels, stride: depthwise ? kernel[2] * kernel[3] : kernel[1] * kernel[2] * kernel[3] };
}

/** The per-channel values of a constant that broadcasts only along `axis` of a `rank`-d result, or undefined. */
function perChannel(g: Graph, id: number, rank: number, axis: number, channels: number): Float32Array | undefined {
  const c = floatConstantOf(g, id);
  if (!c || c.shape.length !== rank) return undefined;
  if (c.shape.some((d, i) => (i === axis ? d !== channels && d !== 1 : d !== 1))) return undefined;
  return c.data.length === channels ? c.data : new Float32Array(channels).fill(c.data[0]);
}

interface Fold {
  readonly anchor: OpNode;
  readonly info: ChannelInfo;
  /** The adds between the anchor and the multiply, in order, with their per-channel constants. */
  readonly adds: { node: OpNode; other: number; constant: number; bias: Float32Array }[];
  readonly multiply: OpNode;
  readonly scale: Float32Array;
}

/** Find every multiply that can be folded into the weights of the op feeding it. */
function findFolds(g: Graph): Fold[] {
  const consumers = consumerLists(g);
  const outputs = new Set(g.outputs);
  const private1 = (id: number): boolean => consumers[id].length === 1 && !outputs.has(id);
  const folds: Fold[] = [];
  for (const m of g.nodes) {
    if (!isOpNode(m) || m.op !== 'multiply') continue;
    const rank = m.shape.length;
    for (const side of [0, 1]) {
      const kId = m.inputs[1 - side];
      let cur = m.inputs[side];
      if (!floatConstantOf(g, kId) || !sameShape(g.node(cur).shape, m.shape)) continue;
      const chain: OpNode[] = [];
      let node = opNodeOf(g, cur);
      while (node && node.op === 'add' && private1(cur)) {
        chain.unshift(node);
        const other = node.inputs.findIndex((i) => floatConstantOf(g, i) !== undefined);
        if (other < 0) { node = undefined; break; }
        cur = node.inputs[1 - other];
        node = opNodeOf(g, cur);
      }
      const info = node && channelInfo(g, node);
      if (!node || !info || !private1(cur) || !sameShape(node.shape, m.shape) || !floatConstantOf(g, node.inputs[1])) continue;
      const scale = perChannel(g, kId, rank, info.axis, info.channels);
      if (!scale) continue;
      const adds = chain.map((a) => {
        const k = a.inputs.findIndex((i) => floatConstantOf(g, i) !== undefined);
        const bias = sameShape(a.shape, m.shape) ? perChannel(g, a.inputs[k], rank, info.axis, info.channels) : undefined;
        return bias && { node: a, other: a.inputs[1 - k], constant: a.inputs[k], bias };
      });
      if (adds.some((a) => a === undefined)) continue;
      folds.push({ anchor: node, info, adds: adds as Fold['adds'], multiply: m, scale });
      break;
    }
  }
  return folds;
}

function scaleWeights(w: Float32Array, info: ChannelInfo, scale: Float32Array): Float32Array {
  const out = new Float32Array(w.length);
  for (let i = 0; i < w.length; i++) out[i] = w[i] * scale[Math.floor(i / info.stride) % info.channels];
  return out;
}

/** Fold per-channel multiplies into conv2d / dense weights, until none is left to fold. */
export function foldScaleIntoWeights(g: Graph): Graph {
  for (;;) {
    const folds = findFolds(g);
    if (folds.length === 0) return g;
    const byNode = new Map<number, (b: Rebuilder) => number>();
    for (const f of folds) {
      const { anchor, info, scale } = f;
      byNode.set(anchor.id, (b) => {
        const w = floatConstantOf(g, anchor.inputs[1])!;
        const weight = b.out.constant(w.name, w.shape, scaleWeights(w.data, info, scale));
        return b.out.op(anchor.op, [b.map(anchor.inputs[0]), weight], anchor.attrs, anchor.name);
      });
      for (const { node, other, constant, bias } of f.adds) {
        byNode.set(node.id, (b) => {
          const scaled = bias.map((v, c) => v * scale[c]);
          const k = b.out.constant(floatConstantOf(g, constant)!.name, axisShape(node.shape.length, info.axis, info.channels), scaled);
          return b.out.op('add', [b.map(other), k], {}, node.name);
        });
      }
      const last = f.adds.length ? f.adds[f.adds.length - 1].node.id : anchor.id;
      byNode.set(f.multiply.id, (b) => b.map(last));
    }
    g = rebuild(g, (n, b) => byNode.get(n.id)?.(b));
  }
}
