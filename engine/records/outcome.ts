// What a measurement yields, as the measurer returns it, the records keep it and the search
// and the cost model learn from it. A module of its own below records/, measure/ and
// search/, so that each takes these shapes without importing the others.

import type { Step } from '../schedule/steps';

/** Why a candidate has no valid time. `null` in a record means it ran and was verified.
 *  device_error: remote measurement lost the devices it ran on (engine/remote/pool.ts). */
export type ErrorClass = 'invalid_schedule' | 'compile_error' | 'runtime_error' | 'timeout' | 'wrong_answer' | 'device_error';

/** One candidate's measurement. */
export interface MeasureOutcome {
  steps: Step[];
  /** Per repeat, milliseconds per run; empty when `error` is set. */
  costs_ms: number[];
  error: ErrorClass | null;
  /** First lines of the compiler/runtime message, or how the output differed. */
  message?: string;
  /** Wall time spent compiling and running this candidate (ms), for the "outside measurement" figure. */
  build_ms: number;
  run_ms: number;
}

/** A measured candidate as the search and the cost model see it. */
export interface MeasuredState {
  steps: Step[];
  /** Mean cost in ms, or null for an error. */
  cost_ms: number | null;
  /** How a search built `steps`, when a record says (see SearchSpace.rebuild). */
  genome?: RecordGenome;
}

/** A Genome (engine/search/annotate.ts) as JSON. */
export interface RecordGenome {
  sketch: number;
  values: Record<string, number | number[]>;
}
