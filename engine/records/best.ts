// "Apply history best": the valid record with the lowest mean cost, per (workload key,
// target, hardware fingerprint). A record counts when it ran and was verified (error null).
// Unlike TVM, which matches records on the target's keys (any `cpu`), a record applies only
// to the exact target string and fingerprint it was measured on.

import type { LogEntry } from './log';
import type { TuningRecord } from './record';

export const meanCost = (r: { costs_ms: readonly number[] }): number => r.costs_ms.reduce((a, b) => a + b, 0) / r.costs_ms.length;

/** The cost a search learns from: the mean of a verified measurement, null for an error (a record or a measure outcome). */
export const measuredCost = (m: { error: unknown; costs_ms: readonly number[] }): number | null =>
  m.error === null && m.costs_ms.length > 0 ? meanCost(m) : null;

export const isValidRecord = (r: TuningRecord): boolean =>
  r.error === null && r.costs_ms.length > 0 && r.costs_ms.every((c) => Number.isFinite(c) && c >= 0);

/** The identity distill and compile group records by. */
export const recordGroup = (r: Pick<TuningRecord, 'key' | 'target' | 'fingerprint'>): string => JSON.stringify([r.key, r.target, r.fingerprint]);

/** The best valid entry per (key, target, fingerprint), in order of each group's first record. */
export function bestRecords<E extends { record: TuningRecord }>(entries: Iterable<E>): Map<string, E> {
  const best = new Map<string, { entry: E; cost: number }>();
  for (const entry of entries) {
    if (!isValidRecord(entry.record)) continue;
    const group = recordGroup(entry.record);
    const cost = meanCost(entry.record);
    const held = best.get(group);
    if (!held || cost < held.cost) best.set(group, { entry, cost });
  }
  return new Map([...best].map(([k, v]) => [k, v.entry]));
}

/**
 * Valid entries for one target and fingerprint, per workload key, fastest first (so a
 * caller can fall back to the next one when the best no longer applies).
 */
export function rankedByWorkload(entries: Iterable<LogEntry>, target: string, fingerprint: string): Map<string, LogEntry[]> {
  const out = byWorkload([...entries].filter((e) => isValidRecord(e.record)), { target, fingerprint });
  for (const list of out.values()) list.sort((a, b) => meanCost(a.record) - meanCost(b.record));
  return out;
}

/** Entries measured for one target string and fingerprint, per workload key, in log order. */
export function byWorkload(entries: Iterable<LogEntry>, match: { target: string; fingerprint: string }): Map<string, LogEntry[]> {
  const out = new Map<string, LogEntry[]>();
  for (const entry of entries) {
    const r = entry.record;
    if (r.target !== match.target || r.fingerprint !== match.fingerprint) continue;
    const list = out.get(r.key);
    if (list) list.push(entry);
    else out.set(r.key, [entry]);
  }
  return out;
}
