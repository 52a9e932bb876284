// `nx compile --watch` as the executor runs it: the first compile, then one recompile per
// change of the watched files. A tuning log that appears after the watch started (the user
// tunes in another terminal) recompiles only the kernel whose schedule changed; a broken
// config yields one failure with a clear message and the watch goes on; closing the
// generator (what Nx does on Ctrl-C) closes the watcher.

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExecutorContext } from '@nx/devkit';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Manifest } from '../../engine/compile/manifest';
import { loadModel } from '../../engine/frontend/load';
import { extractTasks } from '../../engine/graph/extract';
import { appendRecords } from '../../engine/records/log';
import { makeRecord } from '../../engine/records/make';
import { createPolicy } from '../../engine/search/policy';
import { hardwareFingerprint, parseTarget } from '../../engine/target';
import type { CostModel } from '../../engine/search/types';
import { captureConsole as capture, NET_CONFIG, writeNetWorkspace } from '../workspace.fixture';
import compileExecutor from './executor';

const dir = mkdtempSync(path.join(tmpdir(), 'tt-compile-watch-'));
const savedCache = process.env.TENSORTUNE_CACHE_DIR;
const CONFIG = NET_CONFIG;

// A fresh object cache, so that the counts of compiled and reused kernels are this test's.
test.before(() => { process.env.TENSORTUNE_CACHE_DIR = path.join(dir, 'cache'); });
test.after(() => {
  if (savedCache === undefined) delete process.env.TENSORTUNE_CACHE_DIR;
  else process.env.TENSORTUNE_CACHE_DIR = savedCache;
  rmSync(dir, { recursive: true, force: true });
});

test('compile --watch: recompiles one kernel when a tuning log appears, reports a broken config and carries on, closes on return', async () => {
  writeNetWorkspace(dir);
  const ctx = { root: dir, cwd: dir, isVerbose: false, projectName: 'net' } as unknown as ExecutorContext;
  const run = compileExecutor({ config: 'tensortune.config.yaml', network: 'net', watch: true }, ctx);

  const first = await capture(() => run.next());
  assert.equal(first.value.value, { success: true }, first.lines.join('\n'));
  const compiledLine = first.lines.find((l) => l.startsWith('compiled '))!;
  const kernels = Number(/^compiled (\d+) kernel/.exec(compiledLine)![1]);
  assert.ok(kernels >= 2 && compiledLine.includes('reused 0'), compiledLine);
  assert.ok(first.lines.some((l) => l.includes('no tuning records in records: default schedules')), first.lines.join('\n'));
  assert.ok(first.lines.some((l) => /^records used: 0 tuned, \d+ default kernel\(s\)$/.test(l)), first.lines.join('\n'));

  // Watching starts when the generator is resumed; the log is written meanwhile, as by `nx tune` elsewhere.
  const target = parseTarget('llvm');
  const [task] = extractTasks(loadModel({ model: path.join(dir, 'net.onnx') }).graph).filter((t) => t.desc.startsWith('conv2d'));
  const random: CostModel = { update: () => undefined, predict: (_t, s) => s.map(() => 0) };
  const [steps] = createPolicy('random', { task, target, costModel: random, measured: [], seed: 5 }).nextBatch(1);
  const record = makeRecord({ steps, costs_ms: [0.001], error: null, build_ms: 1, run_ms: 1 }, {
    task, target: target.text, fingerprint: hardwareFingerprint(target), seed: 5, policy: 'random',
  });
  // The executor says "watching" once its watcher is ready; the log is written then.
  const second = await capture(() => run.next(), (line) => {
    if (line.startsWith('watching')) void appendRecords(path.join(dir, 'records', 'net.cpu.jsonl'), [record]);
  });
  assert.equal(second.value.value, { success: true }, second.lines.join('\n'));
  assert.ok(second.lines.some((l) => l.startsWith('watching tensortune.config.yaml, records, net.onnx')), second.lines.join('\n'));
  assert.ok(second.lines.some((l) => l === 'changed: records/net.cpu.jsonl; recompiling'), second.lines.join('\n'));
  assert.ok(second.lines.some((l) => l.startsWith(`compiled 1 kernel(s), reused ${kernels - 1}`)), second.lines.join('\n'));
  assert.ok(second.lines.includes(`records used: 1 tuned (tensortune tune: 1), ${kernels - 1} default kernel(s)`), second.lines.join('\n'));

  // Between two yields the watcher is running: a change made before resuming is queued.
  writeFileSync(path.join(dir, 'tensortune.config.yaml'), CONFIG.replace('target: llvm', 'target: 42'));
  const third = await capture(() => run.next());
  assert.equal(third.value.value, { success: false });
  assert.ok(third.lines.some((l) => l.includes('tensortune.config.yaml') && l.includes('targets.cpu.target')), third.lines.join('\n'));

  writeFileSync(path.join(dir, 'tensortune.config.yaml'), CONFIG);
  const fourth = await capture(() => run.next());
  assert.equal(fourth.value.value, { success: true }, fourth.lines.join('\n'));
  assert.ok(fourth.lines.some((l) => l.startsWith(`compiled 0 kernel(s), reused ${kernels}`)), fourth.lines.join('\n'));

  assert.equal(await run.return(undefined), { value: undefined, done: true });
});

