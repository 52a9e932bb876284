// The executors' options are honoured or refused, never dropped: an option their schema
// does not have is one line naming it and listing those they take (CLI flags that mean
// nothing under Nx say why), and the tune executor's budget options override the
// configuration's budget for one run. (What Nx takes for itself: plugin/pre-tasks.test.ts.)

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExecutorContext } from '@nx/devkit';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { UserError } from '../engine/errors';
import { NetBuilder } from '../engine/frontend/builder';
import { writeOnnxFile } from '../engine/frontend/onnx/export';
import type { ExecutorName } from './options';
import { resolveFor } from './run';
import tuneExecutor, { budgetFor } from './tune/executor';

const dir = mkdtempSync(path.join(tmpdir(), 'tt-executor-options-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

writeFileSync(path.join(dir, 'tensortune.config.yaml'), `records: records
outDir: out
targets:
  cpu: { target: llvm -mcpu=native }
budgets:
  small: { trialsPerTask: 1, measuresPerRound: 2, policy: random }
  big: { trials: 500, trialsPerTask: 100, batchSize: 8, measure: { timeoutMs: 4000, repeat: 2 } }
networks:
  net: { model: net.onnx }
`);
const b = new NetBuilder({ batch: 1, layout: 'NCHW', imageSize: 8, seed: 1, randomStats: true, weights: 'random' });
b.graph.outputs = [b.dense(b.flatten(b.globalAvgPool(b.relu(b.conv2d(b.input(4), 'conv', { channels: 8, kernel: [3, 3], padding: [1, 1] })))), 'fc', 10)];
writeOnnxFile(path.join(dir, 'net.onnx'), b.graph);

const base = { config: 'tensortune.config.yaml', network: 'net' };
const context = (target: string): ExecutorContext => ({ root: dir, cwd: dir, isVerbose: false, projectName: 'net', targetName: target }) as unknown as ExecutorContext;

const refused = (name: ExecutorName, options: Record<string, unknown>, pattern: RegExp): void => {
  try {
    resolveFor(name, { ...base, ...options }, context(name));
  } catch (e) {
    assert.instance(e, UserError, (e as Error).stack);
    assert.match((e as Error).message, pattern);
    assert.not.match((e as Error).message, /\n/);
    return;
  }
  assert.unreachable(`${name} ${JSON.stringify(options)} was not refused`);
};

test('options a schema does not have are refused with the options the executor takes', () => {
  refused('tune', { foo: 1 }, /^unknown option --foo \(nx tune takes: --config-target, --budget, --trials, --trials-per-task, --time-limit, --early-stopping, --confirm, --network-pass, --policy, --measures-per-round, --warmup-trials, --seed, --threads, --number, --repeat, --min-repeat-ms, --timeout, --flush, --build-jobs, and -c <configuration>\)$/);
  refused('compile', { 'trials-per-task': 3 }, /^unknown option --trials-per-task \(nx compile takes: --config-target, --watch, --strict, --threads, --timeout, and -c <configuration>\)$/);
  refused('benchmark', { trialsPerTask: 3 }, /^unknown option --trials-per-task \(nx benchmark takes: --config-target, --repeat, --number, --min-repeat-ms, --threads, --seed, --input, --save-outputs, --profile, --compare, --untuned, and -c <configuration>\)$/);
  refused('tune', { _: ['4'] }, /^unexpected argument\(s\) '4': nx tune <project> takes options only/);
});

test('CLI flags without a meaning under Nx say why, and where the setting lives', () => {
  refused('tune', { target: 'cpu' }, /^'target' is 'configTarget' now \(Nx owns --target, the target to run\): choose a target of tensortune\.config\.yaml with -c <name> or --config-target <name>$/);
  refused('compile', { host: 'llvm -mtriple=aarch64-linux-gnu' }, /^--host: the host of target cpu is targets\.cpu\.host in tensortune\.config\.yaml \(GPU targets only; default llvm, this machine\)$/);
  refused('tune', { records: 'x.jsonl' }, /^--records: nx tune reads and appends to the record store that tensortune\.config\.yaml names \(records:\)/);
  refused('compile', { 'tuning-records': 'x.jsonl' }, /^--tuning-records: nx compile reads the record store/);
  refused('compile', { output: 'build' }, /^--output: nx compile writes under the outDir of tensortune\.config\.yaml \(out\/net\/cpu\)$/);
  refused('tune', { 'image-size': 64 }, /^--image-size: the model is networks\.net in tensortune\.config\.yaml; set imageSize there/);
  refused('compile', { layout: 'NCHW' }, /^--layout: the model is networks\.net in tensortune\.config\.yaml; set layout there/);
  refused('tune', { 'input-shapes': '[1,4,8,8]' }, /^--input-shapes: .*set batch and imageSize \(or inputs, for a model file\) there/);
  refused('tune', { 'batch-size': 4 }, /^--batch-size is --measures-per-round now \(candidates measured per round; the model's batch is networks\.net\.batch in tensortune\.config\.yaml\)$/);
  refused('tune', { json: true }, /^--json: nx tune prints text; --json is for the CLI/);
  refused('benchmark', { rounds: 3 }, /^--rounds: nx benchmark --compare onnxruntime runs the model's own ONNX file in 5 rounds; for another, run `npx tensortune benchmark out\/net\/cpu --compare onnxruntime --rounds \.\.\.`$/);
  refused('compile', { cache: '/tmp/c' }, /^--cache: under nx, set TENSORTUNE_CACHE_DIR/);
});

test('options the executors take pass the checks; a bad configTarget names the network\'s targets', () => {
  resolveFor('tune', { ...base, budget: 'small', trialsPerTask: 3, policy: 'random', measuresPerRound: 2, timeout: 5 } as never, context('tune'));
  resolveFor('compile', { ...base, configTarget: 'cpu', watch: false, strict: true, timeout: 30 } as never, context('compile'));
  resolveFor('benchmark', { ...base, repeat: 3, seed: 1, input: ['data=x.bin'], saveOutputs: 'outs', compare: 'onnxruntime', untuned: true } as never, context('benchmark'));
  refused('tune', { configTarget: 'gpu' }, /networks\.net\.targets: target 'gpu' is not one of this network's targets \(cpu\)/);
});

test('budgetFor: the options override the budget field by field; a trial count replaces both of the budget\'s; seconds become the engine\'s ms', () => {
  const big = { trials: 500, trialsPerTask: 100, batchSize: 8, earlyStopping: 50, confirm: 2, networkPass: false, measure: { timeoutMs: 4000, repeat: 2 } };
  assert.equal(budgetFor(big, base), {
    trials: 500, trialsPerTask: 100, timeLimitS: undefined, earlyStopping: 50, confirm: 2, networkPass: false, batchSize: 8, warmupTrials: undefined, policy: undefined, seed: undefined,
    measure: { repeat: 2, timeoutMs: 4000 },
  });
  assert.equal(budgetFor(big, { ...base, trialsPerTask: 3, measuresPerRound: 4, warmupTrials: 16, timeout: 2.5, threads: 2, policy: 'grid', flush: true, confirm: 0, networkPass: true }, 1), {
    trials: undefined, trialsPerTask: 3, timeLimitS: undefined, earlyStopping: 50, confirm: 0, networkPass: true, batchSize: 4, warmupTrials: 16, policy: 'grid', seed: undefined,
    measure: { repeat: 2, timeoutMs: 2500, flush: true, threads: 2 },
  });
  assert.equal(budgetFor({ measuresPerRound: 16, measure: { timeout: 3 } }, { ...base, seed: 7, timeLimit: 60 }, 4).measure, { timeoutMs: 3000, threads: 4 });
  assert.is(budgetFor({ measuresPerRound: 16 }, base).batchSize, 16);
});

test('nx tune --trials-per-task 2 --seed 3: tunes past the budget\'s 1 trial per task, and says which options it ran with', async () => {
  const lines: string[] = [];
  const { log, warn, error } = console;
  console.log = console.warn = console.error = (...a: unknown[]) => { lines.push(a.join(' ')); };
  try {
    const r1 = await tuneExecutor({ ...base, budget: 'small' }, context('tune'));
    const r2 = await tuneExecutor({ ...base, budget: 'small', trialsPerTask: 2, seed: 3 }, context('tune'));
    assert.equal([r1, r2], [{ success: true }, { success: true }], lines.join('\n'));
  } finally {
    Object.assign(console, { log, warn, error });
  }
  const tuned = lines.filter((l) => l.startsWith('tuning stopped ')).map((l) => Number(/^tuning stopped \([a-z-]+\): (\d+) new trial/.exec(l)![1]));
  assert.is(tuned.length, 2, lines.join('\n'));
  assert.ok(tuned[0] > 0 && tuned[1] > 0, `both runs measured something: ${tuned.join(', ')}`);
  assert.ok(lines.some((l) => /^tensortune tune net: target cpu .*budget small with --trials-per-task 2 --seed 3,/.test(l)), lines.join('\n'));
});

test.run();
