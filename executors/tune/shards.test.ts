// The tune executor on a network with shards, without Nx: a shard option the network does
// not have is one clear line; the network's tune merges (the best valid record per task into
// its output, a restored shard output into the store, nothing taken out of the store).

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExecutorContext } from '@nx/devkit';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadModel } from '../../engine/frontend/load';
import { extractTasks } from '../../engine/graph/extract';
import { tuningTasks } from '../../engine/graph/extract';
import { appendRecords } from '../../engine/records/log';
import { makeRecord } from '../../engine/records/make';
import type { TuningRecord } from '../../engine/records/record';
import { defaultOptionsOf, defaultSchedule } from '../../engine/schedule/defaults';
import { hardwareFingerprint, parseTarget } from '../../engine/target';
import { captureConsole, NET_CONFIG, writeNetWorkspace } from '../workspace.fixture';
import tuneExecutor from './executor';

const dir = mkdtempSync(path.join(tmpdir(), 'tt-tune-shards-'));
const ctx = { root: dir, cwd: dir, isVerbose: false, projectName: 'net' } as unknown as ExecutorContext;
const SHARDED = NET_CONFIG.replace('    model: net.onnx\n', '    model: net.onnx\n    shards: 2\n');
test.after(() => rmSync(dir, { recursive: true, force: true }));

test('a shard the network does not have: one line naming the config field, no success', async () => {
  writeNetWorkspace(dir);
  const none = await captureConsole(() => tuneExecutor({ config: 'tensortune.config.yaml', network: 'net', shard: 1 }, ctx));
  assert.is(none.value.success, false);
  assert.equal(none.lines, ["tensortune tune: tensortune.config.yaml: networks.net.shards: is not set, so net has no shard 1 (--shard applies to networks tuned in shards)"]);
  writeFileSync(path.join(dir, 'tensortune.config.yaml'), SHARDED);
  const over = await captureConsole(() => tuneExecutor({ config: 'tensortune.config.yaml', network: 'net', shard: 2 }, ctx));
  assert.is(over.value.success, false);
  assert.equal(over.lines, ['tensortune tune: --shard 2: net has 2 shard(s) (networks.net.shards in tensortune.config.yaml): expected 0 to 1']);
});

test('TENSORTUNE_REQUIRE_CACHED_TUNE=1: a shard that must search is refused in one line naming it; the merge, which searches nothing, runs', async () => {
  writeNetWorkspace(dir, { config: SHARDED });
  process.env.TENSORTUNE_REQUIRE_CACHED_TUNE = '1';
  try {
    const shard = await captureConsole(() => tuneExecutor({ config: 'tensortune.config.yaml', network: 'net', shard: 0 }, ctx));
    assert.is(shard.value.success, false);
    assert.equal(shard.lines, ['tensortune tune: net: no cached tune for shard 0 (net:tune--0), target cpu on a machine of this kind (local or remote Nx cache), ' +
      'and TENSORTUNE_REQUIRE_CACHED_TUNE=1 forbids searching here: run it on such a machine with the shared remote cache, or unset it']);
    const merge = await captureConsole(() => tuneExecutor({ config: 'tensortune.config.yaml', network: 'net' }, ctx));
    assert.ok(merge.value.success, merge.lines.join('\n'));
  } finally {
    delete process.env.TENSORTUNE_REQUIRE_CACHED_TUNE;
  }
});

