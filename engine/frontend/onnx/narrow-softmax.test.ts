// Softmax, LogSoftmax and Attention of float16 / bfloat16 inputs, imported and run by the
// reference evaluator, against the numbers ONNX's reference implementation gives for the
// same values (onnx 1.23.1: onnx.reference Softmax / LogSoftmax and op_attention's
// _compute_attention on numpy float16 and ml_dtypes bfloat16 arrays). A narrow-typed
// operator rounds the intermediates the reference stores in its type (narrow.ts): each test
// also shows that the float32 computation rounded once gives other numbers. Equality is
// exact: the outputs are values of their type. A float32 model gets none of it.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isOpNode, type Graph } from '../../graph/graph';
import { runGraph } from '../../graph/run';
import { roundBfloat16, roundFloat16 } from '../../ir/half';
import { importOnnx } from './import';
import { OnnxModelBuilder } from './model-builder';
import { DataType } from './schema';

const F16 = DataType.FLOAT16, BF16 = DataType.BFLOAT16, F32 = DataType.FLOAT;
const size = (s: readonly number[]): number => s.reduce((a, b) => a * b, 1);
const opsOf = (g: Graph): string[] => g.nodes.filter(isOpNode).map((n) => n.op);

/** Inputs as the reference tests made them: ((i * a) mod b) / b * 2 - 1, as float32 (the model rounds them to its type on entry). */
const vals = (n: number, a: number, b: number): Float32Array => Float32Array.from({ length: n }, (_, i) => ((i * a) % b) / b * 2 - 1);

/** Output 0 of a model of one operator, its inputs and output of `type`, run on `inputs`. */
function runOne(type: number, opset: number, op: string, shapes: readonly (readonly number[])[], attrs: Record<string, number>, inputs: readonly Float32Array[]): { y: number[]; graph: Graph } {
  const names = ['q', 'k', 'v'].slice(0, shapes.length);
  let m = new OnnxModelBuilder(opset);
  shapes.forEach((s, i) => { m = m.typedInput(names[i], type, s); });
  const bytes = m.node(op, names, ['y'], attrs).typedOutput('y', type).build();
  const model = importOnnx(bytes, 'm.onnx');
  const [y] = runGraph(model.graph, new Map(names.map((n, i) => [n, inputs[i]])));
  return { y: [...y], graph: model.graph };
}

// float16 values of [0.1, 1.7, -2.3, 3.14159, 0.5, 2.2] and [-0.75, 0.3, 1.1, -1.9, 0.05, 2.6].
const X16 = Float32Array.from([
  0.0999755859375, 1.7001953125, -2.30078125, 3.140625, 0.5, 2.19921875,
  -0.75, 0.300048828125, 1.099609375, -1.900390625, 0.04998779296875, 2.599609375,
]);

test('float16 Softmax and LogSoftmax compute in float16: the reference\'s values', () => {
  const softmax = runOne(F16, 13, 'Softmax', [[2, 6]], {}, [X16]);
  assert.equal(softmax.y, [
    0.027313232421875, 0.1353759765625, 0.002475738525390625, 0.5712890625, 0.040740966796875, 0.222900390625,
    0.02423095703125, 0.0693359375, 0.154052734375, 0.007671356201171875, 0.053985595703125, 0.6904296875,
  ]);
  assert.ok(opsOf(softmax.graph).includes('narrow_softmax'));
  const log = runOne(F16, 13, 'LogSoftmax', [[2, 6]], {}, [X16]);
  assert.equal(log.y, [
    -3.599609375, -2.0, -6.0, -0.56005859375, -3.201171875, -1.5009765625,
    -3.720703125, -2.66796875, -1.8701171875, -4.87109375, -2.919921875, -0.370361328125,
  ]);
  // float32, rounded once, gives other numbers; a float32 model keeps its float32 softmax, unrounded.
  const f32 = runOne(F32, 13, 'Softmax', [[2, 6]], {}, [X16]);
  assert.not.equal(f32.y.map(roundFloat16), softmax.y);
  assert.ok(opsOf(f32.graph).includes('softmax') && !opsOf(f32.graph).some((o) => o === 'narrow_softmax' || o.startsWith('round_')));
});

