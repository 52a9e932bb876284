// The whole tuning loop with the real parts (policy, cost model, measurer, records) on a
// small network, with a tiny budget: records that parse, a compile that applies them and
// runs, and a resume that measures nothing new.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { compileNetwork } from './compile';
import { UserError } from '../errors';
import { NetBuilder } from '../frontend/builder';
import { loadModel } from '../frontend/load';
import { extractTasks } from '../graph/extract';
import { HostRate } from '../measure/host-rate';
import { LocalMeasurer } from '../measure/measurer';
import { runBench } from '../native/bench';
import { readRecords } from '../records/log';
import { CONFIRM_POLICY, rankedByWorkload } from '../records/best';
import { hardwareFingerprint, parseTarget } from '../target';
import { DEFAULT_WARMUP_TRIALS } from '../search/task-scheduler';
import { tuneNetwork, tuneTasks } from './tune';
import type { TuneEvent } from '../search/types';

const dir = mkdtempSync(path.join(tmpdir(), 'tt-tune-test-'));
const records = path.join(dir, 'mobilenet.jsonl');
const model = { model: 'mobilenet', imageSize: 32 };
const target = 'llvm -mcpu=native';
const tasks = extractTasks(loadModel(model).graph);

const lines = (): string[] => readFileSync(records, 'utf8').split('\n').filter((l) => l !== '');

test('a tiny budget: the warm-up measures the first tasks; every outcome is one valid record line', async () => {
  const events: TuneEvent[] = [];
  const result = await tuneNetwork({ model, target, records, trials: 4, batchSize: 2, onEvent: (e) => events.push(e) });
  assert.is(result.trials, 4);
  assert.is(result.reason, 'budget');
  // 22 tasks, 4 trials: one per round, the warm-up goes through tasks 0..3
  assert.equal(events.filter((e) => e.type === 'round').map((e) => (e as { task: number }).task), [0, 1, 2, 3]);
  assert.equal(events[0].type, 'start');
  assert.equal(events[events.length - 1].type, 'done');
  const { entries, skipped } = await readRecords(records);
  assert.equal(skipped, []);
  assert.is(entries.length, 4);
  const fingerprint = hardwareFingerprint(parseTarget(target));
  entries.forEach(({ record }, i) => {
    assert.is(record.key, tasks[i].key);
    assert.is(record.desc, tasks[i].desc);
    assert.is(record.target, target);
    assert.is(record.fingerprint, fingerprint);
    assert.is(record.policy, 'default', 'a task\'s first batch starts with its default schedule');
  });
  assert.ok(result.tasks.slice(0, 4).every((t) => t.trials === 1));
});

test('resume: the same budget again measures nothing; a larger one continues the warm-up', async () => {
  const before = lines();
  const again = await tuneNetwork({ model, target, records, trials: 4, batchSize: 2 });
  assert.is(again.trials, 0);
  assert.is(again.reason, 'budget');
  assert.equal(lines(), before);

  const more = await tuneNetwork({ model, target, records, trials: 6, batchSize: 2 });
  assert.is(more.trials, 2);
  const { entries } = await readRecords(records);
  assert.equal(entries.slice(4).map((e) => e.record.key), [tasks[4].key, tasks[5].key]);
  const measured = new Set(entries.map((e) => JSON.stringify([e.record.key, e.record.steps])));
  assert.is(measured.size, entries.length, 'nothing is measured twice');
});

test('the warm-up measures DEFAULT_WARMUP_TRIALS candidates of a task, the rounds after it whole ones', async () => {
  const b = new NetBuilder({ batch: 1, layout: 'NHWC', imageSize: 6, seed: 0, randomStats: false, weights: 'random' });
  b.graph.outputs = [b.relu(b.conv2d(b.input(8), 'conv', { channels: 8, kernel: [3, 3], padding: [1, 1] }))];
  const [task] = extractTasks(b.graph);
  const events: TuneEvent[] = [];
  const batchSize = DEFAULT_WARMUP_TRIALS + 4;
  const result = await tuneTasks('conv', [task], {
    target, records: path.join(dir, 'warmup.jsonl'), trials: DEFAULT_WARMUP_TRIALS + batchSize, batchSize, policy: 'random', confirm: 0,
    onEvent: (e) => events.push(e),
  });
  assert.is(result.trials, DEFAULT_WARMUP_TRIALS + batchSize);
  assert.equal(events.filter((e) => e.type === 'round').map((e) => (e as { trials: number }).trials), [DEFAULT_WARMUP_TRIALS, batchSize]);
});

