// SimplifyInference: an inference batch-norm is an affine map per channel,
//   y = x * scale + shift,  scale = gamma / sqrt(var + eps),  shift = beta - mean * scale,
// so each `batch_norm` node with constant statistics becomes a `multiply` by a constant
// scale and an `add` of a constant shift, both shaped to broadcast over the normalised
// axis ([1, 1, 1, C] for NHWC, [1, C, 1, 1] for NCHW). Later passes fold the scale into
// the preceding conv and fuse the shift as its bias.

import type { Graph } from '../graph';
import { constantOf, rebuild } from '../rewrite';

/** The shape of a per-axis constant that broadcasts against a tensor of `rank` dims. */
export function axisShape(rank: number, axis: number, size: number): number[] {
  const shape = new Array<number>(rank).fill(1);
  shape[axis] = size;
  return shape;
}

export function simplifyInference(g: Graph): Graph {
  return rebuild(g, (n, b) => {
    if (n.op !== 'batch_norm') return undefined;
    const [x, ...stats] = n.inputs;
    const consts = stats.map((id) => constantOf(g, id));
    if (consts.some((c) => c === undefined)) return undefined; // statistics computed at run time: keep the node
    const [gamma, beta, mean, variance] = consts.map((c) => c!.data);
    const rank = g.node(x).shape.length;
    const rawAxis = (n.attrs.axis as number | undefined) ?? 1;
    const axis = rawAxis < 0 ? rawAxis + rank : rawAxis;
    const eps = (n.attrs.epsilon as number | undefined) ?? 1e-5;
    const c = gamma.length;
    const scale = new Float32Array(c), shift = new Float32Array(c);
    for (let i = 0; i < c; i++) {
      const s = gamma[i] / Math.sqrt(variance[i] + eps);
      scale[i] = s;
      shift[i] = beta[i] - mean[i] * s;
    }
    const shape = axisShape(rank, axis, c);
    const out = b.out;
    const scaled = out.op('multiply', [b.map(x), out.constant(`${n.name}_scale`, shape, scale)], {}, `${n.name}_mul`);
    return out.op('add', [scaled, out.constant(`${n.name}_shift`, shape, shift)], {}, `${n.name}_add`);
  });
}
