// Opening a log to resume tuning: what has already been measured, per workload key, for
// the target and machine being tuned (records of other targets or machines would mislead
// the search and the cost model, so they are left out).

import { byWorkload, measuredCost } from './best';
import { readRecords, type LogEntry, type ReadOptions } from './log';
import type { MeasuredState } from '../search/types';

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
  file: string, match: { target: string; fingerprint: string }, opts: ReadOptions = {},
): Promise<OpenedLog> {
  const { entries, skipped } = await readRecords(file, { missingOk: true, ...opts });
  return { entries, measured: measuredStates(entries, match), skipped };
}

export function measuredStates(entries: Iterable<LogEntry>, match: { target: string; fingerprint: string }): Map<string, MeasuredState[]> {
  const out = new Map<string, MeasuredState[]>();
  for (const [key, list] of byWorkload(entries, match)) {
    out.set(key, list.map(({ record: r }) => {
      const state: MeasuredState = { steps: r.steps, cost_ms: measuredCost(r) };
      if (r.genome) state.genome = r.genome;
      return state;
    }));
  }
  return out;
}
