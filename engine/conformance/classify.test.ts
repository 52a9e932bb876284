// The conformance suite's pure parts: which values it refuses, the raw numpy bytes it reads,
// the comparison at a case's tolerances (numpy's assert_allclose, integers exactly), the one
// line of an importer refusal, the tallies, the summary line and the baseline check.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { ConformanceCase } from './cases';
import {
  caseRefusal, checkBaseline, compareOutput, decodeValue, makeBaseline, modelWords, outcomeLabel, reasonGroup, refusalOf, report, summaryLine, tally, type CaseResult,
} from './classify';

const tensor = (name: string, dtype: string, shape: number[]) => ({ name, kind: 'tensor', dtype, shape, file: `${name}.bin` });
const caseOf = (inputs: ConformanceCase['data_sets'][0]['inputs'], outputs = [tensor('y', 'float32', [2])]): ConformanceCase => ({
  name: 'test_x', operator: 'X', expanded: false, domains: [], opset: 13, rtol: 1e-3, atol: 1e-7,
  graph_inputs: inputs.map((v) => ({ name: v.name, type: 'tensor' })), graph_outputs: outputs.map((v) => ({ name: v.name, type: 'tensor' })),
  data_sets: [{ inputs, outputs }],
});
const bytes = (a: ArrayBufferView): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

test('values the runner cannot feed or compare are refused in one line', () => {
  assert.is(caseRefusal(caseOf([tensor('x', 'float32', [2])])), undefined);
  assert.is(caseRefusal(caseOf([tensor('x', 'int64', [2]), tensor('m', 'bool', [2])])), undefined);
  assert.is(caseRefusal(caseOf([tensor('x', 'float64', [2]), tensor('b', 'bfloat16', [2])], [tensor('y', 'float16', [2])])), undefined, 'float64, bfloat16 and float16 run as float32');
  assert.is(caseRefusal(caseOf([{ name: 's', kind: 'tensor', dtype: 'object', shape: [2] }])), "input 's' holds strings: supported tensor types are float32, float16, bfloat16, float64, float8 and float4 (as float32), the integer types (as int32) and bool");
  assert.is(caseRefusal(caseOf([{ name: 'q', kind: 'sequence' }])), "input 'q' is a sequence: only tensors are supported");
  assert.is(caseRefusal(caseOf([{ name: 'o', kind: 'optional' }])), "input 'o' is an optional (None): only tensors are supported");
  assert.is(caseRefusal(caseOf([{ name: 'f8', kind: 'tensor', dtype: 'float8e4m3fn', shape: [2] }])), "input 'f8' is float8e4m3fn: supported tensor types are float32, float16, bfloat16, float64, float8 and float4 (as float32), the integer types (as int32) and bool");
  const seq = { ...caseOf([tensor('x', 'float32', [2])]), graph_outputs: [{ name: 'y', type: 'sequence' }] };
  assert.is(caseRefusal(seq), "graph output 'y' is a sequence: only tensors are supported");
});

test('raw little-endian numpy bytes decode per dtype; integers feed int32 inputs, within its range', () => {
  assert.equal([...decodeValue(bytes(new BigInt64Array([-3n, 2n ** 40n])), 'int64')], [-3, 2 ** 40]);
  assert.equal([...decodeValue(new Uint8Array([0, 1, 0]), 'bool')], [0, 1, 0]);
  assert.equal([...decodeValue(bytes(new Uint16Array([65535])), 'uint16')], [65535]);
  assert.equal([...decodeValue(bytes(new Int8Array([-128])), 'int8')], [-128]);
  assert.equal([...decodeValue(bytes(new Float32Array([1.5, -0])), 'float32')], [1.5, -0]);
  const v = tensor('i', 'int64', [2]);
  assert.equal(modelWords(v, bytes(new BigInt64Array([7n, -1n])), 'int32'), Int32Array.from([7, -1]));
  assert.is(modelWords(v, bytes(new BigInt64Array([2n ** 31n])), 'int32'), "input 'i' (int64) holds 2147483648, outside the int32 range int64 values are carried in");
  assert.is(modelWords(v, bytes(new BigInt64Array([1n])), 'float32'), "input 'i' is int64, the compiled model takes float32");
  assert.equal(modelWords(tensor('m', 'bool', [2]), new Uint8Array([1, 0]), 'bool'), Int32Array.from([1, 0]));
});

