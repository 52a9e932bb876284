// Options of the tensortune:tune executor (executors/tune/schema.json).
import type { NetworkExecutorOptions } from '../run';

export interface TuneExecutorOptions extends NetworkExecutorOptions {
  /** A budget name from the config (default: defaults.budget, else the first). */
  budget?: string;
  /** Override the budget's trial count for this run (total over all tasks). */
  trials?: number;
}
