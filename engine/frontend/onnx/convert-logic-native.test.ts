// The comparison, logic, cast and indexing converters compiled with the default schedules
// and run natively (tt_bench on files of our own inputs), against the reference evaluator
// on the same inputs, exactly for integer and bool outputs and within 1e-5 (relative to
// 1 + |x|) for float ones. Unlike the ONNX Runtime checks (convert-*.test.ts), the ids here
// include out-of-range ones, which the kernels must clamp as the evaluator does.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { compileModel } from '../../compile/model';
import { readManifest } from '../../compile/manifest';
import { runGraph } from '../../graph/run';
import { asFloatWords, type TensorData } from '../../ir/tensor';
import { runBench } from '../../native/bench';
import { readFloat32File, writeFloat32File } from '../../runtime/rawfile';
import { parseTarget } from '../../target';
import { cancelTransposes, importOnnx } from './import';
import { convertLayout } from '../../graph/passes';
import { OnnxModelBuilder } from './model-builder';
import { DataType } from './schema';
import { randFloats, randInts } from './typed-ort.fixture';

const work = mkdtempSync(path.join(tmpdir(), 'tt-logic-native-'));
test.after(() => rmSync(work, { recursive: true, force: true }));

const B = DataType.BOOL, I64 = DataType.INT64;

async function compiledAgrees(name: string, bytes: Uint8Array, inputs: readonly TensorData[]): Promise<void> {
  const model = importOnnx(bytes, `${name}.onnx`);
  const graph = cancelTransposes(convertLayout(model.graph, 'NHWC'));
  const outDir = path.join(work, name);
  const result = await compileModel({ name, graph, target: parseTarget('llvm'), outDir, cacheDir: path.join(work, 'cache') });
  const m = readManifest(outDir);
  const files: Record<string, string> = {};
  for (const [i, inp] of model.inputs.entries()) {
    files[inp.name] = path.join(work, `${name}-${inp.name}.bin`);
    await writeFloat32File(files[inp.name], asFloatWords(inputs[i]));
  }
  const saved = path.join(work, `${name}-out`);
  await runBench({ model: result.library, params: result.params, repeat: 1, number: 1, minRepeatMs: 0, threads: 1, inputs: files, saveOutputs: saved });
  const want = runGraph(model.graph, new Map(model.inputs.map((inp, i) => [inp.name, inputs[i]])));
  for (const [k, out] of m.outputs.entries()) {
    const words = await readFloat32File(path.join(saved, out.file));
    const got = out.dtype === 'float32' ? words : new Int32Array(words.buffer, words.byteOffset, words.length);
    assert.is(got.length, want[k].length, `${name}: output ${k} size`);
    for (let i = 0; i < got.length; i++) {
      const a = got[i], b = want[k][i];
      const same = out.dtype === 'float32' ? Math.abs(a - b) <= 1e-5 * (1 + Math.abs(b)) : a === b;
      if (!same) assert.unreachable(`${name}: output ${k} ('${out.name}', ${out.dtype})[${i}] = ${a}, the reference ${b}`);
    }
  }
}

test('compiled: embedding Gather with negative and out-of-range ids, GatherElements, GatherND, OneHot', async () => {
  const m = new OnnxModelBuilder(13).typedInput('ids', I64, [2, 8]).typedInput('i', I64, [4, 3]).typedInput('nd', I64, [3, 2])
    .float('table', [16, 8], randFloats(128, 1)).input('x', [4, 5])
    .node('Gather', ['table', 'ids'], ['emb']).output('emb')
    .node('GatherElements', ['x', 'i'], ['ge'], { axis: 1 }).output('ge')
    .node('GatherND', ['x', 'nd'], ['gnd']).output('gnd')
    .int64('depth', [6], []).float('vals', [2], [-1, 2])
    .node('OneHot', ['i', 'depth', 'vals'], ['oh'], { axis: 1 }).output('oh');
  await compiledAgrees('gather', m.build(), [randInts(16, 2, -40, 40), randInts(12, 3, -9, 9), randInts(6, 4, -7, 7), randFloats(20, 5)]);
});

test('compiled: comparisons, Not/And/Xor, Where, Cast (to int8 wrapping, to bool, back), integer Div/Mod, ArgMax/ArgMin, CumSum', async () => {
  const m = new OnnxModelBuilder(13).input('x', [4, 6]).input('y', [6]).typedInput('a', I64, [4, 6]).typedInput('b', I64, [6])
    .node('Greater', ['x', 'y'], ['g']).typedOutput('g', B)
    .node('LessOrEqual', ['a', 'b'], ['le']).typedOutput('le', B)
    .node('Not', ['g'], ['ng'])
    .node('Xor', ['ng', 'le'], ['xo'])
    .node('And', ['xo', 'g'], ['an']).typedOutput('an', B)
    .node('Where', ['xo', 'x', 'y'], ['w']).output('w')
    .node('Cast', ['x'], ['xb'], { to: B }).typedOutput('xb', B)
    .node('Cast', ['a'], ['a8'], { to: DataType.INT8 }).typedOutput('a8', DataType.INT8)
    .node('Cast', ['x'], ['xi'], { to: I64 }).typedOutput('xi', I64)
    .node('Div', ['a', 'b'], ['dv']).typedOutput('dv', I64)
    .node('Mod', ['a', 'b'], ['md']).typedOutput('md', I64)
    .node('Mod', ['a', 'b'], ['fm'], { fmod: 1 }).typedOutput('fm', I64)
    .node('ArgMax', ['x'], ['am'], { axis: 1 }).typedOutput('am', I64)
    .node('ArgMin', ['a'], ['amin'], { axis: 0, keepdims: 0, select_last_index: 1 }).typedOutput('amin', I64)
    .int64('ax', [1], [])
    .node('CumSum', ['x', 'ax'], ['cs'], { reverse: 1 }).output('cs')
    .node('CumSum', ['a', 'ax'], ['csi'], { exclusive: 1 }).typedOutput('csi', I64);
  const x = randFloats(24, 6, -4, 4, 0.5);
  x[0] = 0.25; x[1] = -0.75;
  await compiledAgrees('logic', m.build(), [x, randFloats(6, 7, -4, 4, 0.5), randInts(24, 8, -300, 300), Int32Array.of(7, -3, 0, 5, -128, 1)]);
});

test.run();
