// The record store: a directory of append-only logs (`<dir>/*.jsonl`) that every tuning
// run feeds (the CLI's `tune --records`, every Nx budget, records restored from a cache)
// and that compile reads whole. A measurement enters the store once and is never removed:
// merging a file into the store appends only the records no log of the store holds yet,
// under the destination log's lock, so a restored copy of an old file adds nothing and
// takes nothing away.
//
// Records are told apart by their content (recordId: a hash of the record's canonical
// JSON), so the same measurement copied through several files counts once.
//
// A `*.jsonl` of the store that is not a regular file (a FIFO, a link to a device, a
// directory) is skipped with one warning rather than refused: it holds no records, so
// skipping it loses none, while refusing it would stop every tune and compile of the
// workspace over one stray entry. The log a run appends to is still refused when it is
// not a regular file (log.ts), so nothing is ever written into such an entry.

import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { rankedByWorkload, threadCounts, type RecordMatch } from './best';
import { appendRecords, readRecordFiles, type LogEntry, type ReadOptions } from './log';
import type { TuningRecord } from './record';
import { asUserError } from '../errors';
import { kindOf } from '../regular-file';
import { pidAlive } from '../temp-dirs';

/** JSON with object keys sorted, so two serialisations of one record compare equal. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The identity of one measurement: a hash of the record's content. */
export const recordId = (r: TuningRecord): string => createHash('sha256').update(canonical(r)).digest('hex').slice(0, 32);

/** Entries of stores already warned about in this process: one warning each, however often the store is read. */
const warnedEntries = new Set<string>();

const defaultWarn = (message: string): void => { process.stderr.write(`tensortune: warning: ${message}\n`); };

/**
 * The logs of a store directory (`*.jsonl` directly in it that are regular files, links
 * followed; sorted); none when it does not exist. Other entries are skipped, each with one
 * warning (see the module comment).
 */
export async function storeLogs(dir: string, warn: (message: string) => void = defaultWarn): Promise<string[]> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  return regularLogs(names.filter((n) => n.endsWith('.jsonl')).sort().map((n) => path.join(dir, n)), warn);
}

/** The files of `files` that are regular files (links followed); each other one is skipped with one warning, a missing one silently. */
async function regularLogs(files: readonly string[], warn: (message: string) => void): Promise<string[]> {
  const logs: string[] = [];
  for (const file of files) {
    let what: string;
    try {
      const stat = await fs.stat(file);
      if (stat.isFile()) { logs.push(file); continue; }
      what = kindOf(stat);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      if (!(await fs.lstat(file).catch(() => undefined))) continue; // removed since it was listed, or never there
      what = 'a dangling link';
    }
    if (warnedEntries.has(file)) continue;
    warnedEntries.add(file);
    warn(`skipped ${file} in the record store: it is ${what}, not a regular JSON-lines file (remove it)`);
  }
  return logs;
}

/** Every valid record of the store, deduplicated (the first copy of each measurement is kept). */
export async function readStore(dir: string, opts: ReadOptions = {}): Promise<LogEntry[]> {
  return unique(await readRecordFiles(await storeLogs(dir, opts.warn), opts));
}

