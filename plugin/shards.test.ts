// Sharded tuning targets: which shard a workload goes to (stable under changes elsewhere),
// who tunes a workload two networks share, the budget split, the cache digests, and the
// targets createNodes infers from them (on real builtin networks: resnet-18 and resnet-34
// share their workloads).

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
process.env.NX_CACHE_PROJECT_GRAPH = 'false';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { TargetConfiguration } from '@nx/devkit';
import { validateConfig, type LoadedConfig, type TensortuneConfig } from './config';
import { createNodes } from './index';
import { loadModel } from '../engine/frontend/load';
import { writeNetWorkspace } from '../executors/workspace.fixture';
import { planShards, shardBudget, shardDigest, shardOfKey, tasksForTargets, type ShardTask } from './shards';

const task = (key: string, weight = 1, flops = 1000): ShardTask => ({ key, desc: `task ${key}`, weight, flops });
const keys = (n: number, prefix = 'k'): ShardTask[] => Array.from({ length: n }, (_, i) => task(`${prefix}${i}`, 1 + (i % 3), 1000 * (i + 1)));

function loadedOf(config: Partial<TensortuneConfig>): LoadedConfig {
  const raw = { targets: { cpu: { target: 'llvm -mcpu=native' } }, ...config };
  return { file: '/ws/tensortune.config.yaml', dir: '/ws', config: validateConfig(raw, 'tensortune.config.yaml', '/ws') };
}

test('a workload\'s shard depends on its key alone: adding, removing or reweighting other tasks moves no other task', () => {
  const loaded = loadedOf({ networks: { a: { model: 'mobilenet', shards: 4 } } });
  const before = planShards(loaded, () => keys(20)).get('a')!;
  const where = (p: typeof before): Map<string, number> => new Map(p.shards.flatMap((s) => s.tasks.map((t) => [t.key, s.index] as [string, number])));
  const changed = [...keys(20).slice(1).map((t, i) => (i === 5 ? { ...t, weight: 9 } : t)), task('new-layer')];
  const after = planShards(loaded, () => changed).get('a')!;
  const [w0, w1] = [where(before), where(after)];
  for (const [k, s] of w1) if (w0.has(k)) assert.is(s, w0.get(k), `${k} stayed in its shard`);
  assert.is(w1.get('new-layer'), shardOfKey('new-layer', 4));
  // Every task is in exactly one shard; the shares add up to 1 without borrowed tasks.
  assert.is([...w0.keys()].length, 20);
  assert.ok(Math.abs(before.shards.reduce((a, s) => a + s.share, 0) - 1) < 1e-12);
  // Several shards are used (20 keys over 4 shards).
  assert.ok(before.shards.filter((s) => s.tasks.length > 0).length >= 3);
});

test('an alternative implementation (a conv\'s Winograd task) is in the shard of the task it replaces, so one scheduler weighs both', () => {
  const loaded = loadedOf({ networks: { a: { model: 'mobilenet', shards: 8 } } });
  const direct = keys(12);
  const alternatives = direct.map((t) => ({ ...task(`w-${t.key}`), alternative: { of: t.key } }));
  const plan = planShards(loaded, () => [...direct, ...alternatives]).get('a')!;
  for (const s of plan.shards) {
    for (const t of s.tasks.filter((x) => x.alternative)) assert.ok(s.tasks.some((x) => x.key === t.alternative!.of), `${t.key} beside ${t.alternative!.of}`);
  }
  assert.ok(alternatives.some((t) => shardOfKey(t.key, 8) !== shardOfKey(t.alternative.of, 8)), 'by their own keys some would be apart');
});

test('a shard\'s digest changes with its own tasks only; with a total budget, with its share too', () => {
  const loaded = loadedOf({ networks: { a: { model: 'mobilenet', shards: 3 } }, budgets: { tiny: { trialsPerTask: 2 } } });
  const base = keys(12);
  const p0 = planShards(loaded, () => base).get('a')!;
  const moved = shardOfKey('k0', 3);
  const p1 = planShards(loaded, () => [{ ...base[0], flops: 1 }, ...base.slice(1)]).get('a')!;
  for (const s of p0.shards) {
    const same = shardDigest(s, '1.0.0', false) === shardDigest(p1.shards[s.index], '1.0.0', false);
    assert.is(same, s.index !== moved, `shard ${s.index}`);
    assert.is.not(shardDigest(s, '1.0.0', false), shardDigest(s, '1.0.1', false), 'the engine version is part of it');
  }
  // A total budget is split by share, and a share moves when another shard's cost moves.
  const other = p0.shards.find((s) => s.index !== moved && s.tasks.length > 0)!;
  assert.is.not(shardDigest(other, '1', true), shardDigest(p1.shards[other.index], '1', true));
});

