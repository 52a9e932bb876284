// Converters of ONNX's quantization operators onto topi/quantize.ts and the integer
// conv / matmul: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, ConvInteger,
// MatMulInteger, QLinearConv, QLinearMatMul. Quantized tensors (uint8, int8, uint16,
// int16, and the packed uint4, int4, uint2, int2) run as int32; the range a QuantizeLinear saturates to comes from its zero
// point's ONNX type (ONNX_ELEMENT_TYPE for initializers and Constants, attrs.qtype of the
// quantizing graph node, else read off its values when they decide it) or output_dtype,
// default uint8. Integer convs and matmuls subtract the zero points and accumulate in
// int32 (exact, as ONNX Runtime's int32 accumulators); QLinear* requantize the int32
// accumulator in float32: round(float(acc) * (scale_a * scale_b / scale_y)) + zero point,
// the multiplier folded at import when the scales are static (as ONNX Runtime folds it).
// Refused: blocked quantization (block_size), float8 types, a precision
// other than float32, a zero point whose type cannot be told.

import { ONNX_ELEMENT_TYPE, ONNX_INPUT_TYPE, UnsupportedError, nodeValue, staticValue, type NodeView, type Value } from './context';
import { applyOp, reshapeValue, type Converter } from './convert-tensor';
import { NN_CONVERTERS } from './convert-nn';
import { MATMUL_CONVERTERS } from './convert-matmul';
import { DataType } from './schema';
import { dataTypeName } from './tensor';
import { intTensor, normAxis } from './static';
import { permute } from '../../ir/tensor';

interface Range { readonly qmin: number; readonly qmax: number }

const RANGES: Partial<Record<number, Range>> = {
  [DataType.UINT8]: { qmin: 0, qmax: 255 },
  [DataType.INT8]: { qmin: -128, qmax: 127 },
  [DataType.UINT16]: { qmin: 0, qmax: 65535 },
  [DataType.INT16]: { qmin: -32768, qmax: 32767 },
  [DataType.UINT4]: { qmin: 0, qmax: 15 },
  [DataType.INT4]: { qmin: -8, qmax: 7 },
  [DataType.UINT2]: { qmin: 0, qmax: 3 },
  [DataType.INT2]: { qmin: -2, qmax: 1 },
};

function rangeOf(t: number, what: string): Range {
  const r = RANGES[t];
  if (!r) throw new UnsupportedError(`${what} ${dataTypeName(t)} (supported: UINT8, INT8, UINT16, INT16, UINT4, INT4, UINT2, INT2)`);
  return r;
}

/** The ONNX element type of value input `i`, where it is known or its values decide it. */
function elementType(n: NodeView, i: number): number | undefined {
  const v = n.optional(i);
  if (!v) return undefined;
  if (v.kind === 'node') {
    const node = n.graph.node(v.id);
    if (node.op === 'input') return ONNX_INPUT_TYPE.get(n.graph)?.get(v.id);
    if (!('attrs' in node)) return undefined;
    // A Cast into a narrow type (attrs bits, signed), or a quantizing op (attrs.qtype).
    if (node.op === 'cast' && node.attrs.bits !== undefined) {
      const key = `${node.attrs.signed ? 'INT' : 'UINT'}${node.attrs.bits as number}` as keyof typeof DataType;
      return DataType[key];
    }
    return node.attrs.qtype as number | undefined;
  }
  const known = ONNX_ELEMENT_TYPE.get(v.t);
  if (known !== undefined) return known;
  if (v.t.type !== 'int') return undefined;
  const lo = Math.min(...v.t.data), hi = Math.max(...v.t.data);
  if (lo < 0) return lo >= -128 && hi <= 127 ? DataType.INT8 : DataType.INT16;
  if (hi > 127) return hi <= 255 ? DataType.UINT8 : DataType.UINT16;
  return undefined; // 0..127 fit both uint8 and int8
}

