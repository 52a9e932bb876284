// Converters of ONNX's comparisons and logic (Equal, Less, LessOrEqual, Greater,
// GreaterOrEqual, Not, And, Or, Xor), Where, Cast, CastLike and Mod, onto the computes of
// topi/logic.ts. Integer types run as int32 and bool as bool (0/1 in int32); when every
// input is known at import time the node is folded here (so shape arithmetic such as
// Equal -> Where over a Shape stays static): the elementwise ones in JS numbers, which keep
// int64 values past int32 exact, the others by the reference evaluator on their compute.
//
// Also `refuseNonFloat`: the float-only converters (Conv, Relu, Softmax, ...) would build
// float arithmetic over an int32 or bool tensor; the importer asks it first, and such a
// node is refused in one line instead.

import type { Attrs } from '../../graph/ops';
import { evalOp } from '../../graph/run';
import type { DType } from '../../ir/expr';
import { numElements, rowMajorStrides } from '../../ir/tensor';
import { broadcastShape } from '../../topi/elemwise';
import { ONNX_ELEMENT_TYPE, ONNX_INPUT_TYPE, UnsupportedError, nodeValue, staticValue, type NodeView, type Value } from './context';
import type { Converter } from './convert-tensor';
import { floatTensor, intTensor } from './static';
import { DataType } from './schema';
import { constantData, dataTypeName, MINI_FLOAT_TYPES, type StaticTensor } from './tensor';
import { roundBfloat16, roundFloat16 } from '../../ir/half';
import { miniFloatFn, roundMiniFloat } from '../../ir/float8';
import type { MiniFloatFn } from '../../ir/nodes';

/** 'an int32', 'a float32', 'a bool'. */
const article = (t: DType): string => `${t === 'int32' ? 'an' : 'a'} ${t}`;

const isStatic = (v: Value): v is Extract<Value, { kind: 'static' }> => v.kind === 'static';

/** Largest result folded at import: integer statics are JS number arrays, so bigger ones stay graph nodes. */
const MAX_FOLDED = 1 << 16;

/** A static tensor from our data (an int32 result as integers, a bool one marked bool). */
export function staticFrom(shape: readonly number[], dtype: DType, data: Float32Array | Int32Array): StaticTensor {
  if (dtype === 'float32') return floatTensor(shape, data as Float32Array);
  const ints = intTensor(shape, Array.from(data));
  return dtype === 'bool' ? { ...ints, bool: true } as StaticTensor : ints;
}

/**
 * Graph op `op` over `values`: evaluated now when every input is static and the result is
 * small (MAX_FOLDED elements), else a node of the graph (static inputs become constants).
 */
export function applyOp(n: NodeView, op: string, values: readonly Value[], attrs: Attrs, suffix = ''): Value {
  if (values.every(isStatic)) {
    const consts = values.map((v) => ({ shape: v.t.shape, ...constantData(v.t, `${n.opType} '${n.name}'`) }));
    const inElements = consts.reduce((acc, c) => acc + c.data.length, 0);
    if (inElements <= 4 * MAX_FOLDED) {
      const out = evalOp({ op, attrs }, consts);
      if (numElements(out.shape) <= MAX_FOLDED) return staticValue(staticFrom(out.shape, out.dtype, out.data));
    }
  }
  // A node input keeps its one graph constant (an initializer read twice is stored once).
  const ids = values.map((v, i) => {
    const k = n.inputs.findIndex((name, j) => name && n.optional(j) === v);
    return k >= 0 ? n.node(k) : n.nodeOf(v, `_in${i}`);
  });
  return n.op(op, ids, attrs, suffix);
}

/**
 * A broadcasting elementwise op of static tensors folded in JS numbers (so int64 values past
 * int32, such as INT64_MAX slice ends, stay exact), or undefined when an input is computed
 * or the result is big. `f` gets one element per input; the result has type `out`.
 */
