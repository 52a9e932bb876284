// narrow_softmax (float16 / bfloat16 softmax with the type's intermediate roundings) run by
// the reference evaluator, against numbers that ONNX's reference implementation gives
// (onnx 1.23.1 onnx.reference Softmax / LogSoftmax on numpy float16 and ml_dtypes bfloat16
// arrays of the same values). The float16 rows sum six values: numpy adds them in float32
// and rounds once, as the rule does; ml_dtypes' bfloat16 sum rounds every partial sum, in
// order, as the rule does too (the last test shows a row of four where that moves the
// result). Each case also shows that computing in float32 and rounding once gives other
// numbers, so the intermediate roundings are what the test checks. Equality is exact: every
// value is a value of its type, and the references' are too.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { roundBfloat16, roundFloat16 } from '../ir/half';
import { placeholder } from '../ir/tensor';
import { narrowSoftmax, type NarrowFloat, type NarrowSoftmaxOptions } from './narrow-softmax';

function run(shape: number[], data: readonly number[], axis: number, type: NarrowFloat, opts?: NarrowSoftmaxOptions): number[] {
  const x = placeholder('x', shape);
  const y = narrowSoftmax(x, axis, type, opts);
  const out = evaluate(new ComputeDAG([y]), new Map([[x, Float32Array.from(data)]]));
  return [...(out.get(y.name) as Float32Array)];
}

/** Softmax computed in float32 (float64 here) and rounded once: what the rule is not. */
function roundedOnce(rows: number[][], round: (x: number) => number, log = false): number[] {
  return rows.flatMap((row) => {
    const m = Math.max(...row);
    const e = row.map((v) => Math.exp(v - m));
    const s = e.reduce((a, b) => a + b, 0);
    return e.map((v) => round(log ? Math.log(v / s) : v / s));
  });
}

// float16 values of [0.1, 1.7, -2.3, 3.14159, 0.5, 2.2] and [-0.75, 0.3, 1.1, -1.9, 0.05, 2.6].
const X16 = [
  [0.0999755859375, 1.7001953125, -2.30078125, 3.140625, 0.5, 2.19921875],
  [-0.75, 0.300048828125, 1.099609375, -1.900390625, 0.04998779296875, 2.599609375],
];

test('float16 Softmax along the last axis: the reference\'s values, not float32 rounded once', () => {
  const want = [
    0.027313232421875, 0.1353759765625, 0.002475738525390625, 0.5712890625, 0.040740966796875, 0.222900390625,
    0.02423095703125, 0.0693359375, 0.154052734375, 0.007671356201171875, 0.053985595703125, 0.6904296875,
  ];
  assert.equal(run([2, 6], X16.flat(), -1, 'float16'), want);
  assert.not.equal(roundedOnce(X16, roundFloat16), want);
});

test('float16 LogSoftmax: the log of that softmax, rounded (the reference\'s values)', () => {
  const want = [
    -3.599609375, -2.0, -6.0, -0.56005859375, -3.201171875, -1.5009765625,
    -3.720703125, -2.66796875, -1.8701171875, -4.87109375, -2.919921875, -0.370361328125,
  ];
  assert.equal(run([2, 6], X16.flat(), -1, 'float16', { log: true }), want);
  assert.not.equal(roundedOnce(X16, roundFloat16, true), want);
});

test('float16 Softmax along a leading axis: the same numbers as the rows transposed', () => {
  const transposed = [0, 1, 2, 3, 4, 5].flatMap((j) => [X16[0][j], X16[1][j]]);
  const rows = run([2, 6], X16.flat(), -1, 'float16');
  const cols = run([6, 2], transposed, 0, 'float16');
  assert.equal(cols, [0, 1, 2, 3, 4, 5].flatMap((j) => [rows[j], rows[6 + j]]));
});

// bfloat16 values of [0.3, 2.1], [1.7, -0.6], [5.5, 5.25].
const XB = [[0.30078125, 2.09375], [1.703125, -0.6015625], [5.5, 5.25]];

test('bfloat16 Softmax of rows of two: the reference\'s values, not float32 rounded once', () => {
  const want = [0.142578125, 0.859375, 0.90625, 0.08984375, 0.5625, 0.435546875];
  assert.equal(run([3, 2], XB.flat(), 1, 'bfloat16'), want);
  assert.not.equal(roundedOnce(XB, roundBfloat16), want);
});

test('safe softmax (Attention\'s): a row of -inf is 0, the others as the plain softmax', () => {
  const data = [-Infinity, -Infinity, ...XB[0]];
  assert.equal(run([2, 2], data, -1, 'bfloat16', { safe: true }), [0, 0, 0.142578125, 0.859375]);
  assert.ok(run([2, 2], data, -1, 'bfloat16').slice(0, 2).every(Number.isNaN));
});

test('bfloat16: each partial sum rounded in axis order, as ml_dtypes (a float32 sum rounded once moves this row)', () => {
  const x = [-1.6015625, -2.65625, -0.5, 0.83984375];
  assert.equal(run([1, 4], x, -1, 'bfloat16'), [0.0634765625, 0.02197265625, 0.1904296875, 0.7265625]);
  // The same roundings with the sum in float32, rounded once.
  const m = Math.max(...x);
  const e = x.map((v) => roundBfloat16(Math.exp(roundBfloat16(v - m))));
  const s = roundBfloat16(e.reduce((a, b) => Math.fround(a + b), 0));
  assert.equal(e.map((v) => roundBfloat16(v / s)), [0.06298828125, 0.0218505859375, 0.189453125, 0.72265625]);
});

test.run();
