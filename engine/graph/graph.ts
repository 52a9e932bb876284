// The graph IR: a network as a list of operator nodes in topological order. Inputs and
// constants (weights) are nodes too; every other node names an operator of ops.ts, whose
// compute also gives the node's output shape.

import type { DType } from '../ir/expr';
import { dataDtype, dataFits, numElements, placeholder, type Tensor, type TensorData } from '../ir/tensor';
import { opDef, type Attrs } from './ops';

// Every node carries the element type of its value: float32, or int32 / bool (ids,
// indices, masks, comparisons), which are stored as 4-byte integers (TensorData).
export interface InputNode {
  readonly id: number; readonly op: 'input'; readonly name: string; readonly shape: readonly number[];
  readonly dtype: DType; readonly inputs: readonly [];
}
export interface ConstantNode {
  readonly id: number; readonly op: 'constant'; readonly name: string; readonly shape: readonly number[];
  readonly dtype: DType; readonly inputs: readonly []; readonly data: TensorData;
}
export interface OpNode {
  readonly id: number; readonly op: string; readonly name: string; readonly shape: readonly number[];
  readonly dtype: DType; readonly inputs: readonly number[]; readonly attrs: Attrs;
}
export type Node = InputNode | ConstantNode | OpNode;

export const isOpNode = (n: Node): n is OpNode => n.op !== 'input' && n.op !== 'constant';

export class Graph {
  readonly nodes: Node[] = [];
  outputs: number[] = [];

  input(name: string, shape: readonly number[], dtype: DType = 'float32'): number {
    return this.push({ id: this.nodes.length, op: 'input', name, shape: [...shape], dtype, inputs: [] });
  }

  /** A constant; its dtype is the array's (Float32Array: float32, Int32Array: int32) unless `dtype` says bool. */
  constant(name: string, shape: readonly number[], data: TensorData, dtype: DType = dataDtype(data)): number {
    if (data.length !== numElements(shape)) throw new Error(`constant ${name}: ${data.length} values for shape [${shape.join(', ')}]`);
    if (!dataFits(dtype, data)) throw new Error(`constant ${name}: ${data.constructor.name} cannot hold ${dtype} values`);
    return this.push({ id: this.nodes.length, op: 'constant', name, shape: [...shape], dtype, inputs: [], data });
  }

  /** Add an operator node; its shape and dtype are inferred from the operator's compute. */
  op(op: string, inputs: readonly number[], attrs: Attrs = {}, name?: string): number {
    const tensors = inputs.map((id, i) => placeholder(`in${i}`, this.node(id).shape, this.node(id).dtype));
    const out = opDef(op).compute(tensors, attrs);
    return this.push({ id: this.nodes.length, op, name: name ?? `${op}_${this.nodes.length}`, shape: out.shape, dtype: out.dtype, inputs: [...inputs], attrs });
  }

  node(id: number): Node {
    const n = this.nodes[id];
    if (!n) throw new Error(`no node ${id}`);
    return n;
  }

  private push(n: Node): number {
    this.nodes.push(n);
    return n.id;
  }
}

/** Apply a node's operator to given input tensors. */
export function computeNode(n: Pick<OpNode, 'op' | 'attrs'>, inputs: readonly Tensor[]): Tensor {
  return opDef(n.op).compute(inputs, n.attrs);
}

/** Ids of the nodes the outputs depend on (the outputs included). */
export function liveNodes(g: Graph): Set<number> {
  const live = new Set<number>();
  const stack = [...g.outputs];
  while (stack.length) {
    const id = stack.pop()!;
    if (live.has(id)) continue;
    live.add(id);
    stack.push(...g.node(id).inputs);
  }
  return live;
}
