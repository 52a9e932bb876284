// End to end: sharded tuning as a user meets it. The packed plugin in a fresh Nx workspace
// with two tiny ONNX networks that share four of their workloads, each tuned in two
// shards (`shards: 2`). `nx run-many -t tune` runs the shards (the shared workloads once,
// by the first network) and merges them; a second run is all cache hits; a changed model
// re-runs only the shard whose workloads changed (counted from Nx's output); and two
// workspaces sharing a loopback remote cache split the shards between them and end with
// the same merged records.

import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startCacheServer, type CacheServer } from './cache-server';
import { e2e, KEEP, tasksOf } from './harness';
import { writeTinyModel } from './tiny-model';

const { base, nxAsync, packAndInstall } = e2e('tensortune-shards-e2e-');
const ws = path.join(base, 'ws');

// alpha's second conv is 3x3, beta's 1x1: they share the first conv (and its Winograd
// alternative, which CPU targets tune too), the pooling and the dense layer. alpha has 6
// tasks, beta 5, of which 4 are alpha's.
const CONFIG = `records: .tensortune/records
targets:
  cpu:
    target: llvm -mcpu=native
    threads: 1
budgets:
  tiny:
    trialsPerTask: 2
    measuresPerRound: 2
networks:
  alpha:
    model: models/alpha/alpha.onnx
    shards: 2
  beta:
    model: models/beta/beta.onnx
    shards: 2
`;

/** `nx ...` in a workspace (static output, so the task lines can be counted); it must succeed. */
const nx = (dir: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> => nxAsync(dir, [...args, '--outputStyle=static'], env);

const store = (dir: string): string => path.join(dir, '.tensortune', 'records');
const linesOf = (file: string): string[] => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((l) => l.trim()) : []);
const keysOf = (file: string): string[] => [...new Set(linesOf(file).map((l) => (JSON.parse(l) as { key: string }).key))].sort();
const shardOutput = (dir: string, network: string, k: number): string => path.join(store(dir), 'nx', network, `cpu.tiny.shard-${k}.jsonl`);
const mergedOutput = (dir: string, network: string): string => path.join(store(dir), 'nx', network, 'cpu.tiny.jsonl');
/** Every distinct measurement of a workspace: its store's logs and its tune outputs. */
function measurements(dir: string): Set<string> {
  const files = readdirSync(store(dir)).filter((n) => n.endsWith('.jsonl')).map((n) => path.join(store(dir), n));
  for (const n of ['alpha', 'beta']) {
    const d = path.join(store(dir), 'nx', n);
    if (existsSync(d)) files.push(...readdirSync(d).filter((f) => f.endsWith('.jsonl')).map((f) => path.join(d, f)));
  }
  return new Set(files.flatMap(linesOf));
}

function writeWorkspace(dir: string): void {
  for (const n of ['alpha', 'beta']) mkdirSync(path.join(dir, 'models', n), { recursive: true });
  writeFileSync(path.join(dir, 'nx.json'), `${JSON.stringify({ plugins: ['tensortune/plugin'], cacheDirectory: '.nx/cache', neverConnectToCloud: true }, null, 2)}\n`);
  writeFileSync(path.join(dir, 'tensortune.config.yaml'), CONFIG);
  writeFileSync(path.join(dir, '.gitignore'), 'node_modules/\n.nx/\n/.tensortune/\n/dist/\n');
  writeTinyModel(path.join(dir, 'models', 'alpha', 'alpha.onnx'), 3);
  writeTinyModel(path.join(dir, 'models', 'beta', 'beta.onnx'), 1);
}

