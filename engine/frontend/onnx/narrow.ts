// The ONNX element type of every value, and the rounding of float16 and bfloat16 values.
//
// float16 and bfloat16 run as float32 (import.ts). A model whose values are of either type
// computes each operator's result in that type, as ONNX Runtime's kernels, a GPU and numpy
// do: so the importer rounds each operator's float output whose ONNX type is FLOAT16 or
// BFLOAT16 to that type (round_f16 / round_bf16, an injective op that fuses into its
// producer). Inside an operator, a narrow-typed operator rounds the intermediates that
// ONNX's reference implementation stores in its type (numpy on float16 / ml_dtypes bfloat16
// arrays), in the reference's order: Softmax and LogSoftmax round the shifted values, their
// exponentials, the sum and the quotient (topi/narrow-softmax.ts); Attention rounds the
// square root of its scale, the scaled Q and K, their product, the softcap's steps, the
// biased scores and its softmax's steps (convert-extra.ts). A sum or a product's
// accumulation (MatMul, Gemm, Conv, the float16 Softmax's sum) stays float32 and is rounded
// once, as numpy's float16 sums and matmuls and ml_dtypes' bfloat16 matmuls accumulate; the
// bfloat16 Softmax's sum rounds each partial sum in axis order, as ml_dtypes' bfloat16 sum
// does (the ordered combiner sum_bf16, ir/ordered.ts; docs/onnx.md). The other operators
// (LayerNormalization, the pools, ...) compute inside in float32.
//
// A value's ONNX type is what the graph declares for it (value_info, the graph's outputs
// and inputs, initializers), else what its operator gives: Cast's `to`, CastLike's second
// input, a Constant's tensor, a `dtype`/`output_dtype`/`stash_type` attribute, and for the
// other operators the type of their (first) float input (ONNX's type-preserving rule).
//
// An output whose values are already of the type is not rounded again: a rounding (Cast),
// an input passed through unchanged, and the outputs of the operators that only move,
// select or compare values of their input (Reshape, Gather, MaxPool, Relu, ...), which stay
// values of its type. A float32 model has no such types, and nothing in it is rounded.

import { DataType, type GraphMessage, type NodeMessage } from './schema';
import type { NodeView, Value } from './context';
import type { NarrowFloat } from '../../topi/narrow-softmax';
export { NARROW_ROUNDING } from '../../topi/narrow-softmax';

/** The element types a graph declares for its values: value_info, inputs and outputs (a known type only). */
export function declaredTypes(g: GraphMessage): Map<string, number> {
  const types = new Map<string, number>();
  for (const vi of [...(g.value_info ?? []), ...(g.input ?? []), ...(g.output ?? [])]) {
    const t = vi.type?.tensor_type?.elem_type;
    if (vi.name && t) types.set(vi.name, t);
  }
  return types;
}

/**
 * Operators whose float outputs are values of their data input (moved, selected, negated,
 * or an integer or 0/1 of a rounded input), or constants decoded from their type's
 * encoding: of a narrow type, they are values of that type and need no rounding. Pad,
 * Clip and Resize have conditions (keepsValues).
 */
const KEEPS_VALUES = new Set([
  'Identity', 'Reshape', 'Flatten', 'Squeeze', 'Unsqueeze', 'Transpose', 'Expand', 'Tile', 'Concat', 'Split', 'Slice',
  'Gather', 'GatherElements', 'GatherND', 'Compress', 'DepthToSpace', 'SpaceToDepth', 'ReverseSequence', 'Trilu', 'CenterCropPad',
  'Where', 'Max', 'Min', 'ReduceMax', 'ReduceMin', 'MaxPool', 'GlobalMaxPool', 'MaxUnpool', 'TopK', 'Unique',
  'Relu', 'Neg', 'Abs', 'Sign', 'Floor', 'Ceil', 'Round', 'Hardmax', 'ThresholdedRelu', 'Dropout',
  'Constant', 'ConstantOfShape', 'EyeLike', 'Cast', 'If',
]);

/** Scatter-family reductions that keep values (none selects the updates, max/min one of two). */
const SELECTING_REDUCTIONS = new Set(['none', 'max', 'min']);

/**
 * Whether node `n`'s float outputs are values of its inputs' type (see KEEPS_VALUES). Cast
 * rounds to its target itself; If's outputs are its branches' (rounded by their nodes).
 */
