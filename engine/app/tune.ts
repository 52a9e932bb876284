// tuneNetwork: the auto-scheduler end to end, as `tensortune tune` and the Nx tune
// executor run it. Model -> tasks (the same passes and partition compile uses, so the
// workload keys are the ones compile looks up) -> what the record log already holds for
// this target and machine -> one search policy per task, all sharing one cost model
// trained from that log -> the task scheduler, whose every measured batch is appended to
// the log before anything else happens (a SIGKILL loses at most the batch in flight).
// Until one candidate succeeds, the first batches are held back: a run whose first
// batches all fail alike stops with one line and writes nothing (fail-fast.ts).
// An abort (Ctrl-C) stops the run after the batch in flight, or, with dropBatchOnAbort,
// at once without it (under Nx, whose tasks are killed a few seconds after a Ctrl-C);
// either way every batch measured before it is in the log.

import { promises as fs } from 'node:fs';
import path from 'node:path';
import { UserError } from '../errors';
import { loadModel } from '../frontend/load';
import { tuningPlan, type Task } from '../graph/extract';
import { kernelThreads } from '../graph/per-sample';
import { byWorkload, CONFIRM_POLICY, matchesRecord, measuredSchedule, rankedByWorkload, type RecordMatch } from '../records/best';
import { inContext, REPORT_HINT } from '../compile/internal-error';
import { checkTaskMemory } from '../compile/memory-plan';
import { networkPass } from './network-pass';
import { appendRecords, checkLogWritable, readRecordFiles, type LogEntry } from '../records/log';
import { measuredStates, openLog } from '../records/open';
import { makeRecord } from '../records/make';
import type { TuningRecord } from '../records/record';
import { defaultSchedule } from '../schedule/defaults';
import type { Step } from '../schedule/steps';
import { hardwareFingerprint, isGpu, kindOf, parseTarget, type Target } from '../target';
import { LearnedCostModel } from '../costmodel/model';
import { HOST_RATE_TOLERANCE, MAX_RETAKES, NEW_BEST_SHARE } from '../measure/host-rate';
import { LocalMeasurer } from '../measure/measurer';
import { stepsKey } from '../schedule/steps';
import { FailFastGate } from '../search/fail-fast';
import { createPolicy, POLICY_NAMES } from '../search/policy';
import { cutDesc, fitLine, formatEstimate, formatProgress, formatTaskTable, runBudget, type TableRow } from '../search/progress';
import { TaskScheduler, type SchedulerResult, type SchedulerTask } from '../search/task-scheduler';
import type {
  CostModel, MeasureDevice, MeasuredState, MeasureOptions, MeasureOutcome, Measurer, PolicyName, SearchPolicy, TuneNetworkOptions, TuneNetworkResult,
} from '../search/types';

/**
 * Schedules per task the confirmation pass times again (besides the default) by default
 * (`--confirm N`, 0: none). Its records spend no trials of a later, larger budget: resume
 * counts distinct schedules (records/open.ts measuredStates).
 */
export const CONFIRM_TOP = 3;
/** TVM's num_measures_per_round. */
export const DEFAULT_BATCH_SIZE = 64;
/** TVM's tutorials budget about 800 trials per task on CPU (tune_network_x86.py); used when no budget is given. */
export const DEFAULT_TRIALS_PER_TASK_BUDGET = 800;
export { POLICY_NAMES };

/** The parts a tuning run is made of (tune-parts.ts builds the real ones). */
export interface TuningParts {
  costModel: CostModel;
  measurer: Measurer;
  createPolicy(task: Task, measured: readonly MeasuredState[], seed: number): SearchPolicy;
}

/**
 * The real parts: one cost model shared by all tasks, trained from what the logs hold for
 * them (TVM retrains its XGBModel on the whole log when resuming), one policy per task
 * preloaded with that task's measured states, and the local measurer.
 */
function createParts(
  target: Target, policy: PolicyName, measure: Partial<MeasureOptions>, seed: number, tasks: readonly Task[], prior: (t: Task) => MeasuredState[],
  device?: MeasureDevice,
): TuningParts {
  const costModel = new LearnedCostModel({ seed });
  let known = 0;
  for (const t of tasks) known += prior(t).length > 0 ? costModel.add(t, prior(t)) : 0;
  if (known > 0) costModel.train();
  return {
    costModel,
    measurer: device ? device.measurer(target, { ...measure, seed }) : new LocalMeasurer(target, { ...measure, seed }),
    createPolicy: (task, measured, policySeed) => createPolicy(policy, { task, target, costModel, measured, seed: policySeed }),
  };
}

