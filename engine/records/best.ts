// "Apply history best": the valid schedule with the lowest mean cost, per (workload key,
// target, hardware fingerprint), a schedule's cost being the mean of all the timings its
// records hold. A record counts when it ran and was verified (error null).
// Unlike TVM, which matches records on the target's keys (any `cpu`), a record applies only
// to the exact target string and fingerprint it was measured on.

import type { LogEntry } from './log';
import type { TuningRecord } from './record';
import { stepsKey } from '../schedule/steps';

export const meanCost = (r: { costs_ms: readonly number[] }): number => r.costs_ms.reduce((a, b) => a + b, 0) / r.costs_ms.length;

/** The cost a search learns from: the mean of a verified measurement, null for an error (a record or a measure outcome). */
export const measuredCost = (m: { error: unknown; costs_ms: readonly number[] }): number | null =>
  m.error === null && m.costs_ms.length > 0 ? meanCost(m) : null;

export const isValidRecord = (r: TuningRecord): boolean =>
  r.error === null && r.costs_ms.length > 0 && r.costs_ms.every((c) => Number.isFinite(c) && c >= 0);

/** The identity distill and compile group records by. */
export const recordGroup = (r: Pick<TuningRecord, 'key' | 'target' | 'fingerprint'>): string => JSON.stringify([r.key, r.target, r.fingerprint]);

/** The identity of a schedule: records of the same steps measured the same schedule. */
const scheduleOf = (r: TuningRecord): string => stepsKey(r.steps);

/** A schedule of a task: its latest valid record (a real line of a log) and the mean of every timing its records hold. */
export interface RankedSchedule<E> {
  entry: E;
  cost: number;
}

/**
 * Valid schedules per (key, target, fingerprint), fastest first (of equal costs, the first
 * read), in order of each group's first valid entry. Records of the same steps are one
 * schedule measured more than once (the default in every tune, the confirmation pass at the
 * end of a tune): it ranks by the mean of every timing its records hold, and stands for its
 * latest record. Ranking single records instead rewards the luckiest timing: on a noisy
 * machine, re-timed against its default, the "best" record of 10 of 14 tuned resnet-18
 * tasks was slower (README, "Measured"). The entry is a real record, never a merged one:
 * what distill or an Nx output writes back into a store must not count timings twice.
 */
export function rankedSchedules<E extends { record: TuningRecord }>(entries: Iterable<E>): Map<string, RankedSchedule<E>[]> {
  const groups = new Map<string, Map<string, E[]>>();
  for (const entry of entries) {
    if (!isValidRecord(entry.record)) continue;
    const group = recordGroup(entry.record);
    let schedules = groups.get(group);
    if (!schedules) groups.set(group, (schedules = new Map()));
    const key = scheduleOf(entry.record);
    const same = schedules.get(key);
    if (same) same.push(entry);
    else schedules.set(key, [entry]);
  }
  return new Map([...groups].map(([group, schedules]) => {
    const items = [...schedules.values()].map((same) => ({ entry: same[same.length - 1], cost: meanCost({ costs_ms: same.flatMap((e) => e.record.costs_ms) }) }));
    return [group, items.sort((a, b) => a.cost - b.cost)];
  }));
}

/** rankedSchedules' entries: one per schedule, fastest first. */
export function rankedRecords<E extends { record: TuningRecord }>(entries: Iterable<E>): Map<string, E[]> {
  return new Map([...rankedSchedules(entries)].map(([group, list]) => [group, list.map((s) => s.entry)]));
}

/** The best valid entry per (key, target, fingerprint), in order of each group's first record. */
export function bestRecords<E extends { record: TuningRecord }>(entries: Iterable<E>): Map<string, E> {
  return new Map([...rankedRecords(entries)].map(([group, list]) => [group, list[0]]));
}

/**
 * Valid schedules for one target and fingerprint, per workload key, fastest first (so a
 * caller can fall back to the next one when the best no longer applies).
 */
export function rankedByWorkload(entries: Iterable<LogEntry>, target: string, fingerprint: string): Map<string, RankedSchedule<LogEntry>[]> {
  const here = [...entries].filter((e) => e.record.target === target && e.record.fingerprint === fingerprint);
  return new Map([...rankedSchedules(here).values()].map((list) => [list[0].entry.record.key, list]));
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
