// Comparisons, logic, Where, Cast/CastLike and integer arithmetic (Add/Sub/Mul/Div/Mod on
// int64 tensors) imported and run by the reference evaluator, against ONNX Runtime on
// seeded inputs: bool and integer outputs equal, float ones within 1e-5 (relative to 1 + |x|).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DataType } from './schema';
import { OnnxModelBuilder } from './model-builder';
import { importError } from './ort-agree.fixture';
import { agreesTyped, randFloats, randInts } from './typed-ort.fixture';
import { importOnnx } from './import';

const B = DataType.BOOL, F = DataType.FLOAT, I64 = DataType.INT64;

test('Equal, Less, LessOrEqual, Greater, GreaterOrEqual on floats, broadcasting, give bools', async () => {
  const m = new OnnxModelBuilder(13).input('a', [2, 3]).input('b', [3]);
  for (const op of ['Equal', 'Less', 'LessOrEqual', 'Greater', 'GreaterOrEqual']) m.node(op, ['a', 'b'], [op]).typedOutput(op, B);
  const { model } = await agreesTyped('compare-float', m.build(), [randFloats(6, 1, -2, 2, 1), randFloats(3, 2, -2, 2, 1)]);
  assert.ok(model.graph.outputs.every((id) => model.graph.node(id).dtype === 'bool'));
});

test('comparisons of int64 inputs (opsets 7 and 13), and an int64 constant', async () => {
  for (const opset of [9, 13]) {
    const m = new OnnxModelBuilder(opset).typedInput('a', I64, [2, 3]).typedInput('b', I64, [1, 3]).int64('k', [1]);
    for (const op of ['Equal', 'Less', 'Greater']) m.node(op, ['a', 'b'], [op]).typedOutput(op, B);
    m.node('Equal', ['a', 'k'], ['eq_k']).typedOutput('eq_k', B);
    await agreesTyped(`compare-int-${opset}`, m.build(), [randInts(6, 3, -3, 3), randInts(3, 4, -3, 3)]);
  }
});

test('Not, And, Or, Xor on bools, broadcasting', async () => {
  const m = new OnnxModelBuilder(13).typedInput('p', B, [2, 3]).typedInput('q', B, [3]);
  m.node('Not', ['p'], ['not']).typedOutput('not', B);
  for (const op of ['And', 'Or', 'Xor']) m.node(op, ['p', 'q'], [op]).typedOutput(op, B);
  await agreesTyped('logic', m.build(), [randInts(6, 5, 0, 1), randInts(3, 6, 0, 1)]);
  const bad = new OnnxModelBuilder(13).input('x', [2]).node('Not', ['x'], ['y']).output('y').build();
  assert.match(importError(bad), /Not 'y': unsupported: Not of a float32 tensor/);
});

test('Where over a computed condition, broadcasting its three inputs; float and int64 branches', async () => {
  const m = new OnnxModelBuilder(13).input('x', [2, 3]).input('y', [3]).typedInput('i', I64, [2, 1]).typedInput('j', I64, [3])
    .float('zero', [1], [0])
    .node('Greater', ['x', 'zero'], ['c'])
    .node('Where', ['c', 'x', 'y'], ['w']).output('w')
    .node('Where', ['c', 'i', 'j'], ['wi']).typedOutput('wi', I64);
  await agreesTyped('where', m.build(), [randFloats(6, 7), randFloats(3, 8), randInts(2, 9, -5, 5), randInts(3, 10, -5, 5)]);
});

