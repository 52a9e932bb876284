// The task scheduler: shares a measurement budget among the tasks of a network so that
// the objective Σ weight × best latency falls as fast as possible (TVM's TaskScheduler,
// §6 of shared/reference/tvm-ansor.md). A warm-up round gives every task that has no
// measurement yet one batch (or a smaller one: warmupTrials); after that each round goes
// to the task whose predicted gradient of the objective is the most negative. A round is:
// the task's policy proposes a batch, the measurer builds/runs/verifies it, the outcomes
// are handed to `record` (appended to the log before anything else happens, so a crash
// loses at most the batch in flight), then the cost model and the policy learn from them.
//
// Where we differ from TVM, on purpose:
// - a task without any valid program is retried (up to NO_VALID_ROUNDS rounds in this
//   run) instead of being dropped for good after the warm-up;
// - similarity groups are formed from the op chain of the task and its FLOP bucket, so
//   the "similar task" term of the gradient is live (in TVM no compute sets the tag);
// - budgets are total trials, trials per task and wall-clock time, in any combination,
//   and resumed measurements count towards them (re-running with the same log and the
//   same budget measures nothing new);
// - prefetch: while a batch is being built, the policy of the task expected next (the
//   next warm-up task, else the gradient's pick as it stands) already searches its own
//   batch, in slices, pausing while candidates are timed (Measurer.whenIdle). That batch
//   is used when its task comes up, so the search's time hides behind the compiler's;
//   the price is a cost model one round older for it. The prefetch finishes before the
//   model learns from the round, so a seed still fixes every proposal.

import type { Task } from '../graph/extract';
import { rng } from '../costmodel/gbdt';
import { measuredCost } from '../records/best';
import type { Step } from '../schedule/steps';
import type { CostModel, MeasuredState, MeasureOutcome, Measurer, SearchPolicy } from './types';

/** TVM's TaskScheduler defaults (python/tvm/auto_scheduler/task_scheduler.py). */
export const ALPHA = 0.2;
export const BETA = 2;
export const BACKWARD_WINDOW = 3;
/**
 * The warm-up round of a task's alternative (a Winograd task of the same layers, tuned in the
 * same run) is this share of a round. Compile needs only its best, to set against the direct
 * task's, and after the warm-up the gradient gives it rounds where it leads. Our choice, not
 * TVM's (it has no alternatives within one scheduler): on resnet-18 a Winograd trial costs
 * several times a direct one (larger unrolled C), and 12 full warm-up rounds of them did not
 * fit a 25-minute tune.
 */
export const ALTERNATIVE_WARMUP_SHARE = 0.25;
/**
 * Candidates in each task's warm-up round (`--warmup-trials`; a round is cut to this when
 * it is larger). Our choice, not TVM's (a whole round): with whole rounds, a 26-minute
 * resnet-18 tune on a 2-core box spent 20 minutes warming up its 36 tasks, as many
 * candidates on a dense layer of 0.1 ms as on a 3x3 conv of 5 ms; with 16, the warm-up
 * took 9 minutes and the tuned network ran 0.87x the time of the first (docs/tuning.md,
 * "The warm-up").
 */
export const DEFAULT_WARMUP_TRIALS = 16;
/** Rounds in one run that a task may produce no valid program before it is given up. */
export const NO_VALID_ROUNDS = 2;
/** Base of the FLOP buckets of similarity tags (TVM: int(log_1.618(FLOP + 1))). */
const GOLDEN = 1.618;

export interface SchedulerTask {
  task: Task;
  policy: SearchPolicy;
  /** What the log already holds for this task, oldest first (resume). */
  prior: readonly MeasuredState[];
}

export interface SchedulerOptions {
  /** Total trials over all tasks, resumed ones included. */
  trials?: number;
  /** Trials per task, resumed ones included. */
  trialsPerTask?: number;
  /** Wall-clock seconds of this run (checked before each round). */
  timeLimitS?: number;
  /** A task stops after this many trials without a better latency. */
  earlyStopping?: number;
  /** Candidates per round (TVM's num_measures_per_round, 64). */
  batchSize: number;
  /**
   * Candidates in a task's warm-up round (at most a round; default DEFAULT_WARMUP_TRIALS).
   * A smaller warm-up leaves more of a short budget to the gradient, which spends it on the
   * tasks that weigh most in the network.
   */
  warmupTrials?: number;
  /** Seed of the tie-breaking choice among equal gradients. */
  seed: number;
  alpha?: number;
  beta?: number;
  backwardWindow?: number;
  signal?: AbortSignal;
  /** Search the expected next task's batch during each round's builds (default true). */
  prefetch?: boolean;
  /** Clock in ms (tests inject one). */
  now?: () => number;
}