function foldElementwise(values: readonly Value[], out: DType, f: (...x: number[]) => number): Value | undefined {
  if (!values.every(isStatic)) return undefined;
  const ts = values.map((v) => (v as Extract<Value, { kind: 'static' }>).t);
  const shape = ts.reduce((acc: number[], t) => broadcastShape(acc, t.shape), []);
  const count = numElements(shape);
  if (count > MAX_FOLDED) return undefined;
  const os = rowMajorStrides(shape);
  const index = ts.map((t) => {
    const st = rowMajorStrides(t.shape), off = shape.length - t.shape.length;
    return (o: number): number => {
      let k = 0;
      for (let d = 0; d < t.shape.length; d++) if (t.shape[d] !== 1) k += (Math.floor(o / os[d + off]) % shape[d + off]) * st[d];
      return k;
    };
  });
  const data = Array.from({ length: count }, (_, o) => f(...ts.map((t, i) => t.data[index[i](o)])));
  if (out === 'float32') return staticValue(floatTensor(shape, Float32Array.from(data)));
  return staticValue(out === 'bool' ? { ...intTensor(shape, data), bool: true } as StaticTensor : intTensor(shape, data));
}

const COMPARE: Record<string, (a: number, b: number) => boolean> = {
  equal: (a, b) => a === b, less: (a, b) => a < b, less_equal: (a, b) => a <= b, greater: (a, b) => a > b, greater_equal: (a, b) => a >= b,
};

/**
 * The element type an ONNX data type runs as here, or undefined (strings, complex, float8e8m0...).
 * float16, bfloat16, float64 and the 8/4-bit floats run as float32, as the integer types run as int32.
 */
export function runType(t: number): DType | undefined {
  switch (t) {
    case DataType.FLOAT: case DataType.DOUBLE: case DataType.FLOAT16: case DataType.BFLOAT16:
    case DataType.FLOAT8E4M3FN: case DataType.FLOAT8E4M3FNUZ: case DataType.FLOAT8E5M2: case DataType.FLOAT8E5M2FNUZ: case DataType.FLOAT4E2M1:
      return 'float32';
    case DataType.BOOL: return 'bool';
    case DataType.INT64: case DataType.INT32: case DataType.INT16: case DataType.INT8:
    case DataType.UINT32: case DataType.UINT16: case DataType.UINT8: case DataType.UINT64:
    case DataType.INT4: case DataType.UINT4: case DataType.INT2: case DataType.UINT2:
      return 'int32';
    default: return undefined;
  }
}

/** The two operands of a binary logic/compare op, the same dtype (ONNX requires one type T). */
function sameType(n: NodeView): void {
  const a = n.dtype(0), b = n.dtype(1);
  if (a !== b) throw new Error(`operands of different types (${a} and ${b})`);
}

function compare(op: string): Converter {
  return {
    attrs: [],
    convert(n) {
      sameType(n);
      const values = [n.input(0), n.input(1)];
      return [foldElementwise(values, 'bool', (a, b) => (COMPARE[op](a, b) ? 1 : 0)) ?? applyOp(n, op, values, {})];
    },
  };
}

function logical(op: string): Converter {
  return {
    attrs: [],
    convert(n) {
      for (const i of [0, 1]) if (n.dtype(i) !== 'bool') throw new UnsupportedError(`${n.opType} of ${article(n.dtype(i))} tensor (ONNX defines it on bool)`);
      const values = [n.input(0), n.input(1)];
      const f = op === 'logical_and' ? (a: number, b: number) => a && b : op === 'logical_or' ? (a: number, b: number) => a || b : (a: number, b: number) => (a ? 1 : 0) ^ (b ? 1 : 0);
      return [foldElementwise(values, 'bool', (a, b) => (f(a, b) ? 1 : 0)) ?? applyOp(n, op, values, {})];
    },
  };
}

const not: Converter = {
  attrs: [],
  convert(n) {
    if (n.dtype(0) !== 'bool') throw new UnsupportedError(`Not of ${article(n.dtype(0))} tensor (ONNX defines it on bool)`);
    return [foldElementwise([n.input(0)], 'bool', (a) => (a ? 0 : 1)) ?? applyOp(n, 'logical_not', [n.input(0)], {})];
  },
};

