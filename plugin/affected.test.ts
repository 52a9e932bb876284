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

test.run();