export interface SchedulerHooks {
  measurer: Measurer;
  costModel: CostModel;
  /** Persist a batch's outcomes (append to the record log); awaited before the next step. */
  record(taskIndex: number, outcomes: readonly MeasureOutcome[]): Promise<void> | void;
  onSkip?(taskIndex: number, reason: string): void;
  onRound?(round: RoundReport): void;
  /** After the warm-up round, with the state of every task. */
  onWarmupDone?(): void;
}

export interface RoundReport {
  task: number;
  /** Trials measured in this round. */
  trials: number;
  errors: number;
  best_ms: number | null;
  /** Trials of all tasks so far, resumed ones included. */
  total_trials: number;
  /** Trials measured in this run. */
  run_trials: number;
  estimated_ms: number | null;
  /** Whether this was the task's warm-up round. */
  warmup: boolean;
}

export type StopReason = 'budget' | 'time' | 'early-stop' | 'aborted' | 'done';

export interface TaskStatus {
  key: string;
  desc: string;
  weight: number;
  flops: number;
  /** Trials of this task, resumed ones included. */
  trials: number;
  /** Trials measured in this run. */
  runTrials: number;
  /** Trials of this task found in the log at the start. */
  resumed: number;
  best_ms: number | null;
  /** Why this task gets no more trials, or null while it is live. */
  stopped: string | null;
}

export interface SchedulerResult {
  reason: StopReason;
  /** Trials measured in this run. */
  trials: number;
  estimatedMs: number | null;
  tasks: TaskStatus[];
}

type StopKind = 'task-budget' | 'early-stop' | 'exhausted' | 'no-valid';

interface TaskState {
  readonly entry: SchedulerTask;
  readonly tag: string;
  trials: number;
  runTrials: number;
  readonly resumed: number;
  /** Rounds of this task (resumed ones counted as ceil(prior / per round)). */
  rounds: number;
  best: number | null;
  /** Best latency after each round (null before the first valid one). */
  history: (number | null)[];
  /** `trials` when the best last improved. */
  improvedAt: number;
  /** Rounds of this run without any valid program while best is null. */
  noValidRounds: number;
  stop: { kind: StopKind; message: string } | null;
}

/** The measured state of an outcome (mean cost, or null for an error). */
export function measuredState(o: MeasureOutcome): MeasuredState {
  return { steps: o.steps, cost_ms: measuredCost(o) };
}

/** The op chain of a task description and its FLOP bucket: tasks with equal tags are "similar". */
export function similarityTag(task: Pick<Task, 'desc' | 'flops'>): string {
  const ops = task.desc.split(' ')[0];
  return `${ops}_${Math.floor(Math.log(task.flops + 1) / Math.log(GOLDEN))}`;
}

/** Candidates per round: TVM's min(num_measures_per_round, trials // tasks), and the per-task budget. */
export function perRoundTrials(opts: Pick<SchedulerOptions, 'batchSize' | 'trials' | 'trialsPerTask'>, tasks: number): number {
  let n = opts.batchSize;
  if (opts.trials !== undefined && tasks > 0) n = Math.min(n, Math.floor(opts.trials / tasks));
  if (opts.trialsPerTask !== undefined) n = Math.min(n, opts.trialsPerTask);
  return Math.max(1, n);
}

export class TaskScheduler {
  private readonly states: TaskState[];
  private readonly perRound: number;
  /** Candidates of a task's warm-up round (at most perRound). */
  private readonly warmupRound: number;
  private readonly alpha: number;
  private readonly beta: number;
  private readonly window: number;
  private readonly random: () => number;
  private readonly now: () => number;
  /** Similarity groups: tag -> member task indices (members are expelled as TVM does). */
  private readonly groups = new Map<string, number[]>();
  /** Batches searched ahead of their task's round (prefetch), by task. */
  private readonly prefetched = new Map<number, Promise<Step[][]>>();
  /**
   * Layer groups, for estimatedMs and the gradient: a task and its alternatives (a Winograd
   * task of the same layers), with the weight of the task they are alternatives of.
   */
  private readonly layers: { weight: number; members: TaskState[] }[];
  /** Each task's layer group (an index into `layers`). */
  private readonly layerOf: number[];

