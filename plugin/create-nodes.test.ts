// createNodes on a temporary workspace, as Nx calls it: projects, targets, inputs and
// outputs per network; a broken config keeps its projects (whose targets report the
// error) instead of failing the graph.

import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
process.env.NX_CACHE_PROJECT_GRAPH = 'false';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createNodes, createNodesV2 } from './index';
import type { TargetConfiguration } from '@nx/devkit';

const root = mkdtempSync(path.join(tmpdir(), 'tt-nodes-'));
const CONFIG = `
targets:
  cpu: { target: llvm -mcpu=native }
  avx2: { target: llvm -mattr=+avx2 }
budgets:
  tiny: { trialsPerTask: 2 }
  full: { trialsPerTask: 800 }
networks:
  mobilenet: { model: mobilenet }
  small: { model: resnet-18, imageSize: 32, root: nets/small, targets: [cpu] }
`;

type Projects = Record<string, { name: string; targets: Record<string, TargetConfiguration>; metadata?: { description?: string } }>;

async function infer(files: Record<string, string>, options?: object): Promise<Record<string, { projects?: Projects }>> {
  for (const [f, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, f)), { recursive: true });
    writeFileSync(path.join(root, f), text);
  }
  const results = await createNodes[1](Object.keys(files), options, { workspaceRoot: root, nxJsonConfiguration: {} });
  return Object.fromEntries(results) as Record<string, { projects?: Projects }>;
}

test('exports the batched createNodes and the createNodesV2 alias; the glob names the config files', () => {
  assert.is(createNodesV2, createNodes);
  assert.match(createNodes[0], /tensortune\.config\.yaml/);
  assert.match(createNodes[0], /\.tensortunerc\.json/);
});

test('one project per network with tune, compile and benchmark', async () => {
  const { 'tensortune.config.yaml': r } = await infer({ 'tensortune.config.yaml': CONFIG });
  const projects = r.projects!;
  assert.equal(Object.keys(projects).sort(), ['models/mobilenet', 'nets/small']);
  const m = projects['models/mobilenet'];
  assert.is(m.name, 'mobilenet');
  const { tune, compile, benchmark } = m.targets;
  assert.is(tune.executor, 'tensortune:tune');
  const { settings, ...options } = tune.options as { settings: string };
  assert.equal(options, { config: 'tensortune.config.yaml', network: 'mobilenet', configTarget: 'cpu', budget: 'tiny' });
  assert.match(settings, /^[0-9a-f]{32}$/);
  assert.is(tune.cache, true);
  assert.is(tune.parallelism, false);
  // Its own file per configuration, never the store's logs that the CLI and other budgets write.
  assert.equal(tune.outputs, ['{workspaceRoot}/.tensortune/records/nx/mobilenet/{options.configTarget}.{options.budget}.jsonl']);
  assert.not.ok(tune.inputs?.includes('{workspaceRoot}/tensortune.config.yaml'), 'the config file is no input: its relevant part is the settings option');
  const runtime = tune.inputs?.find((i) => typeof i === 'object' && 'runtime' in i) as { runtime: string };
  const bin = path.relative(root, path.resolve(__dirname, '..', 'bin', 'tensortune.js'));
  assert.is(runtime.runtime, `node ${bin} fingerprint "llvm -mcpu=native" "llvm -mattr=+avx2"`);
  assert.equal(tune.configurations?.full, { budget: 'full' });
  assert.equal(tune.configurations?.avx2, { configTarget: 'avx2' });
  assert.equal(tune.configurations?.['avx2-full'], { configTarget: 'avx2', budget: 'full' });
  assert.equal(compile.dependsOn, ['tune']);
  assert.is(compile.cache, true);
  assert.ok(compile.inputs?.some((i) => typeof i === 'object' && 'dependentTasksOutputFiles' in i));
  const digest = compile.inputs?.filter((i) => typeof i === 'object' && 'runtime' in i).map((i) => (i as { runtime: string }).runtime);
  assert.equal(digest?.[1], `node ${bin} best-digest ".tensortune/records" ".tensortune/records/nx/mobilenet" --keys-from ".tensortune/records/nx/mobilenet" ` +
    '--target "llvm -mcpu=native" --target "llvm -mattr=+avx2"');
  assert.equal(digest?.[2], `node ${bin} best-digest ".tensortune/records/nx/mobilenet" --files`, 'which budgets tuned the network is an input too');
  assert.equal(compile.outputs, ['{workspaceRoot}/dist/tensortune/mobilenet/{options.configTarget}']);
  assert.equal(compile.configurations?.full, {}, 'budget configurations exist on compile so -c full flows through dependsOn');
  assert.equal(benchmark.dependsOn, ['compile']);
  assert.is(benchmark.cache, false);
  assert.is(benchmark.parallelism, false);
  for (const t of [tune, compile, benchmark]) assert.ok((t.metadata as { description?: string }).description);
  // A network restricted to one target gets only that target's configurations.
  assert.not.ok('avx2' in (projects['nets/small'].targets.tune.configurations ?? {}));
});

