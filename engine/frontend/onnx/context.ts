// What an operator converter sees while the importer walks an ONNX graph: the node (its
// inputs, outputs and attributes) and the values computed so far. A value is either a
// node of our graph or a static tensor known at import time (initializers, Constant
// nodes, and whatever Shape/Gather/Concat/... compute from them); static float tensors
// become graph constants when an operator reads them.

import { Graph } from '../../graph/graph';
import type { Attrs } from '../../graph/ops';
import { AttributeType, type AttributeMessage, type NodeMessage, type TensorMessage } from './schema';
import { numElements } from '../../ir/tensor';
import type { DType } from '../../ir/expr';
import { constantData, OnnxFormatError, tensorFromProto, type StaticTensor } from './tensor';

export type Value = { readonly kind: 'node'; readonly id: number } | { readonly kind: 'static'; readonly t: StaticTensor };

/** How one ONNX operator is converted (one table of them per family, convert-*.ts). */
export interface Converter {
  /** Attributes read by the converter; a node with any other attribute is refused. */
  readonly attrs: readonly string[];
  convert(n: NodeView): (Value | undefined)[];
}

/**
 * The ONNX element type (DataType) of static tensors read from the file (initializers,
 * Constant values): int8 and uint8 both run as int32, and a quantized zero point's type
 * gives the quantized range. Tensors computed at import are not in it.
 */
export const ONNX_ELEMENT_TYPE = new WeakMap<StaticTensor, number>();

/** The ONNX element types of a graph's input nodes (by node id), recorded by the importer. */
export const ONNX_INPUT_TYPE = new WeakMap<Graph, Map<number, number>>();

/** tensorFromProto, its element type recorded in ONNX_ELEMENT_TYPE. */
export function protoTensor(t: TensorMessage, modelDir: string, what: string): StaticTensor {
  const out = tensorFromProto(t, modelDir, what);
  if (t.data_type !== undefined) ONNX_ELEMENT_TYPE.set(out, t.data_type);
  return out;
}

/** An operator, attribute or attribute value we do not implement (listed, with every other, in one error). */
export class UnsupportedError extends Error {}

const decoder = new TextDecoder();

/** Typed access to a node's attributes. */
export class AttrReader {
  private readonly byName: Map<string, AttributeMessage>;
  private readonly modelDir: string;

  constructor(attrs: readonly AttributeMessage[], modelDir: string) {
    this.byName = new Map(attrs.map((a) => [a.name ?? '', a]));
    this.modelDir = modelDir;
  }

  names(): string[] { return [...this.byName.keys()]; }
  has(name: string): boolean { return this.byName.has(name); }

  private get(name: string, type: number): AttributeMessage | undefined {
    const a = this.byName.get(name);
    if (!a) return undefined;
    if (a.ref_attr_name) throw new UnsupportedError(`attribute ${name} refers to a function attribute`);
    // Files of IR version 1 have no type field; trust the field then.
    if (a.type !== undefined && a.type !== 0 && a.type !== type) throw new OnnxFormatError(`attribute ${name} has type ${a.type}, expected ${type}`);
    return a;
  }

  // A present attribute without its value field holds proto3's default, zero.
  int(name: string, dflt: number): number {
    const a = this.get(name, AttributeType.INT);
    return a ? a.i ?? 0 : dflt;
  }
  float(name: string, dflt: number): number {
    const a = this.get(name, AttributeType.FLOAT);
    return a ? a.f ?? 0 : dflt;
  }
  ints(name: string): number[] | undefined {
    const a = this.get(name, AttributeType.INTS);
    return a ? [...(a.ints ?? [])] : undefined;
  }
  floats(name: string): number[] | undefined {
    const a = this.get(name, AttributeType.FLOATS);
    return a ? [...(a.floats ?? [])] : undefined;
  }
  string(name: string, dflt: string): string {
    const a = this.get(name, AttributeType.STRING);
    return a?.s ? decoder.decode(a.s) : dflt;
  }
  strings(name: string): string[] | undefined {
    const a = this.get(name, AttributeType.STRINGS);
    return a ? (a.strings ?? []).map((s) => decoder.decode(s)) : undefined;
  }
  tensor(name: string): StaticTensor | undefined {
    const a = this.get(name, AttributeType.TENSOR);
    return a?.t ? protoTensor(a.t, this.modelDir, `attribute ${name}`) : undefined;
  }
}

/** One ONNX node, as converters read it. */
export class NodeView {
  readonly opType: string;
  readonly name: string;
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
  readonly attr: AttrReader;
  readonly opset: number;
  private readonly cx: ImportContext;

  constructor(n: NodeMessage, opset: number, cx: ImportContext) {
    this.opType = n.op_type ?? '';
    this.outputs = n.output ?? [];
    this.name = n.name || this.outputs[0] || this.opType;
    this.inputs = n.input ?? [];
    this.attr = new AttrReader(n.attribute ?? [], cx.modelDir);
    this.opset = opset;
    this.cx = cx;
  }

  /** Input `i`, or undefined when absent (omitted or named ''). */
  optional(i: number): Value | undefined {
    const name = this.inputs[i];
    return name ? this.cx.value(name) : undefined;
  }

  input(i: number, what = `input ${i}`): Value {
    const v = this.optional(i);
    if (!v) throw new OnnxFormatError(`missing ${what}`);
    return v;
  }

