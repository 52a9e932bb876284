// "Apply history best" for compile: read record logs, pick for every task of the model the
// fastest valid record measured on this target and machine (same target string, same
// hardware fingerprint), check that its steps are well-formed and still replay and lower
// on the task's DAG (else the next best is tried), and report the tasks left untuned in one
// summary with their share of the estimated latency.
//
// The estimate: a tuned task costs its record's mean time. An untuned task (default
// schedule) is estimated as its FLOPs at the FLOP rate the tuned tasks reached together
// (sum of FLOPs / sum of measured times). Default schedules are slower than tuned ones,
// so the share printed is a lower bound. With no tuned task there is no measured rate,
// and the shares are FLOP shares.

import path from 'node:path';
import { UserError } from '../errors';
import type { Task } from '../graph/extract';
import { byWorkload, measuredSchedule, rankedByWorkload } from '../records/best';
import { readRecordFiles, type LogEntry } from '../records/log';
import { firstThatReplays } from '../records/replay';
import { recordId } from '../records/store';
import type { Step } from '../schedule/steps';
import type { TunedSchedule } from './model';

export interface ApplyRecordsOptions {
  tasks: readonly Task[];
  /** Canonical target string and hardware fingerprint the records must match. */
  target: string;
  fingerprint: string;
  files: readonly string[];
  /**
   * The records of `files`, already read: compile reads them once for both of its choices
   * (here, then Winograd's), so a broken line is reported once. Unset: `files` are read.
   */
  entries?: readonly LogEntry[];
  /**
   * A task's current default schedule. Given, compile warns about tuned tasks whose records
   * never measured it: they were tuned against the defaults of an older tensortune, and
   * re-running tune on the same records times the new defaults against them (app/tune.ts,
   * confirmBest).
   */
  defaultOf?: (task: Task) => readonly Step[];
  /**
   * CPU targets: the thread count the model will run at. Each task takes the best record
   * measured at it (or one that does not say); a task with none takes the best at another
   * count, and one warning names those. Unset: the best at the count of each task's newest
   * record (records/best.ts rankedByWorkload; mixedThreads warns when the chosen records
   * mix counts).
   */
  threads?: number;
  /** Fail (UserError naming the untuned tasks) instead of compiling them with default schedules. */
  strict?: boolean;
  log?: (line: string) => void;
  warn?: (message: string) => void;
}

export interface AppliedRecords {
  /** By workload key: the steps to compile, where they came from (`<log base name>:<line>`,
   *  no machine path: it goes into the manifest) and the record's id (recordId). */
  schedules: Map<string, TunedSchedule>;
  /** Tasks without a usable record. */
  untuned: Task[];
  /** Share of the estimated latency (Σ weight × latency) of the untuned tasks, in [0, 1]. */
  untunedShare: number;
  /** By workload key: the cost (ms) of the schedule each tuned task got, as the ranking compares it (records/best.ts). */
  costs: Map<string, number>;
}

/** The usable record of a task, trying its records fastest first. */
const pick = (task: Task, ranked: readonly LogEntry[], rejected: string[]): LogEntry | undefined =>
  firstThatReplays(ranked, task.dag, (entry, why) => rejected.push(`${entry.file}:${entry.line}: ${why}`));

const pct = (x: number): string => (x < 1e-4 ? '<0.01%' : `~${(100 * x).toFixed(x < 0.001 ? 2 : 1)}%`);

/** Untuned tasks listed by name in the summary; the rest are counted. */
const LISTED = 12;

