// Opening a log to resume tuning: what has already been measured, per workload key, for
// the target, machine and thread count being tuned (records of other targets, machines or
// thread counts would mislead the search and the cost model, so they are left out).

import { byWorkload, meanCost, measuredCost, type RecordMatch } from './best';
import { stepsKey } from '../schedule/steps';
import { readRecords, type LogEntry, type ReadOptions } from './log';
import type { MeasuredState } from './outcome';

export interface OpenedLog {
  /** Every valid line of the file (all targets). */
  entries: LogEntry[];
  /** Measured states of this target and fingerprint, per workload key, in log order. */
  measured: Map<string, MeasuredState[]>;
  /** Lines skipped as broken. */
  skipped: number[];
}

/** Reads `file` (missing = empty, a new log) and groups this machine's measurements by task. */
export async function openLog(
  file: string, match: RecordMatch, opts: ReadOptions = {},
): Promise<OpenedLog> {
  const { entries, skipped } = await readRecords(file, { missingOk: true, ...opts });
  return { entries, measured: measuredStates(entries, match), skipped };
}

/**
 * One state per schedule a task measured, in order of its first record: records of the same
 * steps are one schedule timed more than once (the default, re-measured by every tune run;
 * the confirmation pass at the end of a tune). Its cost is the mean of every valid timing
 * (compile ranks confirmed schedules by their confirmation timings: records/best.ts), or
 * null when none of its records ran. So a resumed search counts distinct schedules as its
 * trials: re-timing what was already measured spends none of a later, larger budget.
 */
export function measuredStates(entries: Iterable<LogEntry>, match: RecordMatch): Map<string, MeasuredState[]> {
  const out = new Map<string, MeasuredState[]>();
  for (const [key, list] of byWorkload(entries, match)) {
    const schedules = new Map<string, { state: MeasuredState; timings: number[] }>();
    for (const { record: r } of list) {
      const id = stepsKey(r.steps);
      let seen = schedules.get(id);
      if (!seen) {
        seen = { state: { steps: r.steps, cost_ms: null }, timings: [] };
        schedules.set(id, seen);
      }
      if (r.genome && !seen.state.genome) seen.state.genome = r.genome;
      if (measuredCost(r) !== null) seen.timings.push(...r.costs_ms);
    }
    out.set(key, [...schedules.values()].map(({ state, timings }) => ({ ...state, cost_ms: timings.length > 0 ? meanCost({ costs_ms: timings }) : null })));
  }
  return out;
}