const sameSteps = (a: readonly Step[], b: readonly Step[]): boolean => stepsKey(a) === stepsKey(b);

/**
 * The task's default schedule (what compile uses without records) goes first into the
 * task's first batch unless the logs hold it already: every tuned task then has a record
 * at least as fast as the default, so `compile --records` never makes a task slower than
 * compiling without records would (a short random search easily stays behind it).
 */
export function withDefaultFirst(policy: SearchPolicy, defaultSteps: Step[], measured: readonly MeasuredState[]): SearchPolicy {
  let pending = !measured.some((m) => sameSteps(m.steps, defaultSteps));
  return {
    name: policy.name,
    nextBatch(n) {
      if (!pending || n < 1) return policy.nextBatch(n);
      pending = false;
      return [defaultSteps, ...(n > 1 ? policy.nextBatch(n - 1).filter((s) => !sameSteps(s, defaultSteps)) : [])];
    },
    ...(policy.nextBatchAsync ? {
      async nextBatchAsync(n: number, pause: () => Promise<void>) {
        if (!pending || n < 1) return policy.nextBatchAsync!(n, pause);
        pending = false;
        return [defaultSteps, ...(n > 1 ? (await policy.nextBatchAsync!(n - 1, pause)).filter((s) => !sameSteps(s, defaultSteps)) : [])];
      },
    } : {}),
    notify: (m) => policy.notify(m),
    genomeOf: (steps) => policy.genomeOf?.(steps),
  };
}

/** `policy` with an engine error in any of its calls named by `where` (an InternalError). */
function namedPolicy(policy: SearchPolicy, where: () => string): SearchPolicy {
  return {
    name: policy.name,
    nextBatch: (n) => inContext(where, () => policy.nextBatch(n)),
    ...(policy.nextBatchAsync ? {
      nextBatchAsync: (n: number, pause: () => Promise<void>) => policy.nextBatchAsync!(n, pause).catch((e: unknown) => inContext(where, () => { throw e; })),
    } : {}),
    notify: (m) => inContext(where, () => policy.notify(m)),
    genomeOf: (steps) => policy.genomeOf?.(steps),
  };
}

function checkCount(name: string, value: number | undefined, min: number): void {
  if (value === undefined) return;
  if (!Number.isInteger(value) || value < min) {
    throw new UserError(`tuneNetwork: ${name} must be an integer >= ${min}, got ${String(value)}`);
  }
}

function checkOptions(opts: Omit<TuneNetworkOptions, 'model'>): void {
  checkCount('trials', opts.trials, 1);
  checkCount('trialsPerTask', opts.trialsPerTask, 1);
  checkCount('earlyStopping', opts.earlyStopping, 1);
  checkCount('batchSize', opts.batchSize, 1);
  checkCount('warmupTrials', opts.warmupTrials, 1);
  checkCount('seed', opts.seed, 0);
  checkCount('confirm', opts.confirm, 0);
  if (opts.timeLimitS !== undefined && !(opts.timeLimitS > 0 && Number.isFinite(opts.timeLimitS))) {
    throw new UserError(`tuneNetwork: timeLimitS must be a positive number of seconds, got ${String(opts.timeLimitS)}`);
  }
  if (opts.policy !== undefined && !POLICY_NAMES.includes(opts.policy)) {
    throw new UserError(`tuneNetwork: unknown policy '${String(opts.policy)}' (expected one of: ${POLICY_NAMES.join(', ')})`);
  }
  if (typeof opts.records !== 'string' || opts.records === '') throw new UserError('tuneNetwork: records (the log file to append to) is required');
}

/** The `reason` of a tune of a model without a tuning task (TuneNetworkResult.reason). */
export const NOTHING_TO_TUNE = 'nothing to tune';

/** The one line a tune of a model without a tuning task prints. */
export const nothingToTuneLine = (name: string): string =>
  `${name}: nothing to tune: no task with a reduction (conv, dense, matmul, pooling, ...); compile gives its kernels their default schedules`;