export function keepsValues(n: NodeView): boolean {
  switch (n.opType) {
    case 'Scatter': return true;
    case 'ScatterElements': case 'ScatterND': return SELECTING_REDUCTIONS.has(n.attr.string('reduction', 'none'));
    // Before opset 11 the pad value and the bounds are float attributes, not values of the type.
    case 'Pad': return n.opset >= 11 || n.attr.float('value', 0) === 0;
    case 'Clip': return n.opset >= 11;
    case 'Resize': case 'Upsample': return n.attr.string('mode', 'nearest') === 'nearest';
    default: return KEEPS_VALUES.has(n.opType);
  }
}

const attrOf = (msg: NodeMessage, name: string) => msg.attribute?.find((a) => a.name === name);

/** An integer attribute's value, or undefined when absent or zero (ONNX's "unset" for a type). */
function typeAttr(msg: NodeMessage, name: string): number | undefined {
  const a = attrOf(msg, name);
  return a && a.i ? Number(a.i) : undefined;
}

/** The data type of Constant's value attribute. */
function constantType(msg: NodeMessage): number | undefined {
  for (const a of msg.attribute ?? []) {
    switch (a.name) {
      case 'value': return a.t?.data_type;
      case 'value_float': case 'value_floats': return DataType.FLOAT;
      case 'value_int': case 'value_ints': return DataType.INT64;
      default:
    }
  }
  return undefined;
}

/**
 * The ONNX element type of each output of node `msg` (undefined where not known), from
 * its operator and its inputs' types (`typeOf`); `isFloat(i)`: input i runs as float32.
 */
export function inferOutputTypes(msg: NodeMessage, typeOf: (name: string) => number | undefined, isFloat: (i: number) => boolean): (number | undefined)[] {
  const inputs = msg.input ?? [], outputs = msg.output ?? [];
  const input = (i: number): number | undefined => (inputs[i] ? typeOf(inputs[i]) : undefined);
  const firstFloat = (): number | undefined => {
    for (let i = 0; i < inputs.length; i++) {
      if (!inputs[i] || !isFloat(i)) continue;
      const t = typeOf(inputs[i]);
      if (t !== undefined) return t;
    }
    return undefined;
  };
  const all = (t: number | undefined): (number | undefined)[] => outputs.map(() => t);
  switch (msg.op_type) {
    case 'Cast': return all(typeAttr(msg, 'to'));
    case 'CastLike': return all(input(1));
    case 'Constant': return all(constantType(msg));
    case 'ConstantOfShape': return all(attrOf(msg, 'value')?.t?.data_type ?? DataType.FLOAT);
    case 'RandomNormal': case 'RandomUniform': return all(typeAttr(msg, 'dtype') ?? DataType.FLOAT);
    case 'EyeLike': case 'RandomNormalLike': case 'RandomUniformLike': case 'Bernoulli': return all(typeAttr(msg, 'dtype') ?? input(0));
    case 'DequantizeLinear': return all(typeAttr(msg, 'output_dtype') ?? input(1));
    case 'QuantizeLinear': return all(typeAttr(msg, 'output_dtype') ?? input(2) ?? DataType.UINT8);
    case 'OneHot': return all(input(2));
    case 'RMSNormalization': return all(input(1));
    case 'LayerNormalization': return outputs.map((_, i) => (i === 0 ? input(0) : typeAttr(msg, 'stash_type') ?? DataType.FLOAT));
    case 'BatchNormalization': return outputs.map((_, i) => (i === 0 ? input(0) : input(3)));
    case 'Attention': return outputs.map((_, i) => (i === 1 ? input(1) : i === 2 ? input(2) : input(0)));
    case 'If': {
      // What the branches declare for their outputs.
      const branch = (which: string): GraphMessage | undefined => attrOf(msg, which)?.g as GraphMessage | undefined;
      const declared = (k: number): number | undefined => branch('then_branch')?.output?.[k]?.type?.tensor_type?.elem_type || branch('else_branch')?.output?.[k]?.type?.tensor_type?.elem_type || undefined;
      return outputs.map((_, k) => declared(k));
    }
    default: return all(firstFloat());
  }
}

/** Whether value `v` is an input of `n` of ONNX type `type`, passed through. */
export function isInputOf(n: NodeView, v: Value, type: number): boolean {
  return n.inputs.some((name, i) => {
    if (!name || n.onnxType(i) !== type) return false;
    const u = n.input(i);
    return u.kind === 'node' ? v.kind === 'node' && v.id === u.id : v.kind === 'static' && v.t === u.t;
  });
}

/** The float16 or bfloat16 type an ONNX element type is, for the operators that compute in it; undefined for any other type (float32 too). */
export function narrowFloat(type: number | undefined): NarrowFloat | undefined {
  return type === DataType.FLOAT16 ? 'float16' : type === DataType.BFLOAT16 ? 'bfloat16' : undefined;
}