test('the budget: total trials and the time limit split by the shard\'s share of the estimated cost, per-task limits kept', () => {
  const budget: { trials?: number; timeLimitS?: number; trialsPerTask?: number } = { trials: 100, timeLimitS: 60, trialsPerTask: 5 };
  assert.equal(shardBudget(budget, { share: 0.25 }), { trials: 25, timeLimitS: 15, trialsPerTask: 5 });
  assert.equal(shardBudget({ trials: 3 }, { share: 0.01 }).trials, 1, 'at least one trial');
  assert.equal(shardBudget({ ...budget, trials: undefined, timeLimitS: undefined, trialsPerTask: 2 }, { share: 0.5 }), { trialsPerTask: 2, trials: undefined, timeLimitS: undefined });
});

test('a workload shared by two networks with the same targets is tuned by the first by name; the other borrows it', () => {
  const loaded = loadedOf({ networks: { b: { model: 'resnet-34', shards: 2 }, a: { model: 'resnet-18', shards: 3 }, c: { model: 'mobilenet' } } });
  const tasks: Record<string, ShardTask[]> = { a: [task('x'), task('shared', 2)], b: [task('shared', 5), task('y')] };
  const plans = planShards(loaded, (n) => tasks[n]);
  assert.equal([...plans.keys()], ['a', 'b'], 'only networks with shards');
  const a = plans.get('a')!;
  const b = plans.get('b')!;
  assert.ok(a.shards.some((s) => s.tasks.some((t) => t.key === 'shared')));
  assert.not.ok(b.shards.some((s) => s.tasks.some((t) => t.key === 'shared')));
  assert.equal(b.borrowed.map((x) => [x.task.key, x.network, x.shard]), [['shared', 'a', shardOfKey('shared', 3)]]);
  // b's shares leave out what a tunes for it.
  assert.ok(Math.abs(b.shards.reduce((s, x) => s + x.share, 0) - 1000 / 6000) < 1e-12);
  // Built for other targets: no sharing (a's shard could not tune for b's target).
  const apart = loadedOf({
    targets: { cpu: { target: 'llvm -mcpu=native' }, avx2: { target: 'llvm -mattr=+avx2' } },
    networks: { a: { model: 'resnet-18', shards: 3, targets: ['cpu'] }, b: { model: 'resnet-34', shards: 2 } },
  });
  assert.is(planShards(apart, (n) => tasks[n]).get('b')!.borrowed.length, 0);
});

const root = mkdtempSync(path.join(tmpdir(), 'tt-shards-'));
type Projects = Record<string, { name: string; targets: Record<string, TargetConfiguration>; metadata: { targetGroups: Record<string, string[]> } }>;

async function infer(config: string): Promise<Projects> {
  mkdirSync(root, { recursive: true });
  writeFileSync(path.join(root, 'tensortune.config.yaml'), config);
  const [[, result]] = await createNodes[1](['tensortune.config.yaml'], undefined, { workspaceRoot: root, nxJsonConfiguration: {} });
  return (result as { projects: Projects }).projects;
}

