// The record log: schema round trip, broken lines, concurrent appenders, best and distill.

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, promises as fs, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { UserError } from '../errors';
import { bestRecords, CONFIRM_POLICY, matchesRecord, meanCost, rankedByWorkload, recordGroup } from './best';
import { distill, distillFiles } from './distill';
import { appendRecords, readRecords, withFileLock } from './log';
import { makeRecord } from './make';
import { openLog } from './open';
import { RECORD_FORMAT_VERSION, type TuningRecord } from './record';
import { checkRecord } from './schema';

const work = mkdtempSync(path.join(tmpdir(), 'tt-records-test-'));
const KEY_A = '["0123456789abcdef0123456789abcdef", [1, 8, 8, 4], [3, 3, 4, 4], [1, 8, 8, 4]]';
const KEY_B = '["fedcba9876543210fedcba9876543210", [1, 16], [1, 16]]';

const OTHER_STEPS: TuningRecord['steps'] = [{ s: 'split', stage: 'conv2d_nhwc', iter: 'ff', lengths: [2] }];
const THIRD_STEPS: TuningRecord['steps'] = [{ s: 'split', stage: 'conv2d_nhwc', iter: 'ff', lengths: [1] }];

function rec(over: Partial<TuningRecord> = {}): TuningRecord {
  return {
    v: RECORD_FORMAT_VERSION, engine: '0.1.0', key: KEY_A, desc: 'conv2d_nhwc 1x8x8x4 -> 1x8x8x4', target: 'llvm -mcpu=native',
    fingerprint: '0123456789abcdef',
    steps: [{ s: 'split', stage: 'conv2d_nhwc', iter: 'ff', lengths: [4] }, { s: 'annotate', stage: 'conv2d_nhwc', iter: 'ff.1', ann: 'vectorize' }],
    costs_ms: [1.5, 1.25], error: null, seed: 7, time: '2024-05-01T10:00:00.000Z', policy: 'evolutionary', ...over,
  };
}

const file = (name: string): string => path.join(work, name);

test('a record round-trips through the log and matches the schema', async () => {
  const f = file('roundtrip.jsonl');
  const records = [rec(), rec({ costs_ms: [], error: 'timeout', message: 'did not finish within 10 ms' })];
  await appendRecords(f, records);
  const { entries, skipped } = await readRecords(f);
  assert.equal(skipped, []);
  assert.equal(entries.map((e) => e.record), records);
  assert.equal(entries.map((e) => e.line), [1, 2]);
  const text = await fs.readFile(f, 'utf8');
  assert.is(text.split('\n').length, 3, 'one line per record');
});

test('the schema rejects malformed records, and names the field', () => {
  const bad: [unknown, RegExp][] = [
    [{ ...rec(), key: 'conv' }, /record\/key must match pattern/],
    [{ ...rec(), steps: [{ s: 'split', stage: 'conv"); system("rm', iter: 'ff', lengths: [4] }] }, /record\/steps\/0\/stage must match pattern/],
    [{ ...rec(), steps: [{ s: 'split', stage: 'c', iter: 'ff', lengths: [0] }] }, /lengths\/0 must be >= 1/],
    [{ ...rec(), error: 'oops' }, /record\/error must be equal to one of/],
    [{ ...rec(), costs_ms: [] }, /costs_ms must NOT have fewer than 1 items/],
    [{ ...rec(), error: 'timeout' }, /costs_ms must NOT have more than 0 items/],
    [{ ...rec(), extra: 1 }, /additional properties 'extra'/],
    [{ ...rec(), v: RECORD_FORMAT_VERSION + 1 }, /newer than this tensortune reads/],
    [{ ...rec(), time: 'yesterday' }, /record\/time must match pattern/],
    [{ ...rec(), threads: 0 }, /record\/threads must be >= 1/],
    [{ ...rec(), threads: 1.5 }, /record\/threads must be integer/],
  ];
  for (const [value, re] of bad) {
    const check = checkRecord(value);
    assert.not.ok(check.ok, JSON.stringify(value));
    if (!check.ok) assert.match(check.message, re);
  }
  assert.ok(checkRecord(rec()).ok);
});