test('target names come from the plugin options', async () => {
  const { 'tensortune.config.yaml': r } = await infer({ 'tensortune.config.yaml': CONFIG }, { tuneTargetName: 'autotune' });
  const t = r.projects!['models/mobilenet'].targets;
  assert.ok(t.autotune);
  assert.equal(t.compile.dependsOn, ['autotune']);
});

test('a model file is a hashed input; paths are relative to the config file', async () => {
  mkdirSync(path.join(root, 'sub', 'm'), { recursive: true });
  writeFileSync(path.join(root, 'sub', 'm', 'x.onnx'), 'not really onnx');
  const { 'sub/tensortune.config.yaml': r } = await infer({ 'sub/tensortune.config.yaml': 'targets: { cpu: { target: llvm } }\nnetworks: { x: { model: m/x.onnx } }\n' });
  const p = r.projects!['sub/models/x'];
  assert.ok(p.targets.tune.inputs?.includes('{workspaceRoot}/sub/m/x.onnx'));
  assert.equal(p.targets.tune.outputs, ['{workspaceRoot}/sub/.tensortune/records/nx/x/{options.configTarget}.default.jsonl'], 'no budgets: one output per target');
});

test('a config edit outside a network (a comment, another network) leaves its options as they were; its own edit changes them', async () => {
  const options = async (text: string): Promise<unknown[]> => {
    const { 'tensortune.config.yaml': r } = await infer({ 'tensortune.config.yaml': text });
    const t = r.projects!['models/mobilenet'].targets;
    return [t.tune.options, t.tune.inputs, t.compile.options, t.compile.inputs];
  };
  const before = await options(CONFIG);
  assert.equal(await options(`# tuned on the team's laptops\n${CONFIG}`), before);
  assert.equal(await options(`${CONFIG}  extra: { model: resnet-50 }\n`), before);
  assert.not.equal(await options(CONFIG.replace('mobilenet: { model: mobilenet }', 'mobilenet: { model: mobilenet, batch: 2 }')), before);
  assert.not.equal(await options(CONFIG.replace('trialsPerTask: 800', 'trialsPerTask: 900')), before);
  assert.not.equal(await options(CONFIG.replace('llvm -mattr=+avx2', 'llvm -mattr=+avx512f')), before);
});

test('a broken config keeps its projects; their targets and description carry the message', async () => {
  const broken = CONFIG.replace('trialsPerTask: 2', 'trialsPerTask: lots');
  const { 'tensortune.config.yaml': r } = await infer({ 'tensortune.config.yaml': broken });
  const m = r.projects!['models/mobilenet'];
  assert.is(m.name, 'mobilenet');
  assert.is(m.targets.tune.executor, 'tensortune:tune');
  assert.match(m.metadata!.description!, /tensortune\.config\.yaml: budgets\.tiny\.trialsPerTask: expected an integer, got "lots"/);
  assert.ok(r.projects!['nets/small'], 'the root given in the broken file is kept');
});

test('a config that does not even parse yields no projects and does not throw', async () => {
  const { 'other/tensortune.config.yaml': r } = await infer({ 'other/tensortune.config.yaml': 'networks: [\n' });
  assert.equal(Object.keys(r.projects ?? {}), []);
});

test.run();