test('the policy fills the rest of each batch (its states with their genome); the default schedule is measured once', async () => {
  const b = new NetBuilder({ batch: 1, layout: 'NHWC', imageSize: 6, seed: 0, randomStats: false, weights: 'random' });
  b.graph.outputs = [b.relu(b.conv2d(b.input(8), 'conv', { channels: 8, kernel: [3, 3], padding: [1, 1] }))];
  const [task] = extractTasks(b.graph);
  const log = path.join(dir, 'conv.jsonl');
  const first = await tuneTasks('conv', [task], { target, records: log, trials: 6, batchSize: 3, confirm: 0 });
  assert.is(first.trials, 6);
  const { entries } = await readRecords(log);
  assert.equal(entries.map((e) => e.record.policy), ['default', 'evolutionary', 'evolutionary', 'evolutionary', 'evolutionary', 'evolutionary']);
  assert.ok(entries.every((e) => e.record.error === null), entries.map((e) => e.record.message ?? '').join('\n'));
  assert.equal(entries.map((e) => e.record.genome !== undefined), [false, true, true, true, true, true], 'searched states record their genome');
  const more = await tuneTasks('conv', [task], { target, records: log, trials: 9, batchSize: 3, policy: 'random', confirm: 0 });
  assert.is(more.trials, 3);
  const all = (await readRecords(log)).entries;
  assert.equal(all.slice(6).map((e) => e.record.policy), ['random', 'random', 'random']);
  assert.is(new Set(all.map((e) => JSON.stringify(e.record.steps))).size, 9, 'nothing measured twice, the default included');
});

test('the confirmation pass: the top schedules and the default timed twice more, in both orders, and compile picks among them by those timings; a run that measures nothing confirms nothing', async () => {
  const b = new NetBuilder({ batch: 1, layout: 'NHWC', imageSize: 6, seed: 1, randomStats: false, weights: 'random' });
  b.graph.outputs = [b.relu(b.conv2d(b.input(8), 'conv', { channels: 8, kernel: [3, 3], padding: [1, 1] }))];
  const [task] = extractTasks(b.graph);
  const log = path.join(dir, 'confirm.jsonl');
  const out: string[] = [];
  const run = await tuneTasks('conv', [task], { target, records: log, trials: 6, batchSize: 3, confirm: 2, log: (l) => out.push(l) });
  assert.is(run.trials, 6, 'the confirmation is not part of the budget');
  const entries = (await readRecords(log)).entries.map((e) => e.record);
  const searched = entries.slice(0, 6);
  const key = (r: { steps: unknown }): string => JSON.stringify(r.steps);
  const mean = (r: { costs_ms: number[] }): number => r.costs_ms.reduce((a, c) => a + c, 0) / r.costs_ms.length;
  // The two fastest of the run by mean (compile's ranking is the same while nothing is confirmed), then the default: forward, then reversed.
  const top = [...searched].sort((x, y) => mean(x) - mean(y)).slice(0, 2).map(key);
  const dflt = key(searched.find((r) => r.policy === 'default')!);
  const order = top.includes(dflt) ? top : [...top, dflt];
  assert.equal(entries.slice(6).map(key), [...order, ...[...order].reverse()]);
  assert.ok(entries.slice(6).every((r) => r.error === null && r.costs_ms.length > 0));
  assert.ok(entries.slice(6).every((r) => r.policy === CONFIRM_POLICY), 'confirmation records say so');
  assert.equal(new Set(entries.slice(6).map((r) => r.pass)).size, 1, 'and name their pass, one for both orders');
  assert.ok(!Number.isNaN(Date.parse(entries.slice(6)[0].pass ?? '')), 'the time it began');
  assert.equal(searched.map((r) => r.policy), ['default', 'evolutionary', 'evolutionary', 'evolutionary', 'evolutionary', 'evolutionary'], 'the first record keeps the proposer');
  // Compile picks among the confirmed schedules, by their confirmation timings.
  const [best] = rankedByWorkload((await readRecords(log)).entries, { target, fingerprint: searched[0].fingerprint }).get(task.key)!;
  assert.ok(best.confirmed && order.includes(key(best.entry.record)));
  const confirmations = entries.slice(6).filter((r) => key(r) === key(best.entry.record)).flatMap((r) => r.costs_ms);
  assert.is(best.cost, mean({ costs_ms: confirmations }));
  assert.ok(out.some((l) => l.startsWith(`confirmed: ${order.length} schedule(s) of 1 task(s) timed twice more`)), out.join('\n'));

  const again = await tuneTasks('conv', [task], { target, records: log, trials: 6, batchSize: 3, confirm: 2 });
  assert.is(again.trials, 0);
  assert.is((await readRecords(log)).entries.length, entries.length, 'nothing appended');

  // A larger budget later on the same log (Nx's `full` after `tiny`): the re-timings spent none of it.
  const larger = await tuneTasks('conv', [task], { target, records: log, trials: 9, batchSize: 3, confirm: 0 });
  assert.is(larger.trials, 3, 'six schedules measured so far, however often each was timed');
  const all = (await readRecords(log)).entries.map((e) => e.record);
  assert.is(new Set(all.map(key)).size, 9, 'three new schedules');
});