test('broken lines are skipped with ONE warning naming the file and the lines', async () => {
  const f = file('broken.jsonl');
  const good = JSON.stringify(rec());
  await fs.writeFile(f, [good, '{"v":1,"key":', '# a comment', '', JSON.stringify({ ...rec(), error: 'nope' }), good, '{"trunc'].join('\n'));
  const warnings: string[] = [];
  const { entries, skipped } = await readRecords(f, { warn: (m) => warnings.push(m) });
  assert.is(entries.length, 2);
  assert.equal(entries.map((e) => e.line), [1, 6]);
  assert.equal(skipped, [2, 5, 7]);
  assert.is(warnings.length, 1);
  assert.ok(warnings[0].includes(f) && warnings[0].includes('line 2, 5, 7'), warnings[0]);
});

test('a missing log is a UserError naming it, or empty when resuming', async () => {
  const f = file('nope.jsonl');
  try {
    await readRecords(f);
    assert.unreachable();
  } catch (e) {
    assert.instance(e, UserError);
    assert.match((e as Error).message, /records file .*nope\.jsonl does not exist/);
  }
  assert.equal((await readRecords(f, { missingOk: true })).entries, []);
});

test('a line torn by a killed writer stays one broken line; the next append starts a new line', async () => {
  const f = file('torn.jsonl');
  await fs.writeFile(f, JSON.stringify(rec()) + '\n' + JSON.stringify(rec()).slice(0, 40));
  await appendRecords(f, [rec({ seed: 99 })]);
  const warnings: string[] = [];
  const { entries, skipped } = await readRecords(f, { warn: (m) => warnings.push(m) });
  assert.equal(entries.map((e) => e.record.seed), [7, 99]);
  assert.equal(skipped, [2]);
  assert.is(warnings.length, 1);
});

test('appendRecords refuses an invalid record instead of writing it', async () => {
  const f = file('refuse.jsonl');
  try {
    await appendRecords(f, [rec({ key: 'bad' })]);
    assert.unreachable();
  } catch (e) {
    assert.match((e as Error).message, /record 0 is invalid: record\/key/);
  }
  assert.equal((await readRecords(f, { missingOk: true })).entries, []);
});

function runChild(f: string, tag: string, count: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'append-child.fixture.ts'), f, tag, String(count)], { stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('error', reject);
    child.on('close', (code) => resolve(code ?? -1));
  });
}

test('two processes appending to one log concurrently lose nothing', async () => {
  const f = file('concurrent.jsonl');
  const count = 60;
  const codes = await Promise.all([runChild(f, 'first', count), runChild(f, 'second', count)]);
  assert.equal(codes, [0, 0]);
  const warnings: string[] = [];
  const { entries, skipped } = await readRecords(f, { warn: (m) => warnings.push(m) });
  assert.equal(skipped, []);
  assert.equal(warnings, []);
  for (const tag of ['first', 'second']) {
    const seeds = entries.filter((e) => e.record.desc.startsWith(`${tag} `)).map((e) => e.record.seed);
    assert.equal(seeds, Array.from({ length: count }, (_, i) => i), tag);
  }
  assert.not.ok(existsSync(`${f}.lock`), 'lock left behind');
});

test('a lock left by a dead process is broken; a live one is waited for', async () => {
  const f = file('stale.jsonl');
  // A pid that is not running: a child that has exited.
  const child = spawn(process.execPath, ['-e', '0']);
  const deadPid = await new Promise<number>((resolve) => child.on('close', () => resolve(child.pid!)));
  await fs.writeFile(`${f}.lock`, JSON.stringify({ pid: deadPid, host: hostname(), time: Date.now(), token: 'x' }));
  await appendRecords(f, [rec()]);
  assert.is((await readRecords(f)).entries.length, 1);

  // A lock held by a live process (this one, under another token) is waited for.
  await fs.writeFile(`${f}.lock`, JSON.stringify({ pid: process.pid, host: hostname(), time: Date.now(), token: 'other' }));
  const waiting = appendRecords(f, [rec({ seed: 2 })]);
  await new Promise((r) => setTimeout(r, 150));
  assert.is((await readRecords(f)).entries.length, 1, 'nothing written while the lock is held');
  await fs.rm(`${f}.lock`);
  await waiting;
  assert.equal((await readRecords(f)).entries.map((e) => e.record.seed), [7, 2]);

  const order: string[] = [];
  const first = withFileLock(f, async () => { order.push('a start'); await new Promise((r) => setTimeout(r, 30)); order.push('a end'); });
  const second = withFileLock(f, async () => { order.push('b'); });
  await Promise.all([first, second]);
  assert.equal(order, ['a start', 'a end', 'b']);
});

