// Options of the tensortune:benchmark executor (executors/benchmark/schema.json).
import type { NetworkExecutorOptions } from '../run';

export interface BenchmarkExecutorOptions extends NetworkExecutorOptions {
  /** Timed measurements (default 5). */
  repeat?: number;
  /** Runs per measurement (grown until one lasts minRepeatMs). */
  number?: number;
  minRepeatMs?: number;
  /** Threads (default: the target's threads, else all cores). */
  threads?: number;
}
