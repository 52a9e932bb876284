// Distill: the kept record of a task is the fastest one whose steps still apply, and
// distilling a log that another process is appending to loses none of its appends.

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, promises as fs, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { main } from '../cli';
import { UserError } from '../errors';
import { getNetwork } from '../frontend/networks';
import { extractTasks } from '../graph/extract';
import { defaultSchedule } from '../schedule/defaults';
import type { Step } from '../schedule/steps';
import { distill, distillFiles } from './distill';
import { appendRecords, readRecords } from './log';
import { RECORD_FORMAT_VERSION, type TuningRecord } from './record';

const work = mkdtempSync(path.join(tmpdir(), 'tt-distill-test-'));
const file = (name: string): string => path.join(work, name);

// Real tasks (the CLI test names the same network with --image-size 32).
const tasks = extractTasks(getNetwork('mobilenet', { imageSize: 32, weights: 'zeros' }).graph);
const convs = tasks.filter((t) => t.desc.startsWith('conv2d_nhwc'));
const conv = convs[0]!;
const other = convs[1]!;
const dags = new Map(tasks.map((t) => [t.key, t.dag]));
const UNKNOWN_KEY = '["fedcba9876543210fedcba9876543210", [1, 16], [1, 16]]';
const noSuchStage: Step[] = [{ s: 'split', stage: 'no_such_stage', iter: 'x', lengths: [2] }];

function rec(steps: Step[], costs: number[], over: Partial<TuningRecord> = {}): TuningRecord {
  return {
    v: RECORD_FORMAT_VERSION, engine: '0.1.0', key: conv.key, desc: conv.desc, target: 'llvm -mcpu=native', fingerprint: '0123456789abcdef',
    steps, costs_ms: costs, error: null, seed: 0, time: '2024-05-01T10:00:00.000Z', ...over,
  };
}

const lanes4 = defaultSchedule(conv.dag, { vectorLanes: 4 });
const lanes2 = defaultSchedule(conv.dag, { vectorLanes: 2 });

test('distill keeps the fastest record that replays on its task; faster ones that do not are passed over with one warning', async () => {
  const records = [
    rec(lanes4, [2]),
    rec(noSuchStage, [0.1]), // the fastest, but it does not replay on conv's DAG
    rec(lanes2, [1]), // the runner-up that does: kept
    rec(lanes2, [], { error: 'timeout' }),
    rec(noSuchStage, [0.5], { key: other.key, desc: other.desc }), // other's only record does not apply: other is dropped
    rec(noSuchStage, [3], { key: UNKNOWN_KEY, desc: 'unknown' }), // task not known: steps checked only, kept
  ];
  // Without the DAGs only well-formed steps are checked, so the fastest of each group is kept.
  assert.equal(distill(records), [records[1], records[4], records[5]]);
  assert.equal(distill(records, { dags }), [records[2], records[5]]);

  const log = file('replay.jsonl');
  await appendRecords(log, records);
  const warnings: string[] = [];
  const result = await distillFiles([log], file('replay.best.jsonl'), { dags, warn: (m) => warnings.push(m) });
  assert.equal([result.read, result.kept, result.dropped, result.notReplayed], [6, 2, 1, 1]);
  assert.equal(result.passedOver.map((p) => p.where), [`${log}:2`, `${log}:5`]);
  assert.match(result.passedOver[0]!.why, /no_such_stage/);
  assert.is(warnings.length, 1, warnings.join('\n'));
  assert.ok(warnings[0]!.startsWith('passed over 2 record(s) whose steps do not apply to their task, keeping the fastest that does; ' +
    `1 task(s) have no record that applies and were left out (first: ${log}:2: `), warnings[0]);
  assert.equal((await readRecords(result.out)).entries.map((e) => e.record), [records[2], records[5]]);
});

test('distill: a missing input is a UserError naming it; the output may be missing; duplicate inputs are read once', async () => {
  for (const missing of [file('nope.jsonl'), file('no-dir/nope.jsonl')]) {
    try {
      await distillFiles([missing], file('nope.best.jsonl'));
      assert.unreachable();
    } catch (e) {
      assert.instance(e, UserError);
      assert.is((e as Error).message, `records file ${missing} does not exist`);
    }
  }
  const log = file('twice.jsonl');
  await appendRecords(log, [rec(lanes4, [2]), rec(lanes2, [1])]);
  const result = await distillFiles([log, path.relative(process.cwd(), log)], file('new-dir/twice.best.jsonl'));
  assert.equal([result.read, result.kept], [2, 1]);
  try {
    await distillFiles([log, file('in-place-missing.jsonl')], file('in-place-missing.jsonl'));
    assert.unreachable();
  } catch (e) {
    assert.instance(e, UserError, 'an output that is also an input must exist');
  }
});

