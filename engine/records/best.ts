// "Apply history best": the valid schedule with the lowest cost, per (workload key, target,
// hardware fingerprint): the confirmed schedules first, by the mean of their confirmation
// timings, then the others by the mean of all the timings their records hold (see
// rankedSchedules). A record counts when it ran and was verified (error null).
// Unlike TVM, which matches records on the target's keys (any `cpu`), a record applies only
// to the exact target string and fingerprint it was measured on.

import type { LogEntry } from './log';
import type { TuningRecord } from './record';
import { stepsKey, type Step } from '../schedule/steps';

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

/**
 * The policy of the records the confirmation pass appends (search/tune.ts confirmBest): a
 * schedule timed again beside its rivals, not a trial. The schedule's first record keeps the
 * policy that proposed it.
 */
export const CONFIRM_POLICY = 'confirm';

/** A schedule of a task: its latest valid record (a real line of a log) and what it costs. */
export interface RankedSchedule<E> {
  entry: E;
  /** What the ranking compares: the mean of its confirmation timings when it has some, else of all its timings. */
  cost: number;
  /** The mean of every timing its records hold. */
  mean: number;
  /** Whether a confirmation pass timed it. */
  confirmed: boolean;
}

/** Whether a task's ranked schedules (rankedSchedules) hold `steps`: its records measured that schedule. */
export function measuredSchedule(list: readonly RankedSchedule<{ record: TuningRecord }>[], steps: readonly Step[]): boolean {
  const key = stepsKey(steps);
  return list.some((s) => scheduleOf(s.entry.record) === key);
}

/**
 * Valid schedules per (key, target, fingerprint), fastest first (of equal costs, the first
 * read), in order of each group's first valid entry. Records of the same steps are one
 * schedule measured more than once; it stands for its latest record.
 *
 * Schedules a confirmation pass timed rank first, by the mean of their confirmation
 * timings; the others follow, by the mean of all their timings. A task's best record is
 * the minimum of many noisy timings, biased low, and a busy machine drifts: on the AVX2 box
 * a mobilenet conv's schedules timed at 1.42-1.50 ms during the search re-timed at 1.8-2.1
 * minutes later, the default with them. Ranked by the mean of all timings, each schedule
 * the pass re-timed fell behind the ones it had not, and compile took a lucky one (slower
 * than the default in the network). The pass times its candidates together, forward and
 * reversed, so drift hits them alike, and only those timings decide among them.
 * The entry is a real record, never a merged one: what distill or an Nx output writes back
 * into a store must not count timings twice.
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
  const timingsOf = (list: readonly E[]): number[] => list.flatMap((e) => e.record.costs_ms);
  return new Map([...groups].map(([group, schedules]) => {
    const items = [...schedules.values()].map((same): RankedSchedule<E> => {
      const mean = meanCost({ costs_ms: timingsOf(same) });
      const confirmations = timingsOf(same.filter((e) => e.record.policy === CONFIRM_POLICY));
      const confirmed = confirmations.length > 0;
      return { entry: same[same.length - 1], cost: confirmed ? meanCost({ costs_ms: confirmations }) : mean, mean, confirmed };
    });
    return [group, items.sort((a, b) => Number(b.confirmed) - Number(a.confirmed) || a.cost - b.cost)];
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
