// ONNX import: a .onnx file (ModelProto, opsets 11-21) -> our graph IR.
//
// The graph keeps the model's NCHW operators; `loadOnnx` then converts convs and pools
// to the layout asked for (NHWC by default) with convertLayout, which keeps the model's
// own input and output layout at the boundary. Everything wrong with a file is a single
// UserError naming the file: not a protobuf ModelProto, truncated, an opset outside
// 11-21, or, listed all at once, every node whose operator or attribute we do not
// support (op type and node name).

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { UserError } from '../../errors';
import { isOpNode, type Graph } from '../../graph/graph';
import { convertLayout } from '../../graph/passes';
import { rebuild } from '../../graph/rewrite';
import type { Layout } from '../../topi/nn';
import { ImportContext, NodeView, UnsupportedError, nodeValue, staticValue, type Value } from './context';
import { NN_CONVERTERS } from './convert-nn';
import { TENSOR_CONVERTERS, type Converter } from './convert-tensor';
import { decodeModel, DataType, type GraphMessage, type ModelMessage, type ValueInfo } from './schema';
import { checkedDims, dataTypeName, tensorFromProto } from './tensor';

export const MIN_OPSET = 11;
export const MAX_OPSET = 21;

const CONVERTERS: Record<string, Converter> = { ...TENSOR_CONVERTERS, ...NN_CONVERTERS };

/** The ONNX operators the importer converts. */
export const SUPPORTED_OPS: readonly string[] = Object.keys(CONVERTERS).sort();

export interface OnnxImportOptions {
  /** Size of a symbolic first input dimension (default 1); a fixed one must match. */
  batch?: number;
}

export interface OnnxModel {
  /** The graph, in the model's own (NCHW) layout. */
  graph: Graph;
  inputs: { name: string; shape: number[] }[];
  /** The model's output names, in graph.outputs order. */
  outputs: string[];
  opset: number;
}

/** Issues found in a file, reported together. */
class Issues {
  readonly lines: string[] = [];
  add(line: string): void { this.lines.push(line); }
}

const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e));

function opsetOf(model: ModelMessage, file: string): number {
  const entry = (model.opset_import ?? []).find((o) => !o.domain || o.domain === 'ai.onnx');
  if (!entry || entry.version === undefined) throw new UserError(`${file}: no opset_import for the default ONNX domain (expected opset ${MIN_OPSET}-${MAX_OPSET})`);
  const v = entry.version;
  if (!Number.isInteger(v) || v < MIN_OPSET || v > MAX_OPSET) {
    throw new UserError(`${file}: ONNX opset ${v} is not supported (expected ${MIN_OPSET}-${MAX_OPSET}; convert the model with onnx.version_converter)`);
  }
  return v;
}

function inputShape(vi: ValueInfo, file: string, batch: number | undefined): number[] {
  const name = vi.name ?? '';
  const tt = vi.type?.tensor_type;
  if (!tt) throw new UserError(`${file}: graph input '${name}' is not a tensor`);
  if (tt.elem_type !== DataType.FLOAT) throw new UserError(`${file}: graph input '${name}' is ${dataTypeName(tt.elem_type)}, only float inputs are supported`);
  if (!tt.shape) throw new UserError(`${file}: graph input '${name}' has no shape`);
  const dims = (tt.shape.dim ?? []).map((d, i) => {
    if (d.dim_value !== undefined && !(i === 0 && d.dim_value === 0 && d.dim_param)) return d.dim_value;
    if (i === 0) return batch ?? 1;
    throw new UserError(`${file}: graph input '${name}' has a symbolic dimension ${i} ('${d.dim_param ?? '?'}'); only the first (batch) dimension may be symbolic`);
  });
  try {
    checkedDims(dims, `graph input '${name}'`);
  } catch (e) {
    throw new UserError(`${file}: ${messageOf(e)}`);
  }
  if (dims.some((d) => d === 0)) throw new UserError(`${file}: graph input '${name}' has an empty dimension [${dims.join(', ')}]`);
  if (batch !== undefined && dims.length > 0 && dims[0] !== batch) {
    throw new UserError(`${file}: graph input '${name}' has a fixed batch of ${dims[0]}, cannot use batch ${batch}`);
  }
  return dims;
}

