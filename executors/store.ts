// The workspace record store as the Nx targets see it (see plugin/resolve.ts for the
// layout). Nx restores a tune target's output file on a cache hit; that file belongs to
// its target configuration alone, and before tune or compile reads the store, every such
// output is merged into the store's logs (append-only, measurements deduplicated), so a
// restore can bring measurements back but never take one away.

import { promises as fs } from 'node:fs';
import path from 'node:path';
import { mergeIntoStore, readStore, bestFor, storeIds, storeLogs, writeRecordsFile } from '../engine/records/store';
import type { LogEntry } from '../engine/records/log';
import { storeLogFile, tuneOutputsDir } from '../plugin/resolve';

/** Every tune output under `<store>/nx/<network>/<target>.<budget>.jsonl`, with the store log it feeds. */
async function tuneOutputs(storeDir: string): Promise<{ file: string; log: string }[]> {
  const root = tuneOutputsDir(storeDir);
  const out: { file: string; log: string }[] = [];
  let networks: string[];
  try {
    networks = (await fs.readdir(root, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name).sort();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  for (const network of networks) {
    for (const name of (await fs.readdir(path.join(root, network))).filter((n) => n.endsWith('.jsonl')).sort()) {
      const target = name.split('.')[0];
      out.push({ file: path.join(root, network, name), log: storeLogFile(storeDir, network, target) });
    }
  }
  return out;
}

/**
 * Merges every tune output (restored by Nx or written by an earlier run) into the store;
 * returns the records added. The store is read once for all of them: only a log that gets
 * records it did not hold then is locked and checked again.
 */
export async function absorbTuneOutputs(storeDir: string, warn: (m: string) => void): Promise<number> {
  const byLog = new Map<string, string[]>();
  for (const { file, log } of await tuneOutputs(storeDir)) byLog.set(log, [...(byLog.get(log) ?? []), file]);
  if (byLog.size === 0) return 0;
  const held = await storeIds(storeDir, { warn });
  let added = 0;
  for (const [log, files] of byLog) added += (await mergeIntoStore(storeDir, log, files, { warn, held })).added;
  return added;
}

/** The store's logs other than `own` (sorted). */
export async function otherLogs(storeDir: string, own: string): Promise<string[]> {
  return (await storeLogs(storeDir)).filter((f) => path.resolve(f) !== path.resolve(own));
}

/**
 * Writes a tune configuration's Nx output: every measurement the store holds for the
 * network's workloads on this target and machine (so a machine that restores it can resume
 * the search and compile with the best of them). Written whole, by rename.
 */
export async function writeTuneOutput(
  storeDir: string, output: string, keys: readonly string[], match: { target: string; fingerprint: string }, warn: (m: string) => void,
): Promise<{ records: number; best: number }> {
  const wanted = new Set(keys);
  const entries: LogEntry[] = (await readStore(storeDir, { warn }))
    .filter((e) => wanted.has(e.record.key) && e.record.target === match.target && e.record.fingerprint === match.fingerprint);
  await writeRecordsFile(output, entries.map((e) => e.record));
  return { records: entries.length, best: bestFor(entries, match).length };
}
