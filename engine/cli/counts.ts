// The words tune, compile and tasks count in (docs/tuning.md, "Terms"): a *task* is a
// fused subgraph with a reduction whose schedule tune searches (one per workload key); an
// *alternative* is another implementation of a task that tune searches beside it (the
// Winograd form of a 3x3 stride-1 conv on CPU targets), which compile runs in the task's
// place where it is faster; a *kernel* is a function of the compiled model: one per task
// (or its alternative), plus one per fused subgraph without a reduction (a transpose, a
// reshape), which is no task and always has its default schedule.

import { loadModel, type ModelSpec } from '../frontend/load';
import { tuningTasks } from '../graph/extract';

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

export interface KernelCounts {
  kernels: number;
  /** Kernels of tasks (or their alternatives) with a tuned schedule. */
  tuned: number;
  /** Kernels of tasks without a usable record: their default schedule. */
  untunedTasks: number;
  /** Kernels of no task (nothing to schedule): their default schedule. */
  noTask: number;
}

/** Counts a compiled model's kernels against the keys of the model's tasks and alternatives. */
export function kernelCounts(kernels: readonly { key: string; schedule: 'default' | 'tuned' }[], taskKeys: ReadonlySet<string>): KernelCounts {
  let tuned = 0, untunedTasks = 0, noTask = 0;
  for (const k of kernels) {
    if (k.schedule === 'tuned') tuned++;
    else if (taskKeys.has(k.key)) untunedTasks++;
    else noTask++;
  }
  return { kernels: kernels.length, tuned, untunedTasks, noTask };
}

/** `6 kernels: 4 of tasks (4 tuned, 0 default), 2 of no task (default schedules)`. */
export function describeKernels(c: KernelCounts): string {
  return `${plural(c.kernels, 'kernel')}: ${c.tuned + c.untunedTasks} of tasks (${c.tuned} tuned, ${c.untunedTasks} default), ` +
    `${c.noTask} of no task (default schedules)`;
}

/** The workload keys of a model's tasks and alternatives on `target`, as tune searches them. */
export function taskKeys(model: ModelSpec, target: string): Set<string> {
  return new Set(tuningTasks(loadModel({ ...model, weights: 'zeros' }).graph, target).map((t) => t.key));
}
