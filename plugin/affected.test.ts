// The config file reaches `nx affected` through benchmark's inputs only: tune and compile
// keep it out of their cache keys (their settings option carries the part they use).

import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
process.env.NX_CACHE_PROJECT_GRAPH = 'false';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createNodes } from './index';
import type { TargetConfiguration } from '@nx/devkit';

const root = mkdtempSync(path.join(tmpdir(), 'tt-affected-'));

async function targetsOf(file: string, text: string): Promise<Record<string, TargetConfiguration>> {
  mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
  writeFileSync(path.join(root, file), text);
  const [[, result]] = await createNodes[1]([file], undefined, { workspaceRoot: root, nxJsonConfiguration: {} });
  const [project] = Object.values(result.projects ?? {});
  return project.targets ?? {};
}

test('benchmark (never cached) has the config file as an input; tune and compile do not', async () => {
  const t = await targetsOf('sub/tensortune.config.yaml', 'targets:\n  cpu:\n    target: llvm\nnetworks:\n  a:\n    model: mobilenet\n');
  assert.is(t.benchmark.cache, false);
  assert.equal(t.benchmark.inputs, ['default', '^default', '{workspaceRoot}/sub/tensortune.config.yaml']);
  for (const name of ['tune', 'compile']) {
    const files = (t[name].inputs ?? []).filter((i) => typeof i === 'string' && i.includes('tensortune.config'));
    assert.equal(files, [], `${name} hashes the config's settings, not the file`);
  }
});

test('a network in a file of its own that extends the workspace config: benchmark has both files as inputs, and an edit of the extended file reaches tune\'s key', async () => {
  const base = 'records: .tt/records\ndefaults: { budget: tiny }\ntargets:\n  cpu:\n    target: llvm\nbudgets:\n  tiny: { trialsPerTask: 2 }\n';
  writeFileSync(path.join(root, 'tensortune.config.yaml'), base);
  const own = 'extends: ../../tensortune.config.yaml\nnetworks:\n  m:\n    model: mobilenet\n    root: .\n';
  const t = await targetsOf('models/m/tensortune.config.yaml', own);
  assert.equal(t.benchmark.inputs, ['default', '^default', '{workspaceRoot}/models/m/tensortune.config.yaml', '{workspaceRoot}/tensortune.config.yaml']);
  // The store is the extended file's (relative to it), shared with its own networks.
  assert.ok((t.tune.outputs ?? []).some((o) => o.startsWith('{workspaceRoot}/.tt/records/')), JSON.stringify(t.tune.outputs));
  const before = (t.tune.options as { settings: string }).settings;
  writeFileSync(path.join(root, 'tensortune.config.yaml'), base.replace('trialsPerTask: 2', 'trialsPerTask: 3'));
  const after = await targetsOf('models/m/tensortune.config.yaml', own);
  assert.is.not((after.tune.options as { settings: string }).settings, before, 'a budget edit in the extended file changes the cache key');
});

test.run();