test('float16 and bfloat16 bytes decode exactly, float64 as its numbers; all feed float32 inputs (float64 rounded to float32)', () => {
  // float16 0x3c00 = 1, 0xc000 = -2, 0x0001 = 2^-24 (subnormal), 0x7c00 = inf, 0x7e00 = NaN; bfloat16 0x3f80 = 1, 0x3dcd = 0.10009765625.
  const h = bytes(new Uint16Array([0x3c00, 0xc000, 0x0001, 0x7c00, 0x7e00]));
  const f16 = decodeValue(h, 'float16');
  assert.ok(f16 instanceof Float32Array);
  assert.equal([...f16].slice(0, 4), [1, -2, 2 ** -24, Infinity]);
  assert.ok(Number.isNaN(f16[4]));
  assert.equal([...decodeValue(bytes(new Uint16Array([0x3f80, 0x3dcd, 0x8000])), 'bfloat16')], [1, 0.10009765625, -0]);
  const d = decodeValue(bytes(new Float64Array([0.1, 1e300])), 'float64');
  assert.ok(d instanceof Float64Array && d[0] === 0.1 && d[1] === 1e300, 'float64 keeps its digits for the comparison');
  assert.throws(() => decodeValue(new Uint8Array(3), 'float16'), /3 bytes is not a whole number of float16 values/);
  assert.equal(modelWords(tensor('d', 'float64', [2]), bytes(new Float64Array([0.1, 1e300])), 'float32'), Float32Array.from([Math.fround(0.1), Infinity]));
  const fed = modelWords(tensor('h', 'float16', [5]), h, 'float32') as Float32Array;
  assert.equal([...fed].slice(0, 4), [...f16].slice(0, 4));
  assert.ok(Number.isNaN(fed[4]));
  assert.is(modelWords(tensor('h', 'float16', [5]), h, 'int32'), "input 'h' is float16, the compiled model takes int32");
  // An expected float64 value is compared as its number with the model's float32, at the case's tolerances.
  const y = tensor('y', 'float64', [2]);
  assert.ok(compareOutput(y, bytes(new Float64Array([1000.00001, -3])), Float32Array.from([1000, -3]), 'float32', [2], 1e-9, 1e-7).ok === false, 'no looser than asked');
  assert.ok(compareOutput(y, bytes(new Float64Array([1000.00001, -3])), Float32Array.from([1000, -3]), 'float32', [2], 1e-9, 1e-4).ok);
});

test('outputs compare as assert_allclose does, integers exactly; the max error and its place are reported', () => {
  const y = tensor('y', 'float32', [2, 2]);
  const want = bytes(new Float32Array([1, -2, NaN, Infinity]));
  const cmp = (got: number[], rtol = 1e-3, atol = 1e-7) => compareOutput(y, want, Float32Array.from(got), 'float32', [2, 2], rtol, atol);
  assert.ok(cmp([1.0009, -2.0019, NaN, Infinity]).ok, 'within atol + rtol * |expected|, NaN equal to NaN, inf to inf');
  const off = cmp([1.0011, -2, NaN, Infinity]);
  assert.not.ok(off.ok);
  assert.ok(Math.abs(off.max_abs_error! - 0.0011) < 1e-6);
  assert.match(off.why!, /^output 'y': 1 of 4 value\(s\) off, max abs error 0\.00110 at \[0, 0\] \(expected 1, got 1\.00109/);
  assert.match(cmp([1, -2, 0, Infinity]).why!, /max abs error NaN at \[1, 0\]/);
  assert.match(cmp([1, -2, NaN, -Infinity]).why!, /max abs error Infinity at \[1, 1\]/);
  assert.is(compareOutput(y, want, new Float32Array(4), 'float32', [4], 1e-3, 1e-7).why, "output 'y' has shape [4], expected [2, 2]");
  const unwritten = new Int32Array(2).fill(0x7fc00000);
  const two = tensor('t', 'int64', [2]);
  assert.is(compareOutput(two, bytes(new BigInt64Array([1n, 2n])), unwritten, 'int32', [2], 1e-3, 1e-7).why, "output 't' was never written (all 2 value(s) still hold tt_bench's NaN fill)");
  assert.is(compareOutput(y, want, new Int32Array(4), 'int32', [2, 2], 1e-3, 1e-7).why, "output 'y' is int32, expected float32");
  const i = tensor('i', 'int64', [2]);
  const ints = bytes(new BigInt64Array([1000n, 5n]));
  assert.ok(compareOutput(i, ints, Int32Array.from([1000, 5]), 'int32', [2], 1e-3, 1e-7).ok);
  assert.match(compareOutput(i, ints, Int32Array.from([1001, 5]), 'int32', [2], 1e-3, 1e-7).why!, /1 of 2 value\(s\) off.*; exact\)$/);
});

test("an importer refusal becomes one line of `<Op>: <why>` per node, without the file or node names", () => {
  const file = '/cache/cases/test_x/model.onnx';
  const msg = `${file}: cannot import 3 node(s) (opset 13; supported operators: Add, Relu):\n  - Foo 'n1': operator is not supported\n  - Foo 'n2': operator is not supported\n  - Bar '': unsupported: mode 'cubic'`;
  assert.equal(refusalOf(msg, file), { reason: "Foo: operator is not supported; Bar: unsupported: mode 'cubic'", issues: ['Foo: operator is not supported', "Bar: unsupported: mode 'cubic'"] });
  assert.equal(refusalOf(`${file}: graph input 'x' is DOUBLE; supported input types: FLOAT`, file), { reason: "graph input 'x' is DOUBLE; supported input types: FLOAT" });
  assert.is(reasonGroup("graph input 'x' has an empty dimension [0]"), "graph input '…' has an empty dimension [0]");
});