test('compile ranks the store\'s records at the target\'s threads, --threads overrides it, and a GPU target refuses --threads', async () => {
  const ws = path.join(dir, 'threads');
  mkdirSync(ws, { recursive: true });
  writeNetWorkspace(ws, { config: CONFIG.replace('target: llvm', 'target: llvm\n    threads: 2') });
  const target = parseTarget('llvm');
  const [task] = extractTasks(loadModel({ model: path.join(ws, 'net.onnx') }).graph).filter((t) => t.desc.startsWith('conv2d'));
  const random: CostModel = { update: () => undefined, predict: (_t, s) => s.map(() => 0) };
  const [fast, slow] = createPolicy('random', { task, target, costModel: random, measured: [], seed: 5 }).nextBatch(2);
  const rec = (steps: typeof fast, cost: number, threads: number) => makeRecord({ steps, costs_ms: [cost], error: null, build_ms: 1, run_ms: 1 }, {
    task, target: target.text, fingerprint: hardwareFingerprint(target), seed: 5, policy: 'random', threads,
  });
  // Faster at 1 thread than the other schedule at 2: timings that do not compare.
  await appendRecords(path.join(ws, 'records', 'net.cpu.jsonl'), [rec(fast, 0.001, 1), rec(slow, 0.002, 2)]);
  const ctx = { root: ws, cwd: ws, isVerbose: false, projectName: 'net' } as unknown as ExecutorContext;
  const sourceAt = async (options: { threads?: number } = {}): Promise<[string | undefined, number | undefined]> => {
    const r = await capture(() => compileExecutor({ config: 'tensortune.config.yaml', network: 'net', ...options }, ctx).next());
    assert.equal(r.value.value, { success: true }, r.lines.join('\n'));
    const manifest = JSON.parse(readFileSync(path.join(ws, 'out', 'net', 'cpu', 'manifest.json'), 'utf8')) as Manifest;
    return [manifest.kernels.find((k) => k.key === task.key)?.source, manifest.records_threads];
  };
  assert.equal(await sourceAt(), ['net.cpu.jsonl:2', 2], 'the target runs at 2 threads: the 2-thread record, and the manifest says so');
  assert.equal(await sourceAt({ threads: 1 }), ['net.cpu.jsonl:1', 1]);

  writeFileSync(path.join(ws, 'tensortune.config.yaml'), CONFIG.replace('target: llvm', 'target: opencl'));
  const gpu = await capture(() => compileExecutor({ config: 'tensortune.config.yaml', network: 'net', threads: 2 }, ctx).next());
  assert.equal(gpu.value.value, { success: false });
  assert.ok(gpu.lines.some((l) => l.includes('--threads applies to CPU targets: the records of opencl do not depend on host threads')), gpu.lines.join('\n'));
});

test.run();