/** A second workspace like `ws` (same sources and lockfile, node_modules linked), with an empty store and local cache. */
function cloneOf(name: string): string {
  const dir = path.join(base, name);
  mkdirSync(dir, { recursive: true });
  for (const f of ['package.json', 'package-lock.json']) cpSync(path.join(ws, f), path.join(dir, f));
  writeWorkspace(dir);
  symlinkSync(path.join(ws, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  return dir;
}

test('pack the plugin and install it with nx into a workspace with two sharded networks', () => {
  packAndInstall(ws, 'tensortune-shards-e2e');
  writeWorkspace(ws);
});

let beforeChange = new Set<string>();

test('nx run-many -t tune --parallel 3: runs every shard once (the shared workloads by alpha only), never two at once, then each network\'s tune merges', async () => {
  const out = await nx(ws, ['run-many', '-t', 'tune', '--parallel', '3']);
  const { ran, cached } = tasksOf(out);
  assert.equal(ran, ['alpha:tune', 'alpha:tune--0', 'alpha:tune--1', 'beta:tune', 'beta:tune--0', 'beta:tune--1'], out);
  assert.equal(cached, []);
  // alpha tunes its six workloads; beta's shards tune only the one alpha does not have.
  const alphaKeys = [0, 1].flatMap((k) => keysOf(shardOutput(ws, 'alpha', k))).sort();
  const betaKeys = [0, 1].flatMap((k) => keysOf(shardOutput(ws, 'beta', k))).sort();
  assert.is(alphaKeys.length, 6, `alpha's shards: ${alphaKeys.join(' ')}`);
  assert.is(betaKeys.length, 1, `beta's shards tune its own workload only: ${betaKeys.join(' ')}`);
  assert.not.ok(alphaKeys.includes(betaKeys[0]));
  // parallelism: false: the measurement times of two shards never interleave.
  const spans = [0, 1].flatMap((k) => [shardOutput(ws, 'alpha', k), shardOutput(ws, 'beta', k)])
    .map((f) => linesOf(f).map((l) => Date.parse((JSON.parse(l) as { time: string }).time)))
    .filter((times) => times.length > 0)
    .map((times) => [Math.min(...times), Math.max(...times)]);
  assert.ok(spans.length >= 2);
  for (const [a0, a1] of spans) for (const [b0, b1] of spans) if (a0 !== b0) assert.ok(a1 < b0 || b1 < a0, `shards measured at once: ${JSON.stringify(spans)}`);
  assert.match(out, /merging 2 shard\(s\); output \S+alpha\/cpu\.tiny\.jsonl: best records for 6 of 6 task\(s\)/);
  assert.match(out, /merging 2 shard\(s\); output \S+beta\/cpu\.tiny\.jsonl: best records for 5 of 5 task\(s\)/);
  // Each merged output: one best record per task, of the network's tasks.
  assert.is(linesOf(mergedOutput(ws, 'alpha')).length, 6);
  assert.is(linesOf(mergedOutput(ws, 'beta')).length, 5);
  assert.equal(keysOf(mergedOutput(ws, 'beta')), [...alphaKeys.filter((k) => keysOf(mergedOutput(ws, 'beta')).includes(k)), ...betaKeys].sort());
  // Every workload was searched under one budget of 2 trials per task: nothing was tuned
  // twice. (Each tune's confirmation pass times those two schedules again: more records, the
  // same steps.)
  const perKey = new Map<string, Set<string>>();
  for (const line of linesOf(path.join(store(ws), 'alpha.cpu.jsonl')).concat(linesOf(path.join(store(ws), 'beta.cpu.jsonl')))) {
    const { key, steps } = JSON.parse(line) as { key: string; steps: unknown };
    perKey.set(key, (perKey.get(key) ?? new Set()).add(JSON.stringify(steps)));
  }
  assert.is(perKey.size, 7);
  for (const [key, schedules] of perKey) assert.is(schedules.size, 2, `${key}: ${schedules.size} schedules searched`);
  beforeChange = measurements(ws);
});

test('a second nx run-many -t tune is all cache hits', async () => {
  const out = await nx(ws, ['run-many', '-t', 'tune']);
  const { ran, cached } = tasksOf(out);
  assert.equal(ran, [], out);
  assert.is(cached.length, 6);
  assert.match(out, /for 6 out of 6 tasks/);
});

test('nx compile beta: restores tune and its shards from the cache and compiles with the merged best records', async () => {
  const out = await nx(ws, ['compile', 'beta']);
  const { ran, cached } = tasksOf(out);
  assert.equal(ran, ['beta:compile'], out);
  assert.ok(cached.includes('beta:tune') && cached.includes('alpha:tune--0') && cached.includes('beta:tune--1'), out);
  const manifest = JSON.parse(readFileSync(path.join(ws, 'dist', 'tensortune', 'beta', 'cpu', 'manifest.json'), 'utf8')) as { kernels: { key: string; schedule: string; record?: string }[] };
  const best = new Set(linesOf(mergedOutput(ws, 'beta')).map((l) => (JSON.parse(l) as { key: string }).key));
  const tuned = manifest.kernels.filter((k) => k.schedule === 'tuned');
  assert.ok(tuned.length > 0, 'some kernel uses a tuned record');
  for (const k of tuned) assert.ok(best.has(k.key), `${k.key}: a workload of the merged output`);
});

test('a changed model re-runs only the shard whose workloads changed (and the merge); no measurement is lost', async () => {
  // beta becomes alpha's twin: the workload it owned is gone, the shard that held it has none now.
  const owned = [0, 1].find((k) => keysOf(shardOutput(ws, 'beta', k)).length > 0)!;
  writeTinyModel(path.join(ws, 'models', 'beta', 'beta.onnx'), 3);
  const out = await nx(ws, ['run-many', '-t', 'tune']);
  const { ran, cached } = tasksOf(out);
  assert.equal(ran, ['beta:tune', `beta:tune--${owned}`], out);
  assert.equal(cached, ['alpha:tune', 'alpha:tune--0', 'alpha:tune--1', `beta:tune--${1 - owned}`]);
  assert.match(out, /for 4 out of 6 tasks/);
  const after = measurements(ws);
  for (const m of beforeChange) assert.ok(after.has(m), 'no measurement lost');
  assert.equal(keysOf(mergedOutput(ws, 'beta')), keysOf(mergedOutput(ws, 'alpha')), 'beta now uses alpha\'s workloads');
  writeTinyModel(path.join(ws, 'models', 'beta', 'beta.onnx'), 1);
});

let server: CacheServer | undefined;

test('two workspaces sharing a remote cache split the shards and end with the same merged records', async () => {
  server = await startCacheServer();
  const remote = { NX_SELF_HOSTED_REMOTE_CACHE_SERVER: server.url };
  const [one, two] = [cloneOf('one'), cloneOf('two')];
  // Machine one tunes the shards tune--0, machine two the shards tune--1 (a CI matrix over the shard index).
  const first = tasksOf(await nx(one, ['run-many', '-t', 'tune--0'], remote));
  const second = tasksOf(await nx(two, ['run-many', '-t', 'tune--1'], remote));
  assert.equal(first.ran, ['alpha:tune--0', 'beta:tune--0']);
  assert.equal(second.ran, ['alpha:tune--1', 'beta:tune--1']);
  // Then each runs tune: the other's shards come from the remote cache, and nothing is searched again.
  const oneOut = await nx(one, ['run-many', '-t', 'tune'], remote);
  const twoOut = await nx(two, ['run-many', '-t', 'tune'], remote);
  const [oneTasks, twoTasks] = [tasksOf(oneOut), tasksOf(twoOut)];
  assert.equal(oneTasks.remote.filter((t) => t.includes('--')), ['alpha:tune--1', 'beta:tune--1'], oneOut);
  assert.equal(twoTasks.remote.filter((t) => t.includes('--')), ['alpha:tune--0', 'beta:tune--0'], twoOut);
  assert.ok([...oneTasks.ran, ...twoTasks.ran].every((t) => !t.includes('--')), 'no shard ran twice');
  for (const n of ['alpha', 'beta']) {
    assert.is(linesOf(mergedOutput(one, n)).length, n === 'alpha' ? 6 : 5, n);
    assert.equal(linesOf(mergedOutput(one, n)).sort(), linesOf(mergedOutput(two, n)).sort(), `${n}: the same merged records`);
  }
  assert.equal(measurements(one), measurements(two), 'both hold every measurement of the four shards');
});

test.after(async () => {
  await server?.close();
  if (!KEEP) rmSync(base, { recursive: true, force: true });
  else console.log(`kept ${base}`);
});

test.run();
