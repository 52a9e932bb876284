// What the tuning report shows, computed from the record store and the network's tasks:
// the figures TVM users read in the task scheduler's log (its task table and "Estimated
// total latency" line), over the whole history of the measurements instead of the last
// round. No Nx here: the benchmark executor and `tensortune report` share it.
//
// Trial order: the records of the network's tasks on one target string and fingerprint,
// sorted by their measurement time (`time`); records with the same time keep the order
// the store was read in (log file, then line). A measurement copied into several files
// counts once (recordId). Every record is a trial, errors included (as in TVM's count).
//
// The estimated network latency after trial n is Σ weight × (the task's best valid cost
// among the first n trials), the task scheduler's objective. Like TVM's footer it has no
// value until every task has a valid measurement: the curve starts at that trial.

import { isValidRecord, meanCost } from '../records/best';
import type { LogEntry } from '../records/log';
import type { TuningRecord } from '../records/record';
import { recordId } from '../records/store';

/** A tuning task as the report needs it (engine/graph/extract.ts's Task has these fields). */
export interface ReportTask {
  key: string;
  desc: string;
  /** How many fused groups of the network are this task. */
  weight: number;
  flops: number;
}

/** One point of a best-so-far curve: after `trial` trials the best is `ms`. */
export interface CurvePoint { trial: number; ms: number }

/** What is known of a task's default schedule (the schedule compile uses without a record). */
export type DefaultCost =
  | { known: true; ms: number; measurements: number }
  | { known: false; why: string };

export interface TaskFigures {
  /** Index in the task list (TVM's task ID). */
  id: number;
  key: string;
  desc: string;
  weight: number;
  flops: number;
  /** Trials of this task, errors included. */
  trials: number;
  errors: number;
  /** Best valid cost (ms per run), or null when no trial was valid. */
  best_ms: number | null;
  /** Best so far against the task's own trial count: a point per improvement, and the last trial. */
  curve: CurvePoint[];
  /** weight × best_ms, or null. */
  weighted_ms: number | null;
  /** weighted_ms over the sum of weighted_ms of every task that has one (0..1), or null. */
  share: number | null;
  default: DefaultCost;
  /** default / best (above 1: tuning made it faster), when both are known. */
  speedup: number | null;
}

export interface NetworkCurve {
  /** The first trial after which every task has a valid measurement, or null if that never happened. */
  complete_at: number | null;
  /** Estimated latency against all trials, from complete_at on: a point per improvement, and the last trial. */
  points: CurvePoint[];
}

export interface BudgetTrials {
  /** The config budget (`nx tune -c <budget>`), or `tensortune tune` for records without one. */
  budget: string;
  trials: number;
}

export interface TuningFigures {
  network: string;
  target: string;
  fingerprint: string;
  /** Trials of the network's tasks on this target and machine. */
  trials: number;
  errors: number;
  /** Σ weight × best over all tasks, or null while some task has no valid measurement. */
  estimated_ms: number | null;
  /** Σ weight × default cost, when every task's default is known. */
  estimated_default_ms: number | null;
  curve: NetworkCurve;
  tasks: TaskFigures[];
  /** Which budgets the trials came from, most trials first. */
  budgets: BudgetTrials[];
  /** Tasks without any valid measurement. */
  unmeasured: number;
}

export interface TuningFiguresInput {
  network: string;
  tasks: readonly ReportTask[];
  /** Records in store order (as readRecordFiles gives them); others' targets and tasks are ignored. */
  entries: readonly LogEntry[];
  match: { target: string; fingerprint: string };
}

/** How records without a budget are named (as the manifest's records summary names them). */
export const CLI_ORIGIN = 'tensortune tune';

/** The records of `keys` for one target and fingerprint, each measurement once, in trial order. */
export function trialOrder(entries: readonly LogEntry[], match: { target: string; fingerprint: string }, keys: ReadonlySet<string>): TuningRecord[] {
  const seen = new Set<string>();
  const picked: { record: TuningRecord; time: number; index: number }[] = [];
  entries.forEach((e, index) => {
    const r = e.record;
    if (r.target !== match.target || r.fingerprint !== match.fingerprint || !keys.has(r.key)) return;
    const id = recordId(r);
    if (seen.has(id)) return;
    seen.add(id);
    picked.push({ record: r, time: Date.parse(r.time), index });
  });
  // Array.prototype.sort is stable: equal times keep the store's order.
  return picked.sort((a, b) => a.time - b.time || a.index - b.index).map((p) => p.record);
}