const where: Converter = {
  attrs: [],
  convert(n) {
    if (n.dtype(0) !== 'bool') throw new Error(`Where: the condition is ${n.dtype(0)}, not bool`);
    if (n.dtype(1) !== n.dtype(2)) throw new Error(`Where: X is ${n.dtype(1)} and Y ${n.dtype(2)}`);
    const values = [n.input(0), n.input(1), n.input(2)];
    return [foldElementwise(values, n.dtype(1), (c, x, y) => (c ? x : y)) ?? applyOp(n, 'where', values, {})];
  },
};

/** Elements above which a static integer cast result is made a graph constant directly. */
const MAX_STATIC_CAST = 1 << 20;

/**
 * Ranges of the narrow integer types, which a cast into them wraps to (two's complement):
 * ONNX's rule for integer sources (higher bits discarded); a float source is truncated
 * toward zero first, as onnx's reference (ml_dtypes' astype) does for every integer type,
 * so Cast(float -9 -> int4) is 7 and Cast(8.5 -> int4) is -8 as the conformance cases have them.
 */
const NARROW: Partial<Record<number, { bits: number; signed: boolean }>> = {
  [DataType.INT8]: { bits: 8, signed: true }, [DataType.UINT8]: { bits: 8, signed: false },
  [DataType.INT16]: { bits: 16, signed: true }, [DataType.UINT16]: { bits: 16, signed: false },
  [DataType.INT4]: { bits: 4, signed: true }, [DataType.UINT4]: { bits: 4, signed: false },
  [DataType.INT2]: { bits: 2, signed: true }, [DataType.UINT2]: { bits: 2, signed: false },
};


/** A rounding to an ONNX float type narrower than float32: its graph op and its static form. */
export interface Rounding { op: 'round_f16' | 'round_bf16' | MiniFloatFn; f: (x: number) => number }

/**
 * The rounding of float32 values to ONNX type `type` where it is a float type narrower than
 * float32, which runs as float32 (topi/elemwise.ts; the rule in ir/half.ts and
 * ir/float8.ts); undefined for the other types. For the 8-bit floats, the saturating form
 * (Cast's default, and how a value of the type is rounded) unless `saturate` is false.
 */
export function roundingOf(type: number | undefined, saturate = true): Rounding | undefined {
  if (type === DataType.FLOAT16) return { op: 'round_f16', f: roundFloat16 };
  if (type === DataType.BFLOAT16) return { op: 'round_bf16', f: roundBfloat16 };
  const kind = type === undefined ? undefined : MINI_FLOAT_TYPES[type];
  return kind ? { op: miniFloatFn(kind, saturate), f: (x) => roundMiniFloat(kind, x, saturate) } : undefined;
}

/** A static float tensor rounded by `r`. */
export const roundedStatic = (t: Extract<StaticTensor, { type: 'float' }>, r: Rounding): StaticTensor => floatTensor(t.shape, t.data.map(r.f));

/**
 * `v` cast to ONNX type `to` (`what` names it in refusals). A cast to float16 or bfloat16
 * rounds to that type's precision (half to even, float16 overflowing to inf; the result
 * still runs as float32), so Cast(float -> float16) gives what ONNX Runtime and numpy give;
 * so does a cast to an 8- or 4-bit float (ir/float8.ts), past the range to its largest
 * value with `saturate` (Cast's default), else to inf (E5M2) or NaN, as ONNX's Cast table
 * has it; a cast to float64 is float32's identity (float64 runs as float32).
 */
