// `tensortune tune` as a user runs it: flag errors, a target whose every candidate fails,
// Ctrl-C, and SIGKILL then resume (the worker dies with the CLI, its temp folder is swept).

import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { childProcesses, eventually, processGone } from '../fs-faults.fixture';
import { spawnCli, type CliRun } from './spawn.fixture';
import { readRecords } from '../records/log';
import { OnnxModelBuilder } from '../frontend/onnx/model-builder';

const dir = mkdtempSync(path.join(tmpdir(), 'tt-cli-tune-'));
// The random policy: these tests are about the process, not the search, and it proposes fastest.
const SMALL = ['mobilenet', '--image-size', '32', '--target', 'llvm -mcpu=native', '--batch-size', '2', '--policy', 'random', '--json'];

type Run = CliRun & { rounds: () => number };

function start(...args: string[]): Run {
  return startWith({}, ...args);
}

function startWith(env: NodeJS.ProcessEnv, ...args: string[]): Run {
  const run = spawnCli(['tune', ...args], { CI: '', ...env });
  return { ...run, rounds: () => run.out().split('\n').filter((l) => l.includes('"type":"round"')).length };
}

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1200 && !cond(); i++) await new Promise((r) => setTimeout(r, 50));
  assert.ok(cond(), `timed out waiting for ${what}`);
}

const roundTrials = (out: string): number => out.split('\n').filter((l) => l.includes('"type":"round"'))
  .reduce((a, l) => a + (JSON.parse(l) as { trials: number }).trials, 0);

