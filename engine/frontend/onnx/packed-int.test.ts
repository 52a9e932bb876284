// The 4- and 2-bit integer types (INT4, UINT4, INT2, UINT2), which run as int32: packed
// initializers decoded (raw_data and int32_data, odd counts), Cast into them from float and
// from int64 (folded at import and computed in the graph, by the reference evaluator and
// compiled natively), and an int4 QuantizeLinear -> DequantizeLinear model compiled natively
// against the reference evaluator.
//
// The expected values are constants computed with the pinned onnx 1.23.1 and ml_dtypes 0.6.0
// (what onnx's reference Cast and its conformance cases give):
//   packed bytes: onnx.numpy_helper._pack_4bitx2 / _pack_2bitx4 of the listed values;
//   casts: np.array(xs, np.float32 or np.int64).astype(ml_dtypes.int4 ...).astype(np.int32).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runGraph } from '../../graph/run';
import type { TensorData } from '../../ir/tensor';
import { importOnnx } from './import';
import { OnnxModelBuilder } from './model-builder';
import { compiledAgrees } from './native-agree.fixture';
import { DataType, type TensorMessage } from './schema';
import { OnnxFormatError, tensorFromProto } from './tensor';
import { randFloats } from './typed-ort.fixture';

const work = mkdtempSync(path.join(tmpdir(), 'tt-packed-int-'));
test.after(() => rmSync(work, { recursive: true, force: true }));

const { INT4, UINT4, INT2, UINT2, INT64 } = DataType;

/** Values and their packed bytes (onnx.numpy_helper._pack_4bitx2 / _pack_2bitx4). */
const PACKED: readonly { type: number; values: number[]; bytes: number[] }[] = [
  { type: INT4, values: [-8, -1, 0, 7, 3, -5, 6], bytes: [248, 112, 179, 6] },
  { type: UINT4, values: [0, 15, 9, 1, 14], bytes: [240, 25, 14] },
  { type: INT2, values: [-2, -1, 0, 1, 1, -2], bytes: [78, 9] },
  { type: UINT2, values: [0, 1, 2, 3, 3, 2, 1, 0, 2], bytes: [228, 27, 2] },
];

test('packed int4/uint4/int2/uint2 initializers decode from raw_data and from int32_data (one byte per entry), low bits first, signed ones sign-extended', () => {
  for (const { type, values, bytes } of PACKED) {
    const raw = tensorFromProto({ name: 't', dims: [values.length], data_type: type, raw_data: Uint8Array.from(bytes) }, '.');
    assert.equal(raw, { type: 'int', shape: [values.length], data: values }, `raw ${type}`);
    const field = tensorFromProto({ name: 't', dims: [values.length], data_type: type, int32_data: bytes }, '.');
    assert.equal(field, { type: 'int', shape: [values.length], data: values }, `int32_data ${type}`);
  }
  const short: TensorMessage = { name: 'w', dims: [5], data_type: INT4, raw_data: Uint8Array.of(1, 2) };
  assert.throws(() => tensorFromProto(short, '.'), (e: Error) => e instanceof OnnxFormatError && /tensor 'w': raw_data has 2 bytes, shape \[5\] needs 3/.test(e.message));
  const field: TensorMessage = { name: 'w', dims: [5], data_type: INT2, int32_data: [1] };
  assert.throws(() => tensorFromProto(field, '.'), /tensor 'w': int32_data has 1 entries, shape \[5\] needs 2 \(INT2 packs 4 values a byte\)/);
});

const FLOATS = [-9, -8.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 7.5, 8.5, 100, -100, 16, -0];
const INTS = [-20, -9, -8, -3, -2, -1, 0, 1, 2, 3, 7, 8, 15, 16, 17, 300];
/** ml_dtypes' astype from float32 (truncation toward zero, then the low bits) and from int64 (the low bits). */
const FROM_FLOAT: Record<number, number[]> = {
  [INT4]: [7, -8, -2, -1, 0, 0, 1, 2, 7, -8, 4, -4, 0, 0],
  [UINT4]: [7, 8, 14, 15, 0, 0, 1, 2, 7, 8, 4, 12, 0, 0],
  [INT2]: [-1, 0, -2, -1, 0, 0, 1, -2, -1, 0, 0, 0, 0, 0],
  [UINT2]: [3, 0, 2, 3, 0, 0, 1, 2, 3, 0, 0, 0, 0, 0],
};
const FROM_INT: Record<number, number[]> = {
  [INT4]: [-4, 7, -8, -3, -2, -1, 0, 1, 2, 3, 7, -8, -1, 0, 1, -4],
  [UINT4]: [12, 7, 8, 13, 14, 15, 0, 1, 2, 3, 7, 8, 15, 0, 1, 12],
  [INT2]: [0, -1, 0, 1, -2, -1, 0, 1, -2, -1, -1, 0, -1, 0, 1, 0],
  [UINT2]: [0, 3, 0, 1, 2, 3, 0, 1, 2, 3, 3, 0, 3, 0, 1, 0],
};

