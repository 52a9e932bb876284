// The quantization converters against ONNX Runtime (typed-ort.fixture.ts: integer outputs
// equal, float ones within 1e-5 * (1 + |ORT|)): QuantizeLinear (uint8/int8 zero points from
// initializers, Constants, a Cast and a graph input; no zero point; per axis; output_dtype;
// inputs on exact ties), DequantizeLinear, DynamicQuantizeLinear, ConvInteger, MatMulInteger,
// QLinearConv and QLinearMatMul, and a quantize_dynamic-style conv and matmul
// (DynamicQuantizeLinear -> ConvInteger/MatMulInteger -> Cast -> Mul). Quantized inputs
// come in as float and are Cast to uint8/int8 inside the model. Refusals in one line.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { agreesTyped, randFloats, randInts } from './typed-ort.fixture';
import { importError } from './ort-agree.fixture';
import { OnnxModelBuilder } from './model-builder';
import { DataType, type TensorMessage } from './schema';
import { importOnnx } from './import';
import { runGraph } from '../../graph/run';

const typed = (name: string, type: number, dims: number[], values: readonly number[]): TensorMessage => {
  const t: TensorMessage = { name, dims, data_type: type };
  // uint8/int8/uint16/int16/int32 live in int32_data; int64 in int64_data.
  if (type === DataType.INT64) t.int64_data = [...values];
  else t.int32_data = [...values];
  return t;
};

/** x float [n] -> Cast to `type` (a quantized input). */
const castIn = (b: OnnxModelBuilder, name: string, type: number): OnnxModelBuilder => b.node('Cast', [`${name}_f`], [name], { to: type });

test('QuantizeLinear per tensor: uint8 and int8 zero points, none (uint8), ties rounded to even, saturation', async () => {
  const x = randFloats(40, 1, -3, 3, 0.05); // multiples of 0.05: x / 0.1 ties at every odd multiple
  for (const [type, zp] of [[DataType.UINT8, 120], [DataType.INT8, -7], [DataType.UINT8, 0], [DataType.INT8, 0]] as const) {
    const b = new OnnxModelBuilder(13).input('x', [4, 10])
      .float('s', [], [0.1]).tensor(typed('z', type, [], [zp]))
      .node('QuantizeLinear', ['x', 's', 'z'], ['y']).typedOutput('y', type);
    await agreesTyped(`quantize ${type}/${zp}`, b.build(), [x]);
  }
  const none = new OnnxModelBuilder(10).input('x', [4, 10]).float('s', [], [0.02])
    .node('QuantizeLinear', ['x', 's'], ['y']).typedOutput('y', DataType.UINT8);
  await agreesTyped('quantize, no zero point', none.build(), [x]);
});

test('QuantizeLinear per axis (axis 1 and -1), zero points from a Constant and from a Cast of an input', async () => {
  const x = randFloats(2 * 3 * 4, 2, -2, 2, 0.01);
  const b = castIn(new OnnxModelBuilder(13).input('x', [2, 3, 4]).input('z2_f', [4]), 'z2', DataType.UINT8)
    .float('s1', [3], [0.02, 0.1, 0.01]).float('s2', [4], [0.05, 0.02, 0.03, 0.04])
    .node('Constant', [], ['z1'], { value: { tensor: typed('z1v', DataType.INT8, [3], [0, -10, 5]) } })
    .node('QuantizeLinear', ['x', 's1', 'z1'], ['y1'], { axis: 1 })
    .node('QuantizeLinear', ['x', 's2', 'z2'], ['y2'], { axis: -1 })
    .typedOutput('y1', DataType.INT8).typedOutput('y2', DataType.UINT8);
  await agreesTyped('quantize per axis', b.build(), [x, Float32Array.of(0, 200, 17, 255)]);
});

