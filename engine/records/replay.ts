// Whether a record's steps still apply, the one check compile (apply-records.ts) and distill
// share: the steps are well-formed (checkSteps: the schema and the limits it enforces) and,
// where the task's compute DAG is known, they replay on it and the result lowers. Without
// the DAG (distill of logs whose network was not named) only the first part can be checked.

import { lower } from '../codegen/lower';
import type { LogEntry } from './log';
import type { ComputeDAG } from '../ir/dag';
import { State } from '../schedule/state';
import { checkSteps, type StepsCheck } from '../schedule/validate-steps';

/** Checks `steps` (and, given `dag`, replays and lowers them on it); never throws. */
export function checkReplay(steps: unknown, dag?: ComputeDAG): StepsCheck {
  const check = checkSteps(steps);
  if (!check.ok || !dag) return check;
  try {
    lower(State.replay(dag, check.steps), 'KERNEL');
  } catch (e) {
    return { ok: false, message: e instanceof Error ? e.message : String(e) };
  }
  return check;
}

/** The first of `ranked` (fastest first) whose steps still apply; `onRejected` hears each one passed over and why. */
export function firstThatReplays<E extends Pick<LogEntry, 'record'>>(
  ranked: readonly E[], dag: ComputeDAG | undefined, onRejected: (entry: E, why: string) => void,
): E | undefined {
  for (const entry of ranked) {
    const check = checkReplay(entry.record.steps, dag);
    if (check.ok) return entry;
    onRejected(entry, check.message);
  }
  return undefined;
}
