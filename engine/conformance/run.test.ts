// The conformance runner end to end on a few cases written here in generate.py's layout:
// cases that import are compiled together into one model.so and run by one tt_bench (a batch
// that fails is split until the failing case is found); each ends as passed, wrong (with its
// max error) or refused (the importer's or compiler's reason, or a value the runner cannot
// feed), the same whether batched or one per library. A case refused because an input must
// be a constant runs with its integer inputs frozen (as few as import), and says so; our own
// code looping while importing or compiling a case (stubbed by hang.fixture.ts) ends as a hang
// without stalling the run.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { OnnxModelBuilder } from '../frontend/onnx/model-builder';
import { DataType } from '../frontend/onnx/schema';
import { Graph } from '../graph/graph';
import type { CaseValue, ConformanceCase } from './cases';
import { mergeGraphs, runConformance } from './run';

const work = mkdtempSync(path.join(tmpdir(), 'tt-conformance-test-'));
const bytes = (a: Float32Array | Float64Array | BigInt64Array): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/** Writes one case: its model, its input x (and b), its expected output y (float32, or float64 given as a Float64Array). */
function writeCase(name: string, model: Uint8Array, inputs: [string, string, number[], Uint8Array][], y: Float32Array | Float64Array, yShape: number[]): ConformanceCase {
  const dir = path.join(work, 'cases', name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'model.onnx'), model);
  const values: CaseValue[] = inputs.map(([n, dtype, shape, data], i) => {
    writeFileSync(path.join(dir, `0-in${i}.bin`), data);
    return { name: n, kind: 'tensor', dtype, shape, file: `0-in${i}.bin` };
  });
  writeFileSync(path.join(dir, '0-out0.bin'), bytes(y));
  return {
    name, operator: name.split('_')[1], expanded: false, domains: [], opset: 13, rtol: 1e-3, atol: 1e-7,
    graph_inputs: inputs.map(([n]) => ({ name: n, type: 'tensor' })), graph_outputs: [{ name: 'y', type: 'tensor' }],
    data_sets: [{ inputs: values, outputs: [{ name: 'y', kind: 'tensor', dtype: y instanceof Float64Array ? 'float64' : 'float32', shape: yShape, file: '0-out0.bin' }] }],
  };
}

const x = Float32Array.from([-1, 2, -3, 4, 5, -6]);
const x64 = Float64Array.from([-1, 2.0000000001, -3, 4.1, 5e-9, -6]);
const relu = (): Uint8Array => new OnnxModelBuilder().input('x', [2, 3]).output('y').node('Relu', ['x'], ['y']).build();
const cases = [
  writeCase('test_relu', relu(), [['x', 'float32', [2, 3], bytes(x)]], x.map((v) => Math.max(v, 0)), [2, 3]),
  writeCase('test_relu_wrong', relu(), [['x', 'float32', [2, 3], bytes(x)]], x.map((v) => Math.max(v, 0) + (v === 4 ? 0.5 : 0)), [2, 3]),
  writeCase('test_add_bcast', new OnnxModelBuilder().input('a', ['N', 3]).input('b', [3]).output('y').node('Add', ['a', 'b'], ['y']).build(),
    [['a', 'float32', [2, 3], bytes(x)], ['b', 'float32', [3], bytes(Float32Array.from([10, 20, 30]))]], x.map((v, i) => v + [10, 20, 30][i % 3]), [2, 3]),
  writeCase('test_foo', new OnnxModelBuilder().input('x', [2, 3]).output('y').node('FooBar', ['x'], ['y']).build(), [['x', 'float32', [2, 3], bytes(x)]], x, [2, 3]),
  // float64 runs as float32: fed rounded, compared with the float64 expected values at the case's tolerances.
  writeCase('test_relu_f64', new OnnxModelBuilder().typedInput('x', DataType.DOUBLE, [2, 3]).typedOutput('y', DataType.DOUBLE).node('Relu', ['x'], ['y']).build(),
    [['x', 'float64', [2, 3], bytes(x64)]], x64.map((v) => Math.max(v, 0)), [2, 3]),
  writeCase('test_relu_f8', relu(), [['x', 'float8e4m3fn', [2, 3], new Uint8Array(6)]], x, [2, 3]),
  // Imports, and then fails to compile (a NUL in a tensor name): its batch is split until it is found.
  writeCase('test_relu_nul', new OnnxModelBuilder().input('x', [2, 3]).output('y\0z').node('Relu', ['x'], ['y\0z']).build(), [['x', 'float32', [2, 3], bytes(x)]], x, [2, 3]),
];

const outcomes = (rs: { name: string; outcome: string }[]): Record<string, string> => Object.fromEntries(rs.map((r) => [r.name, r.outcome]));
const expected = { test_relu: 'passed', test_relu_wrong: 'wrong', test_add_bcast: 'passed', test_foo: 'refused', test_relu_f64: 'passed', test_relu_f8: 'refused', test_relu_nul: 'refused' };

