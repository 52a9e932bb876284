// The measurer's contract: how candidates are timed (MeasureOptions), what measures them
// (Measurer, on this machine in measurer.ts or on devices in engine/remote/), and where
// (MeasureDevice). The search's task scheduler drives a Measurer; it never builds one.

import type { Task } from '../graph/extract';
import type { Step } from '../schedule/steps';
import type { Target } from '../target';
import type { MeasureOutcome } from '../records/outcome';
import type { HostMoves } from './host-rate';

export interface MeasureOptions {
  /** As TVM's time_evaluator. */
  number: number;
  repeat: number;
  minRepeatMs: number;
  /** Per candidate: the whole run in the worker (load, warm-up, repeats). */
  timeoutMs: number;
  /** Evict caches between runs (TVM's enable_cpu_cache_flush): a task's weights, which a
   *  network reads cold (measurer.ts coldInputs); a task without weights runs warm. */
  flush: boolean;
  /** Parallel compiler processes (default: number of cores). */
  buildJobs: number;
  /** Threads of the measured kernel (default 1). */
  threads: number;
}

/** Where candidates are measured when it is not this machine (engine/remote: devices behind
 *  runner commands): its fingerprint keys the records, and it makes the run's measurer. */
export interface MeasureDevice {
  fingerprint: string;
  measurer(target: Target, opts: Partial<MeasureOptions> & { seed: number }): Measurer;
}

/** Builds, runs and verifies candidates of one task at a time; never throws for a bad candidate. */
export interface Measurer {
  measure(task: Task, candidates: readonly Step[][]): Promise<MeasureOutcome[]>;
  close(): Promise<void>;
  /**
   * Resolves at once, or when the candidates being timed have finished: work done beside a
   * measurement (the scheduler's prefetch) waits here, so that it shares the CPU with the
   * builds but never with a timed run. Absent: nothing to wait for.
   */
  whenIdle?(): Promise<void>;
  /** Timings taken again (measure/host-rate.ts HostMoves). Absent: the measurer takes none. */
  readonly hostMoves?: HostMoves;
}
