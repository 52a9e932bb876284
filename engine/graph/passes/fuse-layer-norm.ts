// Layer norm written out (ONNX Runtime's LayerNormFusion), as torch.onnx before opset 17
// and our own writer below 17 emit nn.LayerNorm:
//
//   m = mean(x, axes, keepdims)          axes = [a, rank): the trailing axes from a
//   d = x - m
//   v = mean(d ^ 2 | d * d, axes, keepdims)
//   s = sqrt(v + eps | eps + v)          eps a one-element constant
//   y = d / s | d * reciprocal(s) | reciprocal(s) * d
//   out = y [* gamma | gamma *] [+ beta | beta +]   gamma, beta constants broadcasting to x
//
//   ==>  out = layer_norm(x, gamma | ones, [beta], { axis: a, epsilon: eps })
//
// One layer_norm is one task (its statistics and the normalisation fused), where the
// written-out form is four (mean; subtract; square + mean; the rest). layer_norm computes
// the same two-pass statistics (topi/normalization.ts: the mean, then the mean of the
// squared deviations, then rsqrt(v + eps)), so only the rounding of 1/sqrt changes.
// The statistics' intermediates (m, d, the square, v, v + eps, s, reciprocal(s)) must be
// read only inside the pattern and not be graph outputs: a value read elsewhere would have
// to be computed anyway, so fusing would only duplicate the work. The layer_norm stands for
// the last of y, y * gamma, y * gamma + beta whose predecessors are private: with y (or
// y * gamma) read elsewhere too, the affine step after it stays an op of its own.

import { isOpNode, type Graph, type OpNode } from '../graph';
import { consumerLists, floatConstantOf, rebuild, sameShape } from '../rewrite';

/** The first reduced axis of a keepdims mean over the trailing axes [a, rank) of its input, or undefined. */
function trailingMeanAxis(g: Graph, n: OpNode): number | undefined {
  const rank = g.node(n.inputs[0]).shape.length;
  let axes: number[];
  if (n.op === 'mean') {
    if (n.attrs.keepdims === false) return undefined;
    axes = [...new Set((n.attrs.axes as number[]).map((a) => (a < 0 ? a + rank : a)))].sort((p, q) => p - q);
  } else if (n.op === 'global_avg_pool2d' && n.attrs.layout === 'NCHW' && rank === 4) {
    // ReduceMean over H and W of a rank-4 input imports as this pool (convert-reduce.ts).
    axes = [2, 3];
  } else {
    return undefined;
  }
  if (axes.length === 0 || axes.some((a, i) => a !== rank - axes.length + i)) return undefined;
  return axes[0];
}

/** The value of a one-element float32 constant, or undefined. */
function scalarConstant(g: Graph, id: number): number | undefined {
  const c = floatConstantOf(g, id);
  return c && c.data.length === 1 ? c.data[0] : undefined;
}

/** A float32 constant that broadcasts to `shape` (numpy rules) without widening it. */
function broadcastsTo(g: Graph, id: number, shape: readonly number[]): boolean {
  const c = floatConstantOf(g, id);
  if (!c || c.shape.length > shape.length) return false;
  const off = shape.length - c.shape.length;
  return c.shape.every((d, i) => d === 1 || d === shape[off + i]);
}

interface LayerNormMatch {
  readonly x: number;
  readonly axis: number;
  readonly epsilon: number;
  readonly gamma?: number;
  readonly beta?: number;
  /** The node whose value the layer_norm replaces (y, y * gamma or the add of beta). */
  readonly last: OpNode;
}

/** The other input of binary `n` when one input is `id` (undefined when neither is). */
function otherInput(n: OpNode, id: number): number | undefined {
  if (n.inputs[0] === id) return n.inputs[1];
  if (n.inputs[1] === id) return n.inputs[0];
  return undefined;
}

/** The op nodes reading a value (once per use), or undefined for a graph output (read outside any pattern). */
type Readers = (id: number) => OpNode[] | undefined;

