// ONNX import: a .onnx file (ModelProto, opsets 7-28) -> our graph IR.
//
// The graph keeps the model's NCHW operators; `loadOnnx` then converts convs and pools
// to the layout asked for (NHWC by default) with convertLayout, which keeps the model's
// own input and output layout at the boundary. Everything wrong with a file is a single
// UserError naming the file: not a protobuf ModelProto, truncated, an opset outside
// 7-28, a value defined twice, or, listed all at once, every node whose operator or
// attribute we do not support (op type and node name). Converters read each operator as
// its version at the model's opset defines it (n.opset), which is how opsets 7-10 come in.
//
// Types: float32 runs as itself; int64/int32/int16/int8/uint8/uint16/uint32/uint64 and the
// 4- and 2-bit integers run as int32 (ids, masks, indices); bool as bool; float16,
// bfloat16, float64 and the 8- and 4-bit floats run as float32, as the integer types run as
// int32. float64 thus computes in float32's precision (a relative error of about 6e-8 per
// operation instead of 1e-16). Values of the narrower float types are float32 values
// exactly: each operator's result of such a type is rounded to it (convert-logic.ts
// roundingOf; narrow.ts finds each value's ONNX type and says which results need no
// rounding), inside an operator the arithmetic is float32's but for the intermediates
// narrow.ts names, and a graph input of such a type is rounded on entry. The ONNX type each
// input and output declares stays in `onnxTypes`.
//
// Symbolic dimensions: the first takes `batch` (default 1); any dimension, and a scalar,
// can be fixed with `inputShapes` (tvmc's --input-shapes).
// `constantInputs` binds graph inputs to values (TVM's freeze_params): such an input is a
// static tensor, as an initializer is, and no longer an input of the model. So is an input
// with an empty dimension (its one value is the empty tensor).

import path from 'node:path';
import { UserError } from '../../errors';
import { modelLimit, readRegularFileSync } from '../../regular-file';
import { isOpNode, type Graph } from '../../graph/graph';
import { convertLayout } from '../../graph/passes';
import { rebuild } from '../../graph/rewrite';
import type { Layout } from '../../topi/nn';
import { ImportContext, NodeView, ONNX_ELEMENT_TYPE, ONNX_INPUT_TYPE, UnsupportedError, nodeValue, protoTensor, staticValue, type Value } from './context';
import { NN_CONVERTERS } from './convert-nn';
import { NORMALIZATION_CONVERTERS } from './convert-normalization';
import { REDUCE_CONVERTERS } from './convert-reduce';
import { TENSOR_CONVERTERS, type Converter } from './convert-tensor';
import { LOGIC_CONVERTERS, refuseNonFloat, roundedStatic, roundingOf, runType } from './convert-logic';
import { INDEXING_CONVERTERS } from './convert-indexing';
import { RNN_CONVERTERS } from './convert-rnn';
import { QUANTIZE_CONVERTERS } from './convert-quantize';
import { EXTRA_CONVERTERS } from './convert-extra';
import { MATH_CONVERTERS } from './convert-math';
import { decodeModel, type Dimension, type GraphMessage, type ModelMessage, type NodeMessage, type ValueInfo } from './schema';
import { checkedDims, dataTypeName, OnnxFormatError, type StaticTensor } from './tensor';
import { declaredTypes, inferOutputTypes, isInputOf, keepsValues } from './narrow';
import { floatTensor, intTensor } from './static';
import type { DType } from '../../ir/expr';
import { numElements } from '../../ir/tensor';

export const MIN_OPSET = 7;
/** The newest opset of the pinned onnx package (1.23). */
export const MAX_OPSET = 28;

/** If: converted by convertIf, which needs the node's branch graphs (listed here for the attributes and the operator table). */
const IF: Converter = { attrs: ['then_branch', 'else_branch'], convert: () => { throw new Error('If is converted by convertIf'); } };

/** The converter of each ONNX operator (scripts/onnx-operators.ts writes docs/onnx-operators.md from it). */
export const CONVERTERS: Record<string, Converter> = {
  ...TENSOR_CONVERTERS, ...NN_CONVERTERS, ...REDUCE_CONVERTERS, ...NORMALIZATION_CONVERTERS, ...LOGIC_CONVERTERS, ...INDEXING_CONVERTERS, ...RNN_CONVERTERS, ...QUANTIZE_CONVERTERS, ...EXTRA_CONVERTERS, ...MATH_CONVERTERS, If: IF,
};