/** Cast of a float input, an int64 input and the same values as initializers (folded at import) to `to`. */
function castModel(to: number): Uint8Array {
  return new OnnxModelBuilder(21).input('x', [FLOATS.length]).typedInput('i', INT64, [INTS.length])
    .float('xc', [FLOATS.length], FLOATS).int64('ic', INTS)
    .node('Cast', ['x'], ['a'], { to }).typedOutput('a', to)
    .node('Cast', ['i'], ['b'], { to }).typedOutput('b', to)
    .node('Cast', ['xc'], ['c'], { to }).typedOutput('c', to)
    .node('Cast', ['ic'], ['d'], { to }).typedOutput('d', to)
    .build();
}

test('Cast to int4/uint4/int2/uint2 from float and int64, folded and computed, as onnx\'s reference (ml_dtypes) gives', () => {
  for (const to of [INT4, UINT4, INT2, UINT2]) {
    const model = importOnnx(castModel(to), 'cast.onnx');
    const outs = runGraph(model.graph, new Map<string, TensorData>([['x', Float32Array.from(FLOATS)], ['i', Int32Array.from(INTS)]]));
    assert.equal(outs.map((o) => Array.from(o)), [FROM_FLOAT[to], FROM_INT[to], FROM_FLOAT[to], FROM_INT[to]], `to ${to}`);
  }
});

test('compiled: Cast to int4/uint4/int2/uint2 agrees with the reference evaluator', async () => {
  for (const to of [INT4, UINT4, INT2, UINT2]) await compiledAgrees(work, `cast${to}`, castModel(to), [Float32Array.from(FLOATS), Int32Array.from(INTS)]);
});

test('QuantizeLinear -> DequantizeLinear with int4 and uint2 zero points: saturated to the type\'s range; compiled agrees with the reference evaluator', async () => {
  // Zero points -3 (int4, one packed byte 0x0d) and 1 (uint2, 0x01); x / 0.5 + zp saturates past [-8, 7] and [0, 3].
  const b = new OnnxModelBuilder(21).input('x', [2, 10])
    .float('s', [], [0.5]).tensor({ name: 'z', dims: [], data_type: INT4, raw_data: Uint8Array.of(0x0d) })
    .tensor({ name: 'z2', dims: [], data_type: UINT2, raw_data: Uint8Array.of(0x01) })
    .node('QuantizeLinear', ['x', 's', 'z'], ['q']).typedOutput('q', INT4)
    .node('DequantizeLinear', ['q', 's', 'z'], ['y']).output('y')
    .node('QuantizeLinear', ['x', 's', 'z2'], ['q2']).typedOutput('q2', UINT2)
    .node('DequantizeLinear', ['q2', 's', 'z2'], ['y2']).output('y2');
  const x = Float32Array.of(-9, -6, -2.75, -2.5, -0.25, 0, 0.25, 0.75, 1, 2, 3, 5, 6, -100, 100, 1.25, -1.25, 0.5, -0.5, 4);
  const model = importOnnx(b.build(), 'q.onnx');
  const [q, y, q2] = runGraph(model.graph, new Map([['x', x]]));
  // round-half-even(x / 0.5) - 3, clamped to [-8, 7]; and + 1, clamped to [0, 3].
  const want = Array.from(x, (v) => Math.min(7, Math.max(-8, rne(v / 0.5) - 3)));
  assert.equal(Array.from(q), want);
  assert.equal(Array.from(y), want.map((v) => (v + 3) * 0.5));
  assert.equal(Array.from(q2), Array.from(x, (v) => Math.min(3, Math.max(0, rne(v / 0.5) + 1))));
  await compiledAgrees(work, 'qdq4', b.build(), [x]);
  await compiledAgrees(work, 'qdq4r', b.build(), [randFloats(20, 3, -6, 6, 0.25)]);
});

function rne(v: number): number {
  const r = Math.round(v);
  return r - v === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

test.run();
