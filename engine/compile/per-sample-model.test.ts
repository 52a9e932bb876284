// A CPU model that runs its batch one sample at a time (graph/per-sample.ts) computes what
// the batch graph computes: with its samples shared out among threads (threads <= samples)
// and one after another (threads > samples, or 1 thread); with two inputs of two dtypes and
// two outputs, each sample on its own rows; its manifest shows the batch's shapes, and a
// profiled run times each call of one sample's graph.
//
// Tolerance: the kernels sum in another order than the reference evaluator, so each float
// output may differ from it by 1e-5 of its largest magnitude; the int32 output is exact.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fillUniform } from '../frontend/init';
import { partition } from '../graph/fuse';
import { Graph } from '../graph/graph';
import { oneSampleGraph } from '../graph/per-sample';
import { runGraph } from '../graph/run';
import { asFloatWords, numElements, type TensorData } from '../ir/tensor';
import { runBench } from '../native/bench';
import { readFloat32File, writeFloat32File } from '../runtime/rawfile';
import { parseTarget } from '../target';
import { readManifest } from './manifest';
import { compileModel } from './model';

const work = mkdtempSync(path.join(tmpdir(), 'tt-per-sample-test-'));
test.after(() => rmSync(work, { recursive: true, force: true }));
const rand = (shape: readonly number[], seed: number): Float32Array => fillUniform(new Float32Array(numElements(shape)), seed, -1, 1);
const SAMPLES = 3;

/** data [3, 10, 10, 8] through conv, relu and a pool; ids [3, 4] through an embedding and a mean; both added; ids + 1 as an int32 output. */
function batchGraph(): Graph {
  const g = new Graph();
  const x = g.input('data', [SAMPLES, 10, 10, 8]);
  const ids = g.input('ids', [SAMPLES, 4], 'int32');
  let y = g.op('conv2d', [x, g.constant('w', [3, 3, 8, 16], rand([3, 3, 8, 16], 1))], { layout: 'NHWC', strides: [1, 1], padding: [1, 1, 1, 1], dilation: [1, 1], groups: 1 });
  y = g.op('relu', [g.op('add', [y, g.constant('b', [1, 1, 1, 16], rand([16], 2))])]);
  const pooled = g.op('batch_flatten', [g.op('global_avg_pool2d', [y], { layout: 'NHWC' })]);
  const looked = g.op('mean', [g.op('take', [g.constant('table', [9, 16], rand([9, 16], 3)), ids], { axis: 0 })], { axes: [1], keepdims: false });
  g.outputs = [g.op('add', [pooled, looked]), g.op('add', [ids, g.constant('one', [1], Int32Array.of(1))])];
  return g;
}

test('a model run per sample equals the batch graph at 1, 2 and 4 threads; its manifest shows the batch', async () => {
  const g = batchGraph();
  const one = oneSampleGraph(g);
  assert.ok(one);
  assert.is(one.samples, SAMPLES);
  const outDir = path.join(work, 'model');
  const result = await compileModel({
    name: 'per-sample', graph: g, target: parseTarget('llvm'), outDir, cacheDir: path.join(work, 'cache'),
    partitioned: { graph: one.graph, groups: partition(one.graph) }, samples: one.samples,
  });
  const m = readManifest(outDir);
  const calls = partition(one.graph).length;
  assert.is(m.samples, SAMPLES);
  assert.equal(m.inputs.map((t) => t.shape), [[SAMPLES, 10, 10, 8], [SAMPLES, 4]]);
  assert.equal(m.outputs.map((t) => t.shape), [[SAMPLES, 16], [SAMPLES, 4]]);

  const x = rand([SAMPLES, 10, 10, 8], 4);
  const ids = Int32Array.from({ length: SAMPLES * 4 }, (_, i) => (i * 7 + 2) % 9);
  const files = { data: path.join(work, 'data.bin'), ids: path.join(work, 'ids.bin') };
  await writeFloat32File(files.data, x);
  await writeFloat32File(files.ids, asFloatWords(ids));
  const [want, wantIds] = runGraph(g, new Map<string, TensorData>([['data', x], ['ids', ids]]));
  const peak = Array.from(want).reduce((a, v) => Math.max(a, Math.abs(v)), 0);
  for (const threads of [1, 2, 4]) {
    const saved = path.join(work, `out-${threads}`);
    const run = await runBench({ model: result.library, params: result.params, repeat: 2, number: 2, minRepeatMs: 0, threads, inputs: files, saveOutputs: saved, profile: true });
    const got = await readFloat32File(path.join(saved, m.outputs[0].file!));
    assert.is(got.length, want.length);
    let err = 0;
    for (let i = 0; i < want.length; i++) err = Math.max(err, Math.abs(got[i] - want[i]));
    assert.ok(err <= 1e-5 * peak, `${threads} thread(s): max abs error ${err} > 1e-5 x ${peak}`);
    const words = await readFloat32File(path.join(saved, m.outputs[1].file!));
    assert.equal([...new Int32Array(words.buffer, words.byteOffset, words.length)], [...wantIds], `${threads} thread(s): the int32 output`);
    assert.is(run.profile?.length, calls, `${threads} thread(s): the profiled run times each call of one sample's graph`);
  }
});

test.run();