/** Convert the nodes of `g`; returns the issues (unsupported nodes and broken ones). */
function convertNodes(g: GraphMessage, cx: ImportContext, opset: number, issues: Issues): void {
  const poisoned = new Set<string>();
  for (const msg of g.node ?? []) {
    const n = new NodeView(msg, opset, cx);
    const label = `${n.opType || '(no op_type)'} '${n.name}'`;
    const fail = (why: string): void => {
      issues.add(`${label}: ${why}`);
      for (const o of n.outputs) if (o) poisoned.add(o);
    };
    const domain = msg.domain ?? '';
    const converter = domain === '' || domain === 'ai.onnx' ? CONVERTERS[n.opType] : undefined;
    if (!converter) {
      fail(domain && domain !== 'ai.onnx' ? `operator of domain '${domain}' is not supported` : 'operator is not supported');
      continue;
    }
    const unknown = n.attr.names().filter((a) => !converter.attrs.includes(a));
    if (unknown.length) {
      fail(`unsupported attribute${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}`);
      continue;
    }
    if (n.inputs.some((i) => poisoned.has(i))) {
      for (const o of n.outputs) if (o) poisoned.add(o);
      continue;
    }
    let outs: (Value | undefined)[];
    try {
      outs = converter.convert(n);
    } catch (e) {
      fail(e instanceof UnsupportedError ? `unsupported: ${e.message}` : messageOf(e));
      continue;
    }
    n.outputs.forEach((o, i) => {
      const v = outs[i];
      if (!o) return;
      if (v) cx.set(o, v);
      else fail(`output ${i} ('${o}') is not produced by the importer`);
    });
  }
}

/** Import a serialized ONNX model; `file` names it in messages and locates external data. */
export function importOnnx(bytes: Uint8Array, file: string, opts: OnnxImportOptions = {}): OnnxModel {
  let model: ModelMessage;
  try {
    model = decodeModel(bytes);
  } catch (e) {
    throw new UserError(`${file}: not an ONNX model, or a truncated one (protobuf decoding failed: ${messageOf(e)})`);
  }
  try {
    return importDecoded(model, file, opts);
  } catch (e) {
    if (e instanceof UserError) throw e;
    // Anything else a damaged file provokes is still the file's fault, not a crash.
    throw new UserError(`${file}: cannot import: ${messageOf(e)}`);
  }
}

function importDecoded(model: ModelMessage, file: string, opts: OnnxImportOptions): OnnxModel {
  const g = model.graph;
  if (!g || !g.node?.length || !g.output?.length) {
    throw new UserError(`${file}: not an ONNX model, or a truncated one (no graph with nodes and outputs)`);
  }
  const opset = opsetOf(model, file);
  const cx = new ImportContext(path.dirname(path.resolve(file)));
  const issues = new Issues();

  const initializerNames = new Set<string>();
  for (const t of g.initializer ?? []) {
    const name = t.name ?? '';
    initializerNames.add(name);
    try {
      cx.set(name, staticValue(tensorFromProto(t, cx.modelDir, `initializer '${name}'`)));
    } catch (e) {
      throw new UserError(`${file}: ${messageOf(e)}`);
    }
  }
  const inputs: OnnxModel['inputs'] = [];
  for (const vi of g.input ?? []) {
    const name = vi.name ?? '';
    if (initializerNames.has(name)) continue; // IR < 4 lists initializers as inputs too
    const shape = inputShape(vi, file, opts.batch);
    cx.set(name, nodeValue(cx.graph.input(name, shape)));
    inputs.push({ name, shape });
  }
  if (inputs.length === 0) throw new UserError(`${file}: the graph has no (non-initializer) inputs`);

  convertNodes(g, cx, opset, issues);

  const outputs = (g.output ?? []).map((o) => o.name ?? '');
  if (issues.lines.length === 0) {
    for (const o of outputs) if (!cx.has(o)) issues.add(`graph output '${o}' is not computed by any node`);
  }
  if (issues.lines.length) {
    throw new UserError(`${file}: cannot import ${issues.lines.length} node(s) (opset ${opset}; supported operators: ${SUPPORTED_OPS.join(', ')}):\n${issues.lines.map((l) => `  - ${l}`).join('\n')}`);
  }
  cx.graph.outputs = outputs.map((o) => cx.nodeOf(cx.value(o)));
  return { graph: cx.graph, inputs, outputs, opset };
}

/** Remove pairs of transposes that undo each other (convertLayout leaves them at an NHWC model's boundary). */
export function cancelTransposes(g: Graph): Graph {
  return rebuild(g, (n, b) => {
    if (!isOpNode(n) || n.op !== 'transpose') return undefined;
    const inner = g.node(n.inputs[0]);
    if (!isOpNode(inner) || inner.op !== 'transpose') return undefined;
    const p1 = inner.attrs.axes as number[], p2 = n.attrs.axes as number[];
    return p2.every((p, i) => p1[p] === i) ? b.map(inner.inputs[0]) : undefined;
  });
}

export interface LoadOnnxOptions extends OnnxImportOptions {
  /** Layout of convs and pools inside (default NHWC); the model's inputs and outputs keep theirs. */
  layout?: Layout;
}

/** Read and import an ONNX file, in the layout asked for. */
export function loadOnnx(file: string, opts: LoadOnnxOptions = {}): OnnxModel {
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(file);
  } catch (e) {
    throw new UserError(`${file}: cannot read the ONNX model (${(e as NodeJS.ErrnoException).code ?? messageOf(e)})`);
  }
  const model = importOnnx(bytes, file, opts);
  const layout = opts.layout ?? 'NHWC';
  const graph = layout === 'NCHW' ? model.graph : cancelTransposes(convertLayout(model.graph, layout));
  return { ...model, graph };
}
