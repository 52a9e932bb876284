// "Apply history best": the valid schedule with the lowest cost, per (workload key, target,
// hardware fingerprint, thread count): the schedules of the latest confirmation pass first, by that
// pass's timings, then those of earlier passes, then the others by the mean of all the
// timings their records hold (see rankedSchedules). A record counts when it ran and was
// verified (error null).
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

/** A workload on one target and machine: what records are ranked within (at each thread count: rankedByCount). */
const workloadGroup = (r: Pick<TuningRecord, 'key' | 'target' | 'fingerprint'>): string => JSON.stringify([r.key, r.target, r.fingerprint]);

/**
 * The identity distill and compile rank records by: a workload on one target and machine, at
 * one thread count (null for a workload none of whose records says its count).
 */
export const recordGroup = (r: Pick<TuningRecord, 'key' | 'target' | 'fingerprint' | 'threads'>): string =>
  JSON.stringify([r.key, r.target, r.fingerprint, r.threads ?? null]);

/** The identity of a schedule: records of the same steps measured the same schedule. */
const scheduleOf = (r: TuningRecord): string => stepsKey(r.steps);

/**
 * The policy of the records the confirmation pass appends (app/tune.ts confirmBest): a
 * schedule timed again beside its rivals, not a trial. The schedule's first record keeps the
 * policy that proposed it.
 */
export const CONFIRM_POLICY = 'confirm';

/** A schedule of a task: its latest valid record (a real line of a log) and what it costs. */
export interface RankedSchedule<E> {
  entry: E;
  /** What the ranking compares: the mean of its timings in the latest confirmation pass, else of its confirmation timings, else of all its timings. */
  cost: number;
  /** The mean of every timing its records hold. */
  mean: number;
  /** Whether a confirmation pass timed it. */
  confirmed: boolean;
}

/**
 * Whether a task's records measured `steps`: any record of that schedule, valid or failed (a
 * schedule that failed was measured, as resume counts it: timing it again would fail again).
 */
export function measuredSchedule(records: Iterable<{ record: TuningRecord }>, steps: readonly Step[]): boolean {
  const key = stepsKey(steps);
  for (const e of records) if (scheduleOf(e.record) === key) return true;
  return false;
}

/**
 * Confirmation records written before records carried `pass` (older tensortune 0.1.0
 * logs) are grouped into passes by time: a task's pass measures its candidates in two
 * batches seconds apart, and its passes are whole runs apart.
 */
export const LEGACY_PASS_GAP_MS = 60_000;

/**
 * The entries of a task's latest confirmation pass (the pass whose newest record is the
 * newest), among its confirmation entries. By time, not by place in the log: distill and Nx
 * outputs reorder records.
 */
function latestPass<E extends { record: TuningRecord }>(confirmations: readonly E[]): Set<E> {
  const timeOf = (e: E): number => Date.parse(e.record.time);
  const passOf = new Map<E, string>();
  const legacy = confirmations.filter((e) => e.record.pass === undefined).sort((a, b) => timeOf(a) - timeOf(b));
  let legacyPass = 0;
  legacy.forEach((e, i) => {
    if (i > 0 && timeOf(e) - timeOf(legacy[i - 1]) > LEGACY_PASS_GAP_MS) legacyPass += 1;
    passOf.set(e, `legacy ${legacyPass}`);
  });
  for (const e of confirmations) if (e.record.pass !== undefined) passOf.set(e, `pass ${e.record.pass}`);
  // The pass of the newest record (of equal times, the first read).
  let newest: E | undefined;
  for (const e of confirmations) if (!newest || timeOf(e) > timeOf(newest)) newest = e;
  return new Set(newest ? confirmations.filter((e) => passOf.get(e) === passOf.get(newest!)) : []);
}