test('two distills crossing each other\'s files (A into B, B into A) both finish', async () => {
  const a = file('cross-a.jsonl');
  const b = file('cross-b.jsonl');
  await appendRecords(a, [rec(lanes4, [2])]);
  await appendRecords(b, [rec(lanes2, [1], { key: UNKNOWN_KEY })]);
  const results = await Promise.all([distillFiles([a], b), distillFiles([b], a)]);
  assert.equal(results.map((r) => r.kept), [2, 2]);
  assert.not.ok(existsSync(`${a}.lock`) || existsSync(`${b}.lock`), 'lock left behind');
});

/** Starts append-child.fixture.ts appending one new group per record until `stop` exists; resolves each seed it printed. */
function startAppender(log: string, stop: string): { seeds: number[]; appended: (n: number) => Promise<void>; done: Promise<number> } {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'append-child.fixture.ts'), log, 'child', '100000', '--distinct', '--until', stop],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  const seeds: number[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  let rest = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop()!;
    for (const line of lines) seeds.push(Number(line));
    for (const w of waiters.splice(0)) {
      if (seeds.length >= w.n) w.resolve();
      else waiters.push(w);
    }
  });
  const done = new Promise<number>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => { for (const w of waiters.splice(0)) w.resolve(); resolve(code ?? -1); });
  });
  const appended = (n: number): Promise<void> => (seeds.length >= n ? Promise.resolve() : new Promise((resolve) => { waiters.push({ n, resolve }); }));
  return { seeds, appended, done };
}

test('distill into a log that another process is appending to loses no appended record', async () => {
  const log = file('live.jsonl');
  const stop = file('live.stop');
  const own = [rec(lanes4, [3]), rec(lanes2, [1]), rec(lanes4, [2]), rec(lanes2, [], { error: 'runtime_error' })];
  await appendRecords(log, own);
  const appender = startAppender(log, stop);
  const warnings: string[] = [];
  const rounds = 8;
  for (let round = 0; round < rounds; round++) {
    // Each distill starts after the child appended again, while it goes on appending.
    await appender.appended(appender.seeds.length + 1);
    await distillFiles([log], log, { warn: (m) => warnings.push(m) });
  }
  await fs.writeFile(stop, '');
  assert.is(await appender.done, 0, 'the appender failed');
  assert.ok(appender.seeds.length > rounds, `the appender appended ${appender.seeds.length} record(s) only`);

  const { entries, skipped } = await readRecords(log, { warn: (m) => warnings.push(m) });
  assert.equal(warnings, [], 'no broken line was read');
  assert.equal(skipped, []);
  const childSeeds = entries.filter((e) => e.record.desc.startsWith('child ')).map((e) => e.record.seed).sort((x, y) => x - y);
  assert.equal(childSeeds, appender.seeds, 'every appended record is in the log once (each is its own task)');
  assert.equal(entries.filter((e) => e.record.key === conv.key).map((e) => e.record), [own[1]], 'the best of the log\'s own task is kept');
  const left = (await fs.readdir(work)).filter((f) => f.startsWith('live.jsonl.'));
  assert.equal(left, [], 'no lock or temp file left behind');
});

test('CLI: distill --network replays on the network\'s tasks and says which records were not replayed', async () => {
  const out: string[] = [], err: string[] = [];
  const io = { out: (t: string) => { out.push(t); }, err: (t: string) => { err.push(t); } };
  const log = file('cli.jsonl');
  const best = file('cli.best.jsonl');
  await appendRecords(log, [rec(noSuchStage, [0.1]), rec(lanes2, [1]), rec(lanes2, [2], { key: UNKNOWN_KEY, desc: 'unknown' })]);

  assert.is(await main(['distill', log, '--out', best, '--network', 'mobilenet', '--image-size', '32'], io), 0);
  assert.is(out.join(''), `kept 2 of 3 record(s) (best per task, target, machine and thread count) in ${best}; ` +
    '1 replayed on their task of mobilenet; 1 of tasks not in it: steps checked, not replayed\n');
  assert.is(err.length, 1);
  assert.match(err[0]!, /^tensortune distill: warning: passed over 1 record\(s\) whose steps do not apply to their task, keeping the fastest that does \(first: .*cli\.jsonl:1: .*no_such_stage/);
  assert.equal((await readRecords(best)).entries.map((e) => e.record.costs_ms), [[1], [2]]);

  out.length = 0;
  err.length = 0;
  assert.is(await main(['distill', log, '--out', file('cli2.jsonl')], io), 0);
  assert.is(out.join(''), `kept 2 of 3 record(s) (best per task, target, machine and thread count) in ${file('cli2.jsonl')}; ` +
    'steps checked, not replayed (name the network with --network to replay them on its tasks)\n');
  assert.equal(err, []);

  assert.is(await main(['distill', log, '--network', 'nonet'], io), 2);
  assert.match(err.join(''), /^tensortune distill: unknown --network 'nonet' \(expected a model\.onnx file or one of: mobilenet/);
});

test.after(() => rmSync(work, { recursive: true, force: true }));
test.run();
