// `nx tune` on a network with nothing to tune (a lone Relu: no task with a reduction) tunes
// trivially: success, one line saying so, the store's log and the target's declared Nx
// output written (empty); `nx compile` then builds the model from that store. An engine error
// during a tune is one line naming the task.

import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExecutorContext } from '@nx/devkit';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { OnnxModelBuilder } from '../../engine/frontend/onnx/model-builder';
import compileExecutor from '../compile/executor';
import { State } from '../../engine/schedule/state';
import { captureConsole, writeNetWorkspace } from '../workspace.fixture';
import tuneExecutor from './executor';

const dir = mkdtempSync(path.join(tmpdir(), 'tt-tune-executor-'));
const savedCache = process.env.TENSORTUNE_CACHE_DIR;
const CONFIG = `records: records
outDir: out
targets:
  cpu:
    target: llvm
budgets:
  small: { trials: 8, batchSize: 2, policy: random }
networks:
  tiny:
    model: relu.onnx
`;

test.before(() => { process.env.TENSORTUNE_CACHE_DIR = path.join(dir, 'cache'); });
test.after(() => {
  if (savedCache === undefined) delete process.env.TENSORTUNE_CACHE_DIR;
  else process.env.TENSORTUNE_CACHE_DIR = savedCache;
  rmSync(dir, { recursive: true, force: true });
});

test('nx tune of a network without a tuning task: one "nothing to tune" line, the log and the Nx output exist (empty), nx compile builds it', async () => {
  writeFileSync(path.join(dir, 'relu.onnx'), new OnnxModelBuilder(13).input('x', [1, 8]).output('y').node('Relu', ['x'], ['y']).build());
  writeFileSync(path.join(dir, 'tensortune.config.yaml'), CONFIG);
  const ctx = { root: dir, cwd: dir, isVerbose: false, projectName: 'tiny' } as unknown as ExecutorContext;
  const tuned = await captureConsole(() => tuneExecutor({ config: 'tensortune.config.yaml', network: 'tiny', budget: 'small' }, ctx));
  const text = tuned.lines.join('\n');
  assert.equal(tuned.value, { success: true }, text);
  assert.ok(tuned.lines.some((l) => /relu\.onnx: nothing to tune: no task with a reduction/.test(l)), text);
  assert.not.match(text, /does not exist/);
  const log = path.join(dir, 'records', 'tiny.cpu.jsonl');
  const output = path.join(dir, 'records', 'nx', 'tiny', 'cpu.small.jsonl');
  assert.ok(existsSync(log), 'the store log exists');
  assert.is(readFileSync(log, 'utf8'), '');
  assert.ok(existsSync(output), 'the declared Nx output exists');
  assert.is(readFileSync(output, 'utf8'), '');

  const compiled = await captureConsole(async () => (await compileExecutor({ config: 'tensortune.config.yaml', network: 'tiny' }, ctx).next()).value);
  assert.equal(compiled.value, { success: true }, compiled.lines.join('\n'));
  assert.ok(existsSync(path.join(dir, 'out', 'tiny', 'cpu', 'manifest.json')), compiled.lines.join('\n'));
});

test('nx tune meeting an engine error: success false, one line naming the task and asking for a report, no stack', async () => {
  const ws = path.join(dir, 'broken');
  mkdirSync(ws);
  writeNetWorkspace(ws, { convOnly: true });
  const ctx = { root: ws, cwd: ws, isVerbose: false, projectName: 'net' } as unknown as ExecutorContext;
  const original = State.prototype.validate;
  State.prototype.validate = () => { throw new TypeError('boom'); };
  let r;
  try {
    r = await captureConsole(() => tuneExecutor({ config: 'tensortune.config.yaml', network: 'net', trials: 2 }, ctx));
  } finally {
    State.prototype.validate = original;
  }
  assert.equal(r.value, { success: false }, r.lines.join('\n'));
  const errors = r.lines.filter((l) => l.includes('internal error'));
  assert.is(errors.length, 1, r.lines.join('\n'));
  assert.match(errors[0], /^tensortune tune: internal error while tuning task 0 \(conv2d\S* [0-9x]+ -> [0-9x]+\): TypeError: boom; this is a bug in tensortune: please report it/);
  assert.not.ok(r.lines.some((l) => /^\s+at /.test(l)), 'no stack');
});

test.run();