  constructor(tasks: readonly SchedulerTask[], private readonly opts: SchedulerOptions, private readonly hooks: SchedulerHooks) {
    this.perRound = perRoundTrials(opts, tasks.length);
    this.warmupRound = Math.min(this.perRound, opts.warmupTrials ?? DEFAULT_WARMUP_TRIALS);
    this.alpha = opts.alpha ?? ALPHA;
    this.beta = opts.beta ?? BETA;
    this.window = opts.backwardWindow ?? BACKWARD_WINDOW;
    this.random = rng(opts.seed);
    this.now = opts.now ?? Date.now;
    this.states = tasks.map((entry) => this.resumeState(entry));
    this.states.forEach((s, i) => {
      const members = this.groups.get(s.tag) ?? [];
      members.push(i);
      this.groups.set(s.tag, members);
    });
    const byKey = new Map(this.states.map((s) => [s.entry.task.key, s]));
    const layers = new Map<string, TaskState[]>();
    for (const s of this.states) {
      const alt = s.entry.task.alternative;
      const head = alt && byKey.has(alt.of) ? alt.of : s.entry.task.key;
      layers.set(head, [...(layers.get(head) ?? []), s]);
    }
    this.layers = [...layers].map(([head, members]) => ({ weight: byKey.get(head)!.entry.task.weight, members }));
    this.layerOf = this.states.map((s) => this.layers.findIndex((l) => l.members.includes(s)));
  }

  /** Trials per round this scheduler uses. */

  /** Rebuild a task's counters from its logged measurements, in chunks of one round. */
  private resumeState(entry: SchedulerTask): TaskState {
    const s: TaskState = {
      entry, tag: similarityTag(entry.task), trials: 0, runTrials: 0, resumed: entry.prior.length, rounds: 0,
      best: null, history: [], improvedAt: 0, noValidRounds: 0, stop: null,
    };
    entry.prior.forEach((m, i) => {
      s.trials += 1;
      if (m.cost_ms !== null && (s.best === null || m.cost_ms < s.best)) {
        s.best = m.cost_ms;
        s.improvedAt = s.trials;
      }
      if ((i + 1) % this.perRound === 0 || i === entry.prior.length - 1) {
        s.rounds += 1;
        s.history.push(s.best);
      }
    });
    return s;
  }

  status(): TaskStatus[] {
    return this.states.map((s) => ({
      key: s.entry.task.key, desc: s.entry.task.desc, weight: s.entry.task.weight, flops: s.entry.task.flops,
      trials: s.trials, runTrials: s.runTrials, resumed: s.resumed, best_ms: s.best, stopped: s.stop?.message ?? null,
    }));
  }

  /** Σ weight × best latency (ms), or null while some task has no valid program. */
  estimatedMs(): number | null {
    // Compile runs the faster of a task and its alternatives, so a layer group counts once,
    // with its best implementation.
    let sum = 0;
    for (const { weight, members } of this.layers) {
      const bests = members.flatMap((m) => (m.best === null ? [] : [m.best]));
      if (bests.length === 0) return null;
      sum += weight * Math.min(...bests);
    }
    return sum;
  }

  private totalTrials(): number { return this.states.reduce((a, s) => a + s.trials, 0); }
  private runTrials(): number { return this.states.reduce((a, s) => a + s.runTrials, 0); }

  /** Why a task must not get another round (budget / early stopping), or null. */
  private checkStop(s: TaskState): TaskState['stop'] {
    const { trialsPerTask, earlyStopping } = this.opts;
    if (trialsPerTask !== undefined && s.trials >= trialsPerTask) {
      return { kind: 'task-budget', message: `trials-per-task budget spent (${s.trials} of ${trialsPerTask})` };
    }
    if (earlyStopping !== undefined && s.best !== null && s.trials - s.improvedAt >= earlyStopping) {
      return { kind: 'early-stop', message: `early-stopped: no improvement in the last ${s.trials - s.improvedAt} trials` };
    }
    return null;
  }

  /** Why the whole run must stop before the next round, or null. */
  private globalStop(started: number): StopReason | null {
    if (this.opts.signal?.aborted) return 'aborted';
    if (this.opts.timeLimitS !== undefined && this.now() - started >= this.opts.timeLimitS * 1000) return 'time';
    if (this.opts.trials !== undefined && this.totalTrials() >= this.opts.trials) return 'budget';
    return null;
  }

  async run(): Promise<SchedulerResult> {
    const started = this.now();
    this.states.forEach((s, i) => {
      s.stop = this.checkStop(s);
      if (s.stop) this.hooks.onSkip?.(i, s.stop.message);
    });
    let reason: StopReason | null = null;
    // Warm-up: one round for every task the log knows nothing about.
    for (let i = 0; i < this.states.length && reason === null; i++) {
      const s = this.states[i];
      if (s.trials > 0 || s.stop) continue;
      reason = this.globalStop(started);
      if (reason === null) await this.round(i, true);
    }
    if (reason === null) this.hooks.onWarmupDone?.();
    while (reason === null) {
      reason = this.globalStop(started);
      if (reason !== null) break;
      const next = this.pick();
      if (next === null) {
        reason = this.allStoppedReason();
        break;
      }
      await this.round(next, false);
    }
    return { reason, trials: this.runTrials(), estimatedMs: this.estimatedMs(), tasks: this.status() };
  }

