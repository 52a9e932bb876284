// Record store entries and logs that are not regular files. A `*.jsonl` of the store that
// is a FIFO, a link to /dev/zero or a directory is skipped with one warning each (it holds
// no records), so reading the store neither hangs nor loses a record of its real logs; the
// log a run appends to is refused in one line when it is such an entry, and nothing is
// written into it. Children run the real CLI and are killed past a time limit, so a hang
// fails the test. Then the record log size limit.

import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { UserError } from '../errors';
import { makeFifo, releaseFifo, runCliWithin } from '../not-regular.fixture';
import { skip } from '../skip.fixture';
import { hardwareFingerprint, parseTarget } from '../target';
import { appendRecords, checkLogWritable, readRecords } from './log';
import { RECORD_FORMAT_VERSION, type TuningRecord } from './record';
import { mergeIntoStore, readStore, storeLogs, writeRecordsFile } from './store';

const work = mkdtempSync(path.join(tmpdir(), 'tt-store-not-regular-'));
const store = path.join(work, 'store');
const clean = path.join(work, 'clean');
const fifo = path.join(store, 'fifo.jsonl');
const TARGET = parseTarget('llvm', '--target');

function rec(cost: number, key: number): TuningRecord {
  return {
    v: RECORD_FORMAT_VERSION, engine: '0.1.0', key: `["0123456789abcdef0123456789abcdef", [1, ${key}], [1, ${key}]]`, desc: `add 1x${key}`,
    target: TARGET.text, fingerprint: hardwareFingerprint(TARGET),
    steps: [{ s: 'split', stage: 'T_add', iter: 'ax1', lengths: [Math.round(cost * 10) + 1] }], costs_ms: [cost], error: null, seed: 1, time: '2024-05-01T10:00:00.000Z',
  };
}

const RECORDS = [rec(1.5, 4), rec(0.5, 4), rec(2, 8)];
let why: string | undefined;

test.before(async () => {
  mkdirSync(store);
  mkdirSync(clean);
  await writeRecordsFile(path.join(store, 'good.jsonl'), RECORDS);
  await writeRecordsFile(path.join(clean, 'good.jsonl'), RECORDS);
  why = makeFifo(fifo);
  if (existsSync('/dev/zero')) symlinkSync('/dev/zero', path.join(store, 'zero.jsonl'));
  mkdirSync(path.join(store, 'dir.jsonl'));
});

test.after(() => {
  releaseFifo(fifo);
  rmSync(work, { recursive: true, force: true });
});

test('best-digest of a store holding a FIFO, a link to /dev/zero and a directory named *.jsonl: skipped with one warning each, the same digest as the store without them', async () => {
  if (why) { skip('record store with a FIFO entry', why); return; }
  const [r, ref] = await Promise.all([
    runCliWithin(['best-digest', store, '--target', 'llvm'], { cwd: work }),
    runCliWithin(['best-digest', clean, '--target', 'llvm'], { cwd: work }),
  ]);
  assert.not.ok(r.timedOut, 'it hung (killed at the time limit)');
  assert.is(r.code, 0, r.err);
  assert.is(ref.code, 0, ref.err);
  assert.is(r.out, ref.out, 'every record of the real log counts');
  assert.match(r.out, / 2 [0-9a-f]{32} llvm\n$/, 'two workloads');
  const warnings = r.err.trimEnd().split('\n');
  assert.equal(warnings.sort(), [
    `tensortune: warning: skipped ${path.join(store, 'dir.jsonl')} in the record store: it is a directory, not a regular JSON-lines file (remove it)`,
    `tensortune: warning: skipped ${fifo} in the record store: it is a FIFO (named pipe), not a regular JSON-lines file (remove it)`,
    ...(existsSync('/dev/zero') ? [`tensortune: warning: skipped ${path.join(store, 'zero.jsonl')} in the record store: it is a character device, not a regular JSON-lines file (remove it)`] : []),
  ].sort());
});

test('tune --records naming the FIFO of the store: one line, exit 2; the store keeps every record', async () => {
  if (why) { skip('tune --records naming a FIFO of the store', why); return; }
  const before = readFileSync(path.join(store, 'good.jsonl'), 'utf8');
  const r = await runCliWithin(['tune', 'mobilenet', '--target', 'llvm', '--records', fifo], { cwd: work });
  assert.not.ok(r.timedOut, 'it hung (killed at the time limit)');
  assert.is(r.code, 2, r.err);
  assert.is(r.err, `tensortune tune: the record log ${fifo} is a FIFO (named pipe), expected a JSON-lines file\n`);
  assert.is(readFileSync(path.join(store, 'good.jsonl'), 'utf8'), before);
  assert.not.ok(existsSync(`${fifo}.lock`), 'no lock left behind');
});

test('in process: the store reads its regular logs only; merging a FIFO adds nothing; appending to one is refused before a byte is written', async () => {
  if (why) { skip('record store with a FIFO entry (in process)', why); return; }
  // A regression would block in open(); the release frees it, so the test fails instead of hanging.
  const timer = setInterval(() => releaseFifo(fifo), 10_000);
  try {
    const warnings: string[] = [];
    const warn = (m: string): void => { warnings.push(m); };
    assert.equal(await storeLogs(store, warn), [path.join(store, 'good.jsonl')]);
    assert.equal((await readStore(store, { warn })).map((e) => e.record), RECORDS);
    assert.equal(await mergeIntoStore(store, path.join(store, 'good.jsonl'), [fifo], { warn }), { read: 0, added: 0 });
    await checkLogWritable(fifo).then(() => assert.unreachable('checkLogWritable'), (e: Error) => {
      assert.instance(e, UserError);
      assert.is(e.message, `the record log ${fifo} is a FIFO (named pipe), expected a JSON-lines file`);
    });
    await appendRecords(fifo, [rec(3, 16)]).then(() => assert.unreachable('appendRecords'), (e: Error) => {
      assert.instance(e, UserError);
      assert.is(e.message, `the record log ${fifo} is a FIFO (named pipe), expected a JSON-lines file`);
    });
    await readRecords(fifo).then(() => assert.unreachable('readRecords'), (e: Error) => {
      assert.is(e.message, `records file ${fifo} is a FIFO (named pipe), expected a regular file`);
    });
  } finally {
    clearInterval(timer);
  }
});

test('a record log over TENSORTUNE_MAX_RECORDS_BYTES: one line saying how to distill it or raise the limit; the file is untouched', async () => {
  const log = path.join(work, 'big.jsonl');
  writeFileSync(log, RECORDS.map((r) => JSON.stringify(r) + '\n').join(''));
  const before = readFileSync(log, 'utf8');
  const r = await runCliWithin(['best-digest', log, '--target', 'llvm'], { cwd: work, env: { TENSORTUNE_MAX_RECORDS_BYTES: '100' } });
  assert.is(r.code, 2, r.err);
  assert.match(r.err, new RegExp(`^tensortune best-digest: records file ${log.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} has \\d+ bytes, more than the limit of 100 bytes; ` +
    'distill it \\(tensortune distill\\) or set TENSORTUNE_MAX_RECORDS_BYTES to raise it\\n$'));
  assert.is(readFileSync(log, 'utf8'), before);
});

test.run();
