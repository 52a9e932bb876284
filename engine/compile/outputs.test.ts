// Model outputs that no kernel of the network computes: a graph input passed through
// (Identity, Dropout, a Transpose with the identity permutation), a constant (Shape's result,
// a Constant node), one value listed twice, an input listed as an output. Each gets a copy
// kernel (compile/model-common.ts withOutputCopies), so every output comes back with its
// values: before, such a model compiled to 0 kernels and every output came back as the NaN
// tt_bench fills outputs with. Checked exactly (a copy changes no bit) against the reference
// evaluator, and against ONNX Runtime through `benchmark --compare`, which also must end
// quickly on a model that takes ~0 ms a run (it ran for minutes: ONNX Runtime was given the
// tens of millions of runs tt_bench needs to fill its 100 ms).

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { COMPARE_MAX_NUMBER, compareWithOnnxRuntime } from '../compare/compare';
import { tryLoadOnnxRuntime } from '../compare/ort';
import { loadModel } from '../frontend/load';
import { OnnxModelBuilder } from '../frontend/onnx/model-builder';
import { DataType, decodeModel, encodeModel } from '../frontend/onnx/schema';
import { floatTensorProto } from '../frontend/onnx/tensor';
import { runGraph } from '../graph/run';
import type { TensorData } from '../ir/tensor';
import { runBench } from '../native/bench';
import { outputFileName } from '../runtime/abi';
import { readFloat32File, writeFloat32File } from '../runtime/rawfile';
import { uniform } from '../runtime/random';
import { skip } from '../skip.fixture';
import { readManifest } from './manifest';
import { compileNetwork } from '../app/compile';

const work = mkdtempSync(path.join(tmpdir(), 'tt-outputs-test-'));
const cacheDir = path.join(work, 'cache');
const ort = tryLoadOnnxRuntime();

/** `bytes` with graph output `name` declared INT64 (the builder declares every output FLOAT): Shape's type. */
function int64Output(bytes: Uint8Array, name: string): Uint8Array {
  const m = decodeModel(bytes);
  for (const o of m.graph!.output!) if (o.name === name) o.type = { tensor_type: { elem_type: DataType.INT64 } };
  return encodeModel(m);
}

/** Compiles `bytes` (written as `<name>.onnx`), runs it once on a seeded input and checks every output, bit for bit, against the reference evaluator. */
async function compileAndCheck(name: string, bytes: Uint8Array): Promise<{ dir: string; kernels: number }> {
  const file = path.join(work, `${name}.onnx`);
  writeFileSync(file, bytes);
  const dir = path.join(work, name);
  const result = await compileNetwork({ model: file, target: 'llvm -mcpu=native', outDir: dir, cacheDir, warn: (m) => assert.unreachable(`warning: ${m}`) });
  const m = readManifest(dir);
  const model = loadModel({ model: file });
  const inputs = m.inputs.map((inp, i) => uniform(inp.shape.reduce((a, b) => a * b, 1), 5, i));
  const files: Record<string, string> = {};
  m.inputs.forEach((inp, i) => { files[inp.name] = path.join(work, `${name}.in${i}.bin`); });
  await Promise.all(m.inputs.map((inp, i) => writeFloat32File(files[inp.name], inputs[i])));
  const saved = path.join(work, `${name}.out`);
  await runBench({ model: result.library, params: result.params, repeat: 1, number: 1, minRepeatMs: 0, threads: 1, inputs: files, saveOutputs: saved });
  const want = runGraph(model.graph, new Map(m.inputs.map((inp, i) => [inp.name, inputs[i]])));
  assert.is(m.outputs.length, want.length);
  for (const [k, o] of m.outputs.entries()) {
    const words = await readFloat32File(path.join(saved, `${outputFileName(o.name)}.bin`));
    const got: TensorData = o.dtype === 'float32' ? words : new Int32Array(words.buffer, words.byteOffset, words.length);
    assert.is(got.length, want[k].length, `${name}: output ${k} (${o.name}) size`);
    for (let i = 0; i < got.length; i++) {
      if (!Object.is(got[i], want[k][i])) assert.unreachable(`${name}: output ${k} (${o.name})[${i}] = ${got[i]}, the reference ${want[k][i]}`);
    }
  }
  return { dir, kernels: result.kernels.length };
}