/** The ONNX operators the importer converts. */
export const SUPPORTED_OPS: readonly string[] = Object.keys(CONVERTERS).sort();

/** A shape for one graph input: by name, or (unnamed) by position. */
export interface InputShape { readonly name?: string; readonly shape: readonly number[] }

export interface OnnxImportOptions {
  /** Size of a symbolic first input dimension (default 1). A fixed first dimension is kept; a batch other than 1 for a model whose inputs all fix theirs is refused. */
  batch?: number;
  /** Shapes of the inputs (all named, or all by position): they fix symbolic dimensions; a fixed dimension must match. */
  inputShapes?: readonly InputShape[];
  /** Graph inputs bound to constant values (TVM's freeze_params): each is read as an initializer would be, and is no longer a model input. */
  constantInputs?: ReadonlyMap<string, StaticTensor>;
}

export interface OnnxModel {
  /** The graph, in the model's own (NCHW) layout. */
  graph: Graph;
  /** `dtype`: the type an input runs as (an int64 input as int32, a float16 one as float32). */
  inputs: { name: string; shape: number[]; dtype: DType }[];
  /** The model's output names, in graph.outputs order. */
  outputs: string[];
  /**
   * The ONNX element type each input and output declares ('FLOAT', 'FLOAT16', 'INT64', ...;
   * `data type <n>` where the file leaves it unset or uses a number we do not name), in
   * `inputs` and `outputs` order: what the values are, beside the type they run as.
   */
  onnxTypes: { inputs: string[]; outputs: string[] };
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

/** The element type an ONNX input type runs as (as any value of it does), or undefined when we cannot run it. */
const inputDtype = (elemType: number | undefined): DType | undefined => (elemType === undefined ? undefined : runType(elemType));

const showShape = (s: readonly (number | string)[]): string => `[${s.join(', ')}]`;

/** The shape of graph input `vi` (position `index`): its fixed dims, symbolic ones from `given` or the batch. */
function inputShape(vi: ValueInfo, index: number, file: string, opts: OnnxImportOptions): { shape: number[]; symbolicBatch: boolean } {
  const name = vi.name ?? '';
  const tt = vi.type?.tensor_type;
  if (!tt) throw new UserError(`${file}: graph input '${name}' is not a tensor`);
  if (!inputDtype(tt.elem_type)) {
    throw new UserError(`${file}: graph input '${name}' is ${dataTypeName(tt.elem_type)}; supported input types: FLOAT, FLOAT16, BFLOAT16, DOUBLE and the float8/float4 types (run as float32), the integer types (run as int32) and BOOL`);
  }
  const given = opts.inputShapes?.find((s, i) => (s.name === undefined ? i === index : s.name === name))?.shape;
  const declared = tt.shape?.dim;
  if (!declared && !given) throw new UserError(`${file}: graph input '${name}' has no shape (give one with --input-shapes ${name}:[...])`);
  const dims = (declared ?? given!.map((d): Dimension => ({ dim_value: d }))).map((d) => (d.dim_value !== undefined && !(d.dim_value === 0 && d.dim_param) ? d.dim_value : d.dim_param || '?'));
  if (given && given.length !== dims.length) {
    throw new UserError(`${file}: graph input '${name}' has rank ${dims.length} ${showShape(dims)}; the shape given for it, ${showShape(given)}, has rank ${given.length}`);
  }
  let symbolicBatch = false;
  const shape = dims.map((d, i) => {
    if (typeof d === 'number') {
      if (given && given[i] !== d) throw new UserError(`${file}: graph input '${name}' is ${showShape(dims)}; the shape given for it, ${showShape(given)}, differs in dimension ${i}`);
      return d;
    }
    if (given) return given[i];
    if (i === 0) { symbolicBatch = true; return opts.batch ?? 1; }
    throw new UserError(`${file}: graph input '${name}' ${showShape(dims)} has a symbolic dimension ${i} ('${d}'); fix it with --input-shapes ${name}:[${dims.map((x, k) => (typeof x === 'number' ? x : k === 0 ? (opts.batch ?? 1) : `<${x}>`)).join(',')}], a number for each <dimension> (in Nx: the network's inputs)`);
  });
  try {
    checkedDims(shape, `graph input '${name}'`);
  } catch (e) {
    throw new UserError(`${file}: ${messageOf(e)}`);
  }
  return { shape, symbolicBatch };
}

/** The value bound to graph input `vi` by constantInputs, checked against the input's declared type and shape. */
function frozenInput(vi: ValueInfo, t: StaticTensor, file: string): StaticTensor {
  const name = vi.name ?? '', tt = vi.type?.tensor_type;
  const dtype = inputDtype(tt?.elem_type);
  if (!tt || !dtype) throw new UserError(`${file}: graph input '${name}' is ${tt ? dataTypeName(tt.elem_type) : 'not a tensor'}; it cannot be bound to a constant`);
  if ((t.type === 'float') !== (dtype === 'float32')) throw new UserError(`${file}: graph input '${name}' is ${dataTypeName(tt.elem_type)}; the constant bound to it holds ${t.type === 'float' ? 'floats' : 'integers'}`);
  // A declared dimension is fixed as inputShape reads it (a dim_value, not 0 beside a dim_param); symbolic ones take the constant's.
  const dims = (tt.shape?.dim ?? []).map((d) => (d.dim_value !== undefined && !(d.dim_value === 0 && d.dim_param) ? d.dim_value : d.dim_param || '?'));
  const fits = !tt.shape?.dim || (dims.length === t.shape.length && dims.every((d, i) => typeof d !== 'number' || d === t.shape[i]));
  if (!fits || t.data.length !== t.shape.reduce((a, d) => a * d, 1)) {
    throw new UserError(`${file}: the constant bound to graph input '${name}' has shape ${showShape(t.shape)} (${t.data.length} values); the input is ${showShape(dims)}`);
  }
  if (tt.elem_type !== undefined) ONNX_ELEMENT_TYPE.set(t, tt.elem_type);
  return t;
}

/**
 * A value name defined a second time. ONNX graphs are in SSA form (onnx.checker refuses a
 * second definition, in a subgraph too when the first is in an enclosing graph), and which
 * definition would win is not the file's to leave open: the whole import stops, in one line,
 * even from inside a branch, where other errors only make the If node unsupported.
 */
class DuplicateValueError extends UserError {}

const defineOnce = (file: string, name: string, by: string): DuplicateValueError =>
  new DuplicateValueError(`${file}: value '${name}' is defined twice (again by ${by}); ONNX requires each value name to be defined once`);

/**
 * Convert the nodes of `g`; returns the issues (unsupported nodes and broken ones).
 * `scope`: where `g` is, for messages (`then_branch of If 'y'`); absent for the main graph.
 */
function convertNodes(g: GraphMessage, cx: ImportContext, opset: number, issues: Issues, scope?: string): void {
  const poisoned = new Set<string>();
  const declared = declaredTypes(g);
  for (const msg of g.node ?? []) {
    const n = new NodeView(msg, opset, cx);
    const label = `${n.opType || '(no op_type)'} '${n.name}'`;
    const again = n.outputs.find((o, i) => o && (cx.has(o) || poisoned.has(o) || n.outputs.indexOf(o) !== i));
    if (again) throw defineOnce(cx.fileName, again, scope ? `${label} in the ${scope}` : label);
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
      refuseNonFloat(n);
      outs = converter === IF ? convertIf(msg, n, cx, opset, scope ? `${label} in the ${scope}` : label) : converter.convert(n);
    } catch (e) {
      if (e instanceof DuplicateValueError) throw e;
      fail(e instanceof UnsupportedError ? `unsupported: ${e.message}` : messageOf(e));
      continue;
    }
    const isFloat = (i: number): boolean => !!n.inputs[i] && cx.has(n.inputs[i]) && cx.dtypeOf(cx.value(n.inputs[i])) === 'float32';
    const inferred = inferOutputTypes(msg, (name) => cx.onnxType(name), isFloat);
    const keeps = keepsValues(n);
    n.outputs.forEach((o, i) => {
      const v = outs[i];
      if (!o) return;
      if (!v) {
        fail(`output ${i} ('${o}') is not produced by the importer`);
        return;
      }
      const type = declared.get(o) ?? inferred[i];
      // If's outputs are its branches' nodes' outputs.
      const exact = n.opType === 'If' || castRounded(cx, n, v, type) || (keeps && inferred[i] === type);
      cx.set(o, exact ? v : narrowed(cx, n, v, type));
      cx.setOnnxType(o, type);
    });
  }
}

