// The record log: JSON lines, append-only.
//
// Appending: every record is validated, then written with one write() per line on a file
// opened O_APPEND, while holding a lock file (`<log>.lock`, created with O_CREAT|O_EXCL),
// so two processes appending to one log never interleave or lose lines. The lock holds
// the holder's pid and host; a lock whose holder is dead (same host, pid gone), or which
// is older than STALE_LOCK_MS, is broken by renaming it aside first (so two processes that
// both find it stale cannot delete each other's fresh lock; one that renamed a fresh lock
// by mistake links it back). If a previous writer was killed mid-line, the next append
// starts on a new line, so the torn line stays one broken line and nothing else is lost.
// An append that fails (a full disk) cuts the log back to where it was, under the lock.
//
// Reading: comments (`#`) and blank lines are ignored; a line that is not JSON or does not
// match schemas/record.schema.json is skipped, and one warning per file names the lines.
// A log, and its lock, must be regular files (a FIFO would block the reader or swallow the
// records appended to it, a device would never end); a log is read up to a size limit
// (regular-file.ts).

import { randomBytes } from 'node:crypto';
import { constants as fsConstants, promises as fs } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { asUserError, UserError } from '../errors';
import { kindOf, readRegularFile, READ_FLAGS, recordsLimit } from '../regular-file';
import { pidAlive } from '../temp-dirs';
import type { TuningRecord } from './record';
import { checkRecord } from './schema';

/** A record and where it was read. */
export interface LogEntry {
  record: TuningRecord;
  file: string;
  /** 1-based line number. */
  line: number;
}

export interface LockOptions {
  /** Give up after this long (default 30 s). */
  timeoutMs?: number;
}

/** A lock older than this is stale even if its pid looks alive (pids are reused). */
const STALE_LOCK_MS = 10 * 60_000;

interface LockInfo { pid: number; host: string; time: number; token: string }

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A lock holds a pid, a host and a time: anything larger is not one of ours. */
const lockLimit = (lockPath: string) => ({ what: 'the lock', maxBytes: 64 * 1024, raise: `remove it if no tensortune process is writing ${lockPath.slice(0, -'.lock'.length)}` });

