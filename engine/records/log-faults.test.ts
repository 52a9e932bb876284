// The record log when the filesystem says no: a disk that fills up in the middle of an
// append (a real tmpfs of two pages: ENOSPC), an immutable log (chattr +i: EPERM, also for
// root), a path through a regular file. Each is one UserError naming the file and the
// cause, and the log is left as it was. Cases that cannot be built here are skipped with one line.

import { mkdirSync, mkdtempSync, promises as fs, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { UserError } from '../errors';
import { mountTmpfs, setImmutable, unmount } from '../fs-faults.fixture';
import { skip } from '../skip.fixture';
import { appendRecords, checkLogWritable, readRecords } from './log';
import { RECORD_FORMAT_VERSION, type TuningRecord } from './record';

const work = mkdtempSync(path.join(tmpdir(), 'tt-log-faults-'));
const PAGE = 4096;

function rec(desc: string): TuningRecord {
  return {
    v: RECORD_FORMAT_VERSION, engine: '0.1.0', key: '["0123456789abcdef0123456789abcdef", [1, 4], [1, 4]]', desc,
    target: 'llvm -mcpu=native', fingerprint: '0123456789abcdef', steps: [{ s: 'split', stage: 'T_add', iter: 'ax1', lengths: [2] }],
    costs_ms: [1], error: null, seed: 0, time: '2024-05-01T10:00:00.000Z',
  };
}

async function rejectsWith(p: Promise<unknown>, message: string): Promise<void> {
  try {
    await p;
  } catch (e) {
    assert.instance(e, UserError);
    assert.is((e as Error).message, message);
    return;
  }
  assert.unreachable(`expected: ${message}`);
}

/** Runs `body` on a fresh tmpfs of `pages` pages, or skips with one line. */
async function onTmpfs(name: string, pages: number, body: (dir: string) => Promise<void>): Promise<void> {
  const dir = path.join(work, name);
  mkdirSync(dir);
  const why = mountTmpfs(dir, pages * PAGE);
  if (why) {
    skip(`record log on a full disk (${name})`, why);
    return;
  }
  try {
    await body(dir);
  } finally {
    unmount(dir);
  }
}

test('ENOSPC in the middle of an append: UserError naming the log, the log cut back to its last whole line, no lock left', async () => {
  await onTmpfs('full-mid-append', 2, async (dir) => {
    // page 1: the log (one record and a comment, 4000 bytes); page 2: the lock; nothing else fits
    const log = path.join(dir, 'log.jsonl');
    const first = JSON.stringify(rec('first')) + '\n';
    const before = first + '#' + 'x'.repeat(4000 - first.length - 2) + '\n';
    writeFileSync(log, before);
    const big = rec('y'.repeat(1000));
    await rejectsWith(appendRecords(log, [big, big]),
      `cannot append to the record log ${log}: no space left on device (ENOSPC); the log was cut back to its last whole line`);
    assert.is(await fs.readFile(log, 'utf8'), before, 'the log is exactly as before the append');
    assert.equal(await fs.readdir(dir), ['log.jsonl'], 'no lock, no temp file');
    const { entries, skipped } = await readRecords(log);
    assert.equal([entries.length, skipped], [1, []]);
  });
});

test('ENOSPC before the lock is written: UserError naming the lock, no empty lock left behind', async () => {
  await onTmpfs('full-lock', 1, async (dir) => {
    const log = path.join(dir, 'log.jsonl');
    writeFileSync(log, '#' + 'x'.repeat(PAGE - 2) + '\n'); // the one page
    await rejectsWith(appendRecords(log, [rec('a')]), `cannot create the lock ${log}.lock: no space left on device (ENOSPC)`);
    assert.equal(await fs.readdir(dir), ['log.jsonl']);
  });
});

test('an immutable log (EPERM, also for root): appendRecords and checkLogWritable name it and the cause', async () => {
  const log = path.join(work, 'immutable.jsonl');
  writeFileSync(log, JSON.stringify(rec('kept')) + '\n');
  const why = setImmutable(log, true);
  if (why) { skip('record log: an immutable log', why); return; }
  try {
    await rejectsWith(appendRecords(log, [rec('new')]), `cannot open the record log ${log}: operation not permitted (EPERM)`);
    await rejectsWith(checkLogWritable(log), `cannot write the record log ${log}: operation not permitted (EPERM)`);
  } finally {
    setImmutable(log, false);
  }
  assert.is((await readRecords(log)).entries.length, 1);
});

test('checkLogWritable: a path through a regular file (ENOTDIR), a directory; a new log in a new directory is fine and creates nothing', async () => {
  const plain = path.join(work, 'plain');
  writeFileSync(plain, '');
  await rejectsWith(checkLogWritable(path.join(plain, 'log.jsonl')), `cannot write the record log ${path.join(plain, 'log.jsonl')}: not a directory (ENOTDIR)`);
  await rejectsWith(checkLogWritable(work), `the record log ${work} is a directory, expected a JSON-lines file`);
  const fresh = path.join(work, 'new', 'deeper', 'log.jsonl');
  await checkLogWritable(fresh);
  assert.not.ok(await fs.stat(path.join(work, 'new')).then(() => true, () => false));
});

test.after(() => rmSync(work, { recursive: true, force: true }));

test.run();