test('QuantizeLinear opset 21 output_dtype int8 without a zero point; a zero point read off a Cast to uint8', async () => {
  const x = randFloats(12, 3, -20, 20, 0.5);
  const b = new OnnxModelBuilder(21).input('x', [12]).float('s', [], [0.25])
    .node('QuantizeLinear', ['x', 's'], ['y'], { output_dtype: DataType.INT8 }).typedOutput('y', DataType.INT8);
  await agreesTyped('quantize output_dtype', b.build(), [x]);
  const c = castIn(new OnnxModelBuilder(13).input('x', [12]).input('z_f', []).float('s', [], [0.25]), 'z', DataType.UINT8)
    .node('QuantizeLinear', ['x', 's', 'z'], ['y']).typedOutput('y', DataType.UINT8);
  await agreesTyped('quantize, zero point cast', c.build(), [x, Float32Array.of(3)]);
});

test('DequantizeLinear per tensor (uint8), per axis (int8), of int32 without a zero point', async () => {
  const q = Float32Array.from(randInts(24, 4, 0, 255));
  const b = castIn(new OnnxModelBuilder(13).input('q_f', [2, 3, 4]), 'q', DataType.UINT8)
    .node('Cast', ['q_f'], ['qi'], { to: DataType.INT8 })
    .node('Cast', ['q_f'], ['q32'], { to: DataType.INT32 })
    .float('s', [], [0.037]).tensor(typed('z', DataType.UINT8, [], [131]))
    .float('s3', [3], [0.5, 0.01, 2]).tensor(typed('z3', DataType.INT8, [3], [-3, 0, 100]))
    .node('DequantizeLinear', ['q', 's', 'z'], ['y'])
    .node('DequantizeLinear', ['qi', 's3', 'z3'], ['y3'], { axis: 1 })
    .node('DequantizeLinear', ['q32', 's'], ['y32'])
    .output('y').output('y3').output('y32');
  await agreesTyped('dequantize', b.build(), [q]);
});

test('DynamicQuantizeLinear: y, y_scale, y_zero_point; all-positive, all-negative and all-zero inputs', async () => {
  for (const [what, x] of [['mixed', randFloats(30, 5, -2, 3)], ['positive', randFloats(30, 6, 0.5, 4)], ['negative', randFloats(30, 7, -4, -0.5)], ['zero', new Float32Array(30)]] as const) {
    const b = new OnnxModelBuilder(11).input('x', [5, 6]).node('DynamicQuantizeLinear', ['x'], ['y', 'ys', 'yz'])
      .typedOutput('y', DataType.UINT8).output('ys').typedOutput('yz', DataType.UINT8);
    await agreesTyped(`dynamic quantize ${what}`, b.build(), [x]);
  }
});

test('ConvInteger: uint8 input and zero point, int8 weight, pads, strides, groups; per-channel weight zero points', async () => {
  const x = Float32Array.from(randInts(2 * 4 * 7 * 6, 8, 0, 255));
  const w = Array.from(randInts(6 * 2 * 3 * 3, 9, -100, 100));
  const wz = [0, 3, -5, 1, 0, -7];
  const model = (weight: number[], zp: number[]): Uint8Array => castIn(new OnnxModelBuilder(10).input('x_f', [2, 4, 7, 6]), 'x', DataType.UINT8)
    .tensor(typed('w', DataType.INT8, [6, 2, 3, 3], weight)).tensor(typed('xz', DataType.UINT8, [], [117]))
    .tensor(typed('wz', DataType.INT8, [zp.length], zp))
    .node('ConvInteger', ['x', 'w', 'xz', 'wz'], ['y'], { pads: [1, 0, 1, 2], strides: [2, 1], group: 2 })
    .node('ConvInteger', ['x', 'w2'], ['y2'], { kernel_shape: [1, 1] })
    .tensor(typed('w2', DataType.INT8, [3, 4, 1, 1], Array.from(randInts(12, 10, -128, 127))))
    .typedOutput('y', DataType.INT32).typedOutput('y2', DataType.INT32).build();
  await agreesTyped('conv integer', model(w, [-3]), [x]);
  // ONNX Runtime 1.30 takes a per-tensor weight zero point only: per channel against the weight less its zero points.
  const { outputs: want } = await agreesTyped('conv integer (zero points subtracted)', model(w.map((v, i) => v - wz[Math.floor(i / 18)]), [0]), [x]);
  const m = importOnnx(model(w, wz), 'per-channel.onnx');
  const ours = runGraph(m.graph, new Map([[m.inputs[0].name, x]]));
  assert.equal([...ours[0]], [...want[0]]);
});

