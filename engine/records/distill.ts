// Distill: keep only the best valid record per (workload key, target, fingerprint), as
// TVM's `measure_record --mode distill`.
//
// distillFiles writes the output whole (temp file + rename). Records already in the output
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
import { bestRecords } from './best';
import { readRecords, withFileLock, type LogEntry, type ReadOptions } from './log';
import type { TuningRecord } from './record';

/** The best valid record of each group, in order of each group's first record. */
export function distill(records: Iterable<TuningRecord>): TuningRecord[] {
  return [...bestRecords([...records].map((record) => ({ record }))).values()].map((e) => e.record);
}

export interface DistillResult {
  /** Records read (valid lines of the inputs and of an existing output). */
  read: number;
  kept: number;
  out: string;
}

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

export async function distillFiles(inputs: readonly string[], out: string, opts: ReadOptions = {}): Promise<DistillResult> {
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
    const kept = distill(entries.map((e) => e.record));
    const tmp = `${out}.tmp-${process.pid}`;
    try {
      const fh = await fs.open(tmp, 'w');
      try {
        await fh.writeFile(kept.map((r) => JSON.stringify(r) + '\n').join(''));
        await fh.datasync();
      } finally {
        await fh.close();
      }
      await fs.rename(tmp, out);
    } finally {
      await fs.rm(tmp, { force: true });
    }
    return { read: entries.length, kept: kept.length, out };
  });
}