async function readLock(lockPath: string): Promise<{ info?: LockInfo; text: string; mtimeMs: number } | undefined> {
  try {
    const [text, stat] = await Promise.all([readRegularFile(lockPath, lockLimit(lockPath)).then((b) => b.toString('utf8')), fs.stat(lockPath)]);
    let info: LockInfo | undefined;
    try {
      info = JSON.parse(text) as LockInfo;
    } catch { /* being written, or garbage */ }
    return { info, text, mtimeMs: stat.mtimeMs };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

function isStale(lock: { info?: LockInfo; mtimeMs: number }): boolean {
  const age = Date.now() - lock.mtimeMs;
  if (age > STALE_LOCK_MS) return true;
  const info = lock.info;
  if (!info || typeof info.pid !== 'number') return age > 5_000; // a half-written lock is only seconds old
  return info.host === hostname() && !pidAlive(info.pid);
}

/** Removes a stale lock unless someone replaced it meanwhile. */
async function breakLock(lockPath: string, staleText: string): Promise<void> {
  const aside = `${lockPath}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await fs.rename(lockPath, aside);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return; // someone else broke it
    throw e;
  }
  const moved = await readRegularFile(aside, lockLimit(lockPath)).then((b) => b.toString('utf8'), () => staleText);
  if (moved !== staleText) {
    // We moved a fresh lock taken after we looked: put it back unless a newer one exists.
    await fs.link(aside, lockPath).catch(() => undefined);
  }
  await fs.rm(aside, { force: true });
}

const inProcess = new Map<string, Promise<unknown>>();

/**
 * Runs `fn` while holding `<file>.lock`. Calls in one process on one file queue up; other
 * processes wait for the lock file.
 */
export function withFileLock<T>(file: string, fn: () => Promise<T>, opts: LockOptions = {}): Promise<T> {
  const id = path.resolve(file);
  const previous = inProcess.get(id) ?? Promise.resolve();
  const run = previous.then(() => lockAndRun(file, fn, opts));
  const tail = run.catch(() => undefined);
  inProcess.set(id, tail);
  void tail.then(() => { if (inProcess.get(id) === tail) inProcess.delete(id); });
  return run;
}

async function lockAndRun<T>(file: string, fn: () => Promise<T>, opts: LockOptions): Promise<T> {
  const lockPath = `${file}.lock`;
  const info: LockInfo = { pid: process.pid, host: hostname(), time: Date.now(), token: randomBytes(8).toString('hex') };
  const text = JSON.stringify(info);
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  for (let attempt = 0; ; attempt++) {
    try {
      const fh = await fs.open(lockPath, 'wx');
      try {
        await fh.writeFile(text);
      } catch (e) {
        await fs.rm(lockPath, { force: true }); // a full disk: no empty lock left behind
        throw e;
      } finally {
        await fh.close();
      }
      break;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') throw new UserError(`cannot create the lock ${lockPath}: its directory does not exist`);
      if (code !== 'EEXIST') throw asUserError(e, `cannot create the lock ${lockPath}`) ?? e;
    }
    const held = await readLock(lockPath);
    if (held && isStale(held)) { await breakLock(lockPath, held.text); continue; }
    if (Date.now() > deadline) {
      const who = held?.info ? ` (held by pid ${held.info.pid} on ${held.info.host})` : '';
      throw new UserError(`timed out waiting for the lock ${lockPath}${who}; remove it if no tensortune process is writing ${file}`);
    }
    await sleep(Math.min(50, 2 + attempt * 2) * (0.5 + Math.random()));
  }
  try {
    return await fn();
  } finally {
    const held = await readLock(lockPath).catch(() => undefined);
    if (held?.text === text) await fs.rm(lockPath, { force: true });
  }
}

export interface AppendOptions {
  /** Runs under the log's lock and picks what to write of `records` (a merge that must not add a record twice). */
  select?: (records: readonly TuningRecord[]) => Promise<readonly TuningRecord[]>;
}

/**
 * Appends records to a log: validated, one write per line, under the log's lock; returns
 * how many were written. A write that fails (a full disk) cuts the log back to its size
 * before this append, so no torn line is left, and is a UserError naming the log and the
 * cause.
 */
export async function appendRecords(file: string, records: readonly TuningRecord[], opts: AppendOptions = {}): Promise<number> {
  if (records.length === 0) return 0;
  records.forEach((r, i) => {
    const check = checkRecord(r);
    if (!check.ok) throw new Error(`appendRecords: record ${i} is invalid: ${check.message}`);
  });
  const dir = path.dirname(path.resolve(file));
  await fs.mkdir(dir, { recursive: true }).catch((e: unknown) => {
    throw asUserError(e, `cannot create the directory ${dir} of the record log ${file}`) ?? e;
  });
  return withFileLock(file, async () => {
    const lines = (opts.select ? await opts.select(records) : records).map((r) => JSON.stringify(r) + '\n');
    if (lines.length === 0) return 0;
    // Non-blocking: a FIFO in the log's place is refused by the stat below, not written into.
    const fh = await fs.open(file, fsConstants.O_RDWR | fsConstants.O_APPEND | fsConstants.O_CREAT | READ_FLAGS, 0o666).catch((e: unknown) => {
      throw asUserError(e, `cannot open the record log ${file}`) ?? e;
    });
    let before: number | undefined;
    try {
      const stat = await fh.stat();
      if (!stat.isFile()) throw new UserError(`the record log ${file} is ${kindOf(stat)}, expected a JSON-lines file`);
      const { size } = stat;
      before = size;
      if (size > 0) {
        const last = Buffer.alloc(1);
        await fh.read(last, 0, 1, size - 1);
        if (last[0] !== 0x0a) lines[0] = '\n' + lines[0]; // a writer died mid-line: keep its torn line separate
      }
      for (const line of lines) {
        const data = Buffer.from(line);
        let written = 0;
        while (written < data.length) written += (await fh.write(data, written)).bytesWritten;
      }
      await fh.datasync();
      return lines.length;
    } catch (e) {
      const cut = before === undefined ? false : await fh.truncate(before).then(() => true, () => false);
      const state = cut ? 'the log was cut back to its last whole line' : 'the log may end with a torn line (it is skipped when read)';
      throw asUserError(e, `cannot append to the record log ${file}`, `; ${state}`) ?? e;
    } finally {
      await fh.close();
    }
  });
}

/**
 * Fails early, with a UserError naming the log and the cause, where appending to `file`
 * would fail for want of permission (a read-only or immutable file, a directory that is
 * not writable, a path through a regular file). Creates nothing.
 */
export async function checkLogWritable(file: string): Promise<void> {
  const target = path.resolve(file);
  const fail = (e: unknown): never => { throw asUserError(e, `cannot write the record log ${file}`) ?? e; };
  for (let p = target; ; p = path.dirname(p)) {
    const stat = await fs.stat(p).catch((e: unknown) => ((e as NodeJS.ErrnoException).code === 'ENOENT' ? undefined : fail(e)));
    if (!stat) {
      if (path.dirname(p) === p) return;
      continue; // created by the first append: check the nearest existing parent
    }
    if (p === target && !stat.isFile()) throw new UserError(`the record log ${file} is ${kindOf(stat)}, expected a JSON-lines file`);
    await fs.access(p, p === target ? fsConstants.W_OK : fsConstants.W_OK | fsConstants.X_OK).catch(fail);
    return;
  }
}

export interface ReadOptions {
  /** Where the one warning about broken lines goes (default: stderr). */
  warn?: (message: string) => void;
  /** A missing file reads as empty (for a log about to be written) instead of a UserError. */
  missingOk?: boolean;
}

export interface ReadResult {
  entries: LogEntry[];
  /** Line numbers of the broken lines that were skipped. */
  skipped: number[];
}

const defaultWarn = (message: string): void => { process.stderr.write(`tensortune: warning: ${message}\n`); };

/** Reads a record log; broken lines are skipped with one warning naming the file and lines. */
export async function readRecords(file: string, opts: ReadOptions = {}): Promise<ReadResult> {
  let bytes: Buffer;
  try {
    bytes = await readRegularFile(file, recordsLimit());
  } catch (e) {
    if (e instanceof UserError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && opts.missingOk) return { entries: [], skipped: [] };
    if (code === 'ENOENT') throw new UserError(`records file ${file} does not exist`);
    throw asUserError(e, `cannot read records file ${file}`) ?? new UserError(`cannot read records file ${file}: ${(e as Error).message}`);
  }
  const entries: LogEntry[] = [];
  const skipped: number[] = [];
  let firstReason = '';
  // Line by line from the bytes: a log may be larger than the longest string V8 can hold.
  linesOf(bytes).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    let value: unknown;
    let reason: string;
    try {
      value = JSON.parse(line);
      const check = checkRecord(value);
      if (check.ok) { entries.push({ record: check.record, file, line: i + 1 }); return; }
      reason = check.message;
    } catch (e) {
      reason = `not JSON (${(e as Error).message})`;
    }
    if (!firstReason) firstReason = `line ${i + 1}: ${reason}`;
    skipped.push(i + 1);
  });
  if (skipped.length > 0) {
    const shown = skipped.slice(0, 10).join(', ') + (skipped.length > 10 ? `, ... (${skipped.length - 10} more)` : '');
    (opts.warn ?? defaultWarn)(`${file}: skipped ${skipped.length} broken line(s) (line ${shown}); ${firstReason}`);
  }
  return { entries, skipped };
}

/** The lines of a UTF-8 file, split at each newline. */
function linesOf(bytes: Buffer): string[] {
  const lines: string[] = [];
  for (let start = 0; ;) {
    const end = bytes.indexOf(0x0a, start);
    lines.push(bytes.toString('utf8', start, end < 0 ? bytes.length : end));
    if (end < 0) return lines;
    start = end + 1;
  }
}

/** Reads several logs, in order; one warning per file with broken lines. */
export async function readRecordFiles(files: readonly string[], opts: ReadOptions = {}): Promise<LogEntry[]> {
  const all: LogEntry[] = [];
  for (const file of files) all.push(...(await readRecords(file, opts)).entries);
  return all;
}