/**
 * Valid schedules per group (recordGroup, or `groupOf`), fastest first (of equal costs, the
 * first read), in order of each group's first valid entry. Records of the same steps are one
 * schedule measured more than once; it stands for its latest record.
 *
 * Three tiers. The schedules the task's latest confirmation pass timed rank first, by the
 * mean of their timings in that pass; then the schedules only earlier passes timed, by the
 * mean of their confirmation timings; then the others, by the mean of all their timings.
 * A task's best record is the minimum of many noisy timings, biased low, and a busy machine
 * drifts: on the AVX2 box a mobilenet conv's schedules timed at 1.42-1.50 ms during the
 * search re-timed at 1.8-2.1 minutes later, the default with them. A pass times its
 * candidates together, forward and reversed, so drift hits them alike, and only timings
 * taken together may decide between schedules. Averaged over passes, a schedule the
 * latest pass did not re-time kept the timings of a fast phase hours earlier and beat the
 * ones it re-timed in a slow phase (a tuned mobilenet conv ran 14% slower than the default
 * in the network).
 * The entry is a real record, never a merged one: what distill or an Nx output writes back
 * into a store must not count timings twice.
 */
export function rankedSchedules<E extends { record: TuningRecord }>(
  entries: Iterable<E>, groupOf: (r: TuningRecord) => string = workloadGroup,
): Map<string, RankedSchedule<E>[]> {
  const groups = new Map<string, Map<string, E[]>>();
  for (const entry of entries) {
    if (!isValidRecord(entry.record)) continue;
    const group = groupOf(entry.record);
    let schedules = groups.get(group);
    if (!schedules) groups.set(group, (schedules = new Map()));
    const key = scheduleOf(entry.record);
    const same = schedules.get(key);
    if (same) same.push(entry);
    else schedules.set(key, [entry]);
  }
  const timingsOf = (list: readonly E[]): number[] => list.flatMap((e) => e.record.costs_ms);
  const isConfirmation = (e: E): boolean => e.record.policy === CONFIRM_POLICY;
  return new Map([...groups].map(([group, schedules]) => {
    const latest = latestPass([...schedules.values()].flat().filter(isConfirmation));
    const ranked = [...schedules.values()].map((same) => {
      const mean = meanCost({ costs_ms: timingsOf(same) });
      const inLatest = timingsOf(same.filter((e) => latest.has(e)));
      const confirmations = timingsOf(same.filter(isConfirmation));
      const tier = inLatest.length > 0 ? 0 : confirmations.length > 0 ? 1 : 2;
      const cost = tier === 0 ? meanCost({ costs_ms: inLatest }) : tier === 1 ? meanCost({ costs_ms: confirmations }) : mean;
      const schedule: RankedSchedule<E> = { entry: same[same.length - 1], cost, mean, confirmed: tier < 2 };
      return { schedule, tier };
    });
    ranked.sort((a, b) => a.tier - b.tier || a.schedule.cost - b.schedule.cost);
    return [group, ranked.map((r) => r.schedule)];
  }));
}

/**
 * rankedSchedules per workload and thread count, by recordGroup. A timing at 2 threads does
 * not compare with one at 1, so each count is ranked on its own: the same steps timed at
 * both are two schedules, not one with a blended cost, and each count keeps its best
 * (distill keeps both). A record that does not say its count (logs written before records
 * carried `threads`) is ranked with every count of its workload, as a tune at any count
 * resumes from it; alone where no record of the workload says one (GPU records, old logs),
 * so a log of one count ranks as it did before records said so.
 */
export function rankedByCount<E extends { record: TuningRecord }>(entries: Iterable<E>): Map<string, RankedSchedule<E>[]> {
  // Per workload, its entries in log order (a schedule stands for its latest record) and the counts they say, in order of appearance.
  const byWorkload = new Map<string, { entries: E[]; counts: Set<number> }>();
  for (const entry of entries) {
    const group = workloadGroup(entry.record);
    let w = byWorkload.get(group);
    if (!w) byWorkload.set(group, (w = { entries: [], counts: new Set() }));
    w.entries.push(entry);
    if (entry.record.threads !== undefined) w.counts.add(entry.record.threads);
  }
  const out = new Map<string, RankedSchedule<E>[]>();
  for (const w of byWorkload.values()) {
    for (const n of w.counts.size > 0 ? [...w.counts] : [undefined]) {
      const atCount = w.entries.filter((e) => e.record.threads === undefined || e.record.threads === n);
      const ranked = [...rankedSchedules(atCount).values()][0];
      if (ranked) out.set(recordGroup({ ...ranked[0].entry.record, threads: n }), ranked);
    }
  }
  return out;
}

