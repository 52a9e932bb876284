// Test helper: an ONNX model compiled with the default schedules (NHWC inside) and run
// natively by tt_bench on files of the given inputs, every output compared with the
// reference evaluator on the same inputs: integer and bool outputs exactly, float ones
// within 1e-5 relative to 1 + |x| (with `nanEqual`, a NaN reference wants a NaN).

import path from 'node:path';
import * as assert from 'uvu/assert';
import { compileModel } from '../../compile/model';
import { readManifest } from '../../compile/manifest';
import { convertLayout } from '../../graph/passes';
import { runGraph } from '../../graph/run';
import { asFloatWords, type TensorData } from '../../ir/tensor';
import { runBench } from '../../native/bench';
import { readFloat32File, writeFloat32File } from '../../runtime/rawfile';
import { parseTarget } from '../../target';
import { cancelTransposes, importOnnx } from './import';

export async function compiledAgrees(work: string, name: string, bytes: Uint8Array, inputs: readonly TensorData[], opts: { nanEqual?: boolean } = {}): Promise<void> {
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
    const words = await readFloat32File(path.join(saved, `${out.file}`));
    const got = out.dtype === 'float32' ? words : new Int32Array(words.buffer, words.byteOffset, words.length);
    assert.is(got.length, want[k].length, `${name}: output ${k} size`);
    for (let i = 0; i < got.length; i++) {
      const a = got[i], b = want[k][i];
      const same = out.dtype !== 'float32' ? a === b
        : opts.nanEqual && Number.isNaN(b) ? Number.isNaN(a) : Math.abs(a - b) <= 1e-5 * (1 + Math.abs(b));
      if (!same) assert.unreachable(`${name}: output ${k} ('${out.name}', ${out.dtype})[${i}] = ${a}, the reference ${b}`);
    }
  }
}