/** Where the wall time of a run went (for the "outside measurement" figure of the benches). */
export interface TuneTiming {
  /** Inside Measurer.measure (building, running, verifying). */
  measureS: number;
  /** Of which the candidates' own build and run times, as the measurer reports them. */
  buildS: number;
  runS: number;
  /** Appending records. */
  recordS: number;
}

export type TuneResult = TuneNetworkResult & { timing: TuneTiming };

/** tuneNetwork's options, and how an abort ends the run. */
export type TuneRunOptions = TuneNetworkOptions & {
  /**
   * On `signal`, stop at once and drop the batch in flight instead of finishing it: for a
   * caller that has only a few seconds left (Nx kills a task's processes 5 s after a
   * Ctrl-C, NX_PROCESS_KILL_GRACE_PERIOD), where finishing could be cut mid-append.
   */
  dropBatchOnAbort?: boolean;
  /** While nothing else is logged, a progress line at least every this many seconds (where no bar shows progress; progress.ts PROGRESS_EVERY_S). */
  progressEveryS?: number;
  /** The width log lines are fitted to (progress.ts outputWidth; none: lines stay whole). */
  width?: number;
};

/**
 * Tune every task of a network, appending each measurement to `opts.records`; resumes
 * from what that log holds. The tasks are extracted exactly as compileNetwork partitions
 * the model, so their workload keys are the ones `compile --records` looks up.
 */
export async function tuneNetwork(opts: TuneRunOptions): Promise<TuneResult> {
  checkOptions(opts);
  const started = Date.now();
  const model = loadModel(opts.model);
  const { tasks, samples } = tuningPlan(model.graph, opts.target);
  if (samples > 1 && tasks.length > 0) opts.log?.(`${model.name}: its batch of ${samples} runs one sample at a time on this target, so these are one sample's tasks (docs/tuning.md, "Batches")`);
  // Where each thread runs whole samples, each kernel runs on one thread: timed there.
  const asked = opts.measure?.threads ?? 1;
  const at = kernelThreads(samples, asked);
  if (at !== asked && tasks.length > 0) {
    opts.log?.(`${model.name}: at ${asked} threads each thread runs whole samples with one-thread kernels, so candidates are timed at ${at} thread`);
    opts = { ...opts, measure: { ...opts.measure, threads: at } };
  }
  const result = await tuneTasks(model.name, tasks, opts, started);
  // The network pass (app/network-pass.ts): where a task's latest confirmation pass
  // timed its schedules alone (this run's, or an older run's), on this machine's CPU, they
  // are timed again inside the compiled network.
  const target = parseTarget(opts.target, 'target');
  const top = opts.confirm ?? CONFIRM_TOP;
  if (opts.networkPass !== true || result.reason === 'aborted' || result.reason === NOTHING_TO_TUNE) return result;
  const log = opts.log ?? (() => undefined);
  const skip = top === 0 ? 'no confirmation pass (confirm 0) ranked the schedules' : opts.device ? 'the schedules were measured on another device'
    : isGpu(target) ? 'it profiles CPU kernels' : undefined;
  if (skip) {
    log(`network pass: skipped, ${skip}`);
    return result;
  }
  try {
    const options = kindOf(target).defaultOptions(target);
    result.networkPass = await networkPass({
      model: opts.model, target: target.text, fingerprint: hardwareFingerprint(target),
      tasks: tasks.map((t) => ({ key: t.key, defaultSteps: defaultSchedule(t.dag, options), alternativeOf: t.alternative?.of })),
      records: path.resolve(opts.records), readRecords: opts.readRecords?.map((f) => path.resolve(f)),
      top, threads: opts.measure?.threads ?? 1,
      append: async (list) => { await appendRecords(path.resolve(opts.records), list); },
      log, warn: opts.log ? (message) => log(`warning: ${message}`) : undefined, signal: opts.signal,
    });
  } catch (e) {
    // The tune's records are in the log already; compile ranks by the confirmation pass alone.
    if (opts.signal?.aborted) return result;
    log(`warning: the network pass failed, so compile ranks the schedules by their timings alone: ${e instanceof Error ? e.message : String(e)}`);
  }
  result.wallS = (Date.now() - started) / 1000;
  return result;
}