function castTo(n: NodeView, v: Value, to: number, what: string, saturate = true): Value {
  const dtype = runType(to);
  if (!dtype) throw new UnsupportedError(`${what} to ${dataTypeName(to)} (the supported types are FLOAT, and FLOAT16, BFLOAT16, DOUBLE and the float8/float4 types as float32, the integer types and BOOL)`);
  const round = roundingOf(to, saturate);
  if (round) {
    const wide = castTo(n, v, DataType.FLOAT, what);
    if (isStatic(wide)) return staticValue(roundedStatic(wide.t as Extract<StaticTensor, { type: 'float' }>, round));
    return nodeValue(n.graph.op(round.op, [wide.id], {}, `${n.name}_${round.op}`));
  }
  const from: DType = isStatic(v) ? (v.t.type === 'float' ? 'float32' : v.t.bool ? 'bool' : 'int32') : n.graph.node(v.id).dtype;
  const nonNegative = isStatic(v) && v.t.data.every((x) => x >= 0);
  if ((to === DataType.UINT32 || to === DataType.UINT64) && from !== 'bool' && !nonNegative) {
    throw new UnsupportedError(`${what} to ${dataTypeName(to)} of ${isStatic(v) ? 'negative' : 'computed signed'} values (unsigned 32/64-bit values do not fit in int32)`);
  }
  const narrow = NARROW[to];
  if (isStatic(v)) {
    // Folded here, whatever the size: the result is as large as the input already is.
    const t = v.t;
    if (dtype === 'float32') return staticValue(floatTensor(t.shape, t.type === 'float' ? t.data : Float32Array.from(t.data)));
    const convert = (x: number): number => (dtype === 'bool' ? (x !== 0 ? 1 : 0) : wrap(Math.trunc(x), narrow));
    if (t.data.length > MAX_STATIC_CAST) {
      // A big integer result (a cast weight) is one graph constant, never a JS number per element.
      const data = new Int32Array(t.data.length);
      for (let i = 0; i < data.length; i++) {
        const x = convert(t.data[i]);
        if (!(x >= -2147483648 && x <= 2147483647)) throw new UnsupportedError(`${what}: value ${x} does not fit in int32 (integer tensors run as int32)`);
        data[i] = x;
      }
      return nodeValue(n.graph.constant(n.name, t.shape, data, dtype));
    }
    const data = Array.from(t.data, convert);
    return staticValue(dtype === 'bool' ? { ...intTensor(t.shape, data), bool: true } as StaticTensor : intTensor(t.shape, data));
  }
  if (from === dtype && !narrow) return v;
  const attrs: Attrs = narrow ? { dtype, bits: narrow.bits, signed: narrow.signed } : { dtype };
  return nodeValue(n.graph.op('cast', [v.id], attrs, n.name));
}

/** An integer wrapped into a narrow type's range (x mod 2^bits, signed types centred on 0). */
function wrap(x: number, narrow: { bits: number; signed: boolean } | undefined): number {
  if (!narrow || !Number.isFinite(x)) return Number.isFinite(x) ? x : 0;
  const m = 2 ** narrow.bits, half = narrow.signed ? m / 2 : 0;
  return ((((x + half) % m) + m) % m) - half;
}

const cast: Converter = {
  attrs: ['to', 'saturate', 'round_mode'],
  convert(n) {
    if (n.attr.has('round_mode')) throw new UnsupportedError('Cast round_mode (float8e8m0)');
    // saturate (opset 19, default 1) only applies to the float8 targets.
    return [castTo(n, n.input(0), n.attr.int('to', 0), 'Cast', n.attr.int('saturate', 1) !== 0)];
  },
};

/**
 * CastLike: cast to the type of input 1: its ONNX type where the importer knows it (a graph
 * input, an initializer or Constant), else the type it runs as here (int64, int32, int16...
 * all run as int32, so a narrow integer computed in the graph does not wrap).
 */
const castLike: Converter = {
  attrs: ['saturate', 'round_mode'],
  convert(n) {
    if (n.attr.has('round_mode')) throw new UnsupportedError('CastLike round_mode (float8e8m0)');
    const like = n.input(1);
    const known = like.kind === 'static' ? ONNX_ELEMENT_TYPE.get(like.t)
      : n.graph.node(like.id).op === 'input' ? ONNX_INPUT_TYPE.get(n.graph)?.get(like.id) : undefined;
    const to = known ?? { float32: DataType.FLOAT, int32: DataType.INT32, bool: DataType.BOOL }[n.dtype(1)];
    return [castTo(n, n.input(0), to, 'CastLike', n.attr.int('saturate', 1) !== 0)];
  },
};