// ONNX Runtime's uint8 x int8 kernels on x86-64 with AVX2 (or AVX-512 without VNNI) add
// pairs of products in int16 with saturation (its quantization docs: "U8S8 ... may saturate";
// reduce_range exists for that), so where ORT is the reference an int8 weight stays in
// [-64, 63]: 2 x 255 x 64 fits in int16, and ORT's result is exact on every x86-64 CPU. Our
// kernels and the evaluator accumulate in int32 either way.
const [S8_LO, S8_HI] = [-64, 63];

test('MatMulInteger: uint8 A (3-D) by an int8 constant B with per-column zero points, and by a computed B', async () => {
  const a = Float32Array.from(randInts(2 * 3 * 5, 11, 0, 255));
  const b = castIn(castIn(new OnnxModelBuilder(10).input('a_f', [2, 3, 5]).input('c_f', [5, 4]), 'a', DataType.UINT8), 'c', DataType.UINT8)
    .tensor(typed('b', DataType.INT8, [5, 4], Array.from(randInts(20, 12, S8_LO, S8_HI))))
    .tensor(typed('az', DataType.UINT8, [], [99])).tensor(typed('bz', DataType.INT8, [4], [1, -2, 0, 7]))
    .tensor(typed('cz', DataType.UINT8, [], [128]))
    .node('MatMulInteger', ['a', 'b', 'az', 'bz'], ['y'])
    .node('MatMulInteger', ['a', 'c', '', 'cz'], ['y2'])
    .typedOutput('y', DataType.INT32).typedOutput('y2', DataType.INT32);
  await agreesTyped('matmul integer', b.build(), [a, Float32Array.from(randInts(20, 13, 0, 255))]);
});

test('QLinearMatMul (uint8 and int8) and QLinearConv (per-channel weight scales, int32 bias)', async () => {
  for (const type of [DataType.UINT8, DataType.INT8]) {
    const [lo, hi, zp] = type === DataType.UINT8 ? [0, 255, 113] : [-128, 127, -5];
    const m = castIn(new OnnxModelBuilder(10).input('a_f', [3, 6]), 'a', type)
      .float('as', [], [0.023]).tensor(typed('az', type, [], [zp]))
      .tensor(typed('b', type, [6, 5], Array.from(randInts(30, 14, lo, hi)))).float('bs', [], [0.011]).tensor(typed('bz', type, [], [zp + 3]))
      .float('ys', [], [0.07]).tensor(typed('yz', type, [], [zp - 2]))
      .node('QLinearMatMul', ['a', 'as', 'az', 'b', 'bs', 'bz', 'ys', 'yz'], ['y']).typedOutput('y', type);
    await agreesTyped(`qlinear matmul ${type}`, m.build(), [Float32Array.from(randInts(18, 15, lo, hi))]);
  }
  const c = castIn(new OnnxModelBuilder(10).input('x_f', [1, 3, 6, 6]), 'x', DataType.UINT8)
    .float('xs', [], [0.02]).tensor(typed('xz', DataType.UINT8, [], [128]))
    .tensor(typed('w', DataType.INT8, [4, 3, 3, 3], Array.from(randInts(108, 16, S8_LO, S8_HI)))).float('ws', [4], [0.01, 0.003, 0.02, 0.005])
    .tensor(typed('wz', DataType.INT8, [4], [0, 0, 0, 0])).float('ys', [], [0.05]).tensor(typed('yz', DataType.UINT8, [], [100]))
    .tensor(typed('bias', DataType.INT32, [4], [100, -2000, 0, 5000]))
    .node('QLinearConv', ['x', 'xs', 'xz', 'w', 'ws', 'wz', 'ys', 'yz', 'bias'], ['y'], { pads: [1, 1, 1, 1] }).typedOutput('y', DataType.UINT8);
  await agreesTyped('qlinear conv', c.build(), [Float32Array.from(randInts(108, 17, 0, 255))]);
});

