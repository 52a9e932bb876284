// Helpers the graph passes share: consumer lists, and rebuilding a graph node by node
// into a fresh one (a pass decides, per old node, what the new graph gets in its place).

import { Graph, isOpNode, liveNodes, type ConstantNode, type Node, type OpNode } from './graph';

/** For every node id, the ids of the op nodes that read it (once per use, in node order). */
export function consumerLists(g: Graph): number[][] {
  const out: number[][] = g.nodes.map(() => []);
  for (const n of g.nodes) for (const i of n.inputs) out[i].push(n.id);
  return out;
}

/** The constant node behind `id`, if it is one. */
export function constantOf(g: Graph, id: number): ConstantNode | undefined {
  const n = g.node(id);
  return isConstant(n) ? n : undefined;
}

export const isConstant = (n: Node): n is ConstantNode => n.op === 'constant';

/** The float32 constant behind `id`, if it is one (weights, scales: what the float passes fold). */
export function floatConstantOf(g: Graph, id: number): (ConstantNode & { data: Float32Array }) | undefined {
  const c = constantOf(g, id);
  return c && c.data instanceof Float32Array ? (c as ConstantNode & { data: Float32Array }) : undefined;
}

export function opNodeOf(g: Graph, id: number): OpNode | undefined {
  const n = g.node(id);
  return isOpNode(n) ? n : undefined;
}

/** Builds the new graph of a pass; `map` turns an old node id into its new id. */
export class Rebuilder {
  readonly out = new Graph();
  private readonly ids = new Map<number, number>();
  readonly source: Graph;

  constructor(source: Graph) {
    this.source = source;
  }

  map(oldId: number): number {
    const id = this.ids.get(oldId);
    if (id === undefined) throw new Error(`rebuild: node ${oldId} used before it was rebuilt`);
    return id;
  }

  /** Copy an old node as it is (inputs remapped). */
  copy(n: Node): number {
    if (isConstant(n)) return this.out.constant(n.name, n.shape, n.data, n.dtype);
    if (isOpNode(n)) return this.out.op(n.op, n.inputs.map((i) => this.map(i)), n.attrs, n.name);
    return this.out.input(n.name, n.shape, n.dtype);
  }

  set(oldId: number, newId: number): void {
    this.ids.set(oldId, newId);
  }
}

/**
 * Rebuild `g` in node order. `visit` returns the new id that stands for an old node (or
 * undefined to copy it unchanged). Outputs are remapped (by `output`, if given), and nodes that no longer reach
 * an output are dropped (inputs are always kept: they are the model's interface).
 */
export function rebuild(
  g: Graph,
  visit: (n: Node, b: Rebuilder) => number | undefined,
  output: (b: Rebuilder, oldId: number) => number = (b, o) => b.map(o),
): Graph {
  const b = new Rebuilder(g);
  for (const n of g.nodes) b.set(n.id, visit(n, b) ?? b.copy(n));
  b.out.outputs = g.outputs.map((o) => output(b, o));
  return prune(b.out);
}

/** Drop nodes that no output depends on (graph inputs stay). Returns `g` itself when nothing is dead. */
export function prune(g: Graph): Graph {
  const live = liveNodes(g);
  if (g.nodes.every((n) => live.has(n.id) || n.op === 'input')) return g;
  const b = new Rebuilder(g);
  for (const n of g.nodes) if (live.has(n.id) || n.op === 'input') b.set(n.id, b.copy(n));
  b.out.outputs = g.outputs.map((o) => b.map(o));
  return b.out;
}

export const sameShape = (a: readonly number[], b: readonly number[]): boolean =>
  a.length === b.length && a.every((d, i) => d === b[i]);
