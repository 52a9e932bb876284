// Options of the tensortune:benchmark executor (executors/benchmark/schema.json).
import type { NetworkExecutorOptions } from '../run';

export interface BenchmarkExecutorOptions extends NetworkExecutorOptions {
  /** Timed measurements (default 10, as the CLI). */
  repeat?: number;
  /** Runs per measurement (grown until one lasts minRepeatMs). */
  number?: number;
  /** Minimum duration of one measurement in ms (default 100, as the CLI). */
  minRepeatMs?: number;
  /** Threads (default: the target's threads, else all cores). */
  threads?: number;
  /** Seed of the random input (default 0). */
  seed?: number;
  /** NAME=FILE: raw float32 input files, relative to the workspace root. */
  input?: string[];
  /** A folder (relative to the workspace root) for the outputs of the last run. */
  saveOutputs?: string;
  /** Also time each kernel call (CPU models): the per-kernel profile, printed and in the report. */
  profile?: boolean;
  /** Then compare with ONNX Runtime and write <target>.onnxruntime.json beside the report. */
  compare?: 'onnxruntime';
  /** Also compile and time the default-schedule build (no records), for the report's untuned against tuned. */
  untuned?: boolean;
}
