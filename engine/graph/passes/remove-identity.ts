// Remove ops that return their input unchanged: a reshape or flatten to the same shape,
// a transpose by the identity permutation, a pad of zero widths. (Adds of zero-valued
// constants are left alone: the values are weights, and TVM keeps them too.)

import { isOpNode, type Graph, type OpNode } from '../graph';
import { rebuild, sameShape } from '../rewrite';

function isIdentity(g: Graph, n: OpNode): boolean {
  const input = g.node(n.inputs[0]);
  switch (n.op) {
    case 'reshape': case 'batch_flatten':
      return sameShape(input.shape, n.shape);
    case 'transpose':
      return (n.attrs.axes as number[]).every((a, i) => a === i);
    case 'pad':
      return [...(n.attrs.before as number[]), ...(n.attrs.after as number[])].every((w) => w === 0);
    default:
      return false;
  }
}

export function removeIdentityOps(g: Graph): Graph {
  return rebuild(g, (n, b) => (isOpNode(n) && isIdentity(g, n) ? b.map(n.inputs[0]) : undefined));
}