/** The quantized type of QuantizeLinear-like output with zero point input `zpIndex`. */
function outputType(n: NodeView, zpIndex: number, outputDtype = 0): number {
  const zp = n.optional(zpIndex) ? elementType(n, zpIndex) : undefined;
  if (outputDtype) {
    if (zp !== undefined && zp !== outputDtype) throw new Error(`output_dtype ${dataTypeName(outputDtype)} differs from the zero point's type ${dataTypeName(zp)}`);
    return outputDtype;
  }
  if (!n.optional(zpIndex)) return DataType.UINT8;
  if (zp === undefined) throw new UnsupportedError('the zero point\'s type (uint8 or int8) cannot be told: a computed tensor, or values all in 0..127 of a tensor not read from the file');
  return zp;
}

/** Checks of a scale / zero point pair for per-tensor or per-axis use; returns the axis (normalised). */
function quantAxis(n: NodeView, x: readonly number[], scaleIndex: number, zpIndex: number): number {
  const blockSize = n.opset >= 21 ? n.attr.int('block_size', 0) : 0;
  if (blockSize !== 0) throw new UnsupportedError(`blocked quantization (block_size ${blockSize})`);
  const s = n.shape(scaleIndex);
  if (n.dtype(scaleIndex) !== 'float32') throw new Error(`scale of type ${n.dtype(scaleIndex)}`);
  if (n.optional(zpIndex)) {
    const z = n.shape(zpIndex);
    const one = (d: readonly number[]): boolean => d.reduce((p, e) => p * e, 1) === 1;
    if (!(one(z) && one(s)) && (z.length !== s.length || z.some((d, k) => d !== s[k]))) throw new Error(`zero point of shape [${z.join(', ')}] and scale [${s.join(', ')}] differ`);
    if (n.dtype(zpIndex) !== 'int32') throw new UnsupportedError(`a zero point of type ${n.dtype(zpIndex)} (float8 types)`);
  }
  if (s.length === 0 || (s.length === 1 && s[0] === 1)) return 0; // per tensor: the axis does not matter
  if (n.opset < 13) throw new Error(`a scale of shape [${s.join(', ')}] (per-tensor only before opset 13)`);
  const axis = normAxis(n.attr.int('axis', 1), x.length);
  if (s.length !== 1 || s[0] !== x[axis]) throw new UnsupportedError(`a scale of shape [${s.join(', ')}] for axis ${axis} of [${x.join(', ')}] (per tensor or per axis only)`);
  return axis;
}

function withZero(n: NodeView, x: Value, s: Value, zpIndex: number): Value[] {
  const z = n.optional(zpIndex);
  return z ? [x, s, z] : [x, s];
}

const quantizeLinear: Converter = {
  attrs: ['axis', 'saturate', 'block_size', 'output_dtype', 'precision'],
  convert(n) {
    if (n.dtype(0) !== 'float32') throw new UnsupportedError(`QuantizeLinear of a ${n.dtype(0)} tensor`);
    const precision = n.attr.int('precision', 0);
    if (precision !== 0 && precision !== DataType.FLOAT) throw new UnsupportedError(`precision ${dataTypeName(precision)}`);
    const x = n.shape(0);
    const axis = quantAxis(n, x, 1, 2);
    const qtype = outputType(n, 2, n.opset >= 21 ? n.attr.int('output_dtype', 0) : 0);
    const r = rangeOf(qtype, 'quantizing to');
    return [applyOp(n, 'quantize_linear', withZero(n, n.input(0), n.input(1), 2), { axis, qmin: r.qmin, qmax: r.qmax, qtype })];
  },
};

const dequantizeLinear: Converter = {
  attrs: ['axis', 'block_size', 'output_dtype'],
  convert(n) {
    const out = n.opset >= 23 ? n.attr.int('output_dtype', 0) : 0;
    if (out !== 0 && out !== DataType.FLOAT) throw new UnsupportedError(`output_dtype ${dataTypeName(out)} (float32 only)`);
    if (n.dtype(0) !== 'int32') throw new UnsupportedError(`DequantizeLinear of a ${n.dtype(0)} tensor (float8 types)`);
    const axis = quantAxis(n, n.shape(0), 1, 2);
    return [applyOp(n, 'dequantize_linear', withZero(n, n.input(0), n.input(1), 2), { axis })];
  },
};

