// Whole networks compiled with default schedules agree with the reference evaluator, and
// a second compile of the same model compiles nothing.
//
// Tolerance: float32 kernels sum in another order than the float64 reference, so outputs
// (softmax probabilities) may differ by at most 1e-4 of the largest probability.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { getNetwork } from '../frontend/networks';
import { runGraph } from '../graph/run';
import { runBench } from '../native/bench';
import { readFloat32File, writeFloat32File } from '../runtime/rawfile';
import { uniform } from '../runtime/random';
import { parseTarget } from '../target';
import { readManifest } from './manifest';
import { compileModel } from './model';

const work = mkdtempSync(path.join(tmpdir(), 'tt-compile-test-'));
const cacheDir = path.join(work, 'cache');
const target = parseTarget('llvm -mcpu=native');

async function compileAndCompare(name: string, imageSize: number) {
  const net = getNetwork(name, { imageSize, randomStats: true });
  const outDir = path.join(work, name);
  const first = await compileModel({ name, graph: net.graph, target, outDir, cacheDir });
  assert.is(readManifest(outDir).kernels.length, first.kernels.length, 'the manifest matches schemas/manifest.schema.json');
  const x = uniform(net.inputShape.reduce((a, b) => a * b, 1), 11, 0);
  const input = path.join(work, `${name}.in.bin`);
  await writeFloat32File(input, x);
  const outputs = path.join(work, `${name}.out`);
  await runBench({ model: first.library, params: first.params, repeat: 1, number: 1, minRepeatMs: 0, threads: 2, inputs: { data: input }, saveOutputs: outputs });
  const got = await readFloat32File(path.join(outputs, 'output.bin'));
  const [ref] = runGraph(net.graph, new Map([['data', x]]));
  assert.is(got.length, ref.length);
  let err = 0, peak = 0;
  for (let i = 0; i < ref.length; i++) { err = Math.max(err, Math.abs(got[i] - ref[i])); peak = Math.max(peak, Math.abs(ref[i])); }
  assert.ok(err <= 1e-4 * peak, `${name}: max abs error ${err} > 1e-4 x ${peak}`);
  return first;
}

test('mobilenet compiles, runs and matches the reference; a second compile compiles 0 kernels', async () => {
  const first = await compileAndCompare('mobilenet', 224);
  assert.ok(first.compiled > 0);
  const net = getNetwork('mobilenet', { randomStats: true });
  const again = await compileModel({ name: 'mobilenet', graph: net.graph, target, outDir: path.join(work, 'mobilenet2'), cacheDir });
  assert.is(again.compiled, 0);
  assert.is(again.reused, first.kernels.length);
});

test('resnet-18 compiles, runs and matches the reference', async () => {
  await compileAndCompare('resnet-18', 64);
});

test.after(() => rmSync(work, { recursive: true, force: true }));
test.run();