test('cases compile together into one library, each classified; a failing batch is split; one per library gives the same', async () => {
  const opts = { dir: work, cases, workDir: path.join(work, 'batches'), cacheDir: path.join(work, 'kernels'), threads: 1 };
  const batched = await runConformance({ ...opts, batchSize: 8, parallel: 1 });
  assert.equal(outcomes(batched.results), expected);
  // The five cases that import, together; then halves: [relu, relu_wrong, add], [f64, nul]; then [f64], [nul].
  assert.is(batched.libraries, 5);
  assert.match(batched.results.find((r) => r.name === 'test_relu_nul')!.reason!, /cannot hold a NUL byte/);
  const wrong = batched.results.find((r) => r.name === 'test_relu_wrong')!;
  assert.is(wrong.max_abs_error, 0.5);
  assert.match(wrong.reason!, /^output 'y': 1 of 6 value\(s\) off, max abs error 0\.500 at \[1, 0\] \(expected 4\.5, got 4; rtol 0\.001, atol 1e-7\)$/);
  assert.is(batched.results.find((r) => r.name === 'test_foo')!.reason, 'FooBar: operator is not supported');
  assert.match(batched.results.find((r) => r.name === 'test_relu_f8')!.reason!, /^input 'x' is float8e4m3fn: supported tensor types are float32, float16, bfloat16, float64, float8 and float4 \(as float32\)/);
  const single = await runConformance({ ...opts, batchSize: 1, parallel: 1 });
  assert.equal(outcomes(single.results), expected);
  assert.is(single.libraries, 5);
});

test('a case refused for a non-constant input passes with the integer inputs it needs frozen, and says so; hangs in our code are bounded', async () => {
  // y = Reshape(Gather(x, idx), shape): the importer needs `shape` constant, not `idx`.
  const gatherReshape = new OnnxModelBuilder().input('x', [2, 3]).typedInput('idx', DataType.INT64, [2]).typedInput('shape', DataType.INT64, [2]).output('y')
    .node('Gather', ['x', 'idx'], ['g'], { axis: 0 }).node('Reshape', ['g', 'shape'], ['y']).build();
  const frozen = writeCase('test_reshape_frozen', gatherReshape, [
    ['x', 'float32', [2, 3], bytes(x)], ['idx', 'int64', [2], bytes(new BigInt64Array([1n, 0n]))], ['shape', 'int64', [2], bytes(new BigInt64Array([3n, 2n]))],
  ], Float32Array.from([4, 5, -6, -1, 2, -3]), [3, 2]);
  const hangImport = writeCase('test_hang_import', relu(), [['x', 'float32', [2, 3], bytes(x)]], x, [2, 3]);
  const hangCompile = writeCase('test_hang_compile', new OnnxModelBuilder().input('x', [2, 3]).output('y_hang_here').node('Relu', ['x'], ['y_hang_here']).build(),
    [['x', 'float32', [2, 3], bytes(x)]], x, [2, 3]);
  const run = await runConformance({
    dir: work, cases: [cases[0], hangImport, hangCompile, frozen], workDir: path.join(work, 'batches'), cacheDir: path.join(work, 'kernels'), threads: 1,
    batchSize: 8, parallel: 1, workTimeoutMs: 1500, workerPreload: path.join(__dirname, 'hang.fixture.ts'),
  });
  const [relu_, hi, hc, fr] = run.results;
  assert.equal([relu_.outcome, relu_.frozen], ['passed', undefined]);
  assert.equal([fr.outcome, fr.frozen], ['passed', ['shape']]);
  assert.equal([hi.outcome, hi.reason], ['hang', 'importing it: our own code held its worker for more than 1.5 s']);
  assert.equal([hc.outcome, hc.reason], ['hang', 'compiling it (graph passes, partition, lowering, code generation, C compiler): our own code held its worker for more than 1.5 s']);
  // [relu, hang_compile, frozen], then [relu, hang_compile], [relu], [hang_compile], [frozen].
  assert.is(run.libraries, 5);
});

test('merged graphs keep each case apart under its prefix', () => {
  const a = new Graph();
  a.outputs = [a.op('relu', [a.input('x', [2])])];
  const m = mergeGraphs([{ graph: a, outputs: ['y'] }, { graph: a, outputs: ['y'] }]);
  assert.equal(m.graph.nodes.filter((n) => n.op === 'input').map((n) => n.name), ['c0/x', 'c1/x']);
  assert.equal(m.outputs, ['c0/y', 'c1/y']);
  assert.equal(m.graph.outputs.map((id) => m.graph.node(id).inputs[0]), [0, 2]);
});

test.after(() => rmSync(work, { recursive: true, force: true }));

test.run();
