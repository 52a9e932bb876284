// Constant folding.
//  - An op whose inputs are all constants is computed now (with the reference evaluator)
//    and becomes a constant, as TVM's FoldConstant does.
//  - Two consecutive adds (or multiplies) of constants that do not change the tensor's
//    shape, (x + c1) + c2, become one, x + (c1 + c2), when the inner result has no other
//    reader: e.g. a conv's bias followed by a batch-norm shift.

import { isOpNode, type ConstantNode, type Graph, type OpNode } from '../graph';
import { evalOp } from '../run';
import { consumerLists, constantOf, opNodeOf, rebuild, sameShape } from '../rewrite';

export function foldConstants(g: Graph): Graph {
  return rebuild(g, (n, b) => {
    if (!isOpNode(n) || n.inputs.length === 0) return undefined;
    const consts = n.inputs.map((i) => constantOf(g, i));
    if (consts.some((c) => c === undefined)) return undefined;
    const { shape, dtype, data } = evalOp(n, consts as ConstantNode[]);
    return b.out.constant(n.name, shape, data, dtype);
  });
}

const MERGEABLE = new Set(['add', 'multiply']);

/** The constant side of a binary node and the other input, when exactly one side is constant. */
function splitConstant(g: Graph, n: OpNode): { constant: ConstantNode; other: number } | undefined {
  if (n.inputs.length !== 2) return undefined;
  const [a, b] = n.inputs.map((i) => constantOf(g, i));
  if (a && !b) return { constant: a, other: n.inputs[1] };
  if (b && !a) return { constant: b, other: n.inputs[0] };
  return undefined;
}

export function mergeConstantChains(g: Graph): Graph {
  for (;;) {
    const consumers = consumerLists(g);
    const outputs = new Set(g.outputs);
    // outer node id -> (inner node, its constant, the outer constant)
    const merges = new Map<number, { x: number; c1: ConstantNode; c2: ConstantNode }>();
    const inners = new Set<number>();
    for (const n of g.nodes) {
      if (!isOpNode(n) || !MERGEABLE.has(n.op)) continue;
      const outer = splitConstant(g, n);
      const inner = outer && opNodeOf(g, outer.other);
      if (!outer || !inner || inner.op !== n.op || inners.has(n.id) || merges.has(inner.id)) continue;
      if (consumers[inner.id].length !== 1 || outputs.has(inner.id)) continue;
      const split = splitConstant(g, inner);
      if (!split || !sameShape(g.node(split.other).shape, inner.shape) || !sameShape(inner.shape, n.shape)) continue;
      merges.set(n.id, { x: split.other, c1: split.constant, c2: outer.constant });
      inners.add(inner.id);
    }
    if (merges.size === 0) return g;
    g = rebuild(g, (n, b) => {
      const m = merges.get(n.id);
      if (!m || !isOpNode(n)) return undefined;
      const { shape, dtype, data } = evalOp({ op: n.op, attrs: {} }, [m.c1, m.c2]);
      return b.out.op(n.op, [b.map(m.x), b.out.constant(`${m.c1.name}+${m.c2.name}`, shape, data, dtype)], {}, n.name);
    });
  }
}