test('a finished tune whose records never measured the current default schedule (tuned by an older version) times it against the best, and measures no trial', async () => {
  const b = new NetBuilder({ batch: 1, layout: 'NHWC', imageSize: 6, seed: 2, randomStats: false, weights: 'random' });
  b.graph.outputs = [b.relu(b.conv2d(b.input(8), 'conv', { channels: 8, kernel: [3, 3], padding: [1, 1] }))];
  const [task] = extractTasks(b.graph);
  const log = path.join(dir, 'new-default.jsonl');
  await tuneTasks('conv', [task], { target, records: log, trials: 5, batchSize: 5, confirm: 0 });
  // The log as an older version would have left it: its default schedule was another one.
  const lines = readFileSync(log, 'utf8').split('\n').filter((l) => l !== '');
  const dflt = lines.findIndex((l) => JSON.parse(l).policy === 'default');
  const current = JSON.stringify(JSON.parse(lines[dflt]).steps);
  writeFileSync(log, lines.filter((_, i) => i !== dflt).join('\n') + '\n');
  const out: string[] = [];
  const again = await tuneTasks('conv', [task], { target, records: log, trials: 4, batchSize: 4, confirm: 1, log: (l) => out.push(l) });
  assert.is(again.trials, 0, 'the budget was spent: no trial');
  const added = (await readRecords(log)).entries.slice(4).map((e) => e.record);
  assert.ok(added.length > 0 && added.every((r) => r.policy === CONFIRM_POLICY), 'confirmation records only');
  assert.ok(added.some((r) => JSON.stringify(r.steps) === current), 'the current default among them');
  assert.ok(out.some((l) => /^confirmed: \d+ schedule\(s\) of 1 task\(s\).*1 of these task\(s\) because no record had measured their current default schedule/.test(l)), out.join('\n'));
  // Once timed, the default is in the records: the next run confirms nothing.
  const count = (await readRecords(log)).entries.length;
  await tuneTasks('conv', [task], { target, records: log, trials: 4, batchSize: 4, confirm: 1 });
  assert.is((await readRecords(log)).entries.length, count, 'nothing appended');
  // A default that failed when it was measured was measured: re-runs do not time it again and again.
  const failed = path.join(dir, 'failed-default.jsonl');
  writeFileSync(failed, lines.map((l, i) => (i === dflt ? JSON.stringify({ ...JSON.parse(l), costs_ms: [], error: 'timeout' }) : l)).join('\n') + '\n');
  await tuneTasks('conv', [task], { target, records: failed, trials: 4, batchSize: 4, confirm: 1 });
  assert.is((await readRecords(failed)).entries.length, lines.length, 'nothing appended');
});