test('best keeps the fastest valid record per (key, target, fingerprint); distill writes them', async () => {
  const records = [
    rec({ costs_ms: [3] }),
    rec({ costs_ms: [1, 3], steps: OTHER_STEPS }), // mean 2: best of A on this machine
    rec({ costs_ms: [], error: 'wrong_answer' }),
    rec({ costs_ms: [0.5], fingerprint: 'ffffffffffffffff' }), // another machine
    rec({ key: KEY_B, costs_ms: [4] }),
    rec({ key: KEY_B, costs_ms: [5], target: 'llvm -mcpu=znver4' }),
    rec({ key: KEY_B, costs_ms: [], error: 'runtime_error' }),
  ];
  const best = distill(records);
  assert.equal(best, [records[1], records[3], records[4], records[5]]);
  assert.is(meanCost(records[1]), 2);
  const ranked = rankedByWorkload(records.map((record, i) => ({ record, file: 'x', line: i + 1 })), { target: 'llvm -mcpu=native', fingerprint: '0123456789abcdef' });
  assert.equal(ranked.get(KEY_A)!.map((s) => s.entry.line), [2, 1]);
  assert.equal(ranked.get(KEY_B)!.map((s) => s.entry.line), [5]);
  assert.is(bestRecords(records.map((record) => ({ record }))).size, 4);

  const input = file('big.jsonl');
  const out = file('big.best.jsonl');
  await appendRecords(input, records);
  const result = await distillFiles([input], out);
  assert.equal({ read: result.read, kept: result.kept }, { read: 7, kept: 4 });
  assert.equal((await readRecords(out)).entries.map((e) => e.record), best);
  // Distilling again into the same output changes nothing; a better record replaces one.
  await appendRecords(input, [rec({ costs_ms: [0.25], steps: [{ s: 'split', stage: 'conv2d_nhwc', iter: 'ff', lengths: [8] }] })]);
  const again = await distillFiles([input], out);
  assert.is(again.kept, 4);
  assert.equal((await readRecords(out)).entries[0].record.costs_ms, [0.25]);
});

test('records of the same steps are one schedule: it ranks by the mean of all their timings, and stands for its latest record', () => {
  const lucky = rec({ costs_ms: [1], steps: OTHER_STEPS, time: '2024-05-01T10:00:00.000Z' });
  const steady = rec({ costs_ms: [2, 2] });
  const again = rec({ costs_ms: [5, 5], steps: OTHER_STEPS, time: '2024-05-01T11:00:00.000Z' }); // the lucky one timed again
  const entries = [lucky, steady, again].map((record) => ({ record }));
  const at = (list: readonly { record: TuningRecord }[]) => rankedByWorkload(list.map((e, i) => ({ ...e, file: 'x', line: i + 1 })), { target: 'llvm -mcpu=native', fingerprint: '0123456789abcdef' }).get(KEY_A)!;
  assert.equal(at(entries.slice(0, 2)).map((s) => s.entry.line), [1, 2], 'one timing each: the lucky one first');
  const ranked = at(entries);
  assert.equal(ranked.map((s) => s.entry.line), [2, 3], 'timed again, the lucky one falls behind; one entry per schedule');
  assert.equal(ranked.map((s) => s.cost), [2, 11 / 3], 'the mean of every timing of the schedule');
  assert.is(ranked[1].entry.record, again, 'a real record (its latest), never a merged one');
  assert.equal(distill([lucky, steady, again]), [steady]);
  assert.equal(distill([lucky, again, steady]), [steady], 'order does not matter');
});

