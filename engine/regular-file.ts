// Reading a file a user named (a model, a record log, a config, an input): only a regular
// file, after following links, and only up to a size limit. A FIFO blocks its reader until
// someone writes to it, and a device such as /dev/zero never ends: either would hang the
// command (and every Nx task reading the same path) or grow it until the machine runs out
// of memory. So the path is stat'ed first and refused in one line naming what it is; then
// it is opened O_NONBLOCK (a FIFO put in its place after the stat cannot block the open)
// and the open descriptor is checked again (fstat) before a byte is read, and reading
// stops at the limit.

import { closeSync, constants, fstatSync, lstatSync, openSync, promises as fs, readSync, realpathSync, statSync, type Stats } from 'node:fs';
import { asUserError, UserError } from './errors';

export const MiB = 1024 * 1024;
export const GiB = 1024 * MiB;

/** What a read is for, in messages, and how much it may read. */
export interface ReadLimit {
  /** What the file is, as messages name it: 'the ONNX model', 'records file'. */
  what: string;
  /** Refuse a file larger than this many bytes. */
  maxBytes: number;
  /** How a user raises the limit (appended to the message): 'set TENSORTUNE_MAX_MODEL_BYTES'. */
  raise?: string;
}

/** A path that exists but is not a regular file (a FIFO, a device, a socket, a directory). */
export class NotRegularFileError extends UserError {
  constructor(readonly file: string, message: string) {
    super(message);
    this.name = 'NotRegularFileError';
  }
}

/** A regular file above its read limit. */
export class FileTooLargeError extends UserError {
  constructor(readonly file: string, message: string) {
    super(message);
    this.name = 'FileTooLargeError';
  }
}

/** `a FIFO (named pipe)`, `a character device`, ...: what a stat says a path is. */
export function kindOf(stat: Stats): string {
  if (stat.isFile()) return 'a regular file';
  if (stat.isDirectory()) return 'a directory';
  if (stat.isFIFO()) return 'a FIFO (named pipe)';
  if (stat.isCharacterDevice()) return 'a character device';
  if (stat.isBlockDevice()) return 'a block device';
  if (stat.isSocket()) return 'a socket';
  return 'not a regular file';
}

/** `1.5 GiB`, `300 MiB`, `12 bytes`. */
export function formatBytes(n: number): string {
  const [unit, size] = n >= GiB ? ['GiB', GiB] : n >= MiB ? ['MiB', MiB] : n >= 1024 ? ['KiB', 1024] : ['bytes', 1];
  return size === 1 ? `${n} bytes` : `${+(n / size).toFixed(1)} ${unit}`;
}

/** ` (a link to /dev/zero)` when `file` is a symbolic link; empty otherwise. */
function linkNote(file: string): string {
  try {
    if (!lstatSync(file).isSymbolicLink()) return '';
    return ` (a link to ${realpathSync(file)})`;
  } catch {
    return ' (a link)';
  }
}

function notRegular(file: string, what: string, stat: Stats): NotRegularFileError {
  return new NotRegularFileError(file, `${what} ${file}${linkNote(file)} is ${kindOf(stat)}, expected a regular file`);
}

function tooLarge(file: string, limit: ReadLimit, size: number): FileTooLargeError {
  const raise = limit.raise ? `; ${limit.raise}` : '';
  return new FileTooLargeError(file, `${limit.what} ${file} has ${formatBytes(size)}, more than the limit of ${formatBytes(limit.maxBytes)}${raise}`);
}

/**
 * The stat of `file` (links followed) when it is a regular file; a NotRegularFileError
 * naming it and what it is otherwise. A missing file throws the system error (ENOENT), so
 * that callers keep their own message for it.
 */
export function regularFileStat(file: string, what: string): Stats {
  const stat = statSync(file);
  if (!stat.isFile()) throw notRegular(file, what, stat);
  return stat;
}

/**
 * Refuses, in one UserError naming `what` and the path, anything but an existing regular
 * file: for a path another program reads (the native runner's --input), checked before it
 * is started.
 */