export async function applyRecords(opts: ApplyRecordsOptions): Promise<AppliedRecords> {
  const log = opts.log ?? (() => undefined);
  const warn = opts.warn ?? ((m: string) => { process.stderr.write(`tensortune: warning: ${m}\n`); });
  const entries = opts.entries ?? await readRecordFiles(opts.files, { warn });
  const match = { target: opts.target, fingerprint: opts.fingerprint };
  const ranked = rankedByWorkload(entries, { ...match, threads: opts.threads });
  // At a given thread count, a task without a record at it falls back to any count: that ranking is made only if some task needs it.
  let anyCount: ReturnType<typeof rankedByWorkload> | undefined;
  const fallbacks: LogEntry[] = [];
  const elsewhere = entries.filter((e) => e.record.target !== opts.target || e.record.fingerprint !== opts.fingerprint).length;

  const schedules = new Map<string, TunedSchedule>();
  const tunedMs = new Map<string, number>();
  const untuned: Task[] = [];
  const chosen = new Map<string, LogEntry>();
  const rejected: string[] = [];
  for (const task of opts.tasks) {
    let list = ranked.get(task.key) ?? [];
    let best = pick(task, list.map((s) => s.entry), rejected);
    if (!best && opts.threads !== undefined) {
      anyCount ??= rankedByWorkload(entries, match);
      list = anyCount.get(task.key) ?? [];
      best = pick(task, list.map((s) => s.entry), rejected);
      if (best) fallbacks.push(best);
    }
    if (!best) { untuned.push(task); continue; }
    chosen.set(task.key, best);
    schedules.set(task.key, {
      steps: best.record.steps, source: `${path.basename(best.file)}:${best.line}`, record: recordId(best.record),
      ...(best.record.budget !== undefined ? { budget: best.record.budget } : {}),
    });
    // The schedule's cost as the ranking compares it: its timings in the latest confirmation pass, else its confirmation timings, else all its timings (records/best.ts).
    tunedMs.set(task.key, list.find((s) => s.entry === best)!.cost);
  }
  const all = opts.defaultOf ? byWorkload(entries, match) : new Map<string, LogEntry[]>();
  const staleDefaults = opts.defaultOf
    ? opts.tasks.filter((task) => schedules.has(task.key) && !measuredSchedule(all.get(task.key) ?? [], opts.defaultOf!(task)))
    : [];
  if (staleDefaults.length > 0) {
    warn(`${staleDefaults.length} tuned task(s) have no record of their current default schedule (first: ${staleDefaults[0].desc}): ` +
      'they were tuned against the default schedules of an older tensortune. Tuning again on the same records times the new defaults ' +
      'against the tuned schedules (no new trials needed); until then compile uses the tuned ones');
  }
  if (opts.threads === undefined) {
    const chosenThreads = mixedThreads(opts.tasks.map((t) => chosen.get(t.key)).filter((e): e is LogEntry => e !== undefined));
    if (chosenThreads) warn(chosenThreads);
  } else if (fallbacks.length > 0) {
    const counts = [...new Set(fallbacks.map((e) => e.record.threads))].sort((a, b) => (a ?? 0) - (b ?? 0)).join(' and ');
    const first = fallbacks[0];
    warn(`${fallbacks.length} task(s) have no record measured at ${opts.threads} thread(s) and use the best measured at ${counts} (first: ${first.record.desc}, ` +
      `${first.file}:${first.line}): tune at ${opts.threads} thread(s) for schedules ranked at the count the model runs at`);
  }
  // A record passed over at the model's thread count is passed over again in the fallback: said once.
  const passedOver = [...new Set(rejected)];
  if (passedOver.length > 0) {
    warn(`${passedOver.length} record(s) no longer apply to their task and were passed over (first: ${passedOver[0]})`);
  }

  // Estimated latency per task (ms), see the header.
  const tuned = opts.tasks.filter((t) => tunedMs.has(t.key));
  const tunedFlops = tuned.reduce((a, t) => a + t.flops, 0);
  const tunedTime = tuned.reduce((a, t) => a + tunedMs.get(t.key)!, 0);
  const rate = tuned.length > 0 && tunedTime > 0 ? tunedFlops / tunedTime : undefined; // FLOPs per ms
  const estimate = (t: Task): number => tunedMs.get(t.key) ?? (rate ? t.flops / rate : t.flops);
  const total = opts.tasks.reduce((a, t) => a + t.weight * estimate(t), 0);
  const share = (t: Task): number => (total > 0 ? (t.weight * estimate(t)) / total : 0);
  const untunedShare = untuned.reduce((a, t) => a + share(t), 0);

  const where = `${opts.target}, fingerprint ${opts.fingerprint}${opts.threads !== undefined ? `, ranked at ${opts.threads} thread(s)` : ''}`;
  const ignored = elsewhere > 0 ? `; ${elsewhere} record(s) of other targets or machines ignored` : '';
  if (opts.strict && untuned.length > 0) {
    throw new UserError(
      `--strict: ${untuned.length} of ${opts.tasks.length} task(s) have no usable record for ${where} in ${opts.files.join(', ') || '(no records files)'}${ignored}:\n` +
      untuned.map((t) => `  ${t.desc} (weight ${t.weight})`).join('\n'),
    );
  }
  if (untuned.length === 0) {
    log(`records: all ${opts.tasks.length} task(s) tuned (${where})${ignored}`);
  } else {
    const how = rate
      ? `untuned latency estimated from FLOPs at the tuned tasks' ${(rate / 1e6).toFixed(1)} GFLOPS, a lower bound`
      : 'no tuned task to estimate from: FLOP shares';
    const sorted = [...untuned].sort((a, b) => share(b) - share(a));
    const lines = sorted.slice(0, LISTED).map((t) => `  ${t.desc} (weight ${t.weight}): ${pct(share(t))}`);
    const rest = sorted.slice(LISTED);
    if (rest.length > 0) lines.push(`  ... and ${rest.length} more (${pct(rest.reduce((a, t) => a + share(t), 0))})`);
    log(
      `records: ${opts.tasks.length - untuned.length} of ${opts.tasks.length} task(s) tuned (${where})${ignored}; ` +
      `${untuned.length} untuned use default schedules, ${pct(untunedShare)} of the estimated latency (${how}):\n${lines.join('\n')}`,
    );
  }
  return { schedules, untuned, untunedShare, costs: tunedMs };
}

/**
 * The warning for a model whose chosen records were measured at different thread counts
 * (field `threads`; records that do not say are left out), else undefined. Each tune
 * resumes and ranks only at its own count, but a log written by tunes at 1 and at 2 threads
 * gives compile schedules ranked at either unless it is told the count (`threads`).
 */
function mixedThreads(chosen: readonly LogEntry[]): string | undefined {
  const first = new Map<number, LogEntry>();
  for (const e of chosen) if (e.record.threads !== undefined && !first.has(e.record.threads)) first.set(e.record.threads, e);
  if (first.size < 2) return undefined;
  const counts = [...first.keys()].sort((a, b) => a - b);
  const where = counts.map((n) => `${n}: ${first.get(n)!.file}:${first.get(n)!.line}`).join(', ');
  return `the records chosen for this model were measured at ${counts.join(' and ')} thread(s) (field "threads"; first of each at ${where}): ` +
    'compile with --threads N (a config target\'s `threads` under Nx) to rank them at the count the model runs at';
}