test('the network\'s tune merges: a restored shard output enters the store, the output holds the fastest valid record per task, the store keeps everything', async () => {
  writeNetWorkspace(dir, { config: SHARDED });
  const target = parseTarget('llvm', 'target');
  const tasks = extractTasks(loadModel({ model: path.join(dir, 'net.onnx') }).graph);
  const record = (i: number, ms: number, error: null | 'wrong_answer' = null): TuningRecord => makeRecord(
    { steps: defaultSchedule(tasks[i].dag, defaultOptionsOf(target)), costs_ms: error ? [] : [ms], error, build_ms: 1, run_ms: 1 },
    { task: tasks[i], target: target.text, fingerprint: hardwareFingerprint(target), seed: 0 },
  );
  const storeLog = path.join(dir, 'records', 'net.cpu.jsonl');
  mkdirSync(path.dirname(storeLog), { recursive: true });
  await appendRecords(storeLog, [record(0, 5), record(0, 2), record(1, 3), record(1, 0.1, 'wrong_answer')]);
  // What a cache restore of another machine's shard brings: a faster record for task 1.
  const restored = path.join(dir, 'records', 'nx', 'net', 'cpu.default.shard-1.jsonl');
  mkdirSync(path.dirname(restored), { recursive: true });
  writeFileSync(restored, `${JSON.stringify(record(1, 1))}\n`);
  const { value, lines } = await captureConsole(() => tuneExecutor({ config: 'tensortune.config.yaml', network: 'net' }, ctx));
  assert.ok(value.success, lines.join('\n'));
  assert.ok(lines.some((l) => /merging 2 shard\(s\); output records\/nx\/net\/cpu\.default\.jsonl: best records for 2 of \d+ task\(s\)/.test(l)), lines.join('\n'));
  const merged = readFileSync(path.join(dir, 'records', 'nx', 'net', 'cpu.default.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as TuningRecord);
  assert.equal(merged.map((r) => [r.key, r.costs_ms[0]]).sort(), [[tasks[0].key, 2], [tasks[1].key, 1]].sort());
  const store = readFileSync(storeLog, 'utf8').trim().split('\n');
  assert.is(store.length, 5, 'the four records and the restored one: nothing removed');
});

test('without shards the executor tunes the whole network as before; tune--<k> tunes its shard\'s tasks only, into its own output', async () => {
  const plain = path.join(dir, 'plain');
  mkdirSync(plain, { recursive: true });
  writeNetWorkspace(plain);
  const at = { ...ctx, root: plain, cwd: plain } as ExecutorContext;
  const whole = await captureConsole(() => tuneExecutor({ config: 'tensortune.config.yaml', network: 'net', trialsPerTask: 1, measuresPerRound: 4 }, at));
  assert.ok(whole.value.success, whole.lines.join('\n'));
  const keysIn = (file: string): string[] => [...new Set(readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => (JSON.parse(l) as TuningRecord).key))].sort();
  // The tasks tune searches on a CPU target (the conv's Winograd alternative too).
  const tasks = tuningTasks(loadModel({ model: path.join(plain, 'net.onnx') }).graph, 'llvm');
  assert.ok(tasks.length > extractTasks(loadModel({ model: path.join(plain, 'net.onnx') }).graph).length);
  assert.equal(keysIn(path.join(plain, 'records', 'nx', 'net', 'cpu.default.jsonl')), tasks.map((t) => t.key).sort());

  const sharded = path.join(dir, 'sharded');
  mkdirSync(sharded, { recursive: true });
  writeNetWorkspace(sharded, { config: SHARDED });
  const sat = { ...ctx, root: sharded, cwd: sharded } as ExecutorContext;
  const shardKeys: string[][] = [];
  for (const shard of [0, 1]) {
    const r = await captureConsole(() => tuneExecutor({ config: 'tensortune.config.yaml', network: 'net', shard, trialsPerTask: 1, measuresPerRound: 4 }, sat));
    assert.ok(r.value.success, r.lines.join('\n'));
    assert.ok(r.lines.some((l) => new RegExp(`shard ${shard} of 2: \\d of ${tasks.length} task\\(s\\)`).test(l)), r.lines.join('\n'));
    const out = path.join(sharded, 'records', 'nx', 'net', `cpu.default.shard-${shard}.jsonl`);
    shardKeys.push(readFileSync(out, 'utf8').trim() ? keysIn(out) : []);
  }
  assert.equal([...shardKeys[0], ...shardKeys[1]].sort(), tasks.map((t) => t.key).sort(), 'the two shards tune every task, each once');
  assert.is(shardKeys[0].filter((k) => shardKeys[1].includes(k)).length, 0);
});

test.run();