test('createNodes: tune--<k> targets per shard (own inputs and output, never in parallel), tune depends on them and on the shards of shared workloads', async () => {
  const projects = await infer(`
targets:
  cpu: { target: llvm -mcpu=native }
budgets:
  tiny: { trialsPerTask: 2 }
networks:
  r18: { model: resnet-18, imageSize: 32, shards: 3 }
  r34: { model: resnet-34, imageSize: 32, shards: 2 }
  plain: { model: mobilenet, imageSize: 32 }
`);
  const r18 = projects['models/r18'];
  const r34 = projects['models/r34'];
  assert.equal(Object.keys(projects['models/plain'].targets).sort(), ['benchmark', 'compile', 'tune'], 'no shards: as before');
  assert.equal(r18.metadata.targetGroups.tensortune, ['tune', 'tune--0', 'tune--1', 'tune--2', 'compile', 'benchmark']);
  const digests = new Set<string>();
  for (const k of [0, 1, 2]) {
    const t = r18.targets[`tune--${k}`];
    assert.is(t.executor, 'tensortune:tune');
    assert.is((t.options as { shard: number }).shard, k);
    assert.is(t.parallelism, false, 'shards measure on this machine: one at a time');
    assert.is(t.cache, true);
    assert.equal(t.outputs, [`{workspaceRoot}/.tensortune/records/nx/r18/{options.configTarget}.{options.budget}.shard-${k}.jsonl`]);
    const inputs = JSON.stringify(t.inputs);
    assert.match(inputs, /fingerprint/);
    const digest = /echo tensortune-shard ([0-9a-f]{32})/.exec(inputs);
    assert.ok(digest, inputs);
    digests.add(digest![1]);
  }
  assert.is(digests.size, 3, 'each shard its own digest');
  // resnet-34's workloads are resnet-18's: r18 (first by name) tunes them, r34's shards get none.
  const r34tune = r34.targets.tune;
  assert.ok(r34tune.dependsOn!.some((d) => typeof d === 'object' && d.projects?.[0] === 'r18'), JSON.stringify(r34tune.dependsOn));
  assert.match(String(r34.targets['tune--0'].metadata?.description), /no task|task\(s\)/);
  const r18deps = r18.targets.tune.dependsOn!.map((d) => (typeof d === 'string' ? d : d.target));
  assert.equal(r18deps, ['tune--0', 'tune--1', 'tune--2']);
  assert.ok(r18.targets.tune.dependsOn!.every((d) => typeof d === 'object' && d.params === 'forward'), 'budget options reach the shards');
  assert.match(JSON.stringify(r18.targets.tune.inputs), /dependentTasksOutputFiles/);
  assert.is(r18.targets.tune.parallelism, true, 'the merge measures nothing');
});

test('createNodes: a sharded network whose model does not load is a config error naming it, not a broken graph', async () => {
  mkdirSync(path.join(root, 'models'), { recursive: true });
  writeFileSync(path.join(root, 'models', 'bad.onnx'), 'not a model');
  const projects = await infer(`
targets:
  cpu: { target: llvm -mcpu=native }
networks:
  bad: { model: models/bad.onnx, shards: 2 }
`);
  const bad = projects['models/bad'];
  assert.match(String(bad.targets.tune.metadata?.description), /tensortune\.config\.yaml: networks\.bad\.model: cannot be loaded to plan its shards/);
});

test('createNodes: a config that does not validate keeps a sharded network\'s tune--<k> targets, which report the error', async () => {
  const projects = await infer(`
targets:
  cpu: { target: llvm -mcpu=native, threads: two }
networks:
  net: { model: mobilenet, shards: 2 }
`);
  const net = projects['models/net'];
  assert.equal(Object.keys(net.targets).sort(), ['benchmark', 'compile', 'tune', 'tune--0', 'tune--1']);
  assert.equal(net.targets['tune--1'].options, { config: 'tensortune.config.yaml', network: 'net', shard: 1 });
  assert.match(String(net.targets['tune--1'].metadata?.description), /Config error: tensortune\.config\.yaml: targets\.cpu\.threads: expected an integer, got "two"/);
});

test('the tasks planned: those tune searches on each of the network\'s targets, once (CPU targets add the Winograd alternative of a 3x3 conv)', () => {
  const dir = path.join(root, 'tasks');
  mkdirSync(dir, { recursive: true });
  writeNetWorkspace(dir);
  const graph = loadModel({ model: path.join(dir, 'net.onnx') }).graph;
  const descs = (targets: string[]): string[] => tasksForTargets(graph, targets).map((t) => t.desc.split(' ')[0]);
  assert.equal(descs(['opencl']), ['conv2d_nhwc+relu', 'global_avg_pool2d', 'dense+add']);
  assert.equal(descs(['llvm']), ['conv2d_nhwc+relu', 'global_avg_pool2d', 'dense+add', 'conv2d_winograd_nhwc+relu']);
  assert.equal(descs(['opencl', 'llvm -mcpu=native']), descs(['llvm']));
});

test('config: shards must be an integer from 1 to 64', () => {
  assert.throws(() => loadedOf({ networks: { a: { model: 'mobilenet', shards: 0 } } }), /networks\.a\.shards: expected a number >= 1, got 0/);
  assert.throws(() => loadedOf({ networks: { a: { model: 'mobilenet', shards: 2.5 as number } } }), /networks\.a\.shards: expected an integer, got 2\.5/);
});

test.after(() => rmSync(root, { recursive: true, force: true }));

test.run();
