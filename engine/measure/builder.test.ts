// The builder remembers the schedules it built: the same steps on the same DAG give the same
// library again (tune's confirmation pass measures schedules it built earlier in the run),
// but only while that library matches its seal: a damaged one is built again.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cachedFileOk } from '../native/file-cache';
import { parseTarget } from '../target';
import { Builder } from './builder';
import { convKernels } from './conv-kernels.fixture';

const target = parseTarget('llvm -mcpu=native');
const { conv, defaults } = convKernels(target);
const dir = mkdtempSync(path.join(tmpdir(), 'tt-builder-test-'));

test('the same steps again: the same library and layouts; a damaged library is built again', async () => {
  const builder = new Builder(target, { workDir: dir, jobs: 1 });
  const packable = new Set([conv.dag.inputs[1].name]);
  const [first] = await builder.build(conv.dag, [defaults], packable);
  assert.ok('lib' in first, JSON.stringify(first));
  const [again] = await builder.build(conv.dag, [defaults], packable);
  assert.ok('lib' in again && again.lib === first.lib);
  assert.equal('lib' in again && again.layouts, 'lib' in first && first.layouts);
  assert.ok('lib' in first && first.layouts!.length > 0, 'the weights are read in a blocked layout');

  writeFileSync(first.lib, 'damaged');
  assert.not.ok(await cachedFileOk(first.lib));
  const [rebuilt] = await builder.build(conv.dag, [defaults], packable);
  assert.ok('lib' in rebuilt && rebuilt.lib === first.lib);
  assert.ok(await cachedFileOk(first.lib), 'built again, sealed');
});

test.after(() => rmSync(dir, { recursive: true, force: true }));

test.run();