/** Closes a best-so-far curve at the last trial (when that was not an improvement). */
function closeCurve(curve: CurvePoint[], lastTrial: number): void {
  const last = curve.at(-1);
  if (last && last.trial < lastTrial) curve.push({ trial: lastTrial, ms: last.ms });
}

/** The default schedule's cost of one task from its records (tune measures it first and tags it policy `default`). */
function defaultCost(records: readonly TuningRecord[]): DefaultCost {
  const defaults = records.filter((r) => r.policy === 'default');
  if (defaults.length === 0) return { known: false, why: 'no measurement of the default schedule in the records' };
  const valid = defaults.filter(isValidRecord);
  if (valid.length === 0) return { known: false, why: `the default schedule was measured but failed (${defaults.map((r) => r.error).join(', ')})` };
  return { known: true, ms: Math.min(...valid.map(meanCost)), measurements: valid.length };
}

export function tuningFigures(input: TuningFiguresInput): TuningFigures {
  const { tasks, match } = input;
  const index = new Map(tasks.map((t, i) => [t.key, i]));
  const records = trialOrder(input.entries, match, new Set(index.keys()));
  const perTask = tasks.map(() => ({ trials: 0, errors: 0, best: null as number | null, curve: [] as CurvePoint[], records: [] as TuningRecord[] }));
  const budgets = new Map<string, number>();
  const curve: NetworkCurve = { complete_at: null, points: [] };
  let withBest = 0;
  let errors = 0;

  records.forEach((r, i) => {
    const trial = i + 1;
    const t = perTask[index.get(r.key)!];
    t.trials += 1;
    t.records.push(r);
    budgets.set(r.budget ?? CLI_ORIGIN, (budgets.get(r.budget ?? CLI_ORIGIN) ?? 0) + 1);
    let improved = false;
    if (isValidRecord(r)) {
      const cost = meanCost(r);
      if (t.best === null || cost < t.best) {
        if (t.best === null) withBest += 1;
        t.best = cost;
        improved = true;
      }
    } else {
      t.errors += 1;
      errors += 1;
    }
    if (improved) t.curve.push({ trial: t.trials, ms: t.best! });
    if (improved && withBest === tasks.length) {
      curve.complete_at ??= trial;
      curve.points.push({ trial, ms: tasks.reduce((sum, task, k) => sum + task.weight * perTask[k].best!, 0) });
    }
  });
  for (const t of perTask) closeCurve(t.curve, t.trials);
  closeCurve(curve.points, records.length);

  const weighted = perTask.map((t, k) => (t.best === null ? null : tasks[k].weight * t.best));
  const known = weighted.reduce<number>((a, w) => a + (w ?? 0), 0);
  const figures: TaskFigures[] = tasks.map((task, k) => {
    const t = perTask[k];
    const def = defaultCost(t.records);
    return {
      id: k, key: task.key, desc: task.desc, weight: task.weight, flops: task.flops,
      trials: t.trials, errors: t.errors, best_ms: t.best, curve: t.curve,
      weighted_ms: weighted[k], share: weighted[k] === null || known === 0 ? null : weighted[k]! / known,
      default: def, speedup: def.known && t.best !== null && t.best > 0 ? def.ms / t.best : null,
    };
  });
  const complete = tasks.length > 0 && figures.every((f) => f.best_ms !== null);
  const defaultsKnown = tasks.length > 0 && figures.every((f) => f.default.known);
  return {
    network: input.network, target: match.target, fingerprint: match.fingerprint,
    trials: records.length, errors,
    estimated_ms: complete ? known : null,
    estimated_default_ms: defaultsKnown ? figures.reduce((a, f) => a + f.weight * (f.default as { ms: number }).ms, 0) : null,
    curve, tasks: figures,
    budgets: [...budgets].map(([budget, trials]) => ({ budget, trials })).sort((a, b) => b.trials - a.trials || (a.budget < b.budget ? -1 : 1)),
    unmeasured: figures.filter((f) => f.best_ms === null).length,
  };
}

/** One line for logs: `tuning: 120 trial(s) of 3 task(s), estimated total latency 1.234 ms` (or why there is none). */
export function tuningLine(f: TuningFigures): string {
  const est = f.estimated_ms === null
    ? `no estimated total latency yet (${f.unmeasured} of ${f.tasks.length} task(s) without a valid measurement)`
    : `estimated total latency ${f.estimated_ms.toFixed(3)} ms`;
  return `tuning: ${f.trials} trial(s) of ${f.tasks.length} task(s) in the records for this target and machine, ${est}`;
}