test('Cast of computed tensors: float -> int64/int32 truncates, -> int8/uint8 wraps, -> bool is != 0, back to float', async () => {
  const m = new OnnxModelBuilder(13).input('x', [2, 4]).typedInput('i', I64, [2, 4]).typedInput('p', B, [4]);
  m.node('Cast', ['x'], ['x_i64'], { to: I64 }).typedOutput('x_i64', I64);
  m.node('Cast', ['x'], ['x_i32'], { to: DataType.INT32 }).typedOutput('x_i32', DataType.INT32);
  m.node('Cast', ['x'], ['x_b'], { to: B }).typedOutput('x_b', B);
  m.node('Cast', ['i'], ['i_i8'], { to: DataType.INT8 }).typedOutput('i_i8', DataType.INT8);
  m.node('Cast', ['i'], ['i_u8'], { to: DataType.UINT8 }).typedOutput('i_u8', DataType.UINT8);
  m.node('Cast', ['i'], ['i_f'], { to: F }).output('i_f');
  m.node('Cast', ['i'], ['i_b'], { to: B }).typedOutput('i_b', B);
  m.node('Cast', ['p'], ['p_f'], { to: F }).output('p_f');
  m.node('Cast', ['p'], ['p_i'], { to: I64 }).typedOutput('p_i', I64);
  const x = randFloats(8, 11, -5, 5);
  x[0] = 0; x[1] = -0.5; x[2] = 2.999;
  await agreesTyped('cast', m.build(), [x, randInts(8, 12, -300, 300), randInts(4, 13, 0, 1)]);
});

test('CastLike (opset 15) to float, int64, bool and uint8 (wrapping: the like input\'s ONNX type is known); static Cast folds', async () => {
  const m = new OnnxModelBuilder(15).typedInput('i', I64, [3]).input('x', [3]).typedInput('p', B, [3])
    .node('CastLike', ['i', 'x'], ['to_f']).output('to_f')
    .node('CastLike', ['x', 'i'], ['to_i']).typedOutput('to_i', I64)
    .node('CastLike', ['x', 'p'], ['to_b']).typedOutput('to_b', B)
    .tensor({ name: 'u8', dims: [1], data_type: DataType.UINT8, int32_data: [0] })
    .node('CastLike', ['big', 'u8'], ['to_u8']).typedOutput('to_u8', DataType.UINT8)
    .float('big', [3], [300, -1, 255.5])
    .float('half', [3], [0.5, -1.5, 2])
    .node('Cast', ['half'], ['half_i'], { to: I64 })
    .node('Add', ['i', 'half_i'], ['sum']).typedOutput('sum', I64);
  const { model } = await agreesTyped('castlike', m.build(), [randInts(3, 14, -9, 9), randFloats(3, 15, -3, 3), randInts(3, 16, 0, 1)]);
  assert.not.ok(model.graph.nodes.some((n) => n.op === 'cast' && n.name === 'half_i'), 'the static Cast is folded');
});

test('Cast to string of a computed tensor is refused (float16 rounds: narrow-float.test.ts)', () => {
  const m = new OnnxModelBuilder(13).input('x', [2]).node('Cast', ['x'], ['y'], { to: DataType.STRING }).typedOutput('y', DataType.STRING);
  assert.match(importError(m.build()), /Cast 'y': unsupported: Cast to STRING \(the supported types are FLOAT, and FLOAT16, BFLOAT16, DOUBLE and the float8\/float4 types as float32, the integer types and BOOL\)/);
});

test('integer Add, Sub, Mul, Div (truncating), Mod with fmod 0 (divisor sign) and 1 (dividend sign)', async () => {
  const m = new OnnxModelBuilder(13).typedInput('a', I64, [2, 4]).typedInput('b', I64, [4]);
  for (const op of ['Add', 'Sub', 'Mul', 'Div']) m.node(op, ['a', 'b'], [op]).typedOutput(op, I64);
  m.node('Mod', ['a', 'b'], ['mod0']).typedOutput('mod0', I64);
  m.node('Mod', ['a', 'b'], ['mod1'], { fmod: 1 }).typedOutput('mod1', I64);
  const b = randInts(4, 18, -4, 4).map((v) => (v === 0 ? 3 : v));
  await agreesTyped('int-arith', m.build(), [randInts(8, 17, -20, 20), b]);
});

