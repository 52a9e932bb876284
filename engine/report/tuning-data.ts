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
//
// A task may be an alternative implementation of another task's layers (a Winograd task,
// `alternative`): compile runs the faster of the two, so, as in the task scheduler's
// estimate (search/task-scheduler.ts estimatedMs), a task and its alternatives are one
// layer group that counts once, with the best of its members. The estimate, the shares and
// default against tuned are per layer group; trials, errors and curves stay per task.

import { CONFIRM_POLICY, isValidRecord, matchesRecord, meanCost, threadCounts, type RecordMatch } from '../records/best';
import type { LogEntry } from '../records/log';
import type { TuningRecord } from '../records/record';
import { recordId } from '../records/store';
import { duration } from '../units';

/** A tuning task as the report needs it (engine/graph/extract.ts's Task has these fields). */
export interface ReportTask {
  key: string;
  desc: string;
  /** How many fused groups of the network are this task. */
  weight: number;
  flops: number;
  /** An alternative implementation of the layers of the task whose key is `of` (engine/graph/extract.ts). */
  alternative?: { of: string };
}

/** One point of a best-so-far curve: after `trial` trials the best is `ms`. */
export interface CurvePoint {
  trial: number;
  ms: number;
  /** Network curve: seconds of tuning up to this trial (TUNING_PAUSE_S). */
  elapsed_s?: number;
}

/**
 * Gaps between consecutive trials longer than this (s) are pauses between tune runs (a
 * budget tuned yesterday, another today), not tuning time: the wall-clock curve leaves them
 * out and says how many it left out, so a week between two runs is not a flat line a
 * week long.
 */
export const TUNING_PAUSE_S = 300;

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
  /** The id of the task whose layers this one is an alternative implementation of, else null. */
  alternative_of: number | null;
  /**
   * What compile runs for this task's layers: the best valid cost among the task and its
   * alternatives, and the id of the task it comes from. Null for an alternative (its
   * layers are counted on its direct task) and while no member has a valid measurement.
   */
  layer_best: { ms: number; id: number } | null;
  /** Best so far against the task's own trial count: a point per improvement, and the last trial. */
  curve: CurvePoint[];
  /** weight × layer_best.ms, or null. */
  weighted_ms: number | null;
  /** weighted_ms over the sum of weighted_ms of every task that has one (0..1), or null. */
  share: number | null;
  default: DefaultCost;
  /** default / layer_best.ms (above 1: tuning made it faster), when both are known; null for an alternative. */
  speedup: number | null;
}

export interface NetworkCurve {
  /** The first trial after which every task has a valid measurement, or null if that never happened. */
  complete_at: number | null;
  /** Seconds of tuning over all trials (pauses left out) and how many pauses were left out. */
  tuning_s: number;
  pauses: number;
  /** Times of the first and the last trial (ISO 8601), null without trials. */
  first_time: string | null;
  last_time: string | null;
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
  /** The thread count the records were measured at (and those that do not say), or null: every count. */
  threads: number | null;
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
  /** Layer groups: the tasks that are no alternative. */
  layers: number;
  /** Layer groups without any valid measurement (of the task or an alternative). */
  unmeasured: number;
}

export interface TuningFiguresInput {
  network: string;
  tasks: readonly ReportTask[];
  /** Records in store order (as readRecordFiles gives them); others' targets and tasks are ignored. */
  entries: readonly LogEntry[];
  /** The target and machine of the records, and the thread count they were measured at where given (records that do not say count too). */
  match: RecordMatch;
}

/** How records without a budget are named (as the manifest's records summary names them). */
export const CLI_ORIGIN = 'tensortune tune';