test('flag mistakes: one line naming the flag, exit 2', async () => {
  const cases: [string[], RegExp][] = [
    [['mobilenet'], /--records FILE is required/],
    [['mobilenet', '--records', 'x.jsonl', '--trials', '0'], /bad --trials '0' \(expected a positive integer\)/],
    [['mobilenet', '--records', 'x.jsonl', '--policy', 'annealing'], /bad --policy 'annealing' \(expected one of: evolutionary, ga, random, grid\)/],
    [['mobilenet', '--records', 'x.jsonl', '--time-limit', 'soon'], /bad --time-limit 'soon' \(expected a positive number\)/],
    [['mobilenet', '--records', 'x.jsonl', '--target', 'llvm -mfoo=1'], /--target: unknown option '-mfoo=1'/],
    [['no-such-net', '--records', 'x.jsonl'], /no-such-net/],
    [['mobilenet', '--records', 'x.jsonl', '--network-pass', '--workload', 'abc'], /--network-pass cannot be combined with --workload \(it times the whole network\)/],
    [['mobilenet', '--records', 'x.jsonl', '--network-pass', '--runner', 'ssh board {command}'], /--network-pass cannot be combined with --runner/],
    [['mobilenet', '--records', 'x.jsonl', '--network-pass', '--target', 'cuda -arch=sm_80'], /--network-pass cannot be combined with a GPU target \("cuda -arch=sm_80"/],
    [['mobilenet', '--records', 'x.jsonl', '--network-pass', '--confirm', '0'], /--network-pass .* cannot be combined with --confirm 0/],
  ];
  for (const [args, pattern] of cases) {
    const r = await start(...args).done;
    assert.is(r.code, 2, `${args.join(' ')}: ${r.err}`);
    assert.match(r.err, pattern);
    assert.not.match(r.err, /\n\s+at /, 'no stack trace');
  }
});

test('a target the compiler rejects: stops after the first batches with the class and one compiler line, exit 2, nothing logged', async () => {
  const records = path.join(dir, 'bad-cpu.jsonl');
  const r = await start('mobilenet', '--image-size', '32', '--target', 'llvm -mcpu=nonexistent-cpu', '--batch-size', '2', '--policy', 'random',
    '--records', records, '--trials', '200').done;
  assert.is(r.code, 2, r.err);
  const lines = r.err.trim().split('\n');
  assert.is(lines.length, 1, r.err);
  assert.match(lines[0], new RegExp(
    '^tensortune tune: stopped: all 4 candidates of the first 2 batches failed with compile_error and none succeeded on target ' +
    `"llvm -mcpu=nonexistent-cpu" \\(nothing was written to ${records.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\); first message: .*error.*nonexistent-cpu`));
  assert.not.ok(existsSync(records), 'no error records in the shared log');
});

test('Ctrl-C: the batch in flight is finished and logged, exit 130, log intact and unlocked', async () => {
  const records = path.join(dir, 'sigint.jsonl');
  const run = start(...SMALL, '--records', records, '--trials', '200');
  await until(() => run.rounds() >= 1, 'a first round');
  run.child.kill('SIGINT');
  const r = await run.done;
  assert.is(r.code, 130, r.err);
  assert.match(r.err, 'stopping after the batch being measured');
  const done = JSON.parse(r.out.trim().split('\n').pop()!) as { type: string; reason: string };
  assert.equal([done.type, done.reason], ['done', 'aborted']);
  const { entries, skipped } = await readRecords(records);
  assert.equal(skipped, []);
  assert.is(entries.length, roundTrials(r.out));
  assert.not.ok(existsSync(`${records}.lock`));
});

test('SIGKILL mid-run loses at most the batch in flight and leaves no worker; re-running resumes to the same budget and sweeps the temp folder', async () => {
  const records = path.join(dir, 'sigkill.jsonl');
  const tmp = path.join(dir, 'tmp');
  mkdirSync(tmp);
  const run = startWith({ TMPDIR: tmp }, ...SMALL, '--records', records, '--trials', '12');
  await until(() => run.rounds() >= 2, 'two rounds');
  const cli = run.child.pid!;
  const workers = process.platform === 'linux' ? childProcesses(cli).filter((p) => p.comm === 'tt_measure') : [];
  if (process.platform === 'linux') assert.is(workers.length, 1, 'the measurement worker runs');
  run.child.kill('SIGKILL');
  const killed = await run.done;
  assert.is(killed.signal, 'SIGKILL');
  for (const w of workers) assert.ok(await eventually(() => processGone(w.pid)), `tt_measure ${w.pid} died with the CLI`);
  const owned = readdirSync(tmp).filter((n) => n.startsWith(`tt-measure-${cli}-`));
  assert.is(owned.length, 1, 'the killed run left its temp folder');
  const logged = roundTrials(killed.out);
  const warnings: string[] = [];
  const first = await readRecords(records, { warn: (m) => warnings.push(m) });
  // every reported round was on disk before it was reported; only the batch in flight may be
  // missing (12 trials over 22 tasks: rounds of one candidate, TVM's min(batch, trials // tasks))
  assert.ok(first.entries.length >= logged && first.entries.length <= logged + 1, `${first.entries.length} records, ${logged} reported`);
  assert.ok(first.skipped.length <= 1);

  const again = await startWith({ TMPDIR: tmp }, ...SMALL, '--records', records, '--trials', '12').done;
  assert.is(again.code, 0, again.err);
  assert.equal(readdirSync(tmp).filter((n) => n.startsWith('tt-')), [], 'the next run removed it (and its own)');
  const second = await readRecords(records, { warn: () => undefined });
  assert.is(second.entries.length, 12, 'resumed to exactly the budget');
  const start0 = JSON.parse(again.out.split('\n')[0]) as { type: string; tasks: { measured: number }[] };
  assert.is(start0.tasks.reduce((a, t) => a + t.measured, 0), first.entries.length);
  assert.ok(readFileSync(records, 'utf8').endsWith('\n'));
});

test('--workload: tunes the named tasks only (by key or by hash); a name no task has is refused in one line', async () => {
  const records = path.join(dir, 'workloads.jsonl');
  const tasks = JSON.parse((await spawnCli(['tasks', 'mobilenet', '--image-size', '32', '--json']).done).out) as { tasks: { key: string }[] };
  const hashOf = (key: string): string => (JSON.parse(key) as string[])[0];
  // b: a task whose hash no other task has (tasks of one DAG with other shapes share it).
  const b = tasks.tasks.map((t) => t.key).find((k) => tasks.tasks.filter((t) => hashOf(t.key) === hashOf(k)).length === 1)!;
  const a = tasks.tasks.find((t) => t.key !== b)!.key;
  const hashOfB = hashOf(b);
  const r = await start(...SMALL, '--records', records, '--trials-per-task', '1', '--workload', a, '--workload', hashOfB).done;
  assert.is(r.code, 0, r.err);
  const start0 = JSON.parse(r.out.split('\n')[0]) as { type: string; tasks: { key: string }[] };
  assert.equal(start0.tasks.map((t) => t.key).sort(), [a, b].sort(), 'the scheduler sees these two tasks');
  const logged = new Set((await readRecords(records)).entries.map((e) => e.record.key));
  assert.equal([...logged].sort(), [a, b].sort());
  const bad = await start(...SMALL, '--records', records, '--workload', 'feedface').done;
  assert.is(bad.code, 2);
  assert.match(bad.err, /--workload feedface: no task of mobilenet has this workload key or hash \(\d+ tasks; `tensortune tasks mobilenet --json` lists their keys/);
  assert.is(bad.err.trim().split('\n').length, 1, bad.err);
});

test('a model with nothing to tune (a lone Relu): one line saying so, exit 0, an empty log that compile --records reads', async () => {
  const model = path.join(dir, 'relu.onnx');
  writeFileSync(model, new OnnxModelBuilder(13).input('x', [2, 3]).output('y').node('Relu', ['x'], ['y']).build());
  const records = path.join(dir, 'relu', 'records.jsonl');
  for (const env of [{}, { CI: '1' }]) {
    const r = await startWith(env, model, '--records', records, '--trials', '10').done;
    assert.is(r.code, 0, r.err);
    assert.is(r.out, `${model}: nothing to tune: no task with a reduction (conv, dense, matmul, pooling, ...); compile gives its kernels their default schedules\n`);
    assert.is(r.err, '');
    assert.is(readFileSync(records, 'utf8'), '');
  }
  const json = await startWith({}, model, '--records', records, '--json').done;
  assert.equal(json.out.trim().split('\n').map((l) => (JSON.parse(l) as { type: string }).type), ['start', 'done']);
  const compiled = await spawnCli(['compile', model, '--records', records, '--out', path.join(dir, 'relu', 'model')]).done;
  assert.is(compiled.code, 0, compiled.err);
  assert.match(compiled.out, /compiled \d+ kernel\(s\), reused \d+/);
});

test.after(() => rmSync(dir, { recursive: true, force: true }));

test.run();