function matchAt(g: Graph, m: OpNode, readers: Readers): LayerNormMatch | undefined {
  const axis = trailingMeanAxis(g, m);
  if (axis === undefined) return undefined;
  const x = m.inputs[0];
  const shape = g.node(x).shape;
  if (g.node(x).dtype !== 'float32') return undefined;
  /** The single reader of `id`, if it is an op of one of `ops` (and `id` is no graph output). */
  const only = (id: number, ...ops: string[]): OpNode | undefined => {
    const r = readers(id);
    return r?.length === 1 && ops.includes(r[0].op) ? r[0] : undefined;
  };

  const d = only(m.id, 'subtract');
  if (!d || d.inputs[0] !== x || d.inputs[1] !== m.id || !sameShape(d.shape, shape)) return undefined;
  // d has exactly two readers, the square and the normalisation (d * d reads d twice: one reader).
  const dUses = readers(d.id);
  const dReaders = dUses && [...new Set(dUses)];
  if (dReaders?.length !== 2) return undefined;
  const isSquare = (n: OpNode): boolean =>
    (n.op === 'power_scalar' && n.attrs.exponent === 2) || (n.op === 'multiply' && n.inputs[0] === d.id && n.inputs[1] === d.id);
  const sq = dReaders.find(isSquare);
  const norm = dReaders.find((n) => n !== sq);
  if (!sq || !norm) return undefined;

  const v = only(sq.id, 'mean', 'global_avg_pool2d');
  if (!v || trailingMeanAxis(g, v) !== axis || !sameShape(v.shape, m.shape)) return undefined;
  const ve = only(v.id, 'add');
  const epsId = ve && otherInput(ve, v.id);
  const epsilon = epsId === undefined ? undefined : scalarConstant(g, epsId);
  if (!ve || epsilon === undefined || !sameShape(ve.shape, v.shape)) return undefined;
  const s = only(ve.id, 'sqrt');
  if (!s) return undefined;

  // y = d / s, or d * reciprocal(s) in either order.
  let y: OpNode | undefined;
  const sNext = only(s.id, 'divide', 'reciprocal');
  if (sNext?.op === 'divide') {
    if (sNext === norm && norm.inputs[0] === d.id && norm.inputs[1] === s.id) y = norm;
  } else if (sNext?.op === 'reciprocal') {
    const mul = only(sNext.id, 'multiply');
    if (mul && mul === norm && otherInput(mul, sNext.id) === d.id) y = mul;
  }
  if (!y || !sameShape(y.shape, shape)) return undefined;

  // The affine part: * gamma, then + beta; either may be absent.
  let last: OpNode = y;
  let gamma: number | undefined, beta: number | undefined;
  const scaled = only(y.id, 'multiply');
  const gammaId = scaled && otherInput(scaled, y.id);
  if (scaled && gammaId !== undefined && gammaId !== y.id && broadcastsTo(g, gammaId, shape) && sameShape(scaled.shape, shape)) {
    gamma = gammaId;
    last = scaled;
  }
  const shifted = only(last.id, 'add');
  const betaId = shifted && otherInput(shifted, last.id);
  if (shifted && betaId !== undefined && betaId !== last.id && broadcastsTo(g, betaId, shape) && sameShape(shifted.shape, shape)) {
    beta = betaId;
    last = shifted;
  }
  return { x, axis, epsilon, gamma, beta, last };
}

/** Rewrite every written-out layer norm whose intermediates nothing else reads into one layer_norm. */
export function fuseLayerNorm(g: Graph): Graph {
  const consumers = consumerLists(g);
  const outputs = new Set(g.outputs);
  const readers: Readers = (id) => (outputs.has(id) ? undefined : consumers[id].map((c) => g.node(c) as OpNode));
  const matches = new Map<number, LayerNormMatch>();
  for (const n of g.nodes) {
    const match = isOpNode(n) ? matchAt(g, n, readers) : undefined;
    if (match) matches.set(match.last.id, match);
  }
  if (matches.size === 0) return g;
  return rebuild(g, (n, b) => {
    const match = matches.get(n.id);
    if (!match) return undefined;
    const { x, axis, epsilon, gamma, beta } = match;
    const xShape = g.node(x).shape;
    const scale = gamma !== undefined
      ? b.map(gamma)
      : b.out.constant(`${n.name}_ones`, xShape.slice(axis), new Float32Array(xShape.slice(axis).reduce((p, q) => p * q, 1)).fill(1));
    const inputs = [b.map(x), scale];
    if (beta !== undefined) inputs.push(b.map(beta));
    return b.out.op('layer_norm', inputs, { axis, epsilon }, n.name);
  });
}
