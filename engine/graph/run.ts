// Run a whole graph with the reference evaluator: the ground truth for a network's
// output. Node by node: each operator node becomes a small compute DAG over placeholders
// for its inputs, evaluated on the buffers of the nodes it reads. Buffers are dropped
// once their last reader has run. Slow (JavaScript loop nests), exact to float32.

import { ComputeDAG } from '../ir/dag';
import type { DType } from '../ir/expr';
import { evaluate } from '../ir/evaluate';
import { dataFits, placeholder, numElements, type TensorData } from '../ir/tensor';
import { computeNode, isOpNode, liveNodes, type ConstantNode, type Graph, type OpNode } from './graph';

/**
 * Evaluate `graph` on `inputs` (one array per input node, by name, row-major in the
 * node's shape); returns one array per graph output, in `graph.outputs` order.
 */
export function runGraph(graph: Graph, inputs: ReadonlyMap<string, TensorData>): TensorData[] {
  if (graph.outputs.length === 0) throw new Error('runGraph: the graph has no outputs');
  const known = new Set(graph.nodes.filter((n) => n.op === 'input').map((n) => n.name));
  for (const name of inputs.keys()) {
    if (!known.has(name)) throw new Error(`runGraph: no input named ${name} (inputs: ${[...known].join(', ')})`);
  }
  const needed = liveNodes(graph);
  // Readers left per node; graph outputs are never released.
  const pending = new Map<number, number>();
  for (const n of graph.nodes) if (needed.has(n.id)) for (const i of n.inputs) pending.set(i, (pending.get(i) ?? 0) + 1);
  const keep = new Set(graph.outputs);
  const values = new Map<number, TensorData>();

  for (const n of graph.nodes) {
    if (!needed.has(n.id)) continue;
    if (n.op === 'input') {
      const data = inputs.get(n.name);
      if (!data) throw new Error(`runGraph: no data for input ${n.name}`);
      if (data.length !== numElements(n.shape)) {
        throw new Error(`runGraph: input ${n.name} has ${data.length} values, shape [${n.shape.join(', ')}] needs ${numElements(n.shape)}`);
      }
      if (!dataFits(n.dtype, data)) throw new Error(`runGraph: input ${n.name} is ${n.dtype}, given a ${data.constructor.name}`);
      values.set(n.id, data);
      continue;
    }
    if (!isOpNode(n)) {
      values.set(n.id, (n as ConstantNode).data);
      continue;
    }
    values.set(n.id, evalOp(n, n.inputs.map((id) => ({ shape: graph.node(id).shape, dtype: graph.node(id).dtype, data: values.get(id)! }))).data);
    for (const id of n.inputs) {
      const left = pending.get(id)! - 1;
      pending.set(id, left);
      if (left === 0 && !keep.has(id)) values.delete(id);
    }
  }
  return graph.outputs.map((id) => values.get(id)!);
}

/** Run one operator on input arrays of the given shapes (row-major), with the reference evaluator. */
export function evalOp(
  n: Pick<OpNode, 'op' | 'attrs'>,
  inputs: readonly { readonly shape: readonly number[]; readonly dtype?: DType; readonly data: TensorData }[],
): { shape: number[]; dtype: DType; data: TensorData } {
  const tensors = inputs.map((c, i) => placeholder(`in${i}`, c.shape, c.dtype ?? (c.data instanceof Float32Array ? 'float32' : 'int32')));
  const out = computeNode(n, tensors);
  const values = evaluate(new ComputeDAG([out]), new Map(tensors.map((t, i) => [t, inputs[i].data])));
  return { shape: [...out.shape], dtype: out.dtype, data: values.get(out.name)! };
}