type FloatStatic = Extract<StaticTensor, { type: 'float' }>;

/**
 * Whether output `v` of a Cast or CastLike is already its target type's value: Cast rounds
 * to its target itself (saturate=0 too, which a second, saturating rounding would undo),
 * and so does CastLike where it knows its second input's ONNX type (a tensor of the file,
 * a graph input); else it casts to float32 and the result is rounded here.
 */
function castRounded(cx: ImportContext, n: NodeView, v: Value, type: number | undefined): boolean {
  if (n.opType === 'Cast') return true;
  const op = roundingOf(type)?.op;
  if (n.opType !== 'CastLike' || !op) return false;
  if (v.kind === 'node') {
    // The type's rounding, or its saturate=0 form (round_<type>_nosat).
    const node = cx.graph.node(v.id);
    return isOpNode(node) && (node.op === op || node.op === `${op}_nosat`);
  }
  const like = n.optional(1);
  return like?.kind === 'static' && ONNX_ELEMENT_TYPE.get(like.t) !== undefined;
}

/**
 * Output `v` of node `n`, of ONNX type `type`: a float16 or bfloat16 value is rounded to its
 * type (narrow.ts), unless it already is a rounding to it or an input of that type passed
 * through. Static values are rounded here.
 */
function narrowed(cx: ImportContext, n: NodeView, v: Value, type: number | undefined): Value {
  const round = roundingOf(type);
  if (!round || cx.dtypeOf(v) !== 'float32' || isInputOf(n, v, type!)) return v;
  if (v.kind === 'static') return staticValue(roundedStatic(v.t as FloatStatic, round));
  const id = cx.nodeOf(v), node = cx.graph.node(id);
  if (isOpNode(node) && node.op === round.op) return v;
  return nodeValue(cx.graph.op(round.op, [id], {}, `${n.name}_${round.op}`));
}

