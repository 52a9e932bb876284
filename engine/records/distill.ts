// Distill: keep only the best valid record per (workload key, target, fingerprint), as
// TVM's `measure_record --mode distill`. The output is written whole (temp file + rename)
// under its lock; records already in the output take part, so distilling into the same
// file twice, or several logs into one file, keeps the best of all.

import { promises as fs } from 'node:fs';
import path from 'node:path';
import { bestRecords } from './best';
import { readRecordFiles, readRecords, withFileLock, type ReadOptions } from './log';
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

export async function distillFiles(inputs: readonly string[], out: string, opts: ReadOptions = {}): Promise<DistillResult> {
  const records = (await readRecordFiles(inputs, opts)).map((e) => e.record);
  await fs.mkdir(path.dirname(path.resolve(out)), { recursive: true });
  return withFileLock(out, async () => {
    const outputIsInput = inputs.some((f) => path.resolve(f) === path.resolve(out));
    if (!outputIsInput) records.push(...(await readRecords(out, { ...opts, missingOk: true })).entries.map((e) => e.record));
    const kept = distill(records);
    const tmp = `${out}.tmp-${process.pid}`;
    await fs.writeFile(tmp, kept.map((r) => JSON.stringify(r) + '\n').join(''));
    await fs.rename(tmp, out);
    return { read: records.length, kept: kept.length, out };
  });
}
