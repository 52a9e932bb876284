// A small ViT (timm's layout: layer norm, fused qkv, softmax attention, GELU as Erf) written
// as ONNX at opset 17, compiled with the default schedules for this machine and run
// natively, matches ONNX Runtime (|ours - ORT| <= 1e-4 + 1e-4 * |ORT| on every logit): the
// kernels where the default schedule runs softmax's max and sum and layer norm's mean and
// variance on vector accumulators, and exp and erf as the prelude's vector polynomials.
// 17 tokens (16 patches and the class token) is not a whole number of vectors, so every
// row also has a scalar tail. Without onnxruntime-node, the reference evaluator instead.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { withoutSoftmax } from '../compare/compare';
import { openOrtSession, tryLoadOnnxRuntime } from '../compare/ort';
import { NetBuilder } from '../frontend/builder';
import { exportOnnx } from '../frontend/onnx/export';
import { vit } from '../frontend/vit';
import { runGraph } from '../graph/run';
import { runBench } from '../native/bench';
import { outputFileName } from '../runtime/abi';
import { readFloat32File, writeFloat32File } from '../runtime/rawfile';
import { uniform } from '../runtime/random';
import { skip } from '../skip.fixture';
import { readManifest } from './manifest';
import { compileNetwork } from '../app/compile';

const work = mkdtempSync(path.join(tmpdir(), 'tt-transformer-defaults-'));
test.after(() => rmSync(work, { recursive: true, force: true }));
const ort = tryLoadOnnxRuntime();
const TOL = 1e-4;

test('a small ViT (layer norm, softmax over 17 tokens, GELU as Erf) compiled with default schedules matches ONNX Runtime', async () => {
  const b = new NetBuilder({ batch: 1, layout: 'NCHW', imageSize: 32, seed: 7, randomStats: true, weights: 'random' });
  b.graph.outputs = [vit(b, { patch: 8, hidden: 64, layers: 2, heads: 4, mlp: 128, classes: 10 })];
  const graph = withoutSoftmax(b.graph);
  const bytes = exportOnnx(graph, { opset: 17 });
  const file = path.join(work, 'vit.onnx');
  writeFileSync(file, bytes);
  const dir = path.join(work, 'vit');
  const result = await compileNetwork({ model: file, target: 'llvm -mcpu=native', outDir: dir, cacheDir: path.join(work, 'cache') });
  const m = readManifest(dir);
  assert.equal(m.inputs[0].shape, [1, 3, 32, 32]);
  // Inputs of a few units, so that the scores reach exp's whole range of a row.
  const x = uniform(3 * 32 * 32, 3, 0).map((u) => 6 * u - 3);
  const input = path.join(work, 'x.bin');
  await writeFloat32File(input, x);
  const saved = path.join(work, 'out');
  await runBench({ model: result.library, params: result.params, repeat: 1, number: 1, minRepeatMs: 0, threads: 2, inputs: { [m.inputs[0].name]: input }, saveOutputs: saved });
  const got = await readFloat32File(path.join(saved, `${outputFileName(m.outputs[0].name)}.bin`));
  let want: ArrayLike<number>;
  if (ort.module) {
    const session = await openOrtSession(bytes, 1, [[1, 3, 32, 32]]);
    [want] = (await session.run([x])) as Float32Array[];
    await session.release();
  } else {
    skip('small ViT: the comparison with ONNX Runtime (the reference evaluator instead)', ort.error);
    [want] = runGraph(graph, new Map([['data', x]])) as Float32Array[];
  }
  assert.is(got.length, 10);
  assert.is(want.length, 10);
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= TOL + TOL * Math.abs(want[i]))) assert.unreachable(`logit ${i}: ours ${got[i]}, ${ort.module ? 'ONNX Runtime' : 'reference'} ${want[i]}`);
  }
});

test.run();
