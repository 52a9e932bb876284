// Tuning progress for people and machines: TVM's task-scheduler table and its
// "Estimated total latency" footer (as printed in the seeds' tune_network tutorials), a
// progress bar with an ETA for terminals, and a reporter the CLI wires to tuneNetwork's
// `log` / `onEvent` (JSON lines with --json; only the final table on CI unless asked).

import type { TuneEvent, TuneNetworkResult } from './types';

export interface TableRow {
  desc: string;
  weight: number;
  /** For an alternative (a Winograd form): the ID of the task it implements, whose weight it shares (docs/tuning.md, "Terms"). */
  alternativeOf?: number;
  flops: number;
  trials: number;
  best_ms: number | null;
}

/** Characters of a table row besides its description (with a Weight column of 6). */
const TABLE_FIXED = 61;

/**
 * `| ID | Task Description | Latency (ms) | Speed (GFLOPS) | Trials | Weight |`, one row per
 * task. An alternative's weight reads `alt <ID>`: it is the weight of the task it implements,
 * counted once there (the estimate takes the faster of the two). With `width`, the
 * description column is narrowed so that a row fits (down to 16 characters).
 */
export function formatTaskTable(rows: readonly TableRow[], maxDescWidth = 64, width?: number): string[] {
  const weightOf = (r: TableRow): string => (r.alternativeOf === undefined ? String(r.weight) : `alt ${r.alternativeOf}`);
  const weightWidth = Math.max(6, ...rows.map((r) => weightOf(r).length));
  const fitted = width === undefined ? maxDescWidth : Math.max(16, Math.min(maxDescWidth, width - TABLE_FIXED - (weightWidth - 6)));
  const descWidth = Math.min(fitted, Math.max(16, ...rows.map((r) => r.desc.length)));
  const desc = (d: string): string => (d.length > descWidth ? `${d.slice(0, descWidth - 3)}...` : d).padEnd(descWidth);
  const header = `|  ID  | ${'Task Description'.padEnd(descWidth)} | Latency (ms) | Speed (GFLOPS) | Trials | ${'Weight'.padEnd(weightWidth)} |`;
  const rule = header.replace(/[^|]/g, '-');
  const lines = [rule, header, rule];
  rows.forEach((r, i) => {
    const latency = r.best_ms === null ? '-' : r.best_ms.toFixed(3);
    const speed = r.best_ms === null || r.best_ms <= 0 ? '-' : (r.flops / (r.best_ms * 1e-3) / 1e9).toFixed(2);
    lines.push(`| ${String(i).padStart(4)} | ${desc(r.desc)} | ${latency.padStart(12)} | ${speed.padStart(14)} | ${String(r.trials).padStart(6)} | ${weightOf(r).padStart(weightWidth)} |`);
  });
  lines.push(rule);
  return lines;
}

/** Seconds between two progress lines at most while a run is quiet (a long round): where no bar shows progress. */
export const PROGRESS_EVERY_S = 15;

/**
 * The width progress lines are fitted to: a terminal's columns; under Nx's terminal UI, whose
 * task panes have about 100 when the size is not known, 100; else none (a pipe, a log file).
 */
export function outputWidth(stream: { isTTY?: boolean; columns?: number }, env: NodeJS.ProcessEnv = process.env): number | undefined {
  if (stream.isTTY && stream.columns !== undefined && stream.columns > 0) return stream.columns;
  return env.NX_TUI === 'true' ? 100 : undefined;
}

/**
 * `line` as lines of at most `width` characters, broken between its `; `-separated parts,
 * else between words, never inside a number or a word; continuations are indented. A word
 * longer than the width stays whole on a line of its own.
 */
export function fitLine(line: string, width?: number): string[] {
  if (width === undefined || line.length <= width) return [line];
  const indent = '  ';
  const out: string[] = [];
  let cur = '';
  const room = (): number => width - (out.length > 0 ? indent.length : 0);
  const flush = (): void => {
    if (cur) out.push(out.length > 0 ? `${indent}${cur}` : cur);
    cur = '';
  };
  for (const [k, part] of line.split('; ').entries()) {
    const piece = k < line.split('; ').length - 1 ? `${part};` : part;
    const joined = cur ? `${cur} ${piece}` : piece;
    if (joined.length <= room()) { cur = joined; continue; }
    flush();
    if (piece.length <= room()) { cur = piece; continue; }
    for (const word of piece.split(' ')) {
      const w = cur ? `${cur} ${word}` : word;
      if (w.length <= room() || !cur) cur = w;
      else { flush(); cur = word; }
    }
  }
  flush();
  return out;
}