const results: CaseResult[] = [
  { name: 'test_a', operator: 'A', outcome: 'passed' },
  { name: 'test_a_expanded', operator: 'A', outcome: 'refused', reason: 'Foo: operator is not supported; Bar: x', issues: ['Foo: operator is not supported', 'Bar: x'] },
  { name: 'test_b', operator: 'B', outcome: 'refused', reason: 'Foo: operator is not supported', issues: ['Foo: operator is not supported'] },
  { name: 'test_c', operator: 'C', outcome: 'wrong', reason: "output 'y': ...", max_abs_error: 1 },
  { name: 'test_d', operator: 'C', outcome: 'hang', reason: 'tt_bench ran past 10 s' },
  { name: 'test_e', operator: 'A', outcome: 'passed', frozen: ['scales', 'sizes'] },
  { name: 'test_f', operator: 'C', outcome: 'wrong', reason: "output 'y': ...", frozen: ['k'] },
];

test('the tally counts outcomes per operator and refusal reasons per issue; the summary line', () => {
  const t = tally(results);
  assert.equal(t.counts, { passed: 2, refused: 2, wrong: 2, crash: 0, hang: 1 });
  assert.is(t.frozenPassed, 1);
  assert.equal(t.operators.map((r) => [r.operator, r.cases, r.passed, r.frozen, r.refused, r.wrong, r.crash, r.hang]), [['A', 3, 2, 1, 1, 0, 0, 0], ['B', 1, 0, 0, 1, 0, 0, 0], ['C', 3, 0, 0, 0, 2, 0, 1]]);
  assert.equal(t.reasons, [{ reason: 'Foo: operator is not supported', count: 2 }, { reason: 'Bar: x', count: 1 }]);
  assert.equal(t.topReason.B, { reason: 'Foo: operator is not supported', count: 1 });
  assert.is(summaryLine(t), 'conformance: 2/7 passed (28.6%; 1 of them with integer inputs frozen), 2 refused, 2 wrong, 0 crashed, 1 hung');
  assert.is(report(t)[0], '| operator | cases | passed | frozen | refused | wrong | crash | hang |');
  assert.is(report(t)[2], '| A        |     3 |      2 |      1 |       1 |     0 |     0 |    0 |');
  assert.equal([outcomeLabel(results[0]), outcomeLabel(results[5]), outcomeLabel(results[6])], ['passed', 'passed (frozen: scales, sizes)', 'wrong (frozen: k)']);
});

test('the baseline: a case that passed and no longer does, or a new wrong/crash/hang, fails; known-bad ones do not', () => {
  const base = makeBaseline(results, '1.23.1');
  assert.equal(base.passing, ['test_a']);
  assert.equal(base.passing_frozen, { test_e: ['scales', 'sizes'] });
  assert.equal(base.known_bad, { test_c: "wrong: output 'y': ...", test_d: 'hang: tt_bench ran past 10 s', test_f: "wrong (frozen: k): output 'y': ..." });
  assert.equal([base.cases, base.passed, base.passed_frozen, base.pass_rate], [7, 2, 1, 0.2857]);
  assert.ok(checkBaseline(results, base).ok);
  // A plain pass that now passes only frozen is a regression; a frozen pass that now passes plain is a new plain pass.
  const swapped = checkBaseline(results.map((r) => (r.name === 'test_a' ? { ...r, frozen: ['k'] } : r.name === 'test_e' ? { ...r, frozen: undefined } : r)), base);
  assert.equal([swapped.ok, swapped.regressions.map((r) => r.name), swapped.newPasses, swapped.newFrozenPasses], [false, ['test_a'], ['test_e'], []]);
  const lost = checkBaseline(results.map((r) => (r.name === 'test_e' ? { ...r, outcome: 'refused' as const } : r)), base);
  assert.equal(lost.regressions.map((r) => r.name), ['test_e']);
  const now = results.map((r) => (r.name === 'test_a' ? { ...r, outcome: 'crash' as const } : r.name === 'test_b' ? { ...r, outcome: 'passed' as const } : r));
  const check = checkBaseline(now, base);
  assert.not.ok(check.ok);
  assert.equal(check.regressions.map((r) => r.name), ['test_a']);
  assert.equal(check.unexpected.map((r) => r.name), ['test_a']);
  assert.equal(check.newPasses, ['test_b']);
  const fixed = checkBaseline(results.map((r) => (r.name === 'test_d' ? { ...r, outcome: 'passed' as const } : r)), base);
  assert.equal([fixed.ok, fixed.fixed, fixed.newPasses], [true, ['test_d'], ['test_d']]);
});

test.run();