const dynamicQuantizeLinear: Converter = {
  attrs: [],
  convert(n) {
    if (n.dtype(0) !== 'float32') throw new UnsupportedError(`DynamicQuantizeLinear of a ${n.dtype(0)} tensor`);
    const x = n.input(0);
    const axes = n.shape(0).map((_, i) => i);
    const lo = applyOp(n, 'reduce_min', [x], { axes, keepdims: false }, '_min');
    const hi = applyOp(n, 'reduce_max', [x], { axes, keepdims: false }, '_max');
    const scale = applyOp(n, 'dynamic_qparams', [lo, hi], { which: 'scale' }, '_scale');
    const zp = applyOp(n, 'dynamic_qparams', [lo, scale], { which: 'zero_point', qtype: DataType.UINT8 }, '_zero_point');
    const y = applyOp(n, 'quantize_linear', [x, scale, zp], { axis: 0, qmin: 0, qmax: 255, qtype: DataType.UINT8 });
    return [y, scale, zp];
  },
};

/** `v - zero point` in int32 (the zero point reshaped to broadcast along `axis` of rank `rank` when per axis). */
function centered(n: NodeView, v: Value, zpIndex: number, rank: number, axis: number, tag: string): Value {
  const zv = n.optional(zpIndex);
  if (!zv) return v;
  const zs = n.shape(zpIndex);
  const count = zs.reduce((a, d) => a * d, 1);
  const z = count === 1 ? reshapeValue(n, zv, [], `_${tag}_zp`)
    : reshapeValue(n, zv, Array.from({ length: rank }, (_, i) => (i === axis ? count : 1)), `_${tag}_zp`);
  return applyOp(n, 'subtract', [v, z], {}, `_${tag}_centered`);
}

/** `n` as a converter of the float operator sees it, reading `values` for its inputs. */
function reading(n: NodeView, values: readonly (Value | undefined)[]): NodeView {
  const view = Object.create(n) as NodeView;
  Object.defineProperty(view, 'optional', { value: (i: number) => values[i] });
  return view;
}

function requireInt(n: NodeView, inputs: readonly number[]): void {
  for (const i of inputs) if (n.optional(i) && n.dtype(i) !== 'int32') throw new Error(`input ${i} is ${n.dtype(i)}, not an integer type`);
}

/** The int32 convolution of (x - x_zero_point) by (w - w_zero_point), as Conv converts it (groups, pads, 1-D/3-D). */
function intConv(n: NodeView, xi: number, xz: number, wi: number, wz: number): Value {
  requireInt(n, [xi, xz, wi, wz]);
  if (n.optional(xz) && n.shape(xz).reduce((a, d) => a * d, 1) !== 1) throw new UnsupportedError('a per-channel input zero point (ONNX defines it per tensor)');
  const x = centered(n, n.input(xi), xz, n.shape(xi).length, 1, 'x');
  const w = centered(n, n.input(wi), wz, n.shape(wi).length, 0, 'w');
  return NN_CONVERTERS.Conv.convert(reading(n, [x, w]))[0]!;
}

/** A per-row zero point of A: [M] -> [M, 1]; per column of B: [N] (broadcasts as is). */
function intMatmul(n: NodeView, ai: number, az: number, bi: number, bz: number): Value {
  requireInt(n, [ai, az, bi, bz]);
  const as = n.shape(ai), bs = n.shape(bi);
  const a = centered(n, n.input(ai), az, Math.max(as.length, 2), Math.max(as.length, 2) - 2, 'a');
  const b = centered(n, n.input(bi), bz, Math.max(bs.length, 2), Math.max(bs.length, 2) - 1, 'b');
  if (b.kind === 'static' && bs.length === 2) {
    // A constant B as an int32 [N, K] dense weight (the float MatMul converter's dense takes float weights).
    const [k, m] = bs;
    const wt = intTensor([m, k], Array.from(permute(Int32Array.from(b.t.data), [k, m], [1, 0])));
    const av = as.length === 1 ? reshapeValue(n, a, [1, as[0]], '_a2d') : a;
    const y = applyOp(n, 'dense', [av, staticValue(wt)], {}, '_dense');
    return as.length === 1 ? reshapeValue(n, y, [m]) : y;
  }
  const bn = b.kind === 'static' ? nodeValue(n.nodeOf(b, '_b')) : b;
  return MATMUL_CONVERTERS.MatMul.convert(reading(n, [a, bn]))[0]!;
}