test('float16 Attention (is_causal): Q and K scaled by the root of the scale, every step in float16, the reference\'s values', () => {
  const [b, h, s, l, d] = [1, 2, 3, 4, 4];
  const shapes = [[b, h, s, d], [b, h, l, d], [b, h, l, d]];
  const inputs = [vals(size(shapes[0]), 7, 11), vals(size(shapes[1]), 5, 13), vals(size(shapes[2]), 3, 17)];
  const want = [
    -1.0, -0.64697265625, -0.294189453125, 0.058837890625, -0.51123046875, -0.1583251953125, -0.497802734375, -0.144775390625,
    -0.384033203125, -0.0309600830078125, -0.126953125, 0.2261962890625, 0.64697265625, -1.0, -0.64697265625, -0.294189453125,
    0.49267578125, -0.6298828125, -0.277099609375, -0.4482421875, -0.0916748046875, -0.05816650390625, 0.294677734375, -0.20166015625,
  ];
  const ours = runOne(F16, 23, 'Attention', shapes, { is_causal: 1 }, inputs);
  assert.equal(ours.y, want);
  const f32 = runOne(F32, 23, 'Attention', shapes, { is_causal: 1 }, inputs.map((x) => x.map(roundFloat16)));
  assert.not.equal(f32.y.map(roundFloat16), want);
  assert.ok(!opsOf(f32.graph).some((o) => o === 'narrow_softmax' || o.startsWith('round_')));
});

test('bfloat16 Attention over two keys (a sum of two: one rounding, as the reference\'s): the reference\'s values', () => {
  const [b, h, s, l, d] = [1, 2, 2, 2, 4];
  const shapes = [[b, h, s, d], [b, h, l, d], [b, h, l, d]];
  const inputs = [vals(size(shapes[0]), 7, 11), vals(size(shapes[1]), 5, 13), vals(size(shapes[2]), 3, 17)];
  const want = [
    -1.0, -0.6484375, -0.294921875, 0.058837890625, -0.5078125, -0.1572265625, -0.5, -0.146484375,
    -0.1767578125, 0.1767578125, 0.53125, 0.8828125, -0.4765625, -0.1220703125, 0.232421875, 0.5859375,
  ];
  assert.equal(runOne(BF16, 23, 'Attention', shapes, { is_causal: 1 }, inputs).y, want);
  const f32 = runOne(F32, 23, 'Attention', shapes, { is_causal: 1 }, inputs.map((x) => x.map(roundBfloat16)));
  assert.not.equal(f32.y.map(roundBfloat16), want);
});

test('Attention\'s softmax_precision: float32 (rounded to the type after), the input\'s own type, or refused', () => {
  const shapes = [[1, 1, 2, 4], [1, 1, 3, 4], [1, 1, 3, 4]];
  const inputs = [vals(8, 7, 11), vals(12, 5, 13), vals(12, 3, 17)];
  const asFloat = runOne(F16, 23, 'Attention', shapes, { softmax_precision: F32 }, inputs);
  assert.ok(opsOf(asFloat.graph).includes('safe_softmax') && !opsOf(asFloat.graph).includes('narrow_softmax'));
  const own = runOne(F16, 23, 'Attention', shapes, { softmax_precision: F16 }, inputs);
  assert.equal(own.y, runOne(F16, 23, 'Attention', shapes, {}, inputs).y);
  assert.throws(() => runOne(F16, 23, 'Attention', shapes, { softmax_precision: BF16 }, inputs), /softmax_precision 16 \(the softmax runs in float32 or in float16\)/);
});

test.run();