test('confirmed schedules rank first, by their confirmation timings only: drift between the search and the pass does not pick an unconfirmed lucky one', () => {
  const at = (list: readonly TuningRecord[]) => rankedByWorkload(list.map((record, i) => ({ record, file: 'x', line: i + 1 })), { target: 'llvm -mcpu=native', fingerprint: '0123456789abcdef' }).get(KEY_A)!;
  // During the search (a fast phase): A 1.5, B 1.4, C 1.3 (never re-timed). The pass (a slow phase) times A and B: 2.0 and 2.4.
  const a = rec({ costs_ms: [1.5] }), b = rec({ costs_ms: [1.4], steps: OTHER_STEPS }), c = rec({ costs_ms: [1.3], steps: THIRD_STEPS });
  const passA = rec({ costs_ms: [2, 2], policy: CONFIRM_POLICY }), passB = rec({ costs_ms: [2.4, 2.4], steps: OTHER_STEPS, policy: CONFIRM_POLICY });
  assert.equal(at([a, b, c]).map((s) => s.entry.record.costs_ms[0]), [1.3, 1.4, 1.5], 'nothing confirmed: by the mean of all timings');
  const ranked = at([a, b, c, passA, passB]);
  assert.equal(ranked.map((s) => s.entry.record.steps), [a.steps, OTHER_STEPS, THIRD_STEPS], 'A beat B in the pass; C was not timed by it');
  assert.equal(ranked.map((s) => [s.confirmed, s.cost]), [[true, 2], [true, 2.4], [false, 1.3]]);
  assert.equal(ranked.map((s) => s.mean.toFixed(4)), ['1.8333', '2.0667', '1.3000'], 'the mean of all timings, kept beside');
  assert.is(bestRecords([a, b, c, passA, passB].map((record) => ({ record }))).get(recordGroup(a))!.record, passA, 'its latest record, a real line');
});

