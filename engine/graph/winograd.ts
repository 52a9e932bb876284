// Winograd as an alternative implementation of a conv layer: which conv nodes may run as
// conv2d_winograd_nhwc (3x3, stride 1, dilation 1, groups 1, NHWC, constant weights), the
// tile size each gets, and the graph rewrite that makes chosen convs Winograd convs with
// their weight transformed once (G g G^T, topi/winograd.ts) into a new constant.
//
// The rewrite keeps every op node and their order (a conv becomes a conv2d_winograd_nhwc
// node in its place, with the same fusion pattern), so partition() of the rewritten graph
// gives the same groups with the same ids: group i of either graph is the same layer.

import { winogradWeightTransform, type WinogradTile } from '../topi/winograd';
import { isOpNode, type Graph, type OpNode } from './graph';
import { floatConstantOf, rebuild } from './rewrite';

/** The graph op of a Winograd conv: inputs [data NHWC, transformed kernel [alpha, alpha, CI, CO]], attrs { padding, tileSize }. */
export const WINOGRAD_OP = 'conv2d_winograd_nhwc';

const pairIs = (v: unknown, x: number): boolean => v === undefined || (Array.isArray(v) && v[0] === x && v[1] === x);

/** Whether conv node `n` of `g` can run as a Winograd conv. */
export function isWinogradEligible(g: Graph, n: OpNode): boolean {
  if (n.op !== 'conv2d') return false;
  const layout = (n.attrs.layout as string | undefined) ?? 'NHWC';
  const groups = (n.attrs.groups as number | undefined) ?? 1;
  if (layout !== 'NHWC' || groups !== 1 || !pairIs(n.attrs.strides, 1) || !pairIs(n.attrs.dilation, 1)) return false;
  const w = floatConstantOf(g, n.inputs[1]);
  return w !== undefined && w.shape.length === 4 && w.shape[0] === 3 && w.shape[1] === 3;
}

/** Ids of the conv nodes of `g` that can run as Winograd convs. */
export function winogradEligible(g: Graph): number[] {
  return g.nodes.filter((n): n is OpNode => isOpNode(n) && isWinogradEligible(g, n)).map((n) => n.id);
}

/**
 * The tile size of a layer: F(4x4, 3x3) when 4 divides the output's height and width, else
 * F(2x2, 3x3) (TVM's CUDA rule; a 4x4 tile on a 7x7 or 14x14 output computes rows and
 * columns that are thrown away). Both meet the error bound (verify.ts WINOGRAD_TOLERANCE).
 */
export function winogradTileSize(outShape: readonly number[]): WinogradTile {
  return outShape[1] % 4 === 0 && outShape[2] % 4 === 0 ? 4 : 2;
}

/**
 * `g` with the conv nodes `ids` (each eligible) made Winograd convs: the weight transformed
 * into a new constant `<weight>.winograd<m>`, the node renamed `<name>.winograd`.
 */
export function useWinograd(g: Graph, ids: Iterable<number>): Graph {
  const chosen = new Set(ids);
  for (const id of chosen) {
    const n = g.node(id);
    if (!isOpNode(n) || !isWinogradEligible(g, n)) throw new Error(`useWinograd: node ${id} (${n.name}, ${n.op}) is not a 3x3 stride-1 NHWC conv with constant weights`);
  }
  if (chosen.size === 0) return g;
  return rebuild(g, (n, b) => {
    if (!chosen.has(n.id) || !isOpNode(n)) return undefined;
    const w = floatConstantOf(g, n.inputs[1])!;
    const m = winogradTileSize(n.shape);
    const u = winogradWeightTransform(w.data, w.shape, m);
    const alpha = m + 2;
    const packed = b.out.constant(`${w.name}.winograd${m}`, [alpha, alpha, w.shape[2], w.shape[3]], u);
    const attrs = { padding: (n.attrs.padding as number[] | undefined) ?? [0, 0, 0, 0], tileSize: m };
    return b.out.op(WINOGRAD_OP, [b.map(n.inputs[0]), packed], attrs, `${n.name}.winograd`);
  });
}
