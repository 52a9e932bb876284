// A tune's records as they stood a given number of minutes into the tune (bench/tune-curve.ts):
// the log's records ordered by their time stamps, minutes counted from the first.

import type { TuningRecord } from '../engine/records/record';

export interface TimedLog {
  /** The records that carry a time stamp. */
  readonly count: number;
  /** Minutes from the first record to the last. */
  readonly spanMinutes: number;
  /** The records measured at most `minutes` after the first one, oldest first. */
  within(minutes: number): TuningRecord[];
}

/** `records` by time; undefined when none has a time stamp. */
export function timedLog(records: readonly TuningRecord[]): TimedLog | undefined {
  const timed = records.map((record) => ({ record, at: Date.parse(record.time) })).filter((e) => Number.isFinite(e.at)).sort((a, b) => a.at - b.at);
  if (timed.length === 0) return undefined;
  const start = timed[0]!.at;
  return {
    count: timed.length,
    spanMinutes: (timed[timed.length - 1]!.at - start) / 60_000,
    within: (minutes) => timed.filter((e) => e.at <= start + minutes * 60_000).map((e) => e.record),
  };
}