test('the log: one line per round with the run\'s progress against its budget; the table once when the run ends after the warm-up', async () => {
  const b = new NetBuilder({ batch: 1, layout: 'NHWC', imageSize: 6, seed: 0, randomStats: false, weights: 'random' });
  b.graph.outputs = [b.relu(b.conv2d(b.input(4), 'conv', { channels: 4, kernel: [3, 3], padding: [1, 1] }))];
  const [task] = extractTasks(b.graph);
  const out: string[] = [];
  await tuneTasks('conv', [task], { target, records: path.join(dir, 'progress.jsonl'), trials: 3, batchSize: 3, log: (l) => out.push(l) });
  const rounds = out.filter((l) => l.startsWith('warm-up task 0'));
  assert.is(rounds.length, 1);
  assert.match(rounds[0], /; run: 3\/3 trials, 100%, \d+:\d\d elapsed, ETA 0:00$/);
  assert.is(out.filter((l) => l.includes('Task Description')).length, 1, out.join('\n'));
  assert.is(out.filter((l) => l.startsWith('Estimated total latency')).length, 1, out.join('\n'));
});

test('a tune says how many measurements were taken again because the machine ran off its usual speed; none, no line', async () => {
  const b = new NetBuilder({ batch: 1, layout: 'NHWC', imageSize: 6, seed: 0, randomStats: false, weights: 'random' });
  b.graph.outputs = [b.relu(b.conv2d(b.input(4), 'conv', { channels: 4, kernel: [3, 3], padding: [1, 1] }))];
  const [task] = extractTasks(b.graph);
  /** Judges the second candidate probed 1.6x off speed when `off`, every other on speed. */
  class Scripted extends HostRate {
    private seen = 0;
    constructor(private readonly off: boolean) {
      super();
    }

    override observe(): number {
      return ++this.seen === 2 && this.off ? 1.6 : 1;
    }
  }
  const parsed = parseTarget(target);
  for (const off of [true, false]) {
    const out: string[] = [];
    const device = {
      fingerprint: hardwareFingerprint(parsed),
      measurer: (t: typeof parsed, opts: object) => new LocalMeasurer(t, { ...opts, hostRate: new Scripted(off) }),
    };
    await tuneTasks('conv', [task], { target, records: path.join(dir, `host-${off}.jsonl`), trials: 3, batchSize: 3, confirm: 0, device, log: (l) => out.push(l) });
    const lines = out.filter((l) => l.startsWith('host speed:'));
    if (off) {
      assert.equal(lines, [
        'host speed: 1 measurement(s) taken again because this machine ran more than 30% off its usual speed around them ' +
        '(another process or a neighbour\'s hardware thread on the core, a clock change); 0 kept an off-speed time after 2 retakes',
      ], out.join('\n'));
    } else {
      assert.equal(lines, [], out.join('\n'));
    }
  }
});