/** The tuning loop over given tasks (tuneNetwork's, and the single-layer bench's). */
export async function tuneTasks(name: string, tasks: readonly Task[], opts: Omit<TuneRunOptions, 'model'>, started = Date.now()): Promise<TuneResult> {
  checkOptions(opts);
  // The host is compile's business: tune measures on this machine's device, with the
  // candidates' host code built for this machine. The records fit a compile for any host
  // on this machine (the fingerprint names the device, not the host).
  const host = opts.host === undefined ? undefined : parseTarget(opts.target, 'target', opts.host).host;
  const target = parseTarget(opts.target, 'target');
  checkTaskMemory(tasks, name, opts.memoryLimit); // before a worker allocates a task's tensors
  const fingerprint = opts.device?.fingerprint ?? hardwareFingerprint(target);
  let lastLine = Date.now(); // when the last line was logged, for the steady progress lines
  const raw = opts.log ?? (() => undefined);
  const log = (line: string): void => {
    lastLine = Date.now();
    for (const l of fitLine(line, opts.width)) raw(l);
  };
  if (host?.ccPrefix !== undefined) log(`host "${host.text}" is for compile: tune measures on this machine's GPU (${kindOf(target).label}), with the candidates' host side built here`);
  const emit = opts.onEvent ?? (() => undefined);
  const records = path.resolve(opts.records);
  // CPU timings depend on the threads the candidates ran on: resume only from this run's count.
  const threads = isGpu(target) ? undefined : opts.measure?.threads ?? 1;
  const match: RecordMatch = { target: target.text, fingerprint, threads };
  // Broken lines in a log: one warning per file, in the progress log, else on stderr.
  const warn = opts.log ? (message: string): void => log(`warning: ${message}`) : undefined;

  await checkLogWritable(opts.records); // a log we cannot append to fails before anything is read or measured
  if (tasks.length === 0) {
    // Only injective and elementwise kernels (a lone Relu, a reshape): nothing has a schedule
    // worth searching, and compile gives every kernel its default. The log is still there
    // afterwards (empty if new), as after any tune, so `compile --records` reads it.
    await fs.mkdir(path.dirname(records), { recursive: true });
    await fs.appendFile(records, '');
    emit({ type: 'start', tasks: [] });
    log(nothingToTuneLine(name));
    const wallS = (Date.now() - started) / 1000;
    emit({ type: 'done', total_trials: 0, estimated_ms: 0, wall_s: wallS, reason: NOTHING_TO_TUNE });
    return { tasks: [], trials: 0, estimatedMs: 0, wallS, reason: NOTHING_TO_TUNE, timing: { measureS: 0, buildS: 0, runS: 0, recordS: 0 } };
  }
  // What is known already: further logs first, then our own (its latest lines are the newest).
  const prior = new Map<string, MeasuredState[]>();
  const extra = (opts.readRecords ?? []).map((f) => path.resolve(f)).filter((f) => f !== records);
  const extraEntries = extra.length > 0 ? await readRecordFiles(extra, { warn }) : [];
  for (const [key, states] of measuredStates(extraEntries, match)) prior.set(key, [...states]);
  const opened = await openLog(records, match, { warn });
  for (const [key, states] of opened.measured) prior.set(key, [...(prior.get(key) ?? []), ...states]);
  const otherThreads = leftOutForThreads([...extraEntries, ...opened.entries], match);
  if (otherThreads) log(otherThreads);
  const priorOf = (t: Task): MeasuredState[] => prior.get(t.key) ?? [];
  const measured = tasks.map((t) => priorOf(t).length);

  const policyName = opts.policy ?? 'evolutionary';
  const seed = opts.seed ?? 0;
  // A task's weights evicted before each run by default on CPUs (measurer.ts coldInputs): a
  // layer of a network reads them cold. With warm-cache timings the estimated total ran ~10%
  // below the tuned network's time; with the weights evicted it tracks it within 1-3%
  // (docs/performance.md, "Cache flushing").
  const measure: Partial<MeasureOptions> = { ...opts.measure, flush: opts.measure?.flush ?? !isGpu(target) };
  const trials = opts.trials ?? (opts.trialsPerTask === undefined && opts.timeLimitS === undefined ? DEFAULT_TRIALS_PER_TASK_BUDGET * tasks.length : undefined);
  const parts = createParts(target, policyName, measure, seed, tasks, priorOf, opts.device);
  const timing: TuneTiming = { measureS: 0, buildS: 0, runS: 0, recordS: 0 };
  const gate = new FailFastGate(opts.records, target.text);
  let searched = 0; // the search's records this run appended: its trials, as the log holds them
  let appending: Promise<void> = Promise.resolve(); // the append under way, which a dropped batch waits for
  const append = (list: readonly TuningRecord[], search = false): Promise<void> => {
    const done = appending.then(async () => {
      const t0 = Date.now();
      await appendRecords(records, list);
      timing.recordS += (Date.now() - t0) / 1000;
      if (search) searched += list.length;
    });
    appending = done.catch(() => undefined);
    return done;
  };
  let dropped = false; // set when an abort dropped the batch in flight: nothing more of the search is recorded
  let leftOut = 0, leftOutTotal = 0; // failures not recorded after an abort: in the round being reported, in all
  let result: SchedulerResult;
  let background: Promise<void> | undefined;
  let beat: NodeJS.Timeout | undefined;
  let table: (next?: boolean) => void;
  let changedSinceTable = true; // whether the state differs from the last table printed (none yet)
  try {
    emit({
      type: 'start',
      tasks: tasks.map((t, id) => ({ id, key: t.key, desc: t.desc, weight: t.weight, flops: t.flops, measured: measured[id] })),
    });
    const resumed = measured.reduce((a, m) => a + m, 0);
    log(`${name}: ${describeTasks(tasks)}, ${resumed} measurement(s) resumed from ${opts.records}; policy ${policyName}, target "${target.text}"`);

    // An error of the engine in a task's default schedule or search names the task (compile/internal-error.ts).
    const doing = (i: number) => (): string => `tuning task ${i} (${tasks[i].desc})`;
    const defaults = tasks.map((task, i) => inContext(doing(i), () => defaultSchedule(task.dag, kindOf(target).defaultOptions(target),
      (e) => log(`warning: task ${i} (${task.desc}): its default schedule does not apply (${e.message}), so every stage at root stands in for it (correct, slower); ${REPORT_HINT}`))));
    const entries: SchedulerTask[] = tasks.map((task, i) => ({
      task, prior: priorOf(task),
      policy: namedPolicy(withDefaultFirst(inContext(doing(i), () => parts.createPolicy(task, priorOf(task), (seed + 7919 * i) >>> 0)), defaults[i], priorOf(task)), doing(i)),
    }));
    let measuring: { task: number; candidates: number; since: number } | undefined; // the batch in flight, for the progress lines
    const measurer: Measurer = {
      async measure(task, candidates) {
        const t0 = Date.now();
        measuring = { task: tasks.indexOf(task as Task), candidates: candidates.length, since: t0 };
        try {
          const outcomes = await parts.measurer.measure(task, candidates);
          for (const o of outcomes) { timing.buildS += o.build_ms / 1000; timing.runS += o.run_ms / 1000; }
          return outcomes;
        } finally {
          measuring = undefined;
          timing.measureS += (Date.now() - t0) / 1000;
        }
      },
      close: async () => undefined, // the parts' measurer is closed once, after the run
      ...(parts.measurer.whenIdle ? { whenIdle: () => parts.measurer.whenIdle!() } : {}),
    };
    const toRecord = (i: number, o: MeasureOutcome, policy?: string, pass?: string): TuningRecord => makeRecord(o, {
      task: tasks[i], target: target.text, fingerprint, seed, threads, budget: opts.budget, policy: policy ?? (sameSteps(o.steps, defaults[i]) ? 'default' : policyName), pass,
    }, entries[i].policy.genomeOf?.(o.steps));

    // What this run may still measure, for the progress and ETA of each round's line.
    const bound = runBudget(measured, { trials, trialsPerTask: opts.trialsPerTask, timeLimitS: opts.timeLimitS });
    let roundsSinceTable = 0;
    let runTrials = 0;
    const scheduler = new TaskScheduler(entries, {
      trials, trialsPerTask: opts.trialsPerTask, timeLimitS: opts.timeLimitS, earlyStopping: opts.earlyStopping, prefetch: opts.prefetch,
      batchSize: opts.batchSize ?? DEFAULT_BATCH_SIZE, warmupTrials: opts.warmupTrials, seed, signal: opts.signal,
    }, {
      measurer,
      costModel: parts.costModel,
      async record(i, outcomes) {
        if (dropped) return;
        // After an abort, a failure may be the interrupt's own doing: a Ctrl-C reaches the
        // workers and compilers too (the terminal's process group), so only successes are kept.
        const kept = opts.signal?.aborted ? outcomes.filter((o) => o.error === null) : outcomes;
        leftOut = outcomes.length - kept.length;
        if (kept.length > 0) await append(gate.admit(kept, kept.map((o) => toRecord(i, o))), true);
      },
      onSkip(i, reason) {
        if (dropped) return;
        emit({ type: 'skip', task: i, reason });
        log(`task ${i} (${tasks[i].desc}): ${reason}`);
      },
      onRound(round) {
        if (dropped) return;
        // The round as the log holds it: without the failures left out after an abort.
        const r = { ...round, trials: round.trials - leftOut, errors: round.errors - leftOut, run_trials: round.run_trials - leftOutTotal - leftOut, total_trials: round.total_trials - leftOutTotal - leftOut };
        leftOutTotal += leftOut;
        leftOut = 0;
        emit({ type: 'round', task: r.task, trials: r.trials, best_ms: r.best_ms, errors: r.errors, total_trials: r.total_trials, estimated_ms: r.estimated_ms });
        const best = r.best_ms === null ? 'no valid program yet' : `best ${r.best_ms.toFixed(4)} ms`;
        runTrials = r.run_trials;
        const progress = formatProgress({ trials: r.run_trials, elapsedS: (Date.now() - started) / 1000 }, bound);
        const head = (desc: string): string => `${r.warmup ? 'warm-up ' : ''}task ${r.task} (${desc}): ${r.trials} trial(s), ${r.errors} error(s), ${best}`;
        const desc = opts.width === undefined ? tasks[r.task].desc : cutDesc(tasks[r.task].desc, opts.width - head('').length);
        log(`${head(desc)}; run: ${progress}`);
        changedSinceTable = true;
        // TVM prints the table before every round; once per pass over the tasks is enough to follow.
        if (!r.warmup && ++roundsSinceTable >= tasks.length) { roundsSinceTable = 0; table(); }
      },
      onWarmupDone: () => table(),
    });
    table = (next = true): void => {
      changedSinceTable = false;
      for (const line of taskTable(tasks, scheduler.status(), opts.width)) raw(line);
      const total = scheduler.status().reduce((a, t) => a + t.trials, 0);
      log(formatEstimate(scheduler.estimatedMs(), total, (Date.now() - started) / 1000, next ? scheduler.pick(true) : null));
    };

    // Long rounds (64 candidates of a big layer) are quiet for minutes: say where the run is.
    const every = opts.progressEveryS;
    beat = every === undefined ? undefined : setInterval(() => {
      if (dropped || Date.now() - lastLine < every * 1000) return;
      const now = measuring && measuring.task >= 0
        ? `measuring task ${measuring.task} (${tasks[measuring.task].desc}): ${measuring.candidates} candidate(s), ${Math.round((Date.now() - measuring.since) / 1000)} s so far`
        : 'searching';
      const est = scheduler.estimatedMs();
      log(`${now}; run: ${formatProgress({ trials: runTrials, elapsedS: (Date.now() - started) / 1000 }, bound)}; ` +
        `estimated total latency ${est === null ? '- (not every task has a valid program yet)' : `${est.toFixed(3)} ms`}`);
    }, Math.min(every * 1000, 1000));
    beat?.unref();
    const running = scheduler.run();
    const stopped = opts.dropBatchOnAbort && opts.signal ? await Promise.race([running, abortedBy(opts.signal)]) : await running;
    if (stopped === DROPPED) {
      // The batch in flight and any search ahead go on in the background until the process
      // ends; nothing of theirs is recorded. The run's trials are the records in the log.
      dropped = true;
      background = running.then(() => undefined, () => undefined);
      await appending;
      const status = scheduler.status();
      result = { reason: 'aborted', trials: 0, estimatedMs: scheduler.estimatedMs(), tasks: status };
    } else {
      result = stopped;
    }
    await append(gate.finish(result.reason === 'aborted'), true);
    if (result.reason === 'aborted') result.trials = searched;
    if (dropped) log(`stopped at once, the batch in flight dropped: the ${searched} trial(s) this run measured before it are in ${opts.records}`);
    const confirm = opts.confirm ?? CONFIRM_TOP;
    if (result.reason !== 'aborted' && confirm > 0) {
      const t0 = Date.now();
      const timed = await confirmBest({
        tasks, defaults, top: confirm, measurer, match, files: [...extra, records], warn,
        measuredNow: result.tasks.map((t) => t.runTrials > 0),
        record: (i, pass, outcomes) => append(outcomes.map((o) => toRecord(i, o, CONFIRM_POLICY, pass))),
      });
      if (timed.schedules > 0) {
        const newDefaults = timed.newDefaults > 0
          ? ` (${timed.newDefaults} of these task(s) because no record had measured their current default schedule: tensortune's defaults changed since they were tuned)`
          : '';
        log(`confirmed: ${timed.schedules} schedule(s) of ${timed.tasks} task(s) timed twice more, in both orders, in ${((Date.now() - t0) / 1000).toFixed(1)} s${newDefaults}; ` +
          'compile picks among the confirmed schedules by these timings');
      }
    }
    const moves = parts.measurer.hostMoves;
    if (moves && moves.retaken > 0) {
      log(`host speed: ${moves.retaken} measurement(s) taken again because this machine ran more than ${Math.round((HOST_RATE_TOLERANCE - 1) * 100)}% off its usual speed ` +
        `around them (another process or a neighbour's hardware thread on the core, a clock change); ${moves.keptOffSpeed} kept an off-speed time after ${MAX_RETAKES} retakes`);
    }
    if (moves && moves.newBests > 0) {
      log(`new bests: ${moves.newBests} timing(s) more than ${Math.round((1 - NEW_BEST_SHARE) * 100)}% faster than their task's best so far timed again; ` +
        `${moves.newBestsNotHeld} did not hold (timed again more than ${Math.round((1 / NEW_BEST_SHARE - 1) * 100)}% slower)`);
    }
  } finally {
    clearInterval(beat);
    // A dropped batch may still hold the measurer: it is closed once that batch ends, not waited for.
    if (background) void background.then(() => parts.measurer.close()).catch(() => undefined);
    else await parts.measurer.close();
  }
  // The closing table, unless the last one printed (after the warm-up, say) already shows this state.
  if (changedSinceTable) table(false);
  const wallS = (Date.now() - started) / 1000;
  emit({ type: 'done', total_trials: result.tasks.reduce((a, t) => a + t.trials, 0), estimated_ms: result.estimatedMs, wall_s: wallS, reason: result.reason });
  return {
    tasks: result.tasks.map((t, i) => ({ key: t.key, desc: t.desc, weight: t.weight, trials: t.trials, best_ms: t.best_ms, alternativeOf: tasks[i].alternative?.of })),
    trials: result.trials, estimatedMs: result.estimatedMs, wallS, reason: result.reason, timing,
  };
}