  /** Input `i` as a graph node id (static tensors become constants). */
  node(i: number, what?: string): number { return this.cx.nodeOf(this.input(i, what)); }

  /** Input `i` as a static tensor, or an UnsupportedError saying it must be a constant. */
  static(i: number, what = `input ${i}`): StaticTensor {
    const v = this.input(i, what);
    if (v.kind !== 'static') throw new UnsupportedError(`${what} must be a constant (an initializer or a constant-foldable expression)`);
    return v.t;
  }

  /** Input `i` as a list of integers known at import time. */
  ints(i: number, what = `input ${i}`): number[] {
    const t = this.static(i, what);
    return [...t.data].map((v) => Math.trunc(v));
  }

  shape(i: number): readonly number[] { return this.cx.shapeOf(this.input(i)); }

  /** The element type input `i` has in our graph (float32, int32 or bool). */
  dtype(i: number): DType { return this.cx.dtypeOf(this.input(i)); }

  /** The ONNX element type (DataType) of input `i`, where known (declared or inferred, narrow.ts); undefined when absent or unknown. */
  onnxType(i: number): number | undefined {
    const name = this.inputs[i];
    return name ? this.cx.onnxType(name) : undefined;
  }

  /** An op node of our graph, named after this ONNX node. */
  op(op: string, inputs: readonly number[], attrs: Attrs = {}, suffix = ''): Value {
    return nodeValue(this.cx.graph.op(op, inputs, attrs, `${this.name}${suffix}`));
  }

  /** A value as a graph node id; a static one becomes a constant named after this node (+ suffix). */
  nodeOf(v: Value, suffix: string): number {
    if (v.kind === 'node') return v.id;
    if (v.t.type === 'float') return this.constant(suffix, v.t.shape, v.t.data);
    const { data, dtype } = constantData(v.t, `${this.name}${suffix}`);
    return this.cx.graph.constant(`${this.name}${suffix}`, v.t.shape, data, dtype);
  }

  /** A float constant of our graph. */
  constant(suffix: string, shape: readonly number[], data: Float32Array): number {
    return this.cx.graph.constant(`${this.name}${suffix}`, shape, data);
  }

  get graph(): Graph { return this.cx.graph; }
}

export const staticValue = (t: StaticTensor): Value => ({ kind: 'static', t });
export const nodeValue = (id: number): Value => ({ kind: 'node', id });

export class ImportContext {
  readonly graph = new Graph();
  readonly modelDir: string;
  private readonly values = new Map<string, Value>();
  private readonly materialized = new Map<StaticTensor, number>();
  private readonly names = new Map<StaticTensor, string>();
  private readonly types = new Map<string, number>();

  /** The model file, as messages name it. */
  readonly fileName: string;

  constructor(modelDir: string, fileName = 'model.onnx') {
    this.modelDir = modelDir;
    this.fileName = fileName;
  }

  has(name: string): boolean { return this.values.has(name); }

  value(name: string): Value {
    const v = this.values.get(name);
    if (!v) throw new OnnxFormatError(`value '${name}' is used before it is defined`);
    return v;
  }

  set(name: string, v: Value): void {
    if (v.kind === 'static' && !this.names.has(v.t)) this.names.set(v.t, name);
    this.values.set(name, v);
  }

  /** The ONNX element type (DataType) of value `name`, where known: declared by the graph or inferred from its operator (narrow.ts). */
  onnxType(name: string): number | undefined { return this.types.get(name); }

  setOnnxType(name: string, type: number | undefined): void {
    if (type) this.types.set(name, type);
    else this.types.delete(name);
  }

  /** The names defined so far (a subgraph's scope is what it adds to them). */
  definedNames(): Set<string> { return new Set(this.values.keys()); }

  /** Forget the names a subgraph defined beyond `outer` (its values stay in the graph): the next branch may reuse them. */
  leaveScope(outer: ReadonlySet<string>): void {
    for (const name of [...this.values.keys()]) {
      if (!outer.has(name)) { this.values.delete(name); this.types.delete(name); }
    }
  }

  shapeOf(v: Value): readonly number[] {
    return v.kind === 'node' ? this.graph.node(v.id).shape : v.t.shape;
  }

  /** The graph node of a value: a static tensor becomes a constant (once), float32 or int32/bool as its type. */
  nodeOf(v: Value): number {
    if (v.kind === 'node') return v.id;
    let id = this.materialized.get(v.t);
    if (id === undefined) {
      const name = this.names.get(v.t) ?? `const_${this.graph.nodes.length}`;
      const { data, dtype } = constantData(v.t, `constant '${name}'`);
      if (numElements(v.t.shape) !== data.length) throw new OnnxFormatError(`constant of shape [${v.t.shape.join(', ')}] has ${data.length} values`);
      id = this.graph.constant(name, v.t.shape, data, dtype);
      this.materialized.set(v.t, id);
    }
    return id;
  }

  /** The element type of a value in our graph: a node's dtype; a static tensor's as constantData gives it. */
  dtypeOf(v: Value): DType {
    if (v.kind === 'node') return this.graph.node(v.id).dtype;
    return v.t.type === 'float' ? 'float32' : v.t.bool ? 'bool' : 'int32';
  }
}