test('records carry the thread count; a tune resumes only from its own, and says what it left out', async () => {
  const b = new NetBuilder({ batch: 1, layout: 'NHWC', imageSize: 6, seed: 0, randomStats: false, weights: 'random' });
  b.graph.outputs = [b.relu(b.conv2d(b.input(4), 'conv', { channels: 4, kernel: [3, 3], padding: [1, 1] }))];
  const [task] = extractTasks(b.graph);
  const log = path.join(dir, 'threads.jsonl');
  const tune = async (threads: number | undefined): Promise<{ trials: number; lines: string[] }> => {
    const out: string[] = [];
    const r = await tuneTasks('conv', [task], { target, records: log, trials: 2, batchSize: 2, confirm: 0, measure: threads ? { threads } : undefined, log: (l) => out.push(l) });
    return { trials: r.trials, lines: out };
  };
  const at2 = await tune(2);
  assert.is(at2.trials, 2);
  assert.equal((await readRecords(log)).entries.map((e) => e.record.threads), [2, 2]);
  assert.not.ok(at2.lines.some((l) => l.includes('left out')), at2.lines.join('\n'));
  const at1 = await tune(undefined);
  assert.is(at1.trials, 2, 'the 2-thread timings are not resumed from: the same budget is measured at 1 thread');
  assert.ok(at1.lines.includes('2 record(s) measured at 2 thread(s) left out: this run measures at 1, and timings at different thread counts do not compare (they stay in the log)'), at1.lines.join('\n'));
  assert.equal((await readRecords(log)).entries.map((e) => e.record.threads), [2, 2, 1, 1]);
  assert.is((await tune(1)).trials, 0, 'a 1-thread tune resumes from the 1-thread records');
  assert.is((await tune(2)).trials, 0, 'and a 2-thread one from the 2-thread records');
});

test('a batch that runs whole samples on each thread is timed and ranked at 1 thread: tune and compile at 2 threads agree', async () => {
  // mobilenet's batch of 2 runs a sample per thread at 2 threads (graph/per-sample.ts), each kernel on one.
  const spec = { model: 'mobilenet', batch: 2 };
  const log = path.join(dir, 'per-sample.jsonl');
  const said: string[] = [];
  const r = await tuneNetwork({ model: spec, target, records: log, trials: 1, batchSize: 1, confirm: 0, measure: { threads: 2 }, log: (l) => said.push(l) });
  assert.is(r.trials, 1);
  assert.ok(said.includes('mobilenet: at 2 threads each thread runs whole samples with one-thread kernels, so candidates are timed at 1 thread'), said.join('\n'));
  const { entries } = await readRecords(log);
  assert.equal(entries.map((e) => e.record.threads), [1]);
  const logged: string[] = [], warned: string[] = [];
  const compiled = await compileNetwork({ ...spec, target, outDir: path.join(dir, 'per-sample'), records: [log], threads: 2, log: (l) => logged.push(l), warn: (w) => warned.push(w) });
  assert.ok(logged.includes('records: ranked at 1 thread(s), as each of the 2 threads runs whole samples with one-thread kernels'), logged.join('\n'));
  assert.equal(compiled.kernels.filter((k) => k.schedule === 'tuned').map((k) => k.key), [entries[0].record.key]);
  assert.equal(warned, [], 'the 1-thread record is the count the kernels run at, not a fallback');
});

test('compile applies the tuned records and the model runs', async () => {
  const { entries } = await readRecords(records);
  const tuned = new Set(entries.filter((e) => e.record.error === null).map((e) => e.record.key));
  assert.ok(tuned.size > 0, 'at least one task got a valid program');
  const compiled = await compileNetwork({ ...model, target, outDir: path.join(dir, 'out'), records: [records] });
  for (const k of compiled.kernels) assert.is(k.schedule === 'tuned', tuned.has(k.key), `${k.desc}: ${k.schedule}`);
  const bench = await runBench({ model: compiled.library, params: compiled.params, repeat: 1 });
  assert.ok(bench.median_ms > 0);
});

test('bad options are UserErrors naming the option', async () => {
  const bad = async (opts: object, pattern: RegExp): Promise<void> => {
    try {
      await tuneNetwork({ model, target, records, ...opts });
      assert.unreachable('should have thrown');
    } catch (e) {
      assert.instance(e, UserError);
      assert.match((e as Error).message, pattern);
    }
  };
  await bad({ trials: 0 }, /trials must be an integer >= 1, got 0/);
  await bad({ batchSize: 1.5 }, /batchSize must be an integer >= 1/);
  await bad({ timeLimitS: -1 }, /timeLimitS must be a positive number/);
  await bad({ policy: 'annealing' }, /unknown policy 'annealing'/);
  await bad({ target: 'vulkan' }, /unsupported target kind 'vulkan'/);
});

test.after(() => rmSync(dir, { recursive: true, force: true }));

test.run();