/** rankedByCount's entries: one per schedule, fastest first. */
export function rankedRecords<E extends { record: TuningRecord }>(entries: Iterable<E>): Map<string, E[]> {
  return new Map([...rankedByCount(entries)].map(([group, list]) => [group, list.map((s) => s.entry)]));
}

/** The best valid entry per (key, target, fingerprint, thread count): rankedByCount. */
export function bestRecords<E extends { record: TuningRecord }>(entries: Iterable<E>): Map<string, E> {
  return new Map([...rankedRecords(entries)].map(([group, list]) => [group, list[0]]));
}

/**
 * What a run takes records for: the exact target string and hardware fingerprint, and where
 * `threads` is given (tune, on a CPU), the thread count the candidates ran on. A timing at 2
 * threads is not comparable with one at 1, so a tune at 1 thread leaves the 2-thread
 * records of its log alone (they stay in the log). A record that does not say (GPU targets,
 * logs written before records carried `threads`) matches any thread count.
 */
export interface RecordMatch {
  target: string;
  fingerprint: string;
  threads?: number;
}

export const matchesRecord = (r: Pick<TuningRecord, 'target' | 'fingerprint' | 'threads'>, m: RecordMatch): boolean =>
  r.target === m.target && r.fingerprint === m.fingerprint && (m.threads === undefined || r.threads === undefined || r.threads === m.threads);

/**
 * Valid schedules for one target and fingerprint (and thread count, where given), per
 * workload key, fastest first (so a caller can fall back to the next one when the best no
 * longer applies). At one thread count, its records and those that do not say are ranked
 * together. Without one (compile, when not told the count the model runs at), each count is
 * ranked on its own (rankedByCount), and a workload measured at several lists first the
 * count of its newest record (the latest tune's, as the latest confirmation pass ranked
 * first before records said their count), then the others, newest first: timings at
 * different counts are never compared.
 */
export function rankedByWorkload(entries: Iterable<LogEntry>, match: RecordMatch): Map<string, RankedSchedule<LogEntry>[]> {
  const here = [...entries].filter((e) => matchesRecord(e.record, match));
  if (match.threads !== undefined) return rankedSchedules(here, (r) => r.key);
  const newestOf = (list: readonly RankedSchedule<LogEntry>[]): number =>
    Math.max(...list.map((s) => (s.entry.record.threads === undefined ? -Infinity : Date.parse(s.entry.record.time))));
  const perKey = new Map<string, RankedSchedule<LogEntry>[][]>();
  for (const list of rankedByCount(here).values()) {
    const key = list[0].entry.record.key;
    const lists = perKey.get(key);
    if (lists) lists.push(list);
    else perKey.set(key, [list]);
  }
  const out = new Map<string, RankedSchedule<LogEntry>[]>();
  for (const [key, lists] of perKey) {
    if (lists.length === 1) { out.set(key, lists[0]); continue; }
    const merged: RankedSchedule<LogEntry>[] = [];
    const listed = new Set<LogEntry>();
    // Stable: of equal times, the count that appeared first in the log.
    for (const list of [...lists].sort((a, b) => newestOf(b) - newestOf(a))) {
      // A record that does not say its count ranks at every count: listed once.
      for (const s of list) if (!listed.has(s.entry)) { listed.add(s.entry); merged.push(s); }
    }
    out.set(key, merged);
  }
  return out;
}

/** The thread counts the records of one target and fingerprint were measured at (records that do not say are left out), ascending. */
export function threadCounts(entries: Iterable<LogEntry>, match: RecordMatch): number[] {
  const counts = new Set<number>();
  for (const e of entries) if (e.record.threads !== undefined && matchesRecord(e.record, match)) counts.add(e.record.threads);
  return [...counts].sort((a, b) => a - b);
}

/** Entries of one target string and fingerprint (and thread count, where given), per workload key, in log order. */
export function byWorkload(entries: Iterable<LogEntry>, match: RecordMatch): Map<string, LogEntry[]> {
  const out = new Map<string, LogEntry[]>();
  for (const entry of entries) {
    const r = entry.record;
    if (!matchesRecord(r, match)) continue;
    const list = out.get(r.key);
    if (list) list.push(entry);
    else out.set(r.key, [entry]);
  }
  return out;
}
