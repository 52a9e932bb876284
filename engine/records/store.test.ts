// The record store: measurements are identified by content, merging only appends what the
// store lacks (twice is a no-op, a concurrent merge adds nothing twice), and the best-record
// digest that compile's cache key hashes moves with a better record and only then.

import { mkdtempSync, promises as fs, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { main } from '../cli';
import { UserError } from '../errors';
import { appendRecords, readRecords } from './log';
import { RECORD_FORMAT_VERSION, type TuningRecord } from './record';
import { bestDigest, bestFor, mergeIntoStore, readStore, recordId, storeLogs, writeRecordsFile } from './store';

const work = mkdtempSync(path.join(tmpdir(), 'tt-store-test-'));
const KEY_A = '["0123456789abcdef0123456789abcdef", [1, 8, 8, 4], [3, 3, 4, 4], [1, 8, 8, 4]]';
const KEY_B = '["fedcba9876543210fedcba9876543210", [1, 16], [1, 16]]';
const MATCH = { target: 'llvm -mcpu=native', fingerprint: '0123456789abcdef' };

function rec(cost: number, over: Partial<TuningRecord> = {}): TuningRecord {
  return {
    v: RECORD_FORMAT_VERSION, engine: '0.1.0', key: KEY_A, desc: 'conv2d_nhwc 1x8x8x4 -> 1x8x8x4', ...MATCH,
    // One schedule per cost (records of the same steps are one schedule measured again: best.ts).
    steps: [{ s: 'split', stage: 'conv2d_nhwc', iter: 'ff', lengths: [Math.round(cost * 100) + 1] }],
    costs_ms: [cost], error: null, seed: 7, time: `2024-05-01T10:00:${String(Math.round(cost * 10) % 60).padStart(2, '0')}.000Z`, ...over,
  };
}

test.after(() => rmSync(work, { recursive: true, force: true }));

test('recordId: the same measurement whatever the key order; another measurement differs', () => {
  const r = rec(1.5, { budget: 'full' });
  const reordered = Object.fromEntries(Object.entries(r).reverse()) as unknown as TuningRecord;
  assert.is(recordId(reordered), recordId(r));
  assert.is.not(recordId(rec(1.5)), recordId(r), 'the budget is part of it');
  assert.is.not(recordId(rec(1.25)), recordId(rec(1.5)));
});

test('mergeIntoStore appends only what no log of the store holds; merging twice adds nothing', async () => {
  const dir = path.join(work, 'merge');
  await appendRecords(path.join(dir, 'a.jsonl'), [rec(3), rec(2)]);
  await appendRecords(path.join(dir, 'b.jsonl'), [rec(1, { key: KEY_B })]);
  const restored = path.join(dir, 'nx', 'net', 'cpu.tiny.jsonl');
  await writeRecordsFile(restored, [rec(2), rec(1, { key: KEY_B }), rec(0.5)]);
  assert.equal(await storeLogs(dir), [path.join(dir, 'a.jsonl'), path.join(dir, 'b.jsonl')], 'outputs under nx/ are no store logs');
  assert.equal(await mergeIntoStore(dir, path.join(dir, 'a.jsonl'), [restored]), { read: 3, added: 1 });
  assert.equal(await mergeIntoStore(dir, path.join(dir, 'a.jsonl'), [restored]), { read: 3, added: 0 });
  assert.equal((await readRecords(path.join(dir, 'a.jsonl'))).entries.map((e) => e.record.costs_ms[0]), [3, 2, 0.5]);
  // A restore of an older copy (fewer records) takes nothing away.
  await writeRecordsFile(restored, [rec(2)]);
  assert.equal(await mergeIntoStore(dir, path.join(dir, 'a.jsonl'), [restored]), { read: 1, added: 0 });
  assert.is((await readStore(dir)).length, 4);
  // Two merges at once: each measurement lands once.
  await writeRecordsFile(restored, [rec(0.25), rec(0.125)]);
  await Promise.all([mergeIntoStore(dir, path.join(dir, 'a.jsonl'), [restored]), mergeIntoStore(dir, path.join(dir, 'a.jsonl'), [restored])]);
  assert.is((await readRecords(path.join(dir, 'a.jsonl'))).entries.length, 5);
  assert.equal(await mergeIntoStore(dir, path.join(dir, 'missing.jsonl'), [path.join(dir, 'nowhere.jsonl')]), { read: 0, added: 0 });
});

test('writeRecordsFile: a killed writer\'s temp file is swept, a live one\'s kept; a failed write is one line naming the file', async () => {
  const dir = path.join(work, 'write');
  const file = path.join(dir, 'out.jsonl');
  await fs.mkdir(dir, { recursive: true });
  const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
  await fs.writeFile(`${file}.tmp-${dead}`, 'torn');
  await fs.writeFile(`${file}.tmp-${process.ppid}`, 'in progress');
  await writeRecordsFile(file, [rec(1)]);
  assert.equal((await fs.readdir(dir)).sort(), ['out.jsonl', `out.jsonl.tmp-${process.ppid}`]);
  await fs.writeFile(path.join(dir, 'plain'), '');
  try {
    await writeRecordsFile(path.join(dir, 'plain', 'x.jsonl'), [rec(1)]);
    assert.unreachable();
  } catch (e) {
    assert.instance(e, UserError, String(e));
    assert.match((e as Error).message, /^cannot write the record file .*plain\/x\.jsonl: .*\(E[A-Z]+\)$/);
  }
});

test('bestDigest changes when a better record arrives, not for a slower one, an error or another machine', () => {
  const entries = (records: TuningRecord[]) => records.map((record, i) => ({ record, file: 'x', line: i + 1 }));
  const base = [rec(2), rec(1, { key: KEY_B })];
  const d0 = bestDigest(entries(base), MATCH);
  assert.is(d0.workloads, 2);
  assert.equal(bestDigest(entries([...base, rec(3)]), MATCH), d0, 'slower');
  assert.equal(bestDigest(entries([...base, rec(0, { costs_ms: [], error: 'timeout' })]), MATCH), d0, 'an error');
  assert.equal(bestDigest(entries([...base, rec(0.5, { fingerprint: 'ffffffffffffffff' })]), MATCH), d0, 'another machine');
  assert.equal(bestDigest(entries([...base.reverse()]), MATCH), d0, 'order does not matter');
  assert.is.not(bestDigest(entries([...base, rec(1.5)]), MATCH).digest, d0.digest, 'faster');
  assert.equal(bestDigest(entries([...base, rec(0.5, { key: KEY_B })]), MATCH, new Set([KEY_A])), bestDigest(entries(base), MATCH, new Set([KEY_A])), 'outside the keys');
});

test('bestDigest covers each thread count compile may rank at: a new best at 2 threads changes it while the best at any count stays', () => {
  const entries = (records: TuningRecord[]) => records.map((record, i) => ({ record, file: 'x', line: i + 1 }));
  const base = [rec(1, { threads: 1 }), rec(3, { threads: 2 })];
  const d0 = bestDigest(entries(base), MATCH);
  assert.is(d0.workloads, 1, 'workloads, not workloads x counts');
  assert.is.not(bestDigest(entries([...base, rec(2, { threads: 2 })]), MATCH).digest, d0.digest, 'faster at 2 threads, slower than the 1-thread best');
  assert.equal(bestDigest(entries([...base, rec(4, { threads: 2 })]), MATCH), d0, 'slower at 2 threads');
  assert.equal(bestFor(entries([...base, rec(2, { threads: 2 })]), MATCH).map((e) => e.record.costs_ms), [[2]], 'bestFor: one per workload, the best of its newest record\'s count (2 threads, measured last)');
});

test('tensortune best-digest: one line per target; missing paths read as empty; a bad target is one line, exit 2', async () => {
  const dir = path.join(work, 'cli');
  await appendRecords(path.join(dir, 'store', 'a.jsonl'), [rec(2), rec(1, { key: KEY_B })]);
  await writeRecordsFile(path.join(dir, 'store', 'nx', 'net', 'cpu.tiny.jsonl'), [rec(2)]);
  const run = async (...argv: string[]) => {
    let out = '', err = '';
    const code = await main(argv, { out: (t) => { out += t; }, err: (t) => { err += t; } });
    return { code, out, err };
  };
  // Records of another fingerprint than this machine's count for nothing: the digest of none.
  const r = await run('best-digest', path.join(dir, 'store'), path.join(dir, 'store', 'nx', 'net'), '--keys-from', path.join(dir, 'store', 'nx', 'net'),
    '--target', 'llvm -mcpu=native', '--target', 'llvm');
  assert.is(r.code, 0, r.err);
  const lines = r.out.trim().split('\n');
  assert.is(lines.length, 2);
  assert.match(lines[0], /^[0-9a-f]{16} 0 [0-9a-f]{32} llvm -mcpu=native$/);
  const empty = await run('best-digest', path.join(dir, 'nowhere'), '--target', 'llvm -mcpu=native');
  assert.is(empty.out.split(' ').slice(1, 3).join(' '), lines[0].split(' ').slice(1, 3).join(' '));
  // --files: the record files' names, one line (which budgets tuned the network), no --target needed.
  const files = await run('best-digest', path.join(dir, 'store', 'nx', 'net'), path.join(dir, 'nowhere'), '--files');
  assert.is(files.code, 0, files.err);
  assert.is(files.out, 'cpu.tiny.jsonl\n');
  const bad = await run('best-digest', dir, '--target', 'tpu');
  assert.is(bad.code, 2);
  assert.is(bad.err.trim().split('\n').length, 1);
  await fs.rm(dir, { recursive: true, force: true });
});

test.run();
