// Compiled ONNX models against ONNX Runtime. MobileNet and ResNet-18 with random weights
// and non-trivial batch-norm statistics are exported to ONNX (logits: the final softmax
// removed), compiled from the .onnx file with default schedules (compileNetwork), run by
// the native runner on a raw input file, and compared with ONNX Runtime on the same input:
// |ours - ort| <= 1e-4 + 1e-4 * |ort| on every logit, and the same top-1 class. Images are
// 64x64 (instead of 224) to keep compile and run time small; the kernels are the same
// kinds. The same holds for tuned schedules: each network is tuned with a tiny budget
// (random policy: per task the default schedule plus one random candidate), compiled with
// the random candidates' records only (so the kernels are certainly not the defaults) and
// compared again.
// Skipped, with skip() saying why, when onnxruntime-node cannot be loaded.

import { promises as fs, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { compileNetwork } from '../app/compile';
import { appendRecords, readRecords } from '../records/log';
import { tuneNetwork } from '../app/tune';
import { getNetwork } from '../frontend/networks';
import { writeOnnxFile } from '../frontend/onnx/export';
import { runBench } from '../native/bench';
import { readFloat32File, writeFloat32File } from '../runtime/rawfile';
import { uniform } from '../runtime/random';
import { duration } from '../units';
import { skip } from '../skip.fixture';
import { COMPARE_MAX_NUMBER, compareNumber, compareWithOnnxRuntime, formatCompareReport, minRatio, outputError, pairedRatio, top1, withoutSoftmax } from './compare';
import { openOrtSession, tryLoadOnnxRuntime } from './ort';

const IMAGE = 64;
const ort = tryLoadOnnxRuntime();
let dir = '';

test.before(async () => {
  dir = await fs.mkdtemp(path.join(tmpdir(), 'tt-compare-test-'));
});
test.after(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

test('outputError and top1', () => {
  const e = outputError(Float32Array.from([1, 2.5, 0]), Float32Array.from([1, 2, 1e-9]));
  assert.is(e.maxAbs, 0.5);
  assert.is(e.maxRel, 0.25); // 1e-9 is below 1e-6 * max|b| and does not count
  assert.equal(top1(Float32Array.from([0, 3, 1, 5, 4, 2]), 3), [1, 0]);
});

test('compareNumber: tt_bench\'s runs per measurement, bounded by count and by what ONNX Runtime takes a run', () => {
  // A model that takes ~0 ms: tt_bench grew to 3e7 runs for 100 ms; ONNX Runtime at 8 us a run would take 240 s a measurement.
  assert.is(compareNumber(32_000_000, 0.008, 100), COMPARE_MAX_NUMBER);
  // ONNX Runtime far slower than our model: about 4 x min-repeat-ms of it per measurement.
  assert.is(compareNumber(5000, 2, 100), 200);
  // Within 4x of each other: tt_bench's number stands (as before).
  assert.is(compareNumber(40, 3, 100), 40);
  assert.is(compareNumber(5, 0, 0), 5);
  assert.is(compareNumber(1, 1e9, 100), 1);
});

const kernelHashes = async (out: string): Promise<Set<string>> =>
  new Set((JSON.parse(await fs.readFile(path.join(out, 'manifest.json'), 'utf8')) as { kernels: { objectHash: string }[] }).kernels.map((k) => k.objectHash));

for (const [name, schedules] of [['mobilenet', 'default'], ['resnet-18', 'default'], ['mobilenet', 'tuned'], ['resnet-18', 'tuned']] as const) {
  test(`${name} (ONNX, random BN statistics, ${IMAGE}x${IMAGE}, ${schedules} schedules): compiled logits agree with ONNX Runtime`, async () => {
    if (!ort.module) {
      skip(`${name} ${schedules}: compiled logits against ONNX Runtime`, ort.error);
      return;
    }
    const net = getNetwork(name, { layout: 'NCHW', imageSize: IMAGE, randomStats: true, seed: 7 });
    const onnx = path.join(dir, `${name}.onnx`);
    writeOnnxFile(onnx, withoutSoftmax(net.graph));
    const out = path.join(dir, schedules === 'default' ? name : `${name}-tuned`);
    if (schedules === 'default') {
      await compileNetwork({ model: onnx, target: 'llvm', outDir: out });
    } else {
      const records = path.join(dir, `${name}.jsonl`);
      await tuneNetwork({ model: { model: onnx }, target: 'llvm', records, trialsPerTask: 2, batchSize: 2, policy: 'random', seed: 3 });
      // Which of the two candidates is faster depends on the machine; keep only the random
      // ones (and their confirmation re-timings, not the default's) so that the compiled
      // model certainly runs non-default kernels.
      const all = (await readRecords(records)).entries.map((e) => e.record);
      const schedule = (r: { key: string; steps: unknown }): string => JSON.stringify([r.key, r.steps]);
      const defaultSchedules = new Set(all.filter((r) => r.policy === 'default').map(schedule));
      const randomOnly = path.join(dir, `${name}-random.jsonl`);
      await appendRecords(randomOnly, all.filter((r) => !defaultSchedules.has(schedule(r))));
      const compiled = await compileNetwork({ model: onnx, target: 'llvm', outDir: out, records: [randomOnly] });
      const tuned = compiled.kernels.filter((k) => k.schedule === 'tuned');
      assert.ok(tuned.length >= compiled.kernels.length / 2, `${tuned.length} of ${compiled.kernels.length} kernels come from a random record`);
      const defaults = await kernelHashes(path.join(dir, name));
      assert.ok(tuned.every((k) => !defaults.has(k.objectHash)), 'every tuned kernel differs from the default one');
    }
    const manifest = JSON.parse(await fs.readFile(path.join(out, 'manifest.json'), 'utf8'));
    assert.is(manifest.name, `${name}.onnx`, 'the manifest names the ONNX file by its base name');
    assert.is(manifest.model_file, `../${name}.onnx`, 'and by its path relative to the model directory, no machine path');
    assert.equal(manifest.inputs[0].shape, [1, 3, IMAGE, IMAGE], 'the compiled model keeps the NCHW input');

    const x = uniform(3 * IMAGE * IMAGE, 5, 0);
    const inputFile = path.join(dir, `${name}-input.bin`);
    await writeFloat32File(inputFile, x);
    const saved = path.join(dir, `${name}-out`);
    await runBench({ model: path.join(out, 'model.so'), params: path.join(out, 'params.bin'), repeat: 1, number: 1, minRepeatMs: 0, threads: 2, inputs: { data: inputFile }, saveOutputs: saved });
    const ours = await readFloat32File(path.join(saved, 'output.bin'), 1000);

    const session = await openOrtSession(onnx, 2, [[1, 3, IMAGE, IMAGE]]);
    const [want] = await session.run([x]);
    await session.release();
    const e = outputError(ours, want);
    assert.ok(e.maxValue > 1e-3, `logits are not negligible (max |logit| ${e.maxValue})`);
    for (let i = 0; i < want.length; i++) {
      if (!(Math.abs(ours[i] - want[i]) <= 1e-4 + 1e-4 * Math.abs(want[i]))) assert.unreachable(`logit ${i}: ${ours[i]} vs ONNX Runtime ${want[i]}`);
    }
    assert.equal(top1(ours, 1000), top1(want, 1000), 'top-1 class');
  });
}

test('compareWithOnnxRuntime: finds the ONNX file from the manifest, interleaves, reports errors and top-1', async () => {
  if (!ort.module) {
    skip('compareWithOnnxRuntime', ort.error);
    return;
  }
  const report = await compareWithOnnxRuntime({ modelDir: path.join(dir, 'mobilenet'), threads: 1, rounds: 2, repeat: 2, number: 1 });
  assert.is(report.onnx_source, 'manifest');
  assert.is(report.tensortune_runs_ms.length, 4);
  assert.is(report.onnxruntime_runs_ms.length, 4);
  assert.ok(report.ratio > 0 && Number.isFinite(report.ratio));
  assert.is(report.outputs.length, 1);
  assert.ok(report.outputs[0].max_abs_err <= 1e-4, `max abs err ${report.outputs[0].max_abs_err}`);
  assert.ok(report.top1.agree);
  assert.match(formatCompareReport(report), /ratio: +\d.*; paired by round \d/);
  assert.is(report.paired_ratio, pairedRatio(report.tensortune_runs_ms, report.onnxruntime_runs_ms, 2));
  const fastest = duration(Math.min(...report.tensortune_runs_ms));
  assert.match(formatCompareReport(report), new RegExp(`spread: +min ${fastest.replace('.', '\\.')}, 90% within [\\d.]+ [µm]s \\(tensortune\\)`));
  assert.is(report.library_sha256, JSON.parse(readFileSync(path.join(dir, 'mobilenet', 'manifest.json'), 'utf8')).library_sha256, 'the build it compared');
  assert.ok(Date.parse(report.time!) <= Date.now(), 'when it was measured');
  assert.is(minRatio(report), Math.min(...report.tensortune_runs_ms) / Math.min(...report.onnxruntime_runs_ms));
});

test('pairedRatio: the median of the rounds\' ratios, so that a slow phase hitting one engine\'s measurements more does not decide', () => {
  // Three rounds of two measurements each. Round 2 is a slow phase for our measurements only
  // (the host sped up before ONNX Runtime's); round 3 is slow for both.
  const ours = [10, 10, 20, 20, 16, 16], theirs = [11, 11, 10, 12, 17, 19];
  assert.is(pairedRatio(ours, theirs, 2), 10 / 11, 'rounds 1 and 3 are about 0.9; the median of 0.91, 1.82 and 0.89');
  assert.ok(Math.abs(pairedRatio(ours, theirs, 2) - 0.909) < 1e-3);
  assert.is(pairedRatio([4, 4], [2, 2], 1), 2, 'one measurement per round');
  assert.throws(() => pairedRatio([1, 2, 3], [1, 2, 3], 2), /not whole rounds of 2/);
  assert.throws(() => pairedRatio([1, 2], [1], 1), /not whole rounds/);
});

test.run();