test('the latest confirmation pass decides: a schedule an earlier pass timed in a fast phase does not beat the ones re-timed in a slow phase', () => {
  const FOURTH: TuningRecord['steps'] = [{ s: 'split', stage: 'conv2d_nhwc', iter: 'ff', lengths: [4] }];
  const NEW_DEFAULT: TuningRecord['steps'] = [{ s: 'split', stage: 'conv2d_nhwc', iter: 'ff', lengths: [8] }];
  const at = (list: readonly TuningRecord[]) => rankedByWorkload(list.map((record, i) => ({ record, file: 'x', line: i + 1 })), { target: 'llvm -mcpu=native', fingerprint: '0123456789abcdef' }).get(KEY_A)!;
  const confirm = (steps: TuningRecord['steps'], cost: number, time: string, pass?: string): TuningRecord =>
    rec({ steps, costs_ms: [cost, cost], policy: CONFIRM_POLICY, time, ...(pass ? { pass } : {}) });
  // Pass 1 (a fast phase) times A, B, C and the old default D (4th). Hours later, with the top 3 of
  // that ranking, pass 2 (a slow phase, everything 40% slower) times A, B, C and the new default E.
  for (const ids of [['p1', 'p2'], [undefined, undefined]]) {
    const t1 = '2026-11-28T21:00:14.000Z', t1b = '2026-11-28T21:00:15.000Z', t2 = '2026-11-29T00:39:11.000Z';
    const pass1 = [[rec().steps, 1.0], [OTHER_STEPS, 1.05], [THIRD_STEPS, 1.1], [FOURTH, 1.13]].flatMap(([s, c]) =>
      [confirm(s as TuningRecord['steps'], c as number, t1, ids[0]), confirm(s as TuningRecord['steps'], c as number, t1b, ids[0])]);
    const pass2 = [[rec().steps, 1.4], [OTHER_STEPS, 1.47], [THIRD_STEPS, 1.54], [NEW_DEFAULT, 1.3]].map(([s, c]) => confirm(s as TuningRecord['steps'], c as number, t2, ids[1]));
    const trial = rec({ steps: THIRD_STEPS.map((x) => ({ ...x, lengths: [16] })), costs_ms: [0.9] }); // never confirmed
    const records = [...pass1, trial, ...pass2];
    const ranked = at(records);
    const what = ids[0] ? 'passes named by their records' : 'legacy records, passes told apart by time';
    assert.equal(ranked.map((s) => s.entry.record.steps), [NEW_DEFAULT, rec().steps, OTHER_STEPS, THIRD_STEPS, FOURTH, trial.steps], what);
    assert.equal(ranked.map((s) => +s.cost.toFixed(3)), [1.3, 1.4, 1.47, 1.54, 1.13, 0.9], `${what}: pass 2's timings, then pass 1's, then the trial's`);
    assert.equal(ranked.map((s) => s.confirmed), [true, true, true, true, true, false]);
    assert.equal(at([...records].reverse()).map((s) => s.entry.record.steps), ranked.map((s) => s.entry.record.steps), `${what}: by time, not by place in the log`);
  }
  // One pass's two batches are seconds apart; the legacy grouping keeps them together.
  const one = [confirm(OTHER_STEPS, 2, '2026-11-28T21:00:14.000Z'), confirm(rec().steps, 3, '2026-11-28T21:00:14.000Z'),
    confirm(rec().steps, 1, '2026-11-28T21:00:40.000Z'), confirm(OTHER_STEPS, 1, '2026-11-28T21:00:40.000Z')];
  assert.equal(at(one).map((s) => s.cost), [1.5, 2], 'both batches of one legacy pass count');
  const made = makeRecord({ steps: OTHER_STEPS, costs_ms: [1], error: null, build_ms: 1, run_ms: 1 },
    { task: { key: KEY_A, desc: 'conv' }, target: 'llvm -mcpu=native', fingerprint: '0123456789abcdef', seed: 0, policy: CONFIRM_POLICY, pass: '2026-11-29T00:39:11.000Z' });
  assert.is(made.pass, '2026-11-29T00:39:11.000Z');
  assert.ok(checkRecord(made).ok, 'a record may name its pass');
  assert.not.ok(checkRecord({ ...made, pass: 'two words' }).ok, 'a pass is a plain id');
});

test('openLog groups this machine\'s measurements by workload key', async () => {
  const f = file('resume.jsonl');
  await appendRecords(f, [rec({ costs_ms: [2, 4] }), rec({ costs_ms: [], error: 'timeout', steps: OTHER_STEPS }), rec({ fingerprint: 'ffffffffffffffff' }), rec({ key: KEY_B })]);
  const opened = await openLog(f, { target: 'llvm -mcpu=native', fingerprint: '0123456789abcdef' });
  assert.is(opened.entries.length, 4);
  assert.equal(opened.measured.get(KEY_A)!.map((m) => m.cost_ms), [3, null]);
  assert.is(opened.measured.get(KEY_B)!.length, 1);
  assert.is((await openLog(file('fresh.jsonl'), { target: 't', fingerprint: 'f' })).measured.size, 0);
});

test('a thread count in the match takes records of that count and records that do not say; without one, all', async () => {
  const m = { target: 'llvm -mcpu=native', fingerprint: '0123456789abcdef' };
  assert.ok(matchesRecord(rec({ threads: 2 }), { ...m, threads: 2 }));
  assert.not.ok(matchesRecord(rec({ threads: 2 }), { ...m, threads: 1 }));
  assert.ok(matchesRecord(rec(), { ...m, threads: 1 }), 'a record written before records carried threads');
  assert.ok(matchesRecord(rec({ threads: 2 }), m), 'no thread count asked (compile, GPU targets)');
  assert.not.ok(matchesRecord(rec({ threads: 1, fingerprint: 'ffffffffffffffff' }), { ...m, threads: 1 }));
  const f = file('threads.jsonl');
  // The 2-thread timings are faster: mixed in, they would win the ranking and the resume's costs.
  await appendRecords(f, [rec({ costs_ms: [4], threads: 1 }), rec({ costs_ms: [1], threads: 2, steps: OTHER_STEPS }), rec({ costs_ms: [5], steps: THIRD_STEPS })]);
  const opened = await openLog(f, { ...m, threads: 1 });
  assert.equal(opened.entries.length, 3, 'the log keeps every record');
  assert.equal(opened.measured.get(KEY_A)!.map((s) => s.cost_ms), [4, 5], 'resume leaves out the 2-thread record');
  const ranked = (threads?: number) => rankedByWorkload(opened.entries, { ...m, threads }).get(KEY_A)!.map((s) => s.cost);
  assert.equal(ranked(1), [4, 5]);
  assert.equal(ranked(2), [1, 5]);
  assert.equal(ranked(), [4, 5, 1], 'without a count: each count ranked alone, the newest count first (of equal times, the first in the log)');
});

