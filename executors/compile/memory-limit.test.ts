// Under Nx the memory limit is the network's maxMemory in the config: nx compile of a model
// that needs more (a 4 GiB broadcast) fails with one line naming the tensor, the size and
// the config field, writing nothing; raised, it compiles; lowered again, nx benchmark refuses
// the compiled model before loading it. --max-memory, the CLI's flag, points at the field.

import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExecutorContext } from '@nx/devkit';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { OnnxModelBuilder } from '../../engine/frontend/onnx/model-builder';
import benchmarkExecutor from '../benchmark/executor';
import { checkOptions } from '../options';
import { captureConsole as capture } from '../workspace.fixture';
import compileExecutor from './executor';

const dir = mkdtempSync(path.join(tmpdir(), 'tt-nx-memory-limit-'));
const savedCache = process.env.TENSORTUNE_CACHE_DIR;
test.before(() => { process.env.TENSORTUNE_CACHE_DIR = path.join(dir, 'cache'); });
test.after(() => {
  if (savedCache === undefined) delete process.env.TENSORTUNE_CACHE_DIR;
  else process.env.TENSORTUNE_CACHE_DIR = savedCache;
  rmSync(dir, { recursive: true, force: true });
});

const N = 32768;
const config = (maxMemory?: string): string => `records: records
outDir: out
targets:
  cpu:
    target: llvm
networks:
  wide:
    model: wide.onnx
${maxMemory ? `    maxMemory: ${maxMemory}\n` : ''}`;
const ctx = { root: dir, cwd: dir, isVerbose: false, projectName: 'wide' } as unknown as ExecutorContext;
const options = { config: 'tensortune.config.yaml', network: 'wide' };
/** One nx compile (the executor yields once without --watch). */
const compileOnce = async (): Promise<unknown> => (await compileExecutor(options, ctx).next()).value;
const NEEDS = `the model needs 4.0 GiB to run (output 'y' [1, ${N}, ${N}] alone is 4.0 GiB)`;

test('nx compile and nx benchmark: the limit is networks.<name>.maxMemory, named in the one line', async () => {
  writeFileSync(path.join(dir, 'wide.onnx'), new OnnxModelBuilder(13).input('a', [1, N, 1]).input('b', [1, 1, N]).node('Add', ['a', 'b'], ['y']).output('y').build());
  writeFileSync(path.join(dir, 'tensortune.config.yaml'), config());
  const refused = await capture(compileOnce);
  assert.equal(refused.value, { success: false });
  assert.equal(refused.lines.filter((l) => l.startsWith('tensortune compile: ')), [
    `tensortune compile: ${path.join(dir, 'wide.onnx')}: ${NEEDS}, above the limit of 4.0 GiB; raise the limit with maxMemory (e.g. maxMemory: 16GiB) on networks.wide in tensortune.config.yaml`,
  ], refused.lines.join('\n'));
  assert.not.ok(existsSync(path.join(dir, 'out', 'wide')), 'nothing written');

  writeFileSync(path.join(dir, 'tensortune.config.yaml'), config('8GiB'));
  const compiled = await capture(compileOnce);
  assert.equal(compiled.value, { success: true }, compiled.lines.join('\n'));

  writeFileSync(path.join(dir, 'tensortune.config.yaml'), config('2GiB'));
  const bench = await capture(() => benchmarkExecutor({ ...options, repeat: 1 }, ctx));
  assert.equal(bench.value, { success: false });
  const errors = bench.lines.filter((l) => l.startsWith('tensortune benchmark: '));
  assert.equal(errors, [`tensortune benchmark: out/wide/cpu/manifest.json: ${NEEDS}, above the limit of 2.0 GiB; ` +
    'raise the limit with maxMemory (e.g. maxMemory: 16GiB) on networks.wide in tensortune.config.yaml'], bench.lines.join('\n'));
  assert.not.ok(bench.lines.some((l) => /Execution time/.test(l)), 'the runner never started');

  writeFileSync(path.join(dir, 'tensortune.config.yaml'), config('lots'));
  const bad = await capture(compileOnce);
  assert.equal(bad.value, { success: false });
  assert.ok(bad.lines.some((l) => l.includes('networks.wide.maxMemory')), bad.lines.join('\n'));
});

test('--max-memory under nx points at the config field', () => {
  assert.throws(() => checkOptions('compile', { maxMemory: '8GiB' }, { config: 'tensortune.config.yaml', network: 'wide', configTarget: 'cpu' }),
    (e: Error) => e.message === '--max-memory: under nx, the limit is networks.wide.maxMemory in tensortune.config.yaml (e.g. maxMemory: 16GiB)');
});

test.run();
