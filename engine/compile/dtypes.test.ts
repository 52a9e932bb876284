// Integer tensors through the whole CPU path: an int32 model input, int32 constants in the
// params blob, kernels over int32_t buffers, the ABI's dtype in tt_tensor_info and the
// manifest, and tt_bench's 0/1 integer inputs. Integers must come back exactly.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Graph } from '../graph/graph';
import { runGraph } from '../graph/run';
import { runBench } from '../native/bench';
import { readFloat32File, writeFloat32File } from '../runtime/rawfile';
import { modelInput } from '../runtime/random';
import { asFloatWords } from '../ir/tensor';
import { parseTarget } from '../target';
import { readManifest } from './manifest';
import { compileModel } from './model';

const work = mkdtempSync(path.join(tmpdir(), 'tt-dtypes-test-'));
test.after(() => rmSync(work, { recursive: true, force: true }));

/** ids [2, 3] int32 -> max((ids + c) * k, floor) with int32 constants; a float output beside it. */
function intGraph(): Graph {
  const g = new Graph();
  const ids = g.input('ids', [2, 3], 'int32');
  const x = g.input('x', [2, 3]);
  const c = g.constant('c', [3], Int32Array.of(10, -20, 2147483000));
  const k = g.constant('k', [1], Int32Array.of(3));
  const floor = g.constant('floor', [1], Int32Array.of(-50));
  const sum = g.op('add', [ids, c]);
  const scaled = g.op('multiply', [sum, k]);
  const out = g.op('maximum', [scaled, floor]);
  const y = g.op('relu', [x]);
  g.outputs = [out, y];
  return g;
}

test('int32 input, constants and kernels: compiled outputs equal the reference exactly; the manifest and ABI say int32', async () => {
  const g = intGraph();
  assert.is(g.node(g.outputs[0]).dtype, 'int32');
  const outDir = path.join(work, 'int');
  const result = await compileModel({ name: 'int', graph: g, target: parseTarget('llvm'), outDir, cacheDir: path.join(work, 'cache') });
  const m = readManifest(outDir);
  assert.equal(m.inputs.map((i) => i.dtype), ['int32', 'float32']);
  assert.equal(m.outputs.map((o) => o.dtype), ['int32', 'float32']);

  const ids = Int32Array.of(5, -7, 1000, 0, 1, -2147483000);
  const x = Float32Array.of(-1, 2, -3, 4, -5, 6);
  const files = { ids: path.join(work, 'ids.bin'), x: path.join(work, 'x.bin') };
  await writeFloat32File(files.ids, asFloatWords(ids));
  await writeFloat32File(files.x, x);
  const saved = path.join(work, 'out');
  await runBench({ model: result.library, params: result.params, repeat: 1, number: 1, minRepeatMs: 0, threads: 1, inputs: files, saveOutputs: saved });
  const words = await readFloat32File(path.join(saved, `${m.outputs[0].file}`));
  const got = new Int32Array(words.buffer, words.byteOffset, words.length);
  const [want, wantY] = runGraph(g, new Map<string, Int32Array | Float32Array>([['ids', ids], ['x', x]]));
  assert.instance(want, Int32Array);
  // (1000 + 2147483000) * 3 wraps in int32, as in C and in the evaluator's Int32Array store.
  assert.equal([...got], [...want]);
  assert.equal([...(await readFloat32File(path.join(saved, `${m.outputs[1].file}`)))], [...wantY]);

  // Without an input file, tt_bench feeds integer inputs 0 or 1 (modelInput), floats uniform.
  const defaults = path.join(work, 'out-default');
  await runBench({ model: result.library, params: result.params, repeat: 1, number: 1, minRepeatMs: 0, threads: 1, saveOutputs: defaults });
  const dflt = await readFloat32File(path.join(defaults, `${m.outputs[0].file}`));
  const [wantDefault] = runGraph(g, new Map<string, Int32Array | Float32Array>([['ids', modelInput('int32', 6, 0, 0) as Int32Array], ['x', modelInput('float32', 6, 0, 1)]]));
  assert.equal([...new Int32Array(dflt.buffer, dflt.byteOffset, dflt.length)], [...wantDefault]);
});

test.run();