test('timings at two thread counts never blend: the same steps at 1 and 2 threads rank as two entries, and distill keeps the best of each count', async () => {
  const m = { target: 'llvm -mcpu=native', fingerprint: '0123456789abcdef' };
  const one = rec({ costs_ms: [4], threads: 1 }), two = rec({ costs_ms: [2], threads: 2 }), other = rec({ costs_ms: [3], threads: 1, steps: OTHER_STEPS });
  const entries = [one, two, other].map((record, i) => ({ record, file: 'x', line: i + 1 }));
  // One schedule with a mean of 3 over both counts would tie with OTHER_STEPS.
  assert.equal(rankedByWorkload(entries, m).get(KEY_A)!.map((s) => [s.entry.line, s.cost]), [[3, 3], [1, 4], [2, 2]], 'at any count: 1 thread\'s list, then 2 threads\'');
  assert.equal(rankedByWorkload(entries, { ...m, threads: 1 }).get(KEY_A)!.map((s) => [s.entry.line, s.cost]), [[3, 3], [1, 4]], 'at 1 thread');
  assert.is.not(recordGroup(one), recordGroup(two));
  assert.is(bestRecords(entries).size, 2);
  assert.equal(distill([one, two, other]), [other, two], 'the 2-thread best is not lost to a faster-looking 1-thread one');
  const f = file('distill-threads.jsonl');
  await appendRecords(f, [one, two, other]);
  const result = await distillFiles([f], file('distill-threads.best.jsonl'));
  assert.equal(result.kept, 2);
});

test('records that do not say their count rank with every count of their workload: a log tuned before and after records said so ranks as one', async () => {
  const m = { target: 'llvm -mcpu=native', fingerprint: '0123456789abcdef' };
  // An old confirmation pass (no thread count) caught a fast phase; the newest pass, at 1 thread, re-timed both schedules.
  const old = [rec({ costs_ms: [1], policy: CONFIRM_POLICY, time: '2024-05-01T10:00:00.000Z' }), rec({ costs_ms: [3], steps: OTHER_STEPS, policy: CONFIRM_POLICY, time: '2024-05-01T10:00:00.000Z' })];
  const newest = [rec({ costs_ms: [2], threads: 1, policy: CONFIRM_POLICY, time: '2024-05-01T11:00:00.000Z' }), rec({ costs_ms: [1.5], steps: OTHER_STEPS, threads: 1, policy: CONFIRM_POLICY, time: '2024-05-01T11:00:00.000Z' })];
  const entries = [...old, ...newest].map((record, i) => ({ record, file: 'x', line: i + 1 }));
  for (const threads of [undefined, 1]) {
    assert.equal(rankedByWorkload(entries, { ...m, threads }).get(KEY_A)!.map((s) => s.cost), [1.5, 2], `the newest pass decides (threads ${threads})`);
  }
  assert.equal(distill([...old, ...newest]), [newest[1]], 'one group: the newest pass\'s best');
  // A second count, tuned later: the unsaid records rank with each count; at any count, the newest count's list comes first, each entry once.
  const two = rec({ costs_ms: [0.5], steps: THIRD_STEPS, threads: 2, time: '2024-05-01T12:00:00.000Z' });
  const withTwo = [...entries, { record: two, file: 'x', line: 5 }];
  assert.equal(rankedByWorkload(withTwo, m).get(KEY_A)!.map((s) => s.entry.line), [1, 2, 5, 4, 3], 'at 2 threads: the old pass, then the 2-thread trial; then the 1-thread list');
  assert.equal(rankedByWorkload(withTwo, { ...m, threads: 1 }).get(KEY_A)!.map((s) => s.entry.line), [4, 3]);
  assert.equal(distill([...old, ...newest, two]), [newest[1], old[0]], 'at 2 threads the old pass (it does not say its count) still ranks its schedules first');
});