export function checkRegularFile(file: string, what: string): void {
  try {
    regularFileStat(file, what);
  } catch (e) {
    if (e instanceof UserError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    throw code === 'ENOENT' ? new UserError(`${what} ${file} does not exist`) : asUserError(e, `${what} ${file}: cannot be read`) ?? e;
  }
}

/**
 * Refuses, as checkRegularFile does, a path that exists and is not a regular file; a missing
 * one is fine. For a file about to be appended to or replaced: opening a FIFO for writing
 * blocks until someone reads it.
 */
export function checkRegularIfPresent(file: string, what: string): void {
  if (lstatOrUndefined(file) !== undefined) checkRegularFile(file, what);
}

function lstatOrUndefined(file: string): Stats | undefined {
  try {
    return lstatSync(file);
  } catch {
    return undefined;
  }
}

/** Whether `file` is a regular file (links followed); false for a missing path too. */
export function isRegularFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Flags that cannot block on a FIFO nor make a terminal the controlling one (0 where the platform lacks them). */
export const READ_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0);

/** Bytes read past the stat'ed size at a time, to see the end of a file that grew meanwhile. */
const CHUNK = 64 * 1024;

/** A regular file's bytes, at most `limit.maxBytes`; see the module comment. System errors (ENOENT, EACCES) are thrown as they are. */
export function readRegularFileSync(file: string, limit: ReadLimit): Buffer {
  const first = regularFileStat(file, limit.what);
  if (first.size > limit.maxBytes) throw tooLarge(file, limit, first.size);
  const fd = openSync(file, READ_FLAGS);
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw notRegular(file, limit.what, stat);
    if (stat.size > limit.maxBytes) throw tooLarge(file, limit, stat.size);
    const chunks: Buffer[] = [];
    let total = 0;
    for (let want = stat.size; ; want = CHUNK) {
      const buf = Buffer.allocUnsafe(Math.max(want, 1));
      let got = 0;
      while (got < buf.length) {
        const n = readSync(fd, buf, got, buf.length - got, null);
        if (n === 0) break;
        got += n;
      }
      total += got;
      if (total > limit.maxBytes) throw tooLarge(file, limit, total);
      chunks.push(got === buf.length ? buf : buf.subarray(0, got));
      if (got < buf.length) break;
    }
    return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, total);
  } finally {
    closeSync(fd);
  }
}

/** readRegularFileSync, without blocking the event loop. */
export async function readRegularFile(file: string, limit: ReadLimit): Promise<Buffer> {
  const first = await fs.stat(file);
  if (!first.isFile()) throw notRegular(file, limit.what, first);
  if (first.size > limit.maxBytes) throw tooLarge(file, limit, first.size);
  const fh = await fs.open(file, READ_FLAGS);
  try {
    const stat = await fh.stat();
    if (!stat.isFile()) throw notRegular(file, limit.what, stat);
    if (stat.size > limit.maxBytes) throw tooLarge(file, limit, stat.size);
    const chunks: Buffer[] = [];
    let total = 0;
    for (let want = stat.size; ; want = CHUNK) {
      const buf = Buffer.allocUnsafe(Math.max(want, 1));
      let got = 0;
      while (got < buf.length) {
        const { bytesRead } = await fh.read(buf, got, buf.length - got, null);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      total += got;
      if (total > limit.maxBytes) throw tooLarge(file, limit, total);
      chunks.push(got === buf.length ? buf : buf.subarray(0, got));
      if (got < buf.length) break;
    }
    return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, total);
  } finally {
    await fh.close();
  }
}

/**
 * A byte limit that the environment variable `name` may raise (a positive integer number
 * of bytes), else `fallback`; a malformed value is a UserError naming the variable.
 */
export function byteLimit(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  if (!/^\d+$/.test(text.trim()) || !(Number(text) > 0)) throw new UserError(`${name}=${JSON.stringify(text)}: expected a positive number of bytes`);
  return Number(text);
}

/** The largest ONNX model file read: protobuf's limit for one message (bigger models keep their weights in external data files). */
export const modelLimit = (): ReadLimit => ({
  what: 'the ONNX model', maxBytes: byteLimit('TENSORTUNE_MAX_MODEL_BYTES', 2 * GiB), raise: 'set TENSORTUNE_MAX_MODEL_BYTES to raise it',
});

/**
 * The largest record log read whole: its records are held in memory, parsed, a few times
 * its size; far above what a long tuning run writes (a record is under a kilobyte).
 */
export const recordsLimit = (): ReadLimit => ({
  what: 'records file', maxBytes: byteLimit('TENSORTUNE_MAX_RECORDS_BYTES', 256 * MiB),
  raise: "distill it (tensortune distill) or set TENSORTUNE_MAX_RECORDS_BYTES to raise it",
});
