// The workspace records store: every network logs into <store>/<network>.<target>.jsonl
// and reads the other logs there. A task another network already tuned is skipped by the
// tuner; its best record is then copied into this network's log, so the log alone is
// enough to compile the network (and is what Nx caches as tune's output).

import { promises as fs } from 'node:fs';
import path from 'node:path';
import { bestRecords, recordGroup } from '../../engine/records/best';
import { appendRecords, readRecordFiles, readRecords } from '../../engine/records/log';
import { hardwareFingerprint, parseTarget } from '../../engine/target';

/** The other logs of the store (sorted), never `own`. */
export async function otherLogs(storeDir: string, own: string): Promise<string[]> {
  let names: string[];
  try {
    names = await fs.readdir(storeDir);
  } catch {
    return [];
  }
  return names.filter((n) => n.endsWith('.jsonl')).sort().map((n) => path.join(storeDir, n)).filter((f) => path.resolve(f) !== path.resolve(own));
}

/**
 * For each workload key with no valid record in `own` for this target and machine, append
 * the best valid record the other logs hold. Returns the keys copied.
 */
export async function adoptSharedRecords(own: string, others: readonly string[], keys: readonly string[], targetText: string, warn: (m: string) => void): Promise<string[]> {
  if (others.length === 0) return [];
  const target = parseTarget(targetText, 'target');
  const fingerprint = hardwareFingerprint(target);
  const mine = bestRecords((await readRecords(own, { missingOk: true, warn })).entries);
  const theirs = bestRecords(await readRecordFiles(others, { warn }));
  const wanted = new Set(keys);
  const adopt = [...theirs.values()]
    .map((e) => e.record)
    .filter((r) => wanted.has(r.key) && r.target === target.text && r.fingerprint === fingerprint)
    .filter((r) => !mine.has(recordGroup(r)));
  if (adopt.length > 0) await appendRecords(own, adopt);
  return adopt.map((r) => r.key);
}