test('openLog counts a schedule timed again as one measured state, with the mean of its valid timings', async () => {
  const f = file('resume-again.jsonl');
  // The default measured by two tune runs, one of them failing; another schedule; then both re-timed by a confirmation pass.
  await appendRecords(f, [
    rec({ costs_ms: [2, 4] }), rec({ costs_ms: [1], steps: OTHER_STEPS }), rec({ costs_ms: [], error: 'timeout' }),
    rec({ costs_ms: [6] }), rec({ costs_ms: [3, 5], steps: OTHER_STEPS }),
  ]);
  const states = (await openLog(f, { target: 'llvm -mcpu=native', fingerprint: '0123456789abcdef' })).measured.get(KEY_A)!;
  assert.equal(states.map((m) => m.steps), [rec().steps, OTHER_STEPS], 'one state per schedule, in order of its first record');
  assert.equal(states.map((m) => m.cost_ms), [4, 3], 'the mean of every valid timing; the failed run adds none');
  await appendRecords(f, [rec({ costs_ms: [], error: 'timeout', steps: THIRD_STEPS }), rec({ costs_ms: [], error: 'runtime_error', steps: THIRD_STEPS })]);
  const after = (await openLog(f, { target: 'llvm -mcpu=native', fingerprint: '0123456789abcdef' })).measured.get(KEY_A)!;
  assert.equal(after.map((m) => m.cost_ms), [4, 3, null], 'a schedule that never ran is one error state');
});

test('makeRecord turns measurement outcomes into valid records', async () => {
  const ctx = { task: { key: KEY_A, desc: 'conv' }, target: 'llvm -mcpu=native', fingerprint: '0123456789abcdef', seed: 3, policy: 'random' };
  const ok = makeRecord({ steps: rec().steps, costs_ms: [0.5, 0.7], error: null, build_ms: 10, run_ms: 2 }, ctx);
  const bad = makeRecord({ steps: [], costs_ms: [], error: 'compile_error', message: 'x'.repeat(9000), build_ms: 10, run_ms: 0 }, ctx);
  assert.ok(checkRecord(ok).ok && checkRecord(bad).ok);
  assert.equal([ok.costs_ms, ok.error, ok.policy, ok.seed], [[0.5, 0.7], null, 'random', 3]);
  assert.ok(bad.message!.length < 8192);
  assert.is(ok.threads, undefined, 'no thread count given, none written');
  const at2 = makeRecord({ steps: rec().steps, costs_ms: [1], error: null, build_ms: 1, run_ms: 1 }, { ...ctx, threads: 2 });
  assert.is(at2.threads, 2);
  assert.ok(checkRecord(at2).ok);
  const genome = { sketch: 1, values: { 'C/S/i': [1, 2, 4, 8], 'C/unroll': 2 } };
  assert.ok(checkRecord(makeRecord({ steps: rec().steps, costs_ms: [1], error: null, build_ms: 1, run_ms: 1 }, ctx, genome)).ok, 'a record may carry the genome');
  for (const g of [{ sketch: -1, values: {} }, { sketch: 0, values: { a: 'x' } }, { sketch: 0, values: { a: [0] } }, { sketch: 0 }]) {
    assert.not.ok(checkRecord({ ...ok, genome: g }).ok, JSON.stringify(g));
  }
  const f = file('made.jsonl');
  await appendRecords(f, [ok, bad]);
  assert.equal((await readRecords(f)).entries.map((e) => e.record), [ok, bad]);
});

test.after(() => rmSync(work, { recursive: true, force: true }));
test.run();