/** The records of `keys` for one target and fingerprint, each measurement once, in trial order (a confirmation re-timing is not a trial). */
export function trialOrder(entries: readonly LogEntry[], match: RecordMatch, keys: ReadonlySet<string>): TuningRecord[] {
  const seen = new Set<string>();
  const picked: { record: TuningRecord; time: number; index: number }[] = [];
  entries.forEach((e, index) => {
    const r = e.record;
    if (!matchesRecord(r, match) || !keys.has(r.key)) return;
    if (r.policy === CONFIRM_POLICY) return; // a re-timing at the end of a tune, not a trial
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
  // The task of each task's layer group: its direct task for an alternative, else itself.
  const head = tasks.map((t, i) => (t.alternative && index.has(t.alternative.of) ? index.get(t.alternative.of)! : i));
  const heads = tasks.flatMap((_, i) => (head[i] === i ? [i] : []));
  const records = trialOrder(input.entries, match, new Set(index.keys()));
  const perTask = tasks.map(() => ({ trials: 0, errors: 0, best: null as number | null, curve: [] as CurvePoint[], records: [] as TuningRecord[] }));
  const layerBest = tasks.map((): { ms: number; id: number } | null => null);
  const budgets = new Map<string, number>();
  const curve: NetworkCurve = { complete_at: null, tuning_s: 0, pauses: 0, first_time: records[0]?.time ?? null, last_time: records.at(-1)?.time ?? null, points: [] };
  let previous = NaN;
  let withBest = 0;
  let errors = 0;

  records.forEach((r, i) => {
    const trial = i + 1;
    const at = Date.parse(r.time);
    if (Number.isFinite(at)) {
      const gap = (at - previous) / 1000;
      if (gap > TUNING_PAUSE_S) curve.pauses += 1;
      else if (gap > 0) curve.tuning_s += gap;
      previous = at;
    }
    const k = index.get(r.key)!;
    const t = perTask[k];
    t.trials += 1;
    t.records.push(r);
    budgets.set(r.budget ?? CLI_ORIGIN, (budgets.get(r.budget ?? CLI_ORIGIN) ?? 0) + 1);
    if (!isValidRecord(r)) {
      t.errors += 1;
      errors += 1;
      return;
    }
    const cost = meanCost(r);
    if (t.best !== null && cost >= t.best) return;
    t.best = cost;
    t.curve.push({ trial: t.trials, ms: cost });
    const layer = layerBest[head[k]];
    if (layer !== null && cost >= layer.ms) return;
    if (layer === null) withBest += 1;
    layerBest[head[k]] = { ms: cost, id: k };
    if (withBest === heads.length) {
      curve.complete_at ??= trial;
      curve.points.push({ trial, ms: heads.reduce((sum, h) => sum + tasks[h].weight * layerBest[h]!.ms, 0), elapsed_s: curve.tuning_s });
    }
  });
  for (const t of perTask) closeCurve(t.curve, t.trials);
  closeCurve(curve.points, records.length);
  const end = curve.points.at(-1);
  if (end) end.elapsed_s = curve.tuning_s; // the last trial, an improvement or the closing point

  const weighted = tasks.map((task, k) => (layerBest[k] === null ? null : task.weight * layerBest[k]!.ms));
  const known = weighted.reduce<number>((a, w) => a + (w ?? 0), 0);
  const figures: TaskFigures[] = tasks.map((task, k) => {
    const t = perTask[k];
    const def = defaultCost(t.records);
    const best = layerBest[k];
    return {
      id: k, key: task.key, desc: task.desc, weight: task.weight, flops: task.flops,
      trials: t.trials, errors: t.errors, best_ms: t.best, alternative_of: head[k] === k ? null : head[k], layer_best: best, curve: t.curve,
      weighted_ms: weighted[k], share: weighted[k] === null || known === 0 ? null : weighted[k]! / known,
      default: def, speedup: def.known && best !== null && best.ms > 0 ? def.ms / best.ms : null,
    };
  });
  const layers = heads.map((h) => figures[h]);
  const complete = heads.length > 0 && layers.every((f) => f.layer_best !== null);
  const defaultsKnown = heads.length > 0 && layers.every((f) => f.default.known);
  return {
    network: input.network, target: match.target, fingerprint: match.fingerprint, threads: match.threads ?? null,
    trials: records.length, errors,
    estimated_ms: complete ? known : null,
    estimated_default_ms: defaultsKnown ? layers.reduce((a, f) => a + f.weight * (f.default as { ms: number }).ms, 0) : null,
    curve, tasks: figures,
    budgets: [...budgets].map(([budget, trials]) => ({ budget, trials })).sort((a, b) => b.trials - a.trials || (a.budget < b.budget ? -1 : 1)),
    layers: heads.length,
    unmeasured: layers.filter((f) => f.layer_best === null).length,
  };
}

/** The match a report uses, and the warning to print when it chose a thread count. */
export interface ReportMatch {
  match: RecordMatch;
  warning?: string;
}

/**
 * Without a thread count, a report of records measured at several counts would draw one
 * curve and one estimate through timings that do not compare. It shows instead the count
 * of the newest record of the network's tasks (the latest tune's, the count compile ranks
 * first without `--threads`), with the records that do not say, and says so. A count given,
 * or records of one count, change nothing.
 */
export function reportMatch(entries: readonly LogEntry[], tasks: readonly ReportTask[], match: RecordMatch): ReportMatch {
  if (match.threads !== undefined) return { match };
  const keys = new Set(tasks.map((t) => t.key));
  const mine = entries.filter((e) => keys.has(e.record.key) && e.record.threads !== undefined && matchesRecord(e.record, match));
  const counts = threadCounts(mine, match);
  if (counts.length < 2) return { match };
  // The count of the newest record (of equal times, the later in the store).
  const newest = mine.reduce((a, e) => (Date.parse(e.record.time) >= Date.parse(a.record.time) ? e : a)).record.threads!;
  return {
    match: { ...match, threads: newest },
    warning: `the records were measured at ${counts.join(', ')} thread(s), whose timings do not compare: showing those at ${newest} (the newest tune's) and those that do not say their count; --threads N for another`,
  };
}

/** One line for logs: `tuning: 120 trial(s) of 3 task(s), estimated total latency 1.234 ms` (µs under 1 ms; or why there is none). */
export function tuningLine(f: TuningFigures): string {
  const est = f.estimated_ms === null
    ? `no estimated total latency yet (${f.unmeasured} of ${f.layers} ${f.layers === f.tasks.length ? 'task(s)' : 'layer group(s)'} without a valid measurement)`
    : `estimated total latency ${duration(f.estimated_ms)}`;
  const where = f.threads !== null ? `this target and machine at ${f.threads} thread(s)` : 'this target and machine';
  return `tuning: ${f.trials} trial(s) of ${f.tasks.length} task(s) in the records for ${where}, ${est}`;
}
