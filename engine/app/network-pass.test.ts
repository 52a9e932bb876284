// The network pass at the end of a network's tune: each task's confirmed schedules and its
// default timed inside the compiled network, appended as the task's latest confirmation
// pass, which compile then ranks by.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { OnnxModelBuilder } from '../frontend/onnx/model-builder';
import { loadModel } from '../frontend/load';
import { meanCost, rankedByWorkload, CONFIRM_POLICY } from '../records/best';
import { readRecords } from '../records/log';
import { defaultOptionsOf, defaultSchedule } from '../schedule/defaults';
import { stepsKey } from '../schedule/steps';
import { tuneNetwork } from './tune';
import { tuningTasks } from '../graph/extract';
import { hardwareFingerprint, parseTarget } from '../target';
import { readManifest } from '../compile/manifest';
import { compileNetwork } from './compile';
import { NETWORK_PASS_ROUNDS } from './network-pass';

const dir = mkdtempSync(path.join(tmpdir(), 'tt-network-pass-test-'));
const onnx = path.join(dir, 'tiny.onnx');
// A small CNN without a 3x3 stride-1 conv, so no Winograd twin tasks (whose candidates take
// seconds each to build): a 3x3 stride-2 conv, a 1x1 conv, pooling and a dense layer.
const values = (n: number, seed: number): number[] => Array.from({ length: n }, (_, i) => Math.sin(seed * 31 + i) * 0.2);
writeFileSync(onnx, new OnnxModelBuilder(13)
  .input('image', [1, 3, 16, 16])
  .float('w1', [8, 3, 3, 3], values(216, 1)).float('b1', [8], values(8, 2))
  .float('w2', [16, 8, 1, 1], values(128, 3)).float('b2', [16], values(16, 4))
  .float('w3', [4, 16], values(64, 5)).float('b3', [4], values(4, 6))
  .node('Conv', ['image', 'w1', 'b1'], ['c1'], { kernel_shape: [3, 3], pads: [1, 1, 1, 1], strides: [2, 2] })
  .node('Relu', ['c1'], ['r1'])
  .node('Conv', ['r1', 'w2', 'b2'], ['c2'], { kernel_shape: [1, 1] })
  .node('Relu', ['c2'], ['r2'])
  .node('GlobalAveragePool', ['r2'], ['g'])
  .node('Flatten', ['g'], ['f'])
  .node('Gemm', ['f', 'w3', 'b3'], ['logits'], { transB: 1 })
  .output('logits')
  .build());
const model = { model: onnx };
const target = 'llvm -mcpu=native';
const parsed = parseTarget(target);
const fingerprint = hardwareFingerprint(parsed);

test('a network\'s tune ends with the network pass: each task\'s confirmed schedules and its default, timed in the compiled network, rank first in compile', async () => {
  const records = path.join(dir, 'tiny.jsonl');
  const out: string[] = [];
  const result = await tuneNetwork({ model, target, records, trialsPerTask: 4, batchSize: 2, confirm: 2, networkPass: true, log: (l) => out.push(l) });
  assert.ok(result.networkPass, out.join('\n'));
  const { entries } = await readRecords(records);
  const all = entries.map((e) => e.record);
  const inNetwork = all.filter((r) => r.scope === 'network');
  assert.is(inNetwork.length, result.networkPass!.records);
  assert.ok(result.networkPass!.tasks > 0 && result.networkPass!.variants >= 2 && result.networkPass!.variants <= 3, JSON.stringify(result.networkPass));
  assert.ok(out.some((l) => l.startsWith(`network pass: ${result.networkPass!.variants} variant(s) of the network compiled and profiled ${NETWORK_PASS_ROUNDS} time(s) each`)), out.join('\n'));

  // Confirmation records of one pass, appended after everything else, every timing real.
  assert.ok(inNetwork.every((r) => r.policy === CONFIRM_POLICY && r.error === null), 'confirmation records');
  assert.is(new Set(inNetwork.map((r) => r.pass)).size, 1, 'one pass');
  assert.equal(all.slice(all.length - inNetwork.length), inNetwork, 'appended last');
  assert.ok(inNetwork.every((r) => r.costs_ms.length >= NETWORK_PASS_ROUNDS && r.costs_ms.every((c) => Number.isFinite(c) && c > 0)), 'one timing per round at least');

  // Per task: its default among them, and the rest from the alone pass.
  const options = defaultOptionsOf(parsed);
  const tasks = tuningTasks(loadModel(model).graph, target);
  const keys = new Set(inNetwork.map((r) => r.key));
  for (const key of keys) {
    const task = tasks.find((t) => t.key === key);
    assert.ok(task, `a task of the network: ${key}`);
    const timed = inNetwork.filter((r) => r.key === key).map((r) => stepsKey(r.steps));
    assert.ok(new Set(timed).size === timed.length, 'one record per schedule');
    assert.ok(timed.includes(stepsKey(defaultSchedule(task.dag, options))), 'the default is among them');
    const alone = new Set(all.filter((r) => r.key === key && r.policy === CONFIRM_POLICY && r.scope === undefined).map((r) => stepsKey(r.steps)));
    assert.ok(timed.every((s) => alone.has(s)), 'every one was confirmed alone first');
  }

  assert.ok([...keys].some((key) => inNetwork.filter((r) => r.key === key).length >= 2), 'some task had two or more schedules to compare');

  // Compile ranks them by the network's timings and uses the fastest.
  const ranked = rankedByWorkload(entries, { target, fingerprint });
  const outDir = path.join(dir, 'model');
  await compileNetwork({ model: onnx, target, outDir, records: [records], log: () => undefined });
  const kernels = readManifest(outDir).kernels;
  for (const key of keys) {
    const best = ranked.get(key)![0];
    const fastest = Math.min(...inNetwork.filter((r) => r.key === key).map((r) => meanCost(r)));
    assert.is(best.cost, fastest, 'the ranking is by the network pass');
    const kernel = kernels.find((k) => k.key === key);
    if (kernel) assert.is(kernel.schedule, 'tuned');
  }

  // Run again: nothing to measure, and every task's latest pass is the network's.
  const again = await tuneNetwork({ model, target, records, trialsPerTask: 4, batchSize: 2, confirm: 2, networkPass: true });
  assert.is(again.networkPass, undefined);
  assert.is((await readRecords(records)).entries.length, entries.length);
});

test('without --network-pass, the confirmation pass alone; a log so confirmed gets the network pass when its tune is run again with it', async () => {
  const records = path.join(dir, 'alone.jsonl');
  const result = await tuneNetwork({ model, target, records, trialsPerTask: 4, batchSize: 2, confirm: 2 });
  assert.is(result.networkPass, undefined);
  const { entries } = await readRecords(records);
  assert.ok(entries.some((e) => e.record.policy === CONFIRM_POLICY), 'the alone pass ran');
  assert.ok(entries.every((e) => e.record.scope === undefined), 'no network pass');

  const again = await tuneNetwork({ model, target, records, trialsPerTask: 4, batchSize: 2, confirm: 2, networkPass: true });
  assert.is(again.trials, 0);
  assert.ok(again.networkPass && again.networkPass.records > 0, 'the pass ran');
  const added = (await readRecords(records)).entries.slice(entries.length).map((e) => e.record);
  assert.ok(added.length > 0 && added.every((r) => r.scope === 'network'), 'network pass records only');
});

test.after(() => rmSync(dir, { recursive: true, force: true }));
test.run();