/**
 * ONNX If whose condition is known at import (a constant, or folded from shapes): the taken
 * branch's nodes are converted into this graph (they may read the outer graph's values),
 * and its outputs are the If's. A computed condition is refused.
 */
/**
 * If. A condition known at import inlines the branch it takes. A computed one (silero VAD's
 * `sr == 16000`) converts both branches and selects each output with where(cond, then, else),
 * which needs both branches to give the same shapes and types; both are computed at run time
 * (a branch has no side effects, and its reads are bounded as every kernel's are).
 */
function convertIf(msg: NodeMessage, n: NodeView, cx: ImportContext, opset: number, label: string): Value[] {
  const cond = n.input(0, 'cond');
  const branchOf = (which: 'then_branch' | 'else_branch'): Value[] => {
    const branch = msg.attribute?.find((a) => a.name === which)?.g as GraphMessage | undefined;
    if (!branch) throw new OnnxFormatError(`If has no ${which}`);
    const scope = `${which} of ${label}`;
    const outer = cx.definedNames();
    // A branch initializer may shadow an outer value (onnx.checker allows it): inside the
    // branch the name means the initializer, after it the outer value again.
    const shadowed = new Map<string, { v: Value; type: number | undefined }>();
    try {
      const own = new Set<string>();
      for (const t of branch.initializer ?? []) {
        const name = t.name ?? '';
        if (own.has(name)) throw defineOnce(cx.fileName, name, `an initializer of the ${scope}`);
        own.add(name);
        if (cx.has(name)) shadowed.set(name, { v: cx.value(name), type: cx.onnxType(name) });
        cx.set(name, staticValue(protoTensor(t, cx.modelDir, `initializer '${name}' of ${which}`)));
        cx.setOnnxType(name, t.data_type);
      }
      const inner = new Issues();
      convertNodes(branch, cx, opset, inner, scope);
      if (inner.lines.length) throw new UnsupportedError(`in its ${which}: ${inner.lines.join('; ')}`);
      const outs = (branch.output ?? []).map((o) => cx.value(o.name ?? ''));
      if (outs.length !== n.outputs.length) throw new Error(`If: ${which} has ${outs.length} outputs, the node ${n.outputs.length}`);
      return outs;
    } finally {
      cx.leaveScope(outer);
      for (const [name, { v, type }] of shadowed) {
        cx.set(name, v);
        cx.setOnnxType(name, type);
      }
    }
  };
  if (cond.kind === 'static') {
    if (cond.t.data.length !== 1) throw new Error(`If: the condition has ${cond.t.data.length} elements`);
    return branchOf(cond.t.data[0] ? 'then_branch' : 'else_branch');
  }
  if (numElements(cx.shapeOf(cond)) !== 1) throw new Error(`If: the condition has shape [${cx.shapeOf(cond).join(', ')}], not one element`);
  const thens = branchOf('then_branch'), elses = branchOf('else_branch');
  const zero = (): number => cx.graph.constant(`${n.name}_zero`, [], cx.dtypeOf(cond) === 'float32' ? new Float32Array(1) : new Int32Array(1));
  const c = cx.dtypeOf(cond) === 'bool' ? cond : n.op('not_equal', [cx.nodeOf(cond), zero()], {}, '_cond');
  return thens.map((t, k) => {
    const [st, se] = [cx.shapeOf(t), cx.shapeOf(elses[k])];
    if (st.length !== se.length || st.some((d, i) => d !== se[i]) || cx.dtypeOf(t) !== cx.dtypeOf(elses[k])) {
      throw new UnsupportedError(`If with a computed condition whose branches give output ${k} as ${cx.dtypeOf(t)} [${st.join(', ')}] and ${cx.dtypeOf(elses[k])} [${se.join(', ')}] (both branches must agree to be selected at run time)`);
    }
    return n.op('where', [cx.nodeOf(c), cx.nodeOf(t), cx.nodeOf(elses[k])], {}, `_select${k}`);
  });
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
  const cx = new ImportContext(path.dirname(path.resolve(file)), file);
  const issues = new Issues();

  const initializerNames = new Set<string>();
  for (const t of g.initializer ?? []) {
    const name = t.name ?? '';
    if (initializerNames.has(name)) throw defineOnce(file, name, `a second initializer '${name}'`);
    initializerNames.add(name);
    try {
      cx.set(name, staticValue(protoTensor(t, cx.modelDir, `initializer '${name}'`)));
      cx.setOnnxType(name, t.data_type);
    } catch (e) {
      throw new UserError(`${file}: ${messageOf(e)}`);
    }
  }
  const inputs: OnnxModel['inputs'] = [];
  const graphInputs = (g.input ?? []).filter((vi) => !initializerNames.has(vi.name ?? '')); // IR < 4 lists initializers as inputs too
  const named = opts.inputShapes?.filter((s) => s.name !== undefined) ?? [];
  for (const s of named) {
    if (!graphInputs.some((vi) => vi.name === s.name)) throw new UserError(`${file}: a shape is given for input '${s.name}', which the graph does not have (its inputs: ${graphInputs.map((vi) => vi.name ?? '').join(', ')})`);
  }
  if (opts.inputShapes && named.length === 0 && opts.inputShapes.length !== graphInputs.length) {
    throw new UserError(`${file}: ${opts.inputShapes.length} input shape(s) given by position; the graph has ${graphInputs.length} input(s): ${graphInputs.map((vi) => vi.name ?? '').join(', ')}`);
  }
  for (const name of opts.constantInputs?.keys() ?? []) {
    if (!graphInputs.some((vi) => vi.name === name)) throw new UserError(`${file}: a constant is given for input '${name}', which the graph does not have (its inputs: ${graphInputs.map((vi) => vi.name ?? '').join(', ')})`);
  }
  let symbolicBatch = false;
  const emptyInputs: string[] = [];
  for (const [index, vi] of graphInputs.entries()) {
    const name = vi.name ?? '';
    if (cx.has(name)) throw new UserError(`${file}: graph input '${name}' is listed twice`);
    const elemType = vi.type?.tensor_type?.elem_type;
    cx.setOnnxType(name, elemType);
    const round = roundingOf(elemType);
    const frozen = opts.constantInputs?.get(name);
    if (frozen) {
      // A constant bound to a float16 / bfloat16 input holds values of its type, as a fed one does.
      const t = frozenInput(vi, frozen, file);
      if (!round || t.type !== 'float') cx.set(name, staticValue(t));
      else {
        const narrow = roundedStatic(t, round);
        ONNX_ELEMENT_TYPE.set(narrow, elemType!);
        cx.set(name, staticValue(narrow));
      }
      continue;
    }
    const { shape, symbolicBatch: sym } = inputShape(vi, index, file, opts);
    symbolicBatch ||= sym;
    const dtype = inputDtype(elemType)!;
    if (shape.some((d) => d === 0)) {
      // An input with an empty dimension has one possible value, the empty tensor: it is that
      // constant (CastLike's `like` gives only its type), not an input of the model.
      const empty = dtype === 'float32' ? floatTensor(shape, new Float32Array(0)) : intTensor(shape, []);
      if (elemType !== undefined) ONNX_ELEMENT_TYPE.set(empty, elemType);
      cx.set(name, staticValue(empty));
      emptyInputs.push(name);
      continue;
    }
    const id = cx.graph.input(name, shape, dtype);
    // A float16 or bfloat16 input is fed as float32 words, which need not be values of its
    // type: it is rounded to the type on entry, as every value of the type is.
    cx.set(name, nodeValue(round ? cx.graph.op(round.op, [id], {}, `${name}_${round.op}`) : id));
    const types = ONNX_INPUT_TYPE.get(cx.graph) ?? new Map<number, number>();
    ONNX_INPUT_TYPE.set(cx.graph, types.set(id, elemType ?? 0));
    inputs.push({ name, shape, dtype });
  }
  if (inputs.length === 0) {
    const why = emptyInputs.length ? ` left (${emptyInputs.map((e) => `'${e}'`).join(', ')} ${emptyInputs.length > 1 ? 'are' : 'is'} empty, the others bound to constants)` : graphInputs.length ? ' left (every one is bound to a constant)' : '';
    throw new UserError(`${file}: the graph has no (non-initializer) inputs${why}`);
  }
  if (opts.batch !== undefined && opts.batch !== 1 && !symbolicBatch && !opts.inputShapes) {
    const first = inputs.find((i) => i.shape.length > 0);
    throw new UserError(`${file}: graph input '${first?.name ?? inputs[0].name}' has a fixed batch of ${first?.shape[0] ?? 1}, cannot use batch ${opts.batch} (no input has a symbolic first dimension)`);
  }

  convertNodes(g, cx, opset, issues);

  const outputs = (g.output ?? []).map((o) => o.name ?? '');
  if (issues.lines.length === 0) {
    for (const o of outputs) if (!cx.has(o)) issues.add(`graph output '${o}' is not computed by any node`);
  }
  if (issues.lines.length) {
    throw new UserError(`${file}: cannot import ${issues.lines.length} node(s) (opset ${opset}; supported operators: ${SUPPORTED_OPS.join(', ')}):\n${issues.lines.map((l) => `  - ${l}`).join('\n')}`);
  }
  const outputTypes = (g.output ?? []).map((o) => o.type?.tensor_type?.elem_type);
  cx.graph.outputs = outputs.map((o, i) => narrowOutput(cx, o, outputTypes[i]));
  const declaredInputs = inputs.map((inp) => dataTypeName(graphInputs.find((vi) => vi.name === inp.name)?.type?.tensor_type?.elem_type));
  return { graph: cx.graph, inputs, outputs, opset, onnxTypes: { inputs: declaredInputs, outputs: outputTypes.map(dataTypeName) } };
}