/** ONNX Mod: fmod=0, the divisor's sign (integers only, as ONNX requires); fmod=1, C's fmod (the dividend's). */
const mod: Converter = {
  attrs: ['fmod'],
  convert(n) {
    sameType(n);
    if (n.dtype(0) !== 'int32') throw new UnsupportedError(`Mod of ${n.dtype(0)} tensors (only integer Mod is implemented)`);
    const fmod = n.attr.int('fmod', 0) === 1, values = [n.input(0), n.input(1)];
    const f = (a: number, b: number): number => {
      if (b === 0) return 0; // as the kernels have it (truncmod)
      const m = a % b;
      return !fmod && m !== 0 && (m < 0) !== (b < 0) ? m + b : m;
    };
    return [foldElementwise(values, 'int32', f) ?? applyOp(n, fmod ? 'trunc_mod' : 'floor_mod', values, {})];
  },
};

export const LOGIC_CONVERTERS: Record<string, Converter> = {
  Equal: compare('equal'),
  Less: compare('less'),
  LessOrEqual: compare('less_equal'),
  Greater: compare('greater'),
  GreaterOrEqual: compare('greater_equal'),
  Not: not,
  And: logical('logical_and'),
  Or: logical('logical_or'),
  Xor: logical('logical_xor'),
  Where: where,
  Cast: cast,
  CastLike: castLike,
  Mod: mod,
};

/**
 * Operators whose converters build float arithmetic: on an int32 or bool input they would
 * compute garbage or fail deep in a compute, so the importer refuses them up front.
 */
const FLOAT_ONLY = new Set([
  'Conv', 'ConvTranspose', 'MaxPool', 'AveragePool', 'GlobalAveragePool', 'GlobalMaxPool', 'LpPool',
  'Relu', 'LeakyRelu', 'PRelu', 'Elu', 'Selu', 'Celu', 'Sigmoid', 'HardSigmoid', 'HardSwish', 'Tanh', 'Softplus', 'Softsign', 'Mish', 'Gelu',
  'Softmax', 'LogSoftmax', 'Hardmax', 'Exp', 'Log', 'Sqrt', 'Reciprocal', 'Erf', 'Sin', 'Cos', 'Pow', 'Ceil', 'Floor', 'Round',
  'BatchNormalization', 'LayerNormalization', 'InstanceNormalization', 'GroupNormalization', 'LRN', 'MeanVarianceNormalization',
  'MatMul', 'Gemm', 'Einsum', 'ReduceMean', 'ReduceL2', 'ReduceLogSum', 'ReduceLogSumExp', 'Mean', 'Resize', 'Upsample',
  'LSTM', 'GRU', 'RNN',
]);

/** An UnsupportedError when a float-only operator reads an int32/bool value as data. */
export function refuseNonFloat(n: NodeView): void {
  if (!FLOAT_ONLY.has(n.opType)) return;
  // Their data inputs: Resize/Upsample's sizes and scales are parameters (checked by their converters).
  // LSTM/GRU/RNN's sequence_lens (input 4) is int32 (checked by their converters).
  // Reduce*'s axes (input 1 from opset 13/18) are int64 parameters too.
  // Pow's exponent may be an integer tensor (its converter casts it).
  const data = ['Resize', 'Upsample', 'Clip', 'Pow'].includes(n.opType) || n.opType.startsWith('Reduce') ? [0]
    : n.opType === 'LSTM' || n.opType === 'GRU' || n.opType === 'RNN' ? n.inputs.map((_, i) => i).filter((i) => i !== 4) : n.inputs.map((_, i) => i);
  for (const i of data) {
    if (!n.inputs[i]) continue;
    const t = n.dtype(i);
    if (t !== 'float32') throw new UnsupportedError(`${n.opType} of ${article(t)} tensor (input ${i}); it is implemented for float32 only`);
  }
}