test('comparisons of shapes fold at import (static Equal -> Where)', () => {
  const m = new OnnxModelBuilder(13).input('x', [2, 3])
    .node('Shape', ['x'], ['s']).int64('two', [2, 2])
    .node('Equal', ['s', 'two'], ['e'])
    .int64('t', [6, 7]).int64('f', [8, 1]).node('Where', ['e', 't', 'f'], ['w'])
    .node('Reshape', ['x', 'w'], ['y']).output('y');
  const model = importOnnx(m.build(), 'fold.onnx');
  assert.equal(model.graph.node(model.graph.outputs[0]).shape, [6, 1]);
  assert.not.ok(model.graph.nodes.some((n) => n.op === 'equal' || n.op === 'where'));
});

test('float-only operators refuse int and bool tensors in one line', () => {
  const relu = new OnnxModelBuilder(13).typedInput('i', I64, [4]).node('Relu', ['i'], ['y']).typedOutput('y', I64).build();
  assert.match(importError(relu), /Relu 'y': unsupported: Relu of an int32 tensor \(input 0\)/);
  const conv = new OnnxModelBuilder(13).typedInput('i', I64, [1, 1, 3, 3]).float('w', [1, 1, 1, 1], [1])
    .node('Cast', ['i'], ['c'], { to: B }).node('Conv', ['c', 'w'], ['y']).output('y').build();
  assert.match(importError(conv), /Conv 'y': unsupported: Conv of a bool tensor \(input 0\)/);
});

test('a Cast of a big constant to int is one graph constant (no JS array per element); to uint32 of non-negative constants', () => {
  const m = new OnnxModelBuilder(13).typedInput('i', I64, [1 << 21]).float('w', [1 << 21], new Float32Array(1 << 21).fill(2.5))
    .node('Cast', ['w'], ['wi'], { to: I64 }).node('Add', ['i', 'wi'], ['y']).typedOutput('y', I64)
    .int64('s', [3, 4]).node('Cast', ['s'], ['su'], { to: DataType.UINT32 }).node('Cast', ['su'], ['sf'], { to: F })
    .input('x', [2]).node('Mul', ['x', 'sf'], ['z']).output('z').build();
  const model = importOnnx(m, 'big-cast.onnx');
  const c = model.graph.nodes.find((n) => n.op === 'constant' && n.name === 'wi');
  assert.ok(c && c.op === 'constant' && 'data' in c && c.data instanceof Int32Array && c.data[12345] === 2 && c.dtype === 'int32');
});

test('static comparisons, Where and Mod fold in JS numbers: int64 values past int32 (slice ends) stay exact', async () => {
  const big = 2 ** 40;
  const m = new OnnxModelBuilder(13).input('x', [2, 5])
    .node('Shape', ['x'], ['s']).int64('k', [2, 0]).node('Equal', ['s', 'k'], ['e'])
    .int64('huge', [big, big]).int64('small', [7, 3]).node('Where', ['e', 'huge', 'small'], ['ends'])
    .int64('m', [big + 5, 3]).int64('three', [3]).node('Mod', ['m', 'three'], ['starts'])
    .node('Greater', ['huge', 'small'], ['g']).node('Not', ['g'], ['ng']).node('Or', ['ng', 'e'], ['o'])
    .int64('axes', [0, 1]).node('Slice', ['x', 'starts', 'ends', 'axes'], ['y']).output('y')
    .node('Cast', ['o'], ['of'], { to: F }).int64('one', [1]).node('Unsqueeze', ['of', 'one'], ['of1']).node('Add', ['y', 'of1'], ['z']).output('z');
  const { model } = await agreesTyped('fold-int64', m.build(), [randFloats(10, 19)]);
  assert.equal(model.graph.node(model.graph.outputs[0]).shape, [2, 3]); // starts (2^40 + 5) mod 3 = 0 and 0, ends 2^40 and 3
});

test.run();
