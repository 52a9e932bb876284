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

/**
 * Valid entries per (key, target, fingerprint), fastest first (of equal costs, the first
 * read), in order of each group's first valid entry.
 */
export function rankedRecords<E extends { record: TuningRecord }>(entries: Iterable<E>): Map<string, E[]> {
  const groups = new Map<string, { entry: E; cost: number }[]>();
  for (const entry of entries) {
    if (!isValidRecord(entry.record)) continue;
    const group = recordGroup(entry.record);
    const item = { entry, cost: meanCost(entry.record) };
    const list = groups.get(group);
    if (list) list.push(item);
    else groups.set(group, [item]);
  }
  return new Map([...groups].map(([group, list]) => [group, list.sort((a, b) => a.cost - b.cost).map((i) => i.entry)]));
}

/** The best valid entry per (key, target, fingerprint), in order of each group's first record. */
export function bestRecords<E extends { record: TuningRecord }>(entries: Iterable<E>): Map<string, E> {
  return new Map([...rankedRecords(entries)].map(([group, list]) => [group, list[0]]));
}

/**
 * Valid entries for one target and fingerprint, per workload key, fastest first (so a
 * caller can fall back to the next one when the best no longer applies).
 */
export function rankedByWorkload(entries: Iterable<LogEntry>, target: string, fingerprint: string): Map<string, LogEntry[]> {
  const here = [...entries].filter((e) => e.record.target === target && e.record.fingerprint === fingerprint);
  return new Map([...rankedRecords(here).values()].map((list) => [list[0].record.key, list]));
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
