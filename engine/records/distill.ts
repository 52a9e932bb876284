// Distill: keep only the best record per (workload key, target, fingerprint, thread count), as TVM's
// `measure_record --mode distill`: the fastest valid record whose steps still apply
// (replay.ts: well-formed, and replayed and lowered on the task's DAG where it is known).
// A faster record that does not apply is passed over for the next one, so compile never
// meets a "best" it has to throw away while a usable runner-up was dropped.
//
// distillFiles writes the output whole (writeRecordsFile: temp file + rename). Records already in the output
// take part, so distilling into the same file twice, or several logs into one file, keeps
// the best of all. Other processes may be appending to these logs (tune holds `<log>.lock`
// for each append), so every log is read under its lock, and the output is read, distilled
// and replaced without letting go of its lock: an append waits and then lands in the new
// file instead of being renamed away. Inputs other than the output are read (each under
// its own lock) before the output's lock is taken, so a process never holds two locks and
// two distills crossing each other's files cannot deadlock; what is appended to them later
// stays in them.

import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { ComputeDAG } from '../ir/dag';
import { rankedRecords } from './best';
import { readRecords, withFileLock, type LogEntry, type ReadOptions } from './log';
import type { TuningRecord } from './record';
import { firstThatReplays } from './replay';
import { writeRecordsFile } from './store';

export interface DistillOptions {
  /**
   * Compute DAGs of the known tasks, by workload key: a record of one of them is kept only
   * if it replays and lowers on it. Records of other tasks are checked for well-formed steps.
   */
  dags?: ReadonlyMap<string, ComputeDAG>;
}

export interface Distilled<E> {
  /** The kept entry of each group, in order of each group's first valid record. */
  kept: E[];
  /** Valid entries faster than their group's kept one whose steps do not apply, and why. */
  passedOver: { entry: E; why: string }[];
  /** Groups with valid records of which none applies (nothing is kept for them). */
  dropped: number;
  /** Kept entries whose task's DAG was not known: their steps were checked, not replayed. */
  notReplayed: number;
}

/** The fastest valid entry that applies, per (key, target, fingerprint, thread count): recordGroup. */
export function distillEntries<E extends { record: TuningRecord }>(entries: Iterable<E>, opts: DistillOptions = {}): Distilled<E> {
  const out: Distilled<E> = { kept: [], passedOver: [], dropped: 0, notReplayed: 0 };
  for (const list of rankedRecords(entries).values()) {
    const dag = opts.dags?.get(list[0].record.key);
    const kept = firstThatReplays(list, dag, (entry, why) => out.passedOver.push({ entry, why }));
    if (!kept) { out.dropped += 1; continue; }
    out.kept.push(kept);
    if (!dag) out.notReplayed += 1;
  }
  return out;
}

/** The kept records of distillEntries. */
export function distill(records: Iterable<TuningRecord>, opts: DistillOptions = {}): TuningRecord[] {
  return distillEntries([...records].map((record) => ({ record })), opts).kept.map((e) => e.record);
}

export interface DistillFilesOptions extends ReadOptions, DistillOptions {}

export interface DistillResult {
  /** Records read (valid lines of the inputs and of an existing output). */
  read: number;
  kept: number;
  out: string;
  /** Records passed over because their steps do not apply: where (`file:line`) and why. */
  passedOver: { where: string; why: string }[];
  /** Groups left out because none of their records applies. */
  dropped: number;
  /** Kept records whose task's DAG was not known (steps checked, not replayed). */
  notReplayed: number;
}

const defaultWarn = (message: string): void => { process.stderr.write(`tensortune: warning: ${message}\n`); };

const exists = (file: string): Promise<boolean> => fs.stat(file).then(() => true, () => false);

/** Reads a log under its lock (a read-only log, where no lock can be created, without). */
async function readLocked(file: string, opts: ReadOptions): Promise<LogEntry[]> {
  if (!(await exists(file))) return (await readRecords(file, opts)).entries; // the usual 'does not exist' error
  let entered = false;
  try {
    return await withFileLock(file, async () => {
      entered = true;
      return (await readRecords(file, opts)).entries;
    });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (entered || (code !== 'EACCES' && code !== 'EPERM' && code !== 'EROFS')) throw e;
    return (await readRecords(file, opts)).entries;
  }
}

export async function distillFiles(inputs: readonly string[], out: string, opts: DistillFilesOptions = {}): Promise<DistillResult> {
  const outId = path.resolve(out);
  const files = [...new Map(inputs.map((f) => [path.resolve(f), f])).entries()]; // each input once
  const outputIsInput = files.some(([id]) => id === outId);
  const read = new Map<string, LogEntry[]>();
  for (const [id, file] of files) if (id !== outId) read.set(id, await readLocked(file, opts));
  await fs.mkdir(path.dirname(outId), { recursive: true });
  return withFileLock(out, async () => {
    read.set(outId, (await readRecords(out, { ...opts, missingOk: !outputIsInput })).entries);
    const order = outputIsInput ? files.map(([id]) => id) : [...files.map(([id]) => id), outId];
    const entries = order.flatMap((id) => read.get(id)!);
    const result = distillEntries(entries, opts);
    await writeRecordsFile(out, result.kept.map((e) => e.record), out); // a full disk: one line, no stray temp file
    if (result.passedOver.length > 0) {
      const first = result.passedOver[0]!;
      const none = result.dropped > 0 ? `; ${result.dropped} task(s) have no record that applies and were left out` : '';
      (opts.warn ?? defaultWarn)(
        `passed over ${result.passedOver.length} record(s) whose steps do not apply to their task, keeping the fastest that does${none} ` +
        `(first: ${first.entry.file}:${first.entry.line}: ${first.why})`,
      );
    }
    return {
      read: entries.length, kept: result.kept.length, out,
      passedOver: result.passedOver.map(({ entry, why }) => ({ where: `${entry.file}:${entry.line}`, why })),
      dropped: result.dropped, notReplayed: result.notReplayed,
    };
  });
}
