// A small ONNX model builder for tests and tools: nodes with attributes, initializers and
// typed inputs/outputs, serialized with the same schema as the importer and writer.

import { AttributeType, DataType, encodeModel, type AttributeMessage, type GraphMessage, type NodeMessage, type TensorMessage, type ValueInfo } from './schema';
import { floatTensorProto, int64TensorProto } from './tensor';

export type AttrValue = number | string | number[] | { floats: number[] } | { tensor: TensorMessage } | { graph: GraphMessage };

function attribute(name: string, v: AttrValue): AttributeMessage {
  if (typeof v === 'number') return Number.isInteger(v) ? { name, type: AttributeType.INT, i: v } : { name, type: AttributeType.FLOAT, f: v };
  if (typeof v === 'string') return { name, type: AttributeType.STRING, s: new TextEncoder().encode(v) };
  if (Array.isArray(v)) return { name, type: AttributeType.INTS, ints: v };
  if ('floats' in v) return { name, type: AttributeType.FLOATS, floats: v.floats };
  if ('graph' in v) return { name, type: AttributeType.GRAPH, g: v.graph };
  return { name, type: AttributeType.TENSOR, t: v.tensor };
}

export class OnnxModelBuilder {
  private readonly nodes: NodeMessage[] = [];
  private readonly inits: TensorMessage[] = [];
  private readonly ins: ValueInfo[] = [];
  private readonly outs: ValueInfo[] = [];
  private readonly opset: number;

  constructor(opset = 13) {
    this.opset = opset;
  }

  /** A float input; a string dimension is symbolic. */
  input(name: string, dims: readonly (number | string)[]): this {
    this.ins.push({ name, type: { tensor_type: { elem_type: DataType.FLOAT, shape: { dim: dims.map((d) => (typeof d === 'string' ? { dim_param: d } : { dim_value: d })) } } } });
    return this;
  }

  /** An input of any ONNX element type (DataType). */
  typedInput(name: string, elemType: number, dims: readonly (number | string)[]): this {
    this.ins.push({ name, type: { tensor_type: { elem_type: elemType, shape: { dim: dims.map((d) => (typeof d === 'string' ? { dim_param: d } : { dim_value: d })) } } } });
    return this;
  }

  output(name: string): this {
    this.outs.push({ name, type: { tensor_type: { elem_type: DataType.FLOAT } } });
    return this;
  }

  /** An output of any ONNX element type (DataType). */
  typedOutput(name: string, elemType: number): this {
    this.outs.push({ name, type: { tensor_type: { elem_type: elemType } } });
    return this;
  }

  /** The nodes, initializers and outputs so far as a graph (an If branch, say). */
  subgraph(name: string): GraphMessage {
    return { name, node: this.nodes, initializer: this.inits, input: [], output: this.outs };
  }

  float(name: string, dims: readonly number[], data: Float32Array | readonly number[]): this {
    this.inits.push(floatTensorProto(name, dims, Float32Array.from(data)));
    return this;
  }

  int64(name: string, data: readonly number[], dims: readonly number[] = [data.length]): this {
    this.inits.push(int64TensorProto(name, dims, data));
    return this;
  }

  tensor(t: TensorMessage): this {
    this.inits.push(t);
    return this;
  }

  node(op: string, inputs: readonly string[], outputs: readonly string[], attrs: Record<string, AttrValue> = {}, name = outputs[0]): this {
    this.nodes.push({ op_type: op, name, input: [...inputs], output: [...outputs], attribute: Object.entries(attrs).map(([k, v]) => attribute(k, v)) });
    return this;
  }

  build(): Uint8Array {
    return encodeModel({
      ir_version: 8, producer_name: 'tensortune-test', opset_import: [{ domain: '', version: this.opset }],
      graph: { name: 'test', node: this.nodes, initializer: this.inits, input: this.ins, output: this.outs },
    });
  }
}