/**
 * The node of graph output `name`, declared `elemType`: a float16 or bfloat16 output is a
 * value of its type (the model returns its declared type's values). Its producer rounded it
 * (the declared type is its type), unless it is a graph input or an initializer of another
 * type; only such a one is rounded here.
 */
function narrowOutput(cx: ImportContext, name: string, elemType: number | undefined): number {
  const id = cx.nodeOf(cx.value(name));
  const op = roundingOf(elemType)?.op;
  const node = cx.graph.node(id);
  if (!op || cx.onnxType(name) === elemType || node.dtype !== 'float32' || (isOpNode(node) && node.op === op)) return id;
  return cx.graph.op(op, [id], {}, `${name}_as_${dataTypeName(elemType).toLowerCase()}`);
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
    bytes = readRegularFileSync(file, modelLimit()); // a FIFO or a device is refused before a byte is read
  } catch (e) {
    if (e instanceof UserError) throw e;
    throw new UserError(`${file}: cannot read the ONNX model (${(e as NodeJS.ErrnoException).code ?? messageOf(e)})`);
  }
  const model = importOnnx(bytes, file, opts);
  const layout = opts.layout ?? 'NHWC';
  const graph = layout === 'NCHW' ? model.graph : cancelTransposes(convertLayout(model.graph, layout));
  return { ...model, graph };
}