  private allStoppedReason(): StopReason {
    const kinds = new Set(this.states.map((s) => s.stop?.kind));
    if (kinds.has('early-stop')) return 'early-stop';
    if (kinds.size === 1 && kinds.has('task-budget')) return 'budget';
    return 'done';
  }

  /** Trials task `i` may take in its next round, after `pending` more trials (`pendingOwn` of them its own) are measured. */
  private roundSize(i: number, pending = 0, pendingOwn = 0): number {
    const s = this.states[i];
    let n = this.perRound;
    if (s.trials + pendingOwn === 0) {
      n = this.warmupRound;
      const alternative = s.entry.task.alternative !== undefined && this.layers[this.layerOf[i]].members.length > 1;
      if (alternative) n = Math.max(1, Math.ceil(n * ALTERNATIVE_WARMUP_SHARE));
    }
    if (this.opts.trials !== undefined) n = Math.min(n, this.opts.trials - this.totalTrials() - pending);
    if (this.opts.trialsPerTask !== undefined) n = Math.min(n, this.opts.trialsPerTask - s.trials - pendingOwn);
    return n;
  }

  /** Task `i`'s batch of at most `n`: the prefetched one if there is one, else searched now. */
  private async proposal(i: number, n: number): Promise<Step[][]> {
    const ahead = this.prefetched.get(i);
    this.prefetched.delete(i);
    if (ahead) {
      const batch = await ahead;
      if (batch.length > 0) return batch.slice(0, n);
    }
    return n > 0 ? this.states[i].entry.policy.nextBatch(n) : [];
  }

  /** The task expected to come after round `i`: the next warm-up task, else the gradient's pick as things stand. */
  private expectedNext(i: number, warmup: boolean): number | null {
    if (warmup) {
      for (let j = i + 1; j < this.states.length; j++) if (this.states[j].trials === 0 && !this.states[j].stop) return j;
    }
    return this.pick(true);
  }

  /** Start searching the batch of the task expected after round `i` (which measures `pending` trials); resolves when that search is done. */
  private prefetch(i: number, warmup: boolean, pending: number): Promise<void> {
    if (this.opts.prefetch === false) return Promise.resolve();
    const j = this.expectedNext(i, warmup);
    if (j === null || this.prefetched.has(j)) return Promise.resolve();
    const policy = this.states[j].entry.policy;
    const n = this.roundSize(j, pending, j === i ? pending : 0);
    if (!policy.nextBatchAsync || n <= 0) return Promise.resolve();
    const measurer = this.hooks.measurer;
    const pause = async (): Promise<void> => {
      await new Promise<void>((resolve) => setImmediate(resolve));
      await measurer.whenIdle?.();
    };
    const batch = policy.nextBatchAsync(n, pause);
    this.prefetched.set(j, batch);
    return batch.then(() => undefined, () => undefined);
  }

  /** One round of task `i`: propose, measure, record, learn. */
  private async round(i: number, warmup: boolean): Promise<void> {
    const s = this.states[i];
    const { task, policy } = s.entry;
    const n = this.roundSize(i);
    const candidates = await this.proposal(i, n);
    if (candidates.length === 0) {
      s.stop = { kind: 'exhausted', message: 'search space exhausted: no new candidate' };
      this.hooks.onSkip?.(i, s.stop.message);
      return;
    }
    // The measurement starts first (its compilers are spawned), then the search ahead runs beside it.
    const measuring = this.hooks.measurer.measure(task, candidates);
    const ahead = this.prefetch(i, warmup, candidates.length);
    let outcomes: MeasureOutcome[];
    try {
      outcomes = await measuring;
    } finally {
      await ahead;
    }
    await this.hooks.record(i, outcomes);
    const measured = outcomes.map(measuredState);
    this.hooks.costModel.update(task, measured);
    policy.notify(measured);

    let errors = 0;
    for (const m of measured) {
      s.trials += 1;
      s.runTrials += 1;
      if (m.cost_ms === null) { errors += 1; continue; }
      if (s.best === null || m.cost_ms < s.best) {
        s.best = m.cost_ms;
        s.improvedAt = s.trials;
      }
    }
    s.rounds += 1;
    s.history.push(s.best);
    if (s.best === null) s.noValidRounds += 1;
    this.adjustGroup(i);
    s.stop = this.checkStop(s);
    if (!s.stop && s.best === null && s.noValidRounds >= NO_VALID_ROUNDS) {
      s.stop = { kind: 'no-valid', message: `no valid program in ${s.noValidRounds} rounds (${s.trials} trials)` };
    }
    this.hooks.onRound?.({
      task: i, trials: measured.length, errors, best_ms: s.best, total_trials: this.totalTrials(), run_trials: this.runTrials(),
      estimated_ms: this.estimatedMs(), warmup,
    });
  }