/** quantize_dynamic's rewrite of a Conv (and a MatMul): quantize the activation at run time, integer op, Cast, Mul by the scales. */
export function quantizeDynamicStandIn(): Uint8Array {
  return new OnnxModelBuilder(13).input('x', [1, 3, 16, 16])
    .tensor(typed('w', DataType.INT8, [8, 3, 3, 3], Array.from(randInts(216, 20, S8_LO, S8_HI))))
    .tensor(typed('wz', DataType.INT8, [], [0])).float('ws', [], [0.004])
    .tensor(typed('w2', DataType.INT8, [8, 10], Array.from(randInts(80, 21, S8_LO, S8_HI)))).tensor(typed('w2z', DataType.INT8, [], [0])).float('w2s', [], [0.01])
    .float('bias', [8, 1, 1], randFloats(8, 22, -0.2, 0.2))
    .node('DynamicQuantizeLinear', ['x'], ['xq', 'xs', 'xz'])
    .node('ConvInteger', ['xq', 'w', 'xz', 'wz'], ['acc'], { pads: [1, 1, 1, 1], strides: [2, 2] })
    .node('Cast', ['acc'], ['accf'], { to: DataType.FLOAT })
    .node('Mul', ['xs', 'ws'], ['scale'])
    .node('Mul', ['accf', 'scale'], ['conv'])
    .node('Add', ['conv', 'bias'], ['convb'])
    .node('Relu', ['convb'], ['r'])   // [1, 8, 8, 8]
    .int64('shape', [8, 64], [2]).node('Reshape', ['r', 'shape'], ['r2']) // [8, 64]
    .node('Transpose', ['r2'], ['rt'], { perm: [1, 0] }) // [64, 8]
    .node('DynamicQuantizeLinear', ['rt'], ['hq', 'hs', 'hz'])
    .node('MatMulInteger', ['hq', 'w2', 'hz', 'w2z'], ['acc2']) // [64, 10]
    .node('Cast', ['acc2'], ['acc2f'], { to: DataType.FLOAT })
    .node('Mul', ['hs', 'w2s'], ['scale2'])
    .node('Mul', ['acc2f', 'scale2'], ['y'])
    .output('y').build();
}

test('a quantize_dynamic-style model: DynamicQuantizeLinear -> ConvInteger -> Cast -> Mul, then -> MatMulInteger', async () => {
  await agreesTyped('quantize_dynamic stand-in', quantizeDynamicStandIn(), [randFloats(768, 23, -1, 1)]);
});

test('refusals: blocked quantization, a float8 output, a zero point of unknown type', () => {
  const blocked = new OnnxModelBuilder(21).input('x', [4, 4]).float('s', [4, 2], new Array(8).fill(0.1))
    .node('QuantizeLinear', ['x', 's'], ['y'], { axis: 1, block_size: 2 }).typedOutput('y', DataType.UINT8).build();
  assert.match(importError(blocked), /QuantizeLinear 'y': unsupported: blocked quantization \(block_size 2\)/);
  const f8 = new OnnxModelBuilder(21).input('x', [4]).float('s', [], [0.1])
    .node('QuantizeLinear', ['x', 's'], ['y'], { output_dtype: DataType.FLOAT8E4M3FN }).typedOutput('y', DataType.FLOAT8E4M3FN).build();
  assert.match(importError(f8), /QuantizeLinear 'y': unsupported: quantizing to FLOAT8E4M3FN \(supported: UINT8, INT8, UINT16, INT16, UINT4, INT4, UINT2, INT2\)/);
  const unknown = new OnnxModelBuilder(13).input('x', [4]).float('s', [], [0.1]).tensor(typed('z', DataType.INT8, [1], [3]))
    .node('Add', ['z', 'z'], ['z2']).node('QuantizeLinear', ['x', 's', 'z2'], ['y']).typedOutput('y', DataType.INT8).build();
  assert.match(importError(unknown), /QuantizeLinear 'y': unsupported: the zero point's type/);
});

test.run();
