// compile --records: the best record of a task is compiled in, untuned tasks are summarised
// once, a changed record recompiles exactly one kernel, --strict names what is missing.

import { mkdtempSync, promises as fs, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { main } from '../cli';
import { UserError } from '../errors';
import { getNetwork } from '../frontend/networks';
import { extractTasks } from '../graph/extract';
import { appendRecords, readRecords } from '../records/log';
import { RECORD_FORMAT_VERSION, type TuningRecord } from '../records/record';
import { recordId } from '../records/store';
import { defaultSchedule } from '../schedule/defaults';
import type { Step } from '../schedule/steps';
import { hardwareFingerprint, parseTarget } from '../target';
import { applyRecords } from './apply-records';
import { compileNetwork } from '../app/compile';

const work = mkdtempSync(path.join(tmpdir(), 'tt-apply-records-test-'));
const cacheDir = path.join(work, 'cache');
const target = parseTarget('llvm -mcpu=native');
const fingerprint = hardwareFingerprint(target);
const tasks = extractTasks(getNetwork('mobilenet', { imageSize: 32, weights: 'zeros' }).graph);
const conv = tasks.find((t) => t.desc.startsWith('conv2d_nhwc'))!;

function rec(steps: Step[], costs: number[], over: Partial<TuningRecord> = {}): TuningRecord {
  return {
    v: RECORD_FORMAT_VERSION, engine: '0.1.0', key: conv.key, desc: conv.desc, target: target.text, fingerprint,
    steps, costs_ms: costs, error: null, seed: 0, time: new Date().toISOString(), ...over,
  };
}
const lanes4 = defaultSchedule(conv.dag, { vectorLanes: 4 });
const lanes2 = defaultSchedule(conv.dag, { vectorLanes: 2 });

test('applyRecords: fastest usable record per task, records of other machines ignored, one summary', async () => {
  const file = path.join(work, 'apply.jsonl');
  const best = rec(lanes4, [2]);
  await appendRecords(file, [
    best,
    rec([{ s: 'split', stage: 'no_such_stage', iter: 'x', lengths: [2] }], [0.1]), // fastest, but no longer applies
    rec(lanes2, [0.5], { fingerprint: 'ffffffffffffffff' }), // another machine
    rec(lanes2, [], { error: 'wrong_answer' }),
  ]);
  await fs.appendFile(file, '{"broken\n');
  const logs: string[] = [], warnings: string[] = [];
  const applied = await applyRecords({ tasks, target: target.text, fingerprint, files: [file], log: (l) => logs.push(l), warn: (w) => warnings.push(w) });
  assert.equal([...applied.schedules.keys()], [conv.key]);
  assert.equal(applied.schedules.get(conv.key), { steps: lanes4, source: 'apply.jsonl:1', record: recordId(best) }, 'the log by its base name (no machine path), and the record by its id');
  assert.is(applied.untuned.length, tasks.length - 1);
  assert.ok(applied.untunedShare > 0 && applied.untunedShare < 1);
  assert.is(logs.length, 1, 'one summary');
  assert.match(logs[0], new RegExp(`^records: 1 of ${tasks.length} task\\(s\\) tuned`));
  assert.match(logs[0], /1 record\(s\) of other targets or machines ignored/);
  assert.match(logs[0], /untuned use default schedules, ~\d+(\.\d+)?% of the estimated latency \(untuned latency estimated from FLOPs at the tuned tasks' [\d.]+ GFLOPS/);
  // The untuned tasks by share: the first 12 named, the rest counted.
  const listed = logs[0].split('\n').slice(1);
  const named = Math.min(12, applied.untuned.length);
  assert.is(listed.filter((l) => applied.untuned.some((t) => l.startsWith(`  ${t.desc} (weight ${t.weight}): `))).length, named);
  if (applied.untuned.length > 12) assert.match(listed[12], new RegExp(`^  \\.\\.\\. and ${applied.untuned.length - 12} more \\(`));
  assert.is(warnings.length, 2, warnings.join('\n'));
  assert.match(warnings.find((w) => w.includes('broken'))!, /apply\.jsonl: skipped 1 broken line\(s\) \(line 5\)/);
  assert.match(warnings.find((w) => w.includes('no longer apply'))!, /apply\.jsonl:2: .*no_such_stage/);
});

test('applyRecords warns about tuned tasks whose records never measured their current default schedule (tuned by an older version)', async () => {
  const file = path.join(work, 'stale-default.jsonl');
  await appendRecords(file, [rec(lanes4, [1]), rec(lanes2, [2])]);
  const run = async (current: Step[]): Promise<string[]> => {
    const warnings: string[] = [];
    const applied = await applyRecords({ tasks, target: target.text, fingerprint, files: [file], defaultOf: (t) => (t === conv ? current : []), warn: (w) => warnings.push(w) });
    assert.equal(applied.schedules.get(conv.key)?.steps, lanes4, 'the tuned schedule is still compiled');
    return warnings;
  };
  assert.equal(await run(lanes2), [], 'the current default was measured: nothing to say');
  const [warning, ...rest] = await run(defaultSchedule(conv.dag, { vectorLanes: 8 }));
  assert.equal(rest, []);
  assert.match(warning, new RegExp(`^1 tuned task\\(s\\) have no record of their current default schedule \\(first: ${conv.desc.replace(/[+]/g, '\\+')}\\)`));
  assert.match(warning, /Tuning again on the same records times the new defaults/);
});

test('applyRecords warns when the records it chose were measured at different thread counts', async () => {
  const other = tasks.find((t) => t.key !== conv.key && t.desc.startsWith('depthwise'))!;
  const otherRec = (threads: number): TuningRecord => rec(defaultSchedule(other.dag, { vectorLanes: 4 }), [1], { key: other.key, desc: other.desc, threads });
  const run = async (name: string, records: TuningRecord[]): Promise<string[]> => {
    const file = path.join(work, name);
    await appendRecords(file, records);
    const warnings: string[] = [];
    await applyRecords({ tasks, target: target.text, fingerprint, files: [file], warn: (w) => warnings.push(w) });
    return warnings;
  };
  const mixed = await run('mixed-threads.jsonl', [rec(lanes4, [2], { threads: 1 }), otherRec(2)]);
  assert.is(mixed.length, 1, mixed.join('\n'));
  assert.match(mixed[0], /the records chosen for this model were measured at 1 and 2 thread\(s\) \(field "threads"; first of each at 1: .*mixed-threads\.jsonl:1, 2: .*mixed-threads\.jsonl:2\): compile with --threads N \(a config target.s `threads` under Nx\) to rank them at the count the model runs at$/);
  assert.equal(await run('same-threads.jsonl', [rec(lanes4, [2], { threads: 2 }), otherRec(2)]), []);
  assert.equal(await run('legacy-threads.jsonl', [rec(lanes4, [2]), otherRec(2)]), [], 'a record that does not say is not counted');
});

test('applyRecords at a thread count: each task takes the best measured at it; one without falls back to another count, named in one warning', async () => {
  const other = tasks.find((t) => t.key !== conv.key && t.desc.startsWith('depthwise'))!;
  const file = path.join(work, 'at-threads.jsonl');
  // The conv: faster at 1 thread (lanes4) than lanes2 at 2; the depthwise conv measured at 1 thread only.
  await appendRecords(file, [
    rec(lanes4, [1], { threads: 1, time: '2024-05-01T11:00:00.000Z' }), rec(lanes2, [3], { threads: 2, time: '2024-05-01T10:00:00.000Z' }),
    rec(defaultSchedule(other.dag, { vectorLanes: 4 }), [1], { key: other.key, desc: other.desc, threads: 1 }),
  ]);
  const run = async (threads?: number) => {
    const logs: string[] = [], warnings: string[] = [];
    const applied = await applyRecords({ tasks, target: target.text, fingerprint, files: [file], threads, log: (l) => logs.push(l), warn: (w) => warnings.push(w) });
    return { sources: [conv, other].map((t) => applied.schedules.get(t.key)?.source), logs, warnings };
  };
  const at2 = await run(2);
  assert.equal(at2.sources, ['at-threads.jsonl:2', 'at-threads.jsonl:3'], 'the conv\'s 2-thread record, though slower than its 1-thread one');
  assert.is(at2.warnings.length, 1, at2.warnings.join('\n'));
  assert.match(at2.warnings[0], /^1 task\(s\) have no record measured at 2 thread\(s\) and use the best measured at 1 \(first: depthwise_conv2d_nhwc[^,]*, .*at-threads\.jsonl:3\): tune at 2 thread\(s\)/);
  assert.match(at2.logs[0], /^records: 2 of \d+ task\(s\) tuned \(llvm[^)]*, ranked at 2 thread\(s\)\)/);
  const at1 = await run(1);
  assert.equal(at1.sources, ['at-threads.jsonl:1', 'at-threads.jsonl:3']);
  assert.equal(at1.warnings, []);
  const any = await run();
  assert.equal(any.sources, ['at-threads.jsonl:1', 'at-threads.jsonl:3'], 'without a count: the count of the task\'s newest record (1 thread, an hour after the 2-thread one)');
  assert.equal(any.warnings, [], 'both chosen records were measured at 1 thread');
});

test('applyRecords passes over a record whose unroll is unbounded (parallel turned into unroll) for the next one', async () => {
  const file = path.join(work, 'unroll.jsonl');
  const at = lanes4.findIndex((st) => st.s === 'annotate' && st.ann === 'parallel');
  assert.ok(at >= 0, 'the default schedule has a parallel loop');
  const hostile = lanes4.map((st, i) => (i === at ? { ...st, ann: 'unroll' as const } : st));
  await appendRecords(file, [rec(hostile, [0.1]), rec(lanes4, [2])]);
  const warnings: string[] = [];
  const applied = await applyRecords({ tasks, target: target.text, fingerprint, files: [file], warn: (w) => warnings.push(w) });
  assert.equal(applied.schedules.get(conv.key)?.source, 'unroll.jsonl:2');
  const { stage, iter } = lanes4[at] as { stage: string; iter: string };
  assert.equal(warnings, [
    `1 record(s) no longer apply to their task and were passed over (first: ${file}:1: steps/${at}: unroll of ${stage}.${iter}, a loop of a stage computed at root ` +
    "whose extent the steps do not bound (expected an unrolled loop of at most 512 iterations: a split's inner part, or a loop inside a compute_at tile))",
  ]);
});

test('applyRecords --strict fails naming the untuned tasks', async () => {
  const file = path.join(work, 'strict.jsonl');
  await appendRecords(file, [rec(lanes4, [2])]);
  try {
    await applyRecords({ tasks, target: target.text, fingerprint, files: [file], strict: true });
    assert.unreachable();
  } catch (e) {
    assert.instance(e, UserError);
    const msg = (e as Error).message;
    assert.match(msg, new RegExp(`^--strict: ${tasks.length - 1} of ${tasks.length} task\\(s\\) have no usable record for llvm -mcpu=native`));
    for (const t of tasks.filter((x) => x !== conv)) assert.ok(msg.includes(t.desc), t.desc);
    assert.not.ok(msg.includes(`  ${conv.desc} (`));
  }
});

test('compile --records compiles the record in; a changed record recompiles exactly one kernel', async () => {
  const file = path.join(work, 'compile.jsonl');
  const record = rec(lanes4, [2]);
  await appendRecords(file, [record]);
  const logs: string[] = [];
  const opts = { model: 'mobilenet', imageSize: 32, target: target.text, cacheDir, records: [file], log: (l: string) => logs.push(l) };
  const first = await compileNetwork({ ...opts, outDir: path.join(work, 'out1') });
  const tuned = first.kernels.filter((k) => k.schedule === 'tuned');
  assert.equal(tuned.map((k) => [k.key, k.source, k.record]), [[conv.key, 'compile.jsonl:1', recordId(record)]]);
  assert.ok(logs.some((l) => l.startsWith('records: 1 of ')));
  const manifest = JSON.parse(await fs.readFile(first.manifest, 'utf8')) as { kernels: { schedule: string; source: string; record?: string }[] };
  assert.ok(manifest.kernels.some((k) => k.schedule === 'tuned' && k.source === 'compile.jsonl:1' && k.record === recordId(record)));

  const same = await compileNetwork({ ...opts, outDir: path.join(work, 'out2') });
  assert.is(same.compiled, 0);
  await appendRecords(file, [rec(lanes2, [1])]); // a faster record for the same task
  const changed = await compileNetwork({ ...opts, outDir: path.join(work, 'out3') });
  assert.is(changed.compiled, 1);
  assert.equal(changed.kernels.filter((k) => k.schedule === 'tuned').map((k) => k.source), ['compile.jsonl:2']);
});

test('CLI: compile --strict without records fails naming tasks; a missing records file is one clear error; distill', async () => {
  const out: string[] = [], err: string[] = [];
  const io = { out: (t: string) => { out.push(t); }, err: (t: string) => { err.push(t); } };
  assert.is(await main(['compile', 'mobilenet', '--out', path.join(work, 'cli'), '--strict'], io), 2);
  assert.match(err.join(''), /^tensortune compile: --strict: \d+ of \d+ task\(s\) have no usable record .*\(no records files\)/);
  err.length = 0;
  const missing = path.join(work, 'missing.jsonl');
  assert.is(await main(['compile', 'mobilenet', '--out', path.join(work, 'cli'), '--records', missing], io), 2);
  assert.equal(err.join(''), `tensortune compile: records file ${missing} does not exist\n`);

  const log = path.join(work, 'distill-me.jsonl');
  await appendRecords(log, [rec(lanes4, [3]), rec(lanes2, [1]), rec(lanes2, [], { error: 'timeout' })]);
  assert.is(await main(['distill', log], io), 0);
  const best = path.join(work, 'distill-me.best.jsonl');
  assert.match(out.join(''), new RegExp(`kept 1 of 3 record\\(s\\) .* in ${best.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  assert.equal((await readRecords(best)).entries.map((e) => e.record.costs_ms), [[1]]);
  err.length = 0;
  assert.is(await main(['distill'], io), 2);
  assert.match(err.join(''), /expected at least one record log/);
});

test.after(() => rmSync(work, { recursive: true, force: true }));
test.run();
