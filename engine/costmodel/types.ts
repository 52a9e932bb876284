// The cost model's contract with the search: learn from measured programs of any task,
// score the states of one task.

import type { Task } from '../graph/extract';
import type { MeasuredState } from '../records/outcome';
import type { State } from '../schedule/state';

/** Learns throughput from measured programs of all tasks; higher score = predicted faster. */
export interface CostModel {
  /** Add measurements (any task) and retrain. */
  update(task: Task, measured: readonly MeasuredState[]): void;
  /** Scores for states of `task` (comparable within one task only). */
  predict(task: Task, states: readonly State[]): number[];
}