test('an Identity model (0 kernels before): one copy kernel, the input comes back; benchmark --compare ends with bounded runs and agrees with ONNX Runtime', async () => {
  const bytes = new OnnxModelBuilder(13).input('x', [2, 3, 4]).output('y').node('Identity', ['x'], ['y']).build();
  const { dir, kernels } = await compileAndCheck('identity', bytes);
  assert.is(kernels, 1, 'one copy kernel');
  if (!ort.module) { skip('identity: the comparison with ONNX Runtime', ort.error); return; }
  const report = await compareWithOnnxRuntime({ modelDir: dir, threads: 1, rounds: 2, repeat: 2, minRepeatMs: 20 });
  assert.ok(report.number >= 1 && report.number <= COMPARE_MAX_NUMBER, `${report.number} runs per measurement`);
  assert.equal(report.outputs.map((o) => o.max_abs_err), [0]);
});

test('Identity, Dropout, an identity Transpose, Shape, a Constant, a value listed twice and an input as outputs: every one exact', async () => {
  const b = new OnnxModelBuilder(13).input('x', [2, 3, 4]);
  for (const o of ['id', 'drop', 'tr', 'shape', 'k', 'r', 'r', 'x']) b.output(o);
  b.node('Identity', ['x'], ['id'])
    .node('Dropout', ['x'], ['drop'])
    .node('Transpose', ['x'], ['tr'], { perm: [0, 1, 2] })
    .node('Shape', ['x'], ['shape'])
    .node('Constant', [], ['k'], { value: { tensor: floatTensorProto('k', [2, 2], Float32Array.from([1.5, -2, 0.25, 8])) } })
    .node('Relu', ['x'], ['r']);
  const { dir } = await compileAndCheck('passthrough', int64Output(b.build(), 'shape'));
  const m = readManifest(dir);
  assert.equal(m.outputs.map((o) => [o.name, o.dtype, o.file]), [
    ['id', 'float32', 'id.bin'], ['drop', 'float32', 'drop.bin'], ['tr', 'float32', 'tr.bin'], ['shape', 'int32', 'shape.bin'],
    ['k', 'float32', 'k.bin'], ['r', 'float32', 'r.bin'], ['r', 'float32', 'r.bin'], ['x', 'float32', 'x.bin'],
  ]);
  if (!ort.module) { skip('passthrough: the comparison with ONNX Runtime', ort.error); return; }
  const report = await compareWithOnnxRuntime({ modelDir: dir, threads: 1, rounds: 1, repeat: 1, minRepeatMs: 10 });
  assert.equal(report.outputs.map((o) => [o.name, o.max_abs_err]), [['id', 0], ['drop', 0], ['tr', 0], ['shape', 0], ['k', 0], ['r', 0], ['r', 0], ['x', 0]]);
});

test('a model whose only output is a constant (Shape of the input): its values from params', async () => {
  const bytes = int64Output(new OnnxModelBuilder(13).input('x', [5, 7]).output('s').node('Shape', ['x'], ['s']).build(), 's');
  const { dir, kernels } = await compileAndCheck('shape', bytes);
  assert.is(kernels, 1);
  assert.equal(readManifest(dir).outputs.map((o) => [o.shape, o.dtype]), [[[2], 'int32']]);
  if (!ort.module) { skip('shape: the comparison with ONNX Runtime', ort.error); return; }
  const report = await compareWithOnnxRuntime({ modelDir: dir, threads: 1, rounds: 1, repeat: 1, minRepeatMs: 10 });
  assert.equal(report.outputs.map((o) => o.max_abs_err), [0]);
});

test.after(() => rmSync(work, { recursive: true, force: true }));
test.run();
