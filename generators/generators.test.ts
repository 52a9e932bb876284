// The init and model generators on Nx's in-memory tree.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { readNxJson, type Tree } from '@nx/devkit';
import { createTreeWithEmptyWorkspace } from '@nx/devkit/testing';
import { parse } from 'yaml';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import initGenerator, { DEFAULT_PLUGIN_OPTIONS, PLUGIN_NAME } from './init/generator';
import modelGenerator, { defaultNetworkName } from './model/generator';

const PLUGIN_ENTRY = { plugin: PLUGIN_NAME, options: { tuneTargetName: 'tune', compileTargetName: 'compile', benchmarkTargetName: 'benchmark' } };

test('init registers the plugin with its options at their defaults, git-ignores outputs, sets target defaults; a second run changes nothing', () => {
  const tree = createTreeWithEmptyWorkspace();
  tree.write('.gitignore', 'node_modules');
  initGenerator(tree, {});
  const nx = readNxJson(tree)!;
  assert.equal(nx.plugins, [PLUGIN_ENTRY]);
  assert.equal(DEFAULT_PLUGIN_OPTIONS, PLUGIN_ENTRY.options);
  assert.equal((nx.targetDefaults as Record<string, unknown>)['tensortune:tune'], { cache: true, parallelism: false });
  const ignore = tree.read('.gitignore', 'utf-8')!;
  assert.match(ignore, /^node_modules\n# tensortune.*\n\/\.tensortune\/\n\/dist\/tensortune\/\n$/);
  const snapshot = [tree.read('nx.json', 'utf-8'), tree.read('.gitignore', 'utf-8')];
  initGenerator(tree, {});
  assert.equal([tree.read('nx.json', 'utf-8'), tree.read('.gitignore', 'utf-8')], snapshot);
});

test('init keeps a plugin entry given as an object with options', () => {
  const tree = createTreeWithEmptyWorkspace();
  tree.write('nx.json', JSON.stringify({ plugins: [{ plugin: PLUGIN_NAME, options: { tuneTargetName: 'autotune' } }] }));
  initGenerator(tree, { skipGitignore: true });
  assert.equal(readNxJson(tree)!.plugins, [{ plugin: PLUGIN_NAME, options: { tuneTargetName: 'autotune' } }]);
  assert.not.ok(tree.exists('.gitignore'));
});

function config(tree: Tree, file = 'tensortune.config.yaml'): { extends?: string; networks: Record<string, Record<string, unknown>>; targets: object; budgets: Record<string, unknown> } {
  return parse(tree.read(file, 'utf-8')!) as { networks: Record<string, Record<string, unknown>>; targets: object; budgets: Record<string, unknown> };
}

test('model writes the network\'s own config in its folder, extending a workspace config it creates with a CPU target and budgets', () => {
  const tree = createTreeWithEmptyWorkspace();
  modelGenerator(tree, { name: 'mnet', model: 'mobilenet', imageSize: 96 });
  const own = config(tree, 'models/mnet/tensortune.config.yaml');
  assert.equal(own, { extends: '../../tensortune.config.yaml', networks: { mnet: { model: 'mobilenet', imageSize: 96, root: '.' } } });
  const base = config(tree);
  assert.ok('cpu' in base.targets);
  assert.is(base.networks, undefined);
  assert.match(tree.read('tensortune.config.yaml', 'utf-8')!, /^# tensortune: the targets and budgets/);
  assert.ok(tree.exists('models/mnet/README.md'));
  assert.match(tree.read('models/mnet/README.md', 'utf-8')!, /declared in `models\/mnet\/tensortune\.config\.yaml` \(networks\.mnet\),\nwhich takes its targets and budgets from `tensortune\.config\.yaml`/);
  assert.equal(readNxJson(tree)!.plugins, [PLUGIN_ENTRY]);
});

test('model --config adds the network to that file instead, creating it with the starter targets and budgets', () => {
  const tree = createTreeWithEmptyWorkspace();
  modelGenerator(tree, { name: 'a', model: 'mobilenet', config: 'tensortune.config.yaml' });
  modelGenerator(tree, { name: 'b', model: 'resnet-18', config: 'nets/tt.yaml', directory: 'apps/b' });
  assert.equal(config(tree).networks, { a: { model: 'mobilenet' } });
  assert.ok('cpu' in config(tree).targets);
  assert.equal(config(tree, 'nets/tt.yaml').networks, { b: { model: 'resnet-18', root: '../apps/b' } });
  assert.not.ok(tree.exists('models/a/tensortune.config.yaml'));
});

test('init leaves a plugin entry given as a plain string alone', () => {
  const tree = createTreeWithEmptyWorkspace();
  tree.write('nx.json', JSON.stringify({ plugins: [PLUGIN_NAME] }));
  initGenerator(tree, { skipGitignore: true });
  assert.equal(readNxJson(tree)!.plugins, [PLUGIN_NAME]);
});

test('model without a name takes the model\'s: a builtin name, an ONNX file\'s base name', () => {
  assert.is(defaultNetworkName('mobilenet'), 'mobilenet');
  assert.is(defaultNetworkName('squeezenet_v1.1'), 'squeezenet_v1.1');
  assert.is(defaultNetworkName('downloads/My Net.v2.onnx'), 'my-net.v2');
  const tree = createTreeWithEmptyWorkspace();
  modelGenerator(tree, { model: 'mobilenet' });
  assert.equal(config(tree, 'models/mobilenet/tensortune.config.yaml').networks.mobilenet, { model: 'mobilenet', root: '.' });
  assert.ok(tree.exists('models/mobilenet/README.md'));
  assert.throws(() => modelGenerator(tree, { model: '' }), /tensortune:model: model: expected a builtin network or the workspace path of an \.onnx file/);
});

test('model writes block YAML, and the starter config\'s budgets are the documented ones', () => {
  const tree = createTreeWithEmptyWorkspace();
  modelGenerator(tree, { name: 'a', model: 'mobilenet', config: 'tensortune.config.yaml' });
  modelGenerator(tree, { name: 'b', model: 'resnet-18', imageSize: 96, config: 'tensortune.config.yaml' });
  modelGenerator(tree, { name: 'c', model: 'vgg-11' });
  const text = tree.read('tensortune.config.yaml', 'utf-8')!;
  assert.not.match(text, /[{}]/, `no flow collection:\n${text}`);
  assert.match(text, /\nnetworks:\n  a:\n    model: mobilenet\n  b:\n    model: resnet-18\n    imageSize: 96\n$/);
  const own = tree.read('models/c/tensortune.config.yaml', 'utf-8')!;
  assert.is(own, 'extends: ../../tensortune.config.yaml\nnetworks:\n  c:\n    model: vgg-11\n    root: .\n');
  // The starter's tiny budget is the one README documents, this repository's own config.
  const repoConfig = parse(readFileSync(path.join(__dirname, '..', 'tensortune.config.yaml'), 'utf8')) as { budgets: Record<string, unknown> };
  assert.equal((parse(text) as { budgets: Record<string, unknown> }).budgets.tiny, repoConfig.budgets.tiny);
});

test('model keeps comments of an existing workspace config and copies an ONNX file into the project', () => {
  const tree = createTreeWithEmptyWorkspace();
  const before = '# our nets\ntargets:\n  cpu: { target: llvm }\nnetworks:\n  a: { model: resnet-18 }\n';
  tree.write('tensortune.config.yaml', before);
  tree.write('downloads/net.onnx', Buffer.from([8, 7]));
  modelGenerator(tree, { name: 'b', model: 'downloads/net.onnx', batch: 2 });
  assert.is(tree.read('tensortune.config.yaml', 'utf-8')!, before);
  assert.equal(config(tree, 'models/b/tensortune.config.yaml').networks.b, { model: 'model.onnx', root: '.', batch: 2 });
  assert.equal([...tree.read('models/b/model.onnx')!], [8, 7]);
  modelGenerator(tree, { name: 'c', model: 'vgg-11', config: 'tensortune.config.yaml' });
  assert.match(tree.read('tensortune.config.yaml', 'utf-8')!, /^# our nets/);
  assert.equal(config(tree).networks.c, { model: 'vgg-11' });
});

test('model refuses unknown builtins, missing files and duplicates with one message each', () => {
  const tree = createTreeWithEmptyWorkspace();
  assert.throws(() => modelGenerator(tree, { name: 'x', model: 'mobilenett' }), /tensortune:model: model: expected a builtin network \(mobilenet, .*\) or an \.onnx file, got "mobilenett"/);
  assert.throws(() => modelGenerator(tree, { name: 'x', model: 'nope/x.onnx' }), /model: file nope\/x\.onnx not found in the workspace/);
  modelGenerator(tree, { name: 'x', model: 'vgg-11' });
  assert.throws(() => modelGenerator(tree, { name: 'x', model: 'vgg-11' }), /models\/x\/tensortune\.config\.yaml: networks\.x exists already/);
  modelGenerator(tree, { name: 'y', model: 'vgg-11', config: 'tensortune.config.yaml' });
  assert.throws(() => modelGenerator(tree, { name: 'y', model: 'vgg-11' }), /tensortune:model: tensortune\.config\.yaml: networks\.y exists already/);
  assert.throws(() => modelGenerator(tree, { name: 'z', model: 'vgg-11', directory: '.' }), /directory: expected a project folder, not the workspace root/);
  assert.throws(() => modelGenerator(tree, { name: 'Bad Name', model: 'vgg-11' }), /name: expected lower-case letters/);
});

test.run();