/** `4 tasks and 2 Winograd alternatives`: what a run searches, in the words of docs/tuning.md ("Terms"). */
export function describeTasks(tasks: readonly { alternative?: unknown; alternativeOf?: string }[]): string {
  const alternatives = tasks.filter((t) => t.alternative !== undefined || t.alternativeOf !== undefined).length;
  const n = tasks.length - alternatives;
  return `${n} task${n === 1 ? '' : 's'}${alternatives ? ` and ${alternatives} Winograd alternative${alternatives === 1 ? '' : 's'}` : ''}`;
}

/** The task table of a run: an alternative's weight names the task it implements (progress.ts formatTaskTable). */
function taskTable(tasks: readonly Task[], rows: readonly TableRow[], width?: number): string[] {
  const ids = new Map(tasks.map((t, i) => [t.key, i]));
  return formatTaskTable(rows.map((r, i) => ({ ...r, alternativeOf: tasks[i].alternative ? ids.get(tasks[i].alternative!.of) : undefined })), 64, width);
}

const DROPPED = Symbol('dropped');

/** Resolves with DROPPED once `signal` aborts (at once if it has). */
function abortedBy(signal: AbortSignal): Promise<typeof DROPPED> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve(DROPPED);
    else signal.addEventListener('abort', () => resolve(DROPPED), { once: true });
  });
}

