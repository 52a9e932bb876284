// One tuning record: a JSON line per measured candidate (schemas/record.schema.json).

import type { ErrorClass, RecordGenome } from './outcome';

export type { RecordGenome } from './outcome';
import type { Step } from '../schedule/steps';

export const RECORD_FORMAT_VERSION = 1;

export interface TuningRecord {
  /** Record format version (RECORD_FORMAT_VERSION). */
  v: number;
  /** tensortune engine version that measured it. */
  engine: string;
  /** Workload key of the task (TVM's format). */
  key: string;
  /** Task description, e.g. `conv2d_nhwc+add+relu 1x56x56x64 -> 1x56x56x128`. */
  desc: string;
  /** Canonical target string. */
  target: string;
  /** Hardware fingerprint (engine/target.ts). */
  fingerprint: string;
  steps: Step[];
  /** Per repeat, ms per run; empty for an error. */
  costs_ms: number[];
  error: ErrorClass | null;
  message?: string;
  /** Seed of the search that proposed it and of the measured inputs. */
  seed: number;
  /** ISO 8601 time of measurement. */
  time: string;
  /** Search policy that proposed it. */
  policy?: string;
  /**
   * Threads the candidate ran on (a CPU target's measurement); absent on GPU targets and in
   * records written before records carried it. Tune resumes only from records of its own
   * thread count (records/best.ts RecordMatch).
   */
  threads?: number;
  /** The config budget `nx tune` measured it under; absent for `tensortune tune`. */
  budget?: string;
  /**
   * The confirmation pass that timed it (policy 'confirm'): every record of one task's pass
   * shares it, so compile compares schedules by the timings of one pass only.
   */
  pass?: string;
  /**
   * Where a confirmation pass timed it: absent, alone (the kernel by itself, caches
   * flushed); 'network', inside the compiled network (app/network-pass.ts).
   */
  scope?: 'network';
  /** How the search built `steps` (sketch and annotation values), so a resumed search can evolve it. */
  genome?: RecordGenome;
}