/** Entries without repeated measurements, in order. */
function unique(entries: readonly LogEntry[]): LogEntry[] {
  const seen = new Set<string>();
  return entries.filter((e) => {
    const id = recordId(e.record);
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

/** The identities (recordId) of every valid record the store holds. */
export async function storeIds(dir: string, opts: ReadOptions = {}): Promise<Set<string>> {
  return new Set((await readRecordFiles(await storeLogs(dir, opts.warn), opts)).map((e) => recordId(e.record)));
}

export interface MergeOptions extends ReadOptions {
  /**
   * Identities the store held at an earlier read (storeIds), shared by several merges: the
   * store only grows, so records among them are passed over without reading it again, and
   * a merge with nothing else takes no lock.
   */
  held?: ReadonlySet<string>;
}

export interface MergeResult {
  /** Valid records read from the sources. */
  read: number;
  /** Of which new to the store, appended to the destination log. */
  added: number;
}

/**
 * Appends to `log` (a log of the store in `dir`) every record of `sources` that no log of
 * the store holds. The store is read inside `log`'s lock, so two merges into the same log
 * never add a record twice; a record that lands in another log meanwhile is at worst held
 * twice (readers deduplicate), never lost.
 */
export async function mergeIntoStore(dir: string, log: string, sources: readonly string[], opts: MergeOptions = {}): Promise<MergeResult> {
  const { held: before, ...readOpts } = opts;
  const incoming = await readRecordFiles(await regularLogs(sources, readOpts.warn ?? defaultWarn), { ...readOpts, missingOk: true });
  const candidates = incoming.map((e) => e.record).filter((r) => !before?.has(recordId(r)));
  if (candidates.length === 0) return { read: incoming.length, added: 0 };
  const added = await appendRecords(log, candidates, {
    async select(records) {
      const held = await storeIds(dir, readOpts);
      const out: TuningRecord[] = [];
      for (const record of records) {
        const id = recordId(record);
        if (held.has(id)) continue;
        held.add(id);
        out.push(record);
      }
      return out;
    },
  });
  return { read: incoming.length, added };
}

/** The best valid record of each workload in `keys` for one target string and fingerprint, as compile picks it without a thread count (rankedByWorkload). */
export function bestFor(entries: readonly LogEntry[], match: RecordMatch, keys?: ReadonlySet<string>): LogEntry[] {
  return [...rankedByWorkload(entries.filter((e) => !keys || keys.has(e.record.key)), match).values()].map((list) => list[0].entry);
}

/** Removes `<file>.tmp-<pid>` files that a killed writer of `file` left behind. */
async function sweepStaleTemps(file: string): Promise<void> {
  const base = `${path.basename(file)}.tmp-`;
  const names = await fs.readdir(path.dirname(file)).catch(() => [] as string[]);
  for (const name of names) {
    const pid = name.startsWith(base) ? Number(name.slice(base.length)) : NaN;
    if (Number.isInteger(pid) && pid !== process.pid && !pidAlive(pid)) await fs.rm(path.join(path.dirname(file), name), { force: true });
  }
}

/**
 * Writes `records` as a whole new file: a temp file in the same directory, synced, then a
 * rename (readers see the old file or the new one). A failure (a full disk, no permission)
 * is a UserError `cannot write <what>: <cause>`, with the temp file removed.
 */
export async function writeRecordsFile(file: string, records: readonly TuningRecord[], what = `the record file ${file}`): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}`;
  try {
    await fs.mkdir(path.dirname(path.resolve(file)), { recursive: true });
    await sweepStaleTemps(file);
    const fh = await fs.open(tmp, 'w');
    try {
      await fh.writeFile(records.map((r) => JSON.stringify(r) + '\n').join(''));
      await fh.datasync();
    } finally {
      await fh.close();
    }
    await fs.rename(tmp, file);
  } catch (e) {
    await fs.rm(tmp, { force: true }).catch(() => undefined);
    throw asUserError(e, `cannot write ${what}`) ?? e;
  }
}

/** Record files named by paths: a directory contributes its `*.jsonl` (not its subdirectories). */
export async function recordFilesOf(paths: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (const p of paths) {
    const stat = await fs.stat(p).catch(() => undefined);
    if (stat?.isDirectory()) out.push(...(await storeLogs(p)));
    else if (stat) out.push(p);
  }
  return out;
}

/**
 * A digest of the best record per workload (restricted to `keys` when given) for one target
 * and fingerprint: it changes exactly when compile would pick another record. Compile ranks
 * at the thread count it is given (`--threads`, a config target's `threads`) or without one,
 * so the digest holds its pick without a count and at each count the records were measured at.
 */
export function bestDigest(entries: readonly LogEntry[], match: { target: string; fingerprint: string }, keys?: ReadonlySet<string>): { workloads: number; digest: string } {
  const here = keys ? entries.filter((e) => keys.has(e.record.key)) : entries;
  const lines: string[] = [];
  const workloads = new Set<string>();
  for (const threads of [undefined, ...threadCounts(here, match)]) {
    for (const [key, list] of rankedByWorkload(here, { ...match, threads })) {
      workloads.add(key);
      lines.push(`${key} ${threads ?? 'any'} ${recordId(list[0].entry.record)}`);
    }
  }
  return { workloads: workloads.size, digest: createHash('sha256').update(lines.sort().join('\n')).digest('hex').slice(0, 32) };
}
