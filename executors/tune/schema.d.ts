// Options of the tensortune:tune executor (executors/tune/schema.json): the budget fields
// override the configuration's budget for one run, as `tensortune tune` names them.
import type { NetworkExecutorOptions } from '../run';

export interface TuneExecutorOptions extends NetworkExecutorOptions {
  /** A budget name from the config (default: defaults.budget, else the first). */
  budget?: string;
  /** Set by the plugin on `tune--<k>` targets: the shard to tune (plugin/shards.ts). */
  shard?: number;
  /** Total trials over all tasks; with trialsPerTask, replaces the budget's trial counts. */
  trials?: number;
  trialsPerTask?: number;
  /** Seconds. */
  timeLimit?: number;
  earlyStopping?: number;
  /** Schedules per task the confirmation pass times again (0: none). */
  confirm?: number;
  /** The network pass after the confirmation pass (default false). */
  networkPass?: boolean;
  policy?: 'evolutionary' | 'ga' | 'random' | 'grid';
  /** Candidates measured per round. */
  measuresPerRound?: number;
  /** Candidates in each task's first round (default 16, at most a round). */
  warmupTrials?: number;
  seed?: number;
  threads?: number;
  number?: number;
  repeat?: number;
  minRepeatMs?: number;
  /** Per candidate, in seconds. */
  timeout?: number;
  flush?: boolean;
  buildJobs?: number;
}