const convInteger: Converter = {
  attrs: ['auto_pad', 'dilations', 'group', 'kernel_shape', 'pads', 'strides'],
  convert: (n) => [intConv(n, 0, 2, 1, 3)],
};

const matmulInteger: Converter = {
  attrs: [],
  convert: (n) => [intMatmul(n, 0, 2, 1, 3)],
};

/** scale_a * scale_b / scale_y (float32, each product rounded as ONNX Runtime rounds it); static when the scales are. */
function multiplier(n: NodeView, sa: number, sb: number, sy: number): Value {
  for (const i of [sa, sb, sy]) if (n.dtype(i) !== 'float32') throw new Error(`scale input ${i} is ${n.dtype(i)}`);
  if (n.shape(sy).reduce((a, d) => a * d, 1) !== 1) throw new UnsupportedError('a per-channel output scale');
  const flat = (i: number, tag: string): Value => {
    const s = n.shape(i), c = s.reduce((a, d) => a * d, 1);
    return reshapeValue(n, n.input(i), c === 1 ? [] : [c], tag);
  };
  return applyOp(n, 'divide', [applyOp(n, 'multiply', [flat(sa, '_sa'), flat(sb, '_sb')], {}, '_sab'), flat(sy, '_sy')], {}, '_multiplier');
}

const qlinearConv: Converter = {
  attrs: ['auto_pad', 'dilations', 'group', 'kernel_shape', 'pads', 'strides'],
  convert(n) {
    if (n.shape(1).reduce((a, d) => a * d, 1) !== 1) throw new UnsupportedError('a per-channel input scale');
    let acc = intConv(n, 0, 2, 3, 5);
    const shape = acc.kind === 'node' ? n.graph.node(acc.id).shape : acc.t.shape;
    const b = n.optional(8);
    if (b) {
      requireInt(n, [8]);
      acc = applyOp(n, 'add', [acc, reshapeValue(n, b, [n.shape(8)[0], ...shape.slice(2).map(() => 1)], '_bias')], {}, '_bias_add');
    }
    const m = multiplier(n, 1, 4, 6);
    const ms = m.kind === 'node' ? n.graph.node(m.id).shape : m.t.shape;
    if (ms.length === 1 && ms[0] !== shape[1]) throw new Error(`a weight scale of ${ms[0]} values for ${shape[1]} output channels`);
    const qtype = outputType(n, 7);
    const r = rangeOf(qtype, 'quantizing to');
    const zp = n.optional(7) ? [reshapeValue(n, n.input(7), [], '_yzp')] : [];
    return [applyOp(n, 'requantize', [acc, m, ...zp], { axis: 1, qmin: r.qmin, qmax: r.qmax, qtype })];
  },
};

const qlinearMatMul: Converter = {
  attrs: [],
  convert(n) {
    for (const i of [1, 2]) if (n.shape(i).reduce((a, d) => a * d, 1) !== 1) throw new UnsupportedError('a per-row scale or zero point of A');
    const acc = intMatmul(n, 0, 2, 3, 5);
    const shape = acc.kind === 'node' ? n.graph.node(acc.id).shape : acc.t.shape;
    const m = multiplier(n, 1, 4, 6);
    const ms = m.kind === 'node' ? n.graph.node(m.id).shape : m.t.shape;
    if (ms.length === 1 && ms[0] !== shape[shape.length - 1]) throw new Error(`a B scale of ${ms[0]} values for ${shape[shape.length - 1]} columns`);
    const qtype = outputType(n, 7);
    const r = rangeOf(qtype, 'quantizing to');
    const zp = n.optional(7) ? [reshapeValue(n, n.input(7), [], '_yzp')] : [];
    return [applyOp(n, 'requantize', [acc, m, ...zp], { axis: shape.length - 1, qmin: r.qmin, qmax: r.qmax, qtype })];
  },
};

export const QUANTIZE_CONVERTERS: Record<string, Converter> = {
  QuantizeLinear: quantizeLinear,
  DequantizeLinear: dequantizeLinear,
  DynamicQuantizeLinear: dynamicQuantizeLinear,
  ConvInteger: convInteger,
  MatMulInteger: matmulInteger,
  QLinearConv: qlinearConv,
  QLinearMatMul: qlinearMatMul,
};