/** A description cut to `room` characters (at least 16), with `...` where cut. */
export function cutDesc(desc: string, room: number): string {
  const n = Math.max(16, room);
  return desc.length > n ? `${desc.slice(0, n - 3)}...` : desc;
}

/** TVM's footer: `Estimated total latency: X ms  Trials: N  Used time : S s  Next ID: k` (X is `-` until every task has a valid program). */
export function formatEstimate(estimatedMs: number | null, trials: number, usedS: number, nextId?: number | null): string {
  const est = estimatedMs === null ? '-' : estimatedMs.toFixed(3);
  const next = nextId === undefined || nextId === null ? '' : `\tNext ID: ${nextId}`;
  return `Estimated total latency: ${est} ms\tTrials: ${trials}\tUsed time : ${Math.round(usedS)} s${next}`;
}

const clock = (s: number): string => {
  if (!Number.isFinite(s)) return '--:--';
  const t = Math.max(0, Math.round(s));
  const h = Math.floor(t / 3600), m = Math.floor((t % 3600) / 60), sec = t % 60;
  return `${h > 0 ? `${h}:${String(m).padStart(2, '0')}` : String(m)}:${String(sec).padStart(2, '0')}`;
};

type Done = { trials: number; elapsedS: number };
type Bound = { trials?: number; timeLimitS?: number };

/** The fraction done (the larger of trials/budget and time/limit), the seconds left at this pace, and `N/M trials`. */
function progressOf(done: Done, budget: Bound): { f: number; eta: number; count: string } {
  const fTrials = budget.trials ? done.trials / budget.trials : 0;
  const fTime = budget.timeLimitS ? done.elapsedS / budget.timeLimitS : 0;
  const f = Math.min(1, Math.max(fTrials, fTime));
  const eta = f > 0 ? (done.elapsedS / f) * (1 - f) : Infinity;
  return { f, eta, count: budget.trials ? `${done.trials}/${budget.trials} trials` : `${done.trials} trials` };
}

