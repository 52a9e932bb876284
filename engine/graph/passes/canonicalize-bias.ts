// Canonicalise broadcast constants: a constant of lower rank than the result of a binary
// elementwise op (a bias [C] added to an NHWC map, a dense bias [N], an NCHW bias
// [C, 1, 1]) is replaced by the same data reshaped to the full rank, with leading 1s as
// NumPy broadcasting implies ([1, 1, 1, C], [1, N], [1, C, 1, 1]). Tasks then read their
// bias as TVM prints it, and every per-channel constant has one shape per layout, which
// is what the scale-folding pass looks for.

import { isOpNode, type Graph } from '../graph';
import { constantOf, rebuild } from '../rewrite';

export const BINARY_OPS: ReadonlySet<string> = new Set(['add', 'subtract', 'multiply', 'divide', 'maximum', 'minimum']);

export function canonicalizeBias(g: Graph): Graph {
  return rebuild(g, (n, b) => {
    if (!isOpNode(n) || !BINARY_OPS.has(n.op)) return undefined;
    const rank = n.shape.length;
    const lowRank = n.inputs.map((id) => {
      const c = constantOf(g, id);
      return c && c.shape.length < rank ? c : undefined;
    });
    if (lowRank.every((c) => c === undefined)) return undefined;
    const inputs = n.inputs.map((id, i) => {
      const c = lowRank[i];
      if (!c) return b.map(id);
      const shape = [...new Array<number>(rank - c.shape.length).fill(1), ...c.shape];
      return b.out.constant(c.name, shape, c.data);
    });
    return b.out.op(n.op, inputs, n.attrs, n.name);
  });
}
