// Options of the tensortune:compile executor (executors/compile/schema.json).
import type { NetworkExecutorOptions } from '../run';

export interface CompileExecutorOptions extends NetworkExecutorOptions {
  /** Recompile when the config, the model or the tuning log changes (never re-tunes). */
  watch?: boolean;
  /** Fail when a task has no tuning record instead of using its default schedule. */
  strict?: boolean;
  /** CPU targets: rank the records at this many threads (default: the target's threads, else each task's newest count). */
  threads?: number;
  /** Time limit of each compiler call, in seconds (default 120). */
  timeout?: number;
}