/** `[######......]  120/400 trials  30%  ETA 2:10`: the fraction done is the larger of trials/budget and time/limit. */
export function formatBar(done: Done, budget: Bound, width = 30): string {
  const { f, eta, count } = progressOf(done, budget);
  const filled = Math.round(f * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${count}  ${Math.floor(f * 100)}%  ${clock(done.elapsedS)} elapsed  ETA ${clock(eta)}`;
}

/** What a run may still measure: its trials (the smaller of the total budget and the per-task
 *  budgets, less what the log holds) and its time limit; undefined where nothing bounds it. */
export function runBudget(measured: readonly number[], budget: Bound & { trialsPerTask?: number }): Bound {
  const resumed = measured.reduce((a, m) => a + m, 0);
  const perTask = budget.trialsPerTask;
  const fromPerTask = perTask === undefined ? undefined : measured.reduce((a, m) => a + Math.max(0, perTask - m), 0);
  const fromTotal = budget.trials === undefined ? undefined : Math.max(0, budget.trials - resumed);
  const trials = [fromPerTask, fromTotal].filter((x): x is number => x !== undefined);
  return { trials: trials.length ? Math.min(...trials) : undefined, timeLimitS: budget.timeLimitS };
}

/**
 * The overall progress after a round, for logs (no terminal needed): `120/400 trials, 30%,
 * 2:10 elapsed, ETA 5:04` (at most: early stopping may end a run sooner); only the elapsed
 * time when no budget bounds the run.
 */
export function formatProgress(done: Done, budget: Bound): string {
  const { f, eta, count } = progressOf(done, budget);
  if (!budget.trials && !budget.timeLimitS) return `${count}, ${clock(done.elapsedS)} elapsed`;
  return `${count}, ${Math.floor(f * 100)}%, ${clock(done.elapsedS)} elapsed, ETA ${clock(eta)}`;
}

export interface ReporterOptions {
  /** Where tables, lines and JSON go (stdout). */
  out(text: string): void;
  /** Where the bar goes (stderr). */
  err(text: string): void;
  /** One JSON line per event on `out`, nothing else. */
  json: boolean;
  /** Draw a progress bar on `err` (a terminal). */
  bar: boolean;
  /** Print only the final table and summary (CI, unless asked for more). */
  quiet: boolean;
  /** Budgets as given, to size the bar; trials per task is turned into a total once the tasks are known. */
  budget: { trials?: number; trialsPerTask?: number; timeLimitS?: number };
  /** The width the final table is fitted to (outputWidth). */
  width?: number;
  now?: () => number;
}

/** The CLI's side of tuneNetwork's progress: give `log` and `onEvent` to it, call `finish` with its result. */
export class ProgressReporter {
  private readonly started: number;
  private readonly now: () => number;
  private start: Extract<TuneEvent, { type: 'start' }> | null = null;
  private totalBudget: { trials?: number; timeLimitS?: number };
  private runTrials = 0;
  private barShown = false;

  constructor(private readonly opts: ReporterOptions) {
    this.now = opts.now ?? Date.now;
    this.started = this.now();
    this.totalBudget = { trials: opts.budget.trials, timeLimitS: opts.budget.timeLimitS };
  }

  /** For tuneNetwork's `log` (undefined when it should be silent). */
  get log(): ((line: string) => void) | undefined {
    if (this.opts.json || this.opts.quiet) return undefined;
    return (line) => {
      this.clearBar();
      this.opts.out(`${line}\n`);
      this.drawBar();
    };
  }

  readonly onEvent = (event: TuneEvent): void => {
    if (this.opts.json) this.opts.out(`${JSON.stringify(event)}\n`);
    if (event.type === 'start') {
      this.start = event;
      this.totalBudget = runBudget(event.tasks.map((t) => t.measured), this.opts.budget);
    }
    if (event.type === 'round') {
      this.runTrials += event.trials;
      this.clearBar();
      this.drawBar();
    }
    if (event.type === 'done') this.clearBar();
  };

  private drawBar(): void {
    if (!this.opts.bar || this.opts.json || !this.start) return;
    this.opts.err(`\r\x1b[K${formatBar({ trials: this.runTrials, elapsedS: (this.now() - this.started) / 1000 }, this.totalBudget)}`);
    this.barShown = true;
  }

  private clearBar(): void {
    if (!this.barShown) return;
    this.opts.err('\r\x1b[K');
    this.barShown = false;
  }

  /** The closing summary; in quiet mode preceded by the final table and footer (the other modes have logged them). */
  finish(result: TuneNetworkResult): void {
    this.clearBar();
    if (this.opts.json) return;
    if (this.opts.quiet) this.finalTable(result);
    this.opts.out(`${summaryLine(result)}\n`);
  }

  private finalTable(result: TuneNetworkResult): void {
    const flops = new Map((this.start?.tasks ?? []).map((t) => [t.key, t.flops]));
    const ids = new Map(result.tasks.map((t, i) => [t.key, i]));
    const rows = result.tasks.map((t) => ({ ...t, flops: flops.get(t.key) ?? 0, alternativeOf: t.alternativeOf === undefined ? undefined : ids.get(t.alternativeOf) }));
    for (const line of formatTaskTable(rows, 64, this.opts.width)) this.opts.out(`${line}\n`);
    const total = result.tasks.reduce((a, t) => a + t.trials, 0);
    this.opts.out(`${formatEstimate(result.estimatedMs, total, result.wallS)}\n`);
  }
}

/**
 * One line on how tuning ended: where the run's wall time went (measuring candidates, the
 * network pass, and the rest: the search, the cost model, the records, the setup), so
 * that a search slower than its measurements shows.
 */
export function summaryLine(result: TuneNetworkResult): string {
  const est = result.estimatedMs === null ? 'not every task has a valid program yet' : `estimated total latency ${result.estimatedMs.toFixed(3)} ms`;
  let split = '';
  if (result.timing && result.trials > 0 && result.wallS > 0) {
    const pass = result.networkPass?.seconds ?? 0;
    const rest = Math.max(0, result.wallS - result.timing.measureS - pass);
    split = ` (${result.timing.measureS.toFixed(1)} s measuring${pass > 0 ? `, ${pass.toFixed(1)} s the network pass` : ''}, ` +
      `${rest.toFixed(1)} s = ${((rest / result.wallS) * 100).toFixed(0)}% searching, cost model, records and setup)`;
  }
  return `tuning stopped (${result.reason}): ${result.trials} new trial(s) in ${result.wallS.toFixed(1)} s${split}; ${est}`;
}