  /**
   * Gradient of the objective for each live task (TVM's "gradient" strategy); lower = more
   * promising. The objective counts a layer once, at its fastest implementation (a conv and
   * its Winograd alternative: compile runs the faster), so a task's latency enters it as
   * min(its best, its alternatives' best): TVM's terms are taken through that min. An
   * alternative that stays slower than the layer's best moves nothing, and only the part
   * of its predicted gain that would pass that best counts (our addition: TVM has no
   * alternatives within one scheduler).
   */
  gradients(): (number | null)[] {
    return this.states.map((s, i) => {
      if (s.stop || s.best === null) return null;
      const layer = this.layers[this.layerOf[i]];
      // The fastest of the other implementations of the layer (+∞: none, or none measured).
      const others = Math.min(...layer.members.filter((m) => m !== s).map((m) => m.best ?? Infinity));
      const seen = (latency: number): number => Math.min(latency, others);
      const g = s.best;
      const t = Math.max(1, s.rounds);
      const chain = layer.weight; // ∂(Σ w·g)/∂g_i
      const h = s.history;
      const backward = h.length > this.window && h[h.length - 1] !== null && h[h.length - 1 - this.window] !== null
        ? (seen(h[h.length - 1]!) - seen(h[h.length - 1 - this.window]!)) / this.window
        : 0;
      const optimistic = g - g / t;
      const similar = this.similarBound(i);
      const forward = seen(Math.min(optimistic, similar)) - seen(g);
      return chain * (this.alpha * backward + (1 - this.alpha) * forward);
    });
  }

  /** The highest FLOP rate (FLOPs per ms of best latency) among `members`; 0 when none has one. */
  private bestRate(members: readonly number[]): number {
    let rate = 0;
    for (const j of members) {
      const b = this.states[j].best;
      if (b !== null && b > 0) rate = Math.max(rate, this.states[j].entry.task.flops / b);
    }
    return rate;
  }

  /** β × FLOP_i / the best FLOP rate among its similar tasks; +∞ when it has none. */
  private similarBound(i: number): number {
    const members = this.groups.get(this.states[i].tag) ?? [];
    if (members.length <= 1 || !members.includes(i)) return Infinity;
    const bestRate = this.bestRate(members);
    return bestRate > 0 ? (this.beta * this.states[i].entry.task.flops) / bestRate : Infinity;
  }

  /** A task tuned for many more rounds than its group but still β× slower is not similar after all. */
  private adjustGroup(i: number): void {
    const s = this.states[i];
    const members = this.groups.get(s.tag);
    if (!members || members.length <= 1 || !members.includes(i) || s.best === null) return;
    let maxOtherRounds = 0;
    for (const j of members) if (j !== i) maxOtherRounds = Math.max(maxOtherRounds, this.states[j].rounds);
    const rate = s.best > 0 ? s.entry.task.flops / s.best : Infinity;
    if (rate < this.bestRate(members) / this.beta && s.rounds > 5 + maxOtherRounds) members.splice(members.indexOf(i), 1);
  }

  /**
   * The next task to tune: a live task without a valid program first, else the most
   * negative gradient (a seeded random choice among exact ties). `peek` answers without
   * drawing from the generator (for the progress footer), taking the first of any ties.
   */
  pick(peek = false): number | null {
    const live = this.states.map((s, i) => (s.stop ? -1 : i)).filter((i) => i >= 0);
    if (live.length === 0) return null;
    const invalid = live.filter((i) => this.states[i].best === null);
    if (invalid.length > 0) return invalid.reduce((a, b) => (this.states[b].rounds < this.states[a].rounds ? b : a));
    const grads = this.gradients();
    let min = Infinity;
    for (const i of live) min = Math.min(min, grads[i]!);
    const ties = live.filter((i) => grads[i] === min);
    return ties.length === 1 || peek ? ties[0] : ties[Math.floor(this.random() * ties.length)];
  }
}
