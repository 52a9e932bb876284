// benchmark through a runner, with the hand-written tiny model of native/test/fixtures: the
// model and its params travel to tt_remote (`sh -c {command}`: this machine as the device),
// which times it; the summary is tt_bench's table, cell for cell; a model whose tt_init
// fails is one ModelRunError naming the device.

import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runBench } from '../native/bench';
import { compileSharedLibrary, nativeDir } from '../native/build';
import { ModelRunError } from '../runtime/errors';
import { writeParams } from '../runtime/params';
import { parseTarget } from '../target';
import { formatSummary, runRemoteBench } from './bench';

let dir = '';
const file = (name: string): string => path.join(dir, name);
const target = parseTarget('llvm');

test.before(async () => {
  dir = await fs.mkdtemp(path.join(tmpdir(), 'tt-remote-bench-'));
  await Promise.all([
    compileSharedLibrary([path.join(nativeDir(), 'test', 'fixtures', 'tiny_model.c')], file('tiny.so')),
    writeParams(file('tiny.params'), Float32Array.from([0.5])),
    writeParams(file('negative.params'), Float32Array.from([-1])),
  ]);
});

test.after(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

test('the summary table is tt_bench\'s, cell for cell', async () => {
  const local = await runBench({ model: file('tiny.so'), params: file('tiny.params'), repeat: 5, number: 1, minRepeatMs: 0, threads: 1 });
  assert.is(formatSummary(local), local.summary);
});

test('a model timed on a device through a runner: its runs, the summary, the device named', async () => {
  const r = await runRemoteBench({
    runners: ['sh -c {command}'], where: '--runner', target, model: file('tiny.so'), params: file('tiny.params'),
    repeat: 4, number: 2, minRepeatMs: 0, threads: 1, seed: 7,
  });
  assert.is(r.runs_ms.length, 4);
  assert.ok(r.runs_ms.every((v) => v >= 0 && Number.isFinite(v)));
  assert.is(r.number, 2);
  assert.is(r.threads, 1);
  assert.ok(r.min_ms <= r.median_ms && r.median_ms <= r.max_ms);
  assert.match(r.summary, /^Execution time summary:\n mean \(ms\) {3}median \(ms\) {4}max \(ms\)/);
  assert.match(r.device, /^device 1 \(--runner: sh -c \{command\}\): /);
  assert.equal(r.warnings, [], 'no emulator, no warning');
});

test('a model whose tt_init fails: one ModelRunError naming the device', async () => {
  const err = await runRemoteBench({
    runners: ['sh -c {command}'], where: '--runner', target, model: file('tiny.so'), params: file('negative.params'),
    repeat: 1, minRepeatMs: 0, seed: 0,
  }).then(() => undefined, (e: Error) => e);
  assert.instance(err, ModelRunError);
  assert.match(err!.message, /tiny\.so on device 1 \(--runner: sh -c \{command\}\): tt_init failed: /);
});

test.run();