/**
 * The confirmation pass. A task's best record is the minimum of many noisy timings, so it
 * is biased low, and a busy machine drifts between the search's timings of two schedules:
 * on the AVX2 box the "best" of most tuned resnet-18 tasks was a lucky measurement and lost
 * to the default when both were timed again (docs/performance.md). At the end of a run, for
 * each task it measured, the pass times together, once in order and once reversed (so that
 * drift over the pass hits each alike): the `top` schedules by the mean of all their
 * timings, the `top` of compile's ranking (which may hold the winners of an earlier pass)
 * and the default. Its records carry the policy CONFIRM_POLICY and one `pass` per task,
 * and compile ranks the schedules of the task's latest pass first, by that pass's timings
 * only (records/best.ts rankedSchedules).
 * The builds are reused from this run's work directory where they are still there.
 *
 * A task this run did not measure is timed too when its records never measured its
 * current default schedule: the default schedules of a newer tensortune differ from the
 * one the task was tuned against, and a schedule that beat the old default can lose to the
 * new one (two of mobilenet's 7x7 convs ran 10% slower with their tuned records than with
 * a newer default). So re-running a finished tune after an upgrade measures no
 * trial, but times the new defaults against the tuned schedules, and compile takes the faster.
 */
async function confirmBest(opts: {
  tasks: readonly Task[]; defaults: readonly Step[][]; top: number; measurer: Measurer;
  match: RecordMatch; files: string[]; warn?: (message: string) => void;
  measuredNow: readonly boolean[];
  /** Appends a task's confirmation records; `pass` names the task's pass (both orders). */
  record: (task: number, pass: string, outcomes: MeasureOutcome[]) => Promise<void>;
}): Promise<{ tasks: number; schedules: number; newDefaults: number }> {
  const entries = await readRecordFiles(opts.files, { warn: opts.warn });
  const ranked = rankedByWorkload(entries, opts.match);
  const all = byWorkload(entries, opts.match);
  let tasks = 0, schedules = 0, newDefaults = 0;
  for (let i = 0; i < opts.tasks.length; i++) {
    const list = ranked.get(opts.tasks[i].key) ?? [];
    const newDefault = list.length > 0 && !measuredSchedule(all.get(opts.tasks[i].key) ?? [], opts.defaults[i]);
    if (!opts.measuredNow[i] && !newDefault) continue;
    const byMean = [...list].sort((a, b) => a.mean - b.mean);
    const candidates = new Map<string, Step[]>();
    for (const s of [...byMean.slice(0, opts.top), ...list.slice(0, opts.top)]) candidates.set(stepsKey(s.entry.record.steps), s.entry.record.steps);
    candidates.set(stepsKey(opts.defaults[i]), opts.defaults[i]);
    if (candidates.size < 2) continue; // nothing to compare
    const order = [...candidates.values()];
    const pass = new Date().toISOString();
    for (const steps of [order, [...order].reverse()]) await opts.record(i, pass, await opts.measurer.measure(opts.tasks[i], steps));
    tasks += 1;
    schedules += order.length;
    if (newDefault) newDefaults += 1;
  }
  return { tasks, schedules, newDefaults };
}

/**
 * The line a tune prints when its logs hold records of its target and machine measured at
 * another thread count: they stay in the log, but the search neither resumes from them nor
 * ranks them beside this run's timings. Undefined when there are none.
 */
function leftOutForThreads(entries: readonly LogEntry[], match: RecordMatch): string | undefined {
  if (match.threads === undefined) return undefined;
  const counts = new Map<number, number>();
  for (const { record: r } of entries) {
    if (r.threads === undefined || matchesRecord(r, match) || !matchesRecord(r, { ...match, threads: undefined })) continue;
    counts.set(r.threads, (counts.get(r.threads) ?? 0) + 1);
  }
  if (counts.size === 0) return undefined;
  const n = [...counts.values()].reduce((a, b) => a + b, 0);
  const at = [...counts.keys()].sort((a, b) => a - b).join(', ');
  return `${n} record(s) measured at ${at} thread(s) left out: this run measures at ${match.threads}, and timings at different thread counts do not compare (they stay in the log)`;
}
