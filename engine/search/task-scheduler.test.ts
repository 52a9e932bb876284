// The task scheduler's allocation logic, driven by a deterministic in-test measurer and
// policy: candidate k of a task costs latency(task, k) ms, so every decision the
// scheduler takes can be computed by hand.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { getNetwork } from '../frontend/networks';
import { extractTasks, type Task } from '../graph/extract';
import type { Step } from '../schedule/steps';
import {
  ALPHA, NO_VALID_ROUNDS, TaskScheduler, perRoundTrials, similarityTag,
  type RoundReport, type SchedulerHooks, type SchedulerOptions, type SchedulerTask,
} from './task-scheduler';
import type { CostModel, MeasuredState, MeasureOutcome, Measurer, SearchPolicy } from './types';

const TASKS: Task[] = extractTasks(getNetwork('mobilenet', { imageSize: 32, weights: 'zeros' }).graph).slice(0, 4);

/** Candidate k of a task is one step naming k; its cost comes from `latency`. */
const candidate = (k: number): Step[] => [{ s: 'compute_root', stage: `c${k}` }];
const indexOf = (steps: readonly Step[]): number => Number((steps[0] as { stage: string }).stage.slice(1));

class CountingPolicy implements SearchPolicy {
  readonly name = 'random' as const;
  next: number;
  notified: MeasuredState[][] = [];
  constructor(start: number, private readonly limit = Infinity) { this.next = start; }
  nextBatch(n: number): Step[][] {
    const out: Step[][] = [];
    while (out.length < n && this.next < this.limit) out.push(candidate(this.next++));
    return out;
  }
  notify(measured: readonly MeasuredState[]): void { this.notified.push([...measured]); }
}

type Latency = (task: number, k: number) => number | null;

class TableMeasurer implements Measurer {
  calls: { task: number; n: number }[] = [];
  onMeasure?: () => void;
  constructor(private readonly latency: Latency) {}
  async measure(task: Task, candidates: readonly Step[][]): Promise<MeasureOutcome[]> {
    const t = TASKS.indexOf(task);
    this.calls.push({ task: t, n: candidates.length });
    this.onMeasure?.();
    return candidates.map((steps) => {
      const ms = this.latency(t, indexOf(steps));
      return ms === null
        ? { steps, costs_ms: [], error: 'runtime_error', build_ms: 1, run_ms: 1 }
        : { steps, costs_ms: [ms, ms], error: null, build_ms: 1, run_ms: 1 };
    });
  }
  async close(): Promise<void> { /* nothing to release */ }
}

class RecordingModel implements CostModel {
  updates: { task: string; n: number }[] = [];
  update(task: Task, measured: readonly MeasuredState[]): void { this.updates.push({ task: task.key, n: measured.length }); }
  predict(): number[] { return []; }
}

function setup(latency: Latency, opts: Partial<SchedulerOptions>, prior: MeasuredState[][] = [], limits: number[] = []) {
  const policies = TASKS.map((_, i) => new CountingPolicy(prior[i]?.length ?? 0, limits[i]));
  const entries: SchedulerTask[] = TASKS.map((task, i) => ({ task, policy: policies[i], prior: prior[i] ?? [] }));
  const measurer = new TableMeasurer(latency);
  const model = new RecordingModel();
  const log: string[] = [];
  const rounds: RoundReport[] = [];
  const skips: [number, string][] = [];
  const hooks: SchedulerHooks = {
    measurer, costModel: model,
    record: (i, outcomes) => { log.push(`record ${i} ${outcomes.length}`); },
    onRound: (r) => { rounds.push(r); },
    onSkip: (i, reason) => { skips.push([i, reason]); },
  };
  const scheduler = new TaskScheduler(entries, { batchSize: 4, seed: 1, ...opts }, hooks);
  return { scheduler, policies, measurer, model, log, rounds, skips };
}

/** Latency falls as 10/(k+1) for every task: every round improves. */
const falling: Latency = (t, k) => (t + 1) * 10 / (k + 1);

test('per-round size is TVM\'s min(batch, trials // tasks), capped by the per-task budget', () => {
  assert.is(perRoundTrials({ batchSize: 64, trials: 2000 }, 22), 64);
  assert.is(perRoundTrials({ batchSize: 64, trials: 200 }, 22), 9);
  assert.is(perRoundTrials({ batchSize: 64, trials: 10 }, 22), 1);
  assert.is(perRoundTrials({ batchSize: 64, trialsPerTask: 16 }, 22), 16);
});

test('warm-up: one round per task in order, then rounds go by gradient; the total budget is exact', async () => {
  const { scheduler, measurer, rounds, log, model, policies } = setup(falling, { trials: 30 });
  const result = await scheduler.run();
  assert.equal(measurer.calls.slice(0, 4).map((c) => c.task), [0, 1, 2, 3]);
  assert.ok(rounds.slice(0, 4).every((r) => r.warmup));
  assert.ok(rounds.slice(4).every((r) => !r.warmup));
  assert.is(result.reason, 'budget');
  assert.is(result.trials, 30);
  assert.is(measurer.calls.reduce((a, c) => a + c.n, 0), 30);
  // the last round is cut to what is left of the budget: 7 rounds of 4, then 2
  assert.is(measurer.calls[measurer.calls.length - 1].n, 2);
  // every batch is recorded, learnt by the model and told to its policy
  assert.is(log.length, measurer.calls.length);
  assert.is(model.updates.length, measurer.calls.length);
  assert.is(policies.reduce((a, p) => a + p.notified.length, 0), measurer.calls.length);
  assert.not.equal(result.estimatedMs, null);
});

test('warmupTrials: each task\'s first round takes that many, later rounds a whole one', async () => {
  const { scheduler, measurer, rounds } = setup(falling, { batchSize: 4, warmupTrials: 2, trials: 16 });
  const result = await scheduler.run();
  assert.equal(measurer.calls.slice(0, 4).map((c) => [c.task, c.n]), [[0, 2], [1, 2], [2, 2], [3, 2]]);
  assert.ok(rounds.slice(0, 4).every((r) => r.warmup));
  // 8 of the 16 trials are left to the gradient, in whole rounds.
  assert.equal(measurer.calls.slice(4).map((c) => c.n), [4, 4]);
  assert.is(result.trials, 16);
  // A warm-up larger than a round is cut to a round.
  const big = setup(falling, { batchSize: 4, warmupTrials: 9, trials: 16 });
  await big.scheduler.run();
  assert.equal(big.measurer.calls.map((c) => c.n), [4, 4, 4, 4]);
});

test('after the warm-up the task with the largest weighted latency gets the next round', async () => {
  // task 3 is 4x slower than task 0 (and all weights are 1 in this slice but one): pick it.
  const { scheduler, measurer } = setup(falling, { trials: 20 });
  await scheduler.run();
  const weights = TASKS.map((t) => t.weight);
  const firstAfterWarmup = measurer.calls[4].task;
  const expected = [0, 1, 2, 3].reduce((a, b) => (weights[b] * (b + 1) > weights[a] * (a + 1) ? b : a));
  assert.is(firstAfterWarmup, expected);
});

test('gradient = w * (alpha * backward + (1 - alpha) * (min(g - g/t, similar) - g)) with a 3-round backward window', () => {
  // Resumed histories (per round of 4): task 0 bests 8, 8, 6, 4, 4 (5 rounds); task 1: 5 (1 round).
  const cost = (ms: number): MeasuredState => ({ steps: [], cost_ms: ms });
  const prior = [
    [8, 9, 9, 9, 9, 9, 9, 9, 6, 9, 9, 9, 4, 9, 9, 9, 9, 9, 9, 9].map(cost),
    [5, 5, 5, 5].map(cost),
    [2].map(cost),
    [],
  ];
  const { scheduler } = setup(falling, { batchSize: 4, trials: 1000 }, prior);
  const grads = scheduler.gradients();
  const w = TASKS.map((t) => t.weight);
  const sim = [0, 1, 2].map((i) => TASKS.filter((t) => similarityTag(t) === similarityTag(TASKS[i])).length);
  assert.ok(sim.every((n) => n === 1), 'the first tasks of mobilenet-32 are not similar to each other');
  // task 0: g = 4, t = 5, history [8, 8, 6, 4, 4]: backward = (4 - 8) / 3
  const g0 = 4, t0 = 5;
  assert.ok(Math.abs(grads[0]! - w[0] * (ALPHA * ((4 - 8) / 3) + (1 - ALPHA) * (g0 - g0 / t0 - g0))) < 1e-12);
  // task 1: one round, no backward term: forward = (5 - 5/1) - 5
  assert.ok(Math.abs(grads[1]! - w[1] * (1 - ALPHA) * -5) < 1e-12);
  assert.ok(Math.abs(grads[2]! - w[2] * (1 - ALPHA) * -2) < 1e-12);
  assert.is(grads[3], null, 'a task without a valid program has no gradient');
  assert.is(scheduler.pick(), 3, 'a task without a valid program goes first');
});

test('similar tasks: the forward term is bounded by beta * FLOP / the best rate of the group', () => {
  const twins = extractTasks(getNetwork('mobilenet', { imageSize: 32, weights: 'zeros' }).graph);
  const tagCount = new Map<string, number>();
  for (const t of twins) tagCount.set(similarityTag(t), (tagCount.get(similarityTag(t)) ?? 0) + 1);
  assert.ok([...tagCount.values()].some((n) => n > 1), 'mobilenet has tasks of one op chain and FLOP bucket');
  assert.ok(similarityTag(twins[0]).startsWith(`${twins[0].desc.split(' ')[0]}_`));
});

test('per-task early stopping: a task that stops improving is dropped; the run ends early-stop', async () => {
  // task 0 never improves after its first candidate; the others improve until candidate 12.
  const plateau: Latency = (t, k) => (t === 0 ? 5 : 10 / (Math.min(k, 12) + 1));
  const { scheduler, measurer } = setup(plateau, { earlyStopping: 8, batchSize: 4 });
  const result = await scheduler.run();
  assert.is(result.reason, 'early-stop');
  const perTask = [0, 1, 2, 3].map((t) => measurer.calls.filter((c) => c.task === t).reduce((a, c) => a + c.n, 0));
  // task 0: best at trial 1, stops once 8 trials passed without improvement (3 rounds = 12 trials)
  assert.is(perTask[0], 12);
  // the others improve up to candidate 12 (trial 13), then need 8 more: 24 trials in rounds of 4
  for (const n of perTask.slice(1)) assert.is(n, 24);
  assert.ok(result.tasks.every((t) => t.stopped?.startsWith('early-stopped')));
});

test('trials-per-task budget: every task gets exactly its budget; the run ends with reason budget', async () => {
  const { scheduler, measurer } = setup(falling, { trialsPerTask: 6, batchSize: 4 });
  const result = await scheduler.run();
  assert.is(result.reason, 'budget');
  assert.equal(result.tasks.map((t) => t.trials), [6, 6, 6, 6]);
  assert.equal(measurer.calls.map((c) => c.n), [4, 4, 4, 4, 2, 2, 2, 2]);
});

test('time budget: checked before each round with the injected clock', async () => {
  let clock = 0;
  const { scheduler, measurer } = setup(falling, { timeLimitS: 10, now: () => clock });
  measurer.onMeasure = () => { clock += 3000; };
  const result = await scheduler.run();
  assert.is(result.reason, 'time');
  assert.is(measurer.calls.length, 4, 'rounds start at 0, 3, 6 and 9 s; none at 12 s');
});

test('abort: the in-flight batch is finished and recorded, then the run stops', async () => {
  const controller = new AbortController();
  const { scheduler, measurer, log } = setup(falling, { trials: 1000, signal: controller.signal });
  measurer.onMeasure = () => { if (measurer.calls.length === 2) controller.abort(); };
  const result = await scheduler.run();
  assert.is(result.reason, 'aborted');
  assert.is(measurer.calls.length, 2);
  assert.is(log.length, 2);
  assert.is(result.trials, 8);
});

test('resume: spent tasks are skipped with a reason; the same budget again measures nothing', async () => {
  const prior = [0, 1, 2, 3].map((t) => Array.from({ length: 6 }, (_, k) => ({ steps: candidate(k), cost_ms: falling(t, k) })));
  const perTask = setup(falling, { trialsPerTask: 6 }, prior);
  const r1 = await perTask.scheduler.run();
  assert.is(perTask.measurer.calls.length, 0);
  assert.is(r1.trials, 0);
  assert.is(r1.reason, 'budget');
  assert.equal(perTask.skips.map(([i]) => i), [0, 1, 2, 3]);
  assert.match(perTask.skips[0][1], 'trials-per-task budget spent (6 of 6)');
  assert.equal(r1.tasks.map((t) => t.resumed), [6, 6, 6, 6]);
  assert.is(r1.estimatedMs, TASKS.reduce((a, t, i) => a + t.weight * falling(i, 5)!, 0));

  const total = setup(falling, { trials: 24 }, prior);
  const r2 = await total.scheduler.run();
  assert.is(total.measurer.calls.length, 0);
  assert.is(r2.reason, 'budget');

  // a larger budget continues: no warm-up for resumed tasks, new candidates only
  const more = setup(falling, { trials: 28 }, prior);
  const r3 = await more.scheduler.run();
  assert.is(r3.trials, 4);
  assert.is(more.measurer.calls.length, 1);
  assert.ok(more.policies.every((p, i) => p.next === 6 || i === more.measurer.calls[0].task));
});

test('resume: a task early-stopped in the log is skipped', async () => {
  const flat = Array.from({ length: 12 }, () => ({ steps: [], cost_ms: 3 }));
  const { scheduler, skips } = setup(falling, { trials: 20, earlyStopping: 8 }, [flat]);
  await scheduler.run();
  assert.equal(skips[0], [0, 'early-stopped: no improvement in the last 11 trials']);
});

test(`a task without a valid program is retried for ${NO_VALID_ROUNDS} rounds, then given up; the others go on`, async () => {
  const broken: Latency = (t, k) => (t === 1 ? null : falling(t, k));
  const { scheduler, measurer } = setup(broken, { trialsPerTask: 12 });
  const result = await scheduler.run();
  assert.is(measurer.calls.filter((c) => c.task === 1).length, NO_VALID_ROUNDS);
  assert.match(result.tasks[1].stopped!, `no valid program in ${NO_VALID_ROUNDS} rounds`);
  assert.is(result.estimatedMs, null);
  assert.equal(result.tasks.filter((_, i) => i !== 1).map((t) => t.trials), [12, 12, 12]);
  assert.is(result.reason, 'done');
});

test('an exhausted search space stops its task', async () => {
  const { scheduler, skips } = setup(falling, { trials: 40 }, [], [3, Infinity, Infinity, Infinity]);
  const result = await scheduler.run();
  assert.is(result.tasks[0].trials, 3);
  assert.ok(skips.some(([i, r]) => i === 0 && r.startsWith('search space exhausted')));
  assert.is(result.trials, 40);
});

/**
 * A policy that searches in slices (nextBatchAsync), noting for each slice whether the
 * measurer was timing candidates then; a measurer with a build phase (a few event-loop
 * turns) and a timed phase during which whenIdle holds back.
 */
class SlicedPolicy extends CountingPolicy {
  asyncCalls: { n: number; during: string }[] = [];
  constructor(start: number, private readonly phase: { now: string; timing: boolean; slicesWhileTiming: number }) { super(start); }
  async nextBatchAsync(n: number, pause: () => Promise<void>): Promise<Step[][]> {
    this.asyncCalls.push({ n, during: this.phase.now });
    for (let slice = 0; slice < 6; slice++) {
      if (this.phase.timing) this.phase.slicesWhileTiming++;
      await pause();
    }
    return this.nextBatch(n);
  }
}

class PhasedMeasurer extends TableMeasurer {
  readonly phase = { now: 'idle', timing: false, slicesWhileTiming: 0 };
  private waiters: (() => void)[] = [];
  override async measure(task: Task, candidates: readonly Step[][]): Promise<MeasureOutcome[]> {
    this.phase.now = `measuring task ${TASKS.indexOf(task)}`;
    for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve)); // building
    this.phase.timing = true;
    for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve)); // timed runs
    this.phase.timing = false;
    for (const wake of this.waiters.splice(0)) wake();
    const out = await super.measure(task, candidates);
    this.phase.now = 'idle';
    return out;
  }
  whenIdle(): Promise<void> {
    return this.phase.timing ? new Promise((resolve) => this.waiters.push(resolve)) : Promise.resolve();
  }
}

function prefetchRun(prefetch: boolean) {
  const measurer = new PhasedMeasurer(falling);
  const policies = TASKS.map(() => new SlicedPolicy(0, measurer.phase));
  const entries: SchedulerTask[] = TASKS.map((task, i) => ({ task, policy: policies[i], prior: [] }));
  const proposed: string[] = [];
  const hooks: SchedulerHooks = {
    measurer, costModel: new RecordingModel(),
    record: (i, outcomes) => { proposed.push(`${i}:${outcomes.map((o) => indexOf(o.steps)).join(',')}`); },
  };
  return { scheduler: new TaskScheduler(entries, { batchSize: 4, seed: 1, trials: 32, prefetch }, hooks), policies, measurer, proposed };
}

test('prefetch: the next task\'s batch is searched while this one is built, never while candidates are timed, and then used', async () => {
  const { scheduler, policies, measurer, proposed } = prefetchRun(true);
  const result = await scheduler.run();
  assert.is(result.trials, 32);
  // Warm-up: tasks 1..3 were searched during the measurement of the task before them.
  for (let j = 1; j < TASKS.length; j++) assert.equal(policies[j].asyncCalls[0], { n: 4, during: `measuring task ${j - 1}` });
  assert.is(measurer.phase.slicesWhileTiming, 0, 'no slice of a search ran while candidates were timed');
  // Every batch measured is one its policy proposed (candidates numbered in proposal
  // order), none twice, whether it was searched ahead or not.
  for (const [i, p] of policies.entries()) {
    const measured = proposed.filter((r) => r.startsWith(`${i}:`)).flatMap((r) => r.slice(2).split(',').map(Number));
    assert.is(new Set(measured).size, measured.length);
    assert.ok(measured.every((k) => k < p.next), `task ${i}`);
  }
  // The same run again proposes the same candidates to the same tasks.
  const again = prefetchRun(true);
  await again.scheduler.run();
  assert.equal(again.proposed, proposed);
  // Without prefetch, no slice is searched ahead.
  const off = prefetchRun(false);
  await off.scheduler.run();
  assert.ok(off.policies.every((p) => p.asyncCalls.length === 0));
});

test('a task and its alternative (a Winograd task of the same layers) count once in the estimate, with the faster of the two', async () => {
  const [direct, other] = TASKS;
  const wino: Task = { ...TASKS[2], key: 'wino', alternative: { of: direct.key, impl: 'winograd' } };
  const tasks = [direct, other, wino];
  const cost = [4, 2, 1]; // every candidate of task i costs cost[i] ms
  const measurer: Measurer = {
    async measure(task, candidates) {
      const ms = cost[tasks.indexOf(task)];
      return candidates.map((steps) => ({ steps, costs_ms: [ms], error: null, build_ms: 1, run_ms: 1 }));
    },
    async close() { /* nothing */ },
  };
  const entries: SchedulerTask[] = tasks.map((task) => ({ task, policy: new CountingPolicy(0), prior: [] }));
  const scheduler = new TaskScheduler(entries, { batchSize: 2, seed: 1, trials: 6 }, { measurer, costModel: new RecordingModel(), record: () => undefined });
  const result = await scheduler.run();
  // direct's layers run as Winograd (1 ms < 4 ms): weight(direct) x 1 + weight(other) x 2; the alternative's own weight is not added.
  assert.is(result.estimatedMs, direct.weight * 1 + other.weight * 2);
});

test('an alternative tuned beside its direct task warms up with a quarter of a round; alone, with a whole one', async () => {
  const [direct, other] = TASKS;
  const wino: Task = { ...TASKS[2], key: 'wino', alternative: { of: direct.key, impl: 'winograd' } };
  const run = async (tasks: Task[]): Promise<{ task: string; n: number; warmup: boolean }[]> => {
    const calls: { task: string; n: number; warmup: boolean }[] = [];
    const measurer: Measurer = {
      async measure(task, candidates) {
        calls.push({ task: task.key, n: candidates.length, warmup: false });
        return candidates.map((steps) => ({ steps, costs_ms: [task === wino ? 1 : 4], error: null, build_ms: 1, run_ms: 1 }));
      },
      async close() { /* nothing */ },
    };
    const entries: SchedulerTask[] = tasks.map((task) => ({ task, policy: new CountingPolicy(0), prior: [] }));
    const hooks: SchedulerHooks = {
      measurer, costModel: new RecordingModel(), record: () => undefined,
      onRound: (r) => { calls[calls.length - 1].warmup = r.warmup; },
    };
    await new TaskScheduler(entries, { batchSize: 8, seed: 1, trialsPerTask: 10 }, hooks).run();
    return calls;
  };
  const both = await run([direct, other, wino]);
  assert.equal(both.slice(0, 3).map((c) => [c.task, c.n, c.warmup]), [[direct.key, 8, true], [other.key, 8, true], ['wino', 2, true]]);
  // After the warm-up its rounds are whole again (8 of the 10 trials per task it may take).
  assert.equal(both.filter((c) => c.task === 'wino').map((c) => [c.n, c.warmup]), [[2, true], [8, false]]);
  const alone = await run([other, wino]);
  assert.equal(alone.slice(0, 2).map((c) => [c.task, c.n]), [[other.key, 8], ['wino', 8]]);
});

test('the gradient of a layer\'s slower implementation counts only the gain that would pass the layer\'s best', () => {
  const [direct, other] = TASKS;
  const wino: Task = { ...TASKS[2], key: 'wino', alternative: { of: direct.key, impl: 'winograd' } };
  const cost = (ms: number): MeasuredState => ({ steps: [], cost_ms: ms });
  const gradientsOf = (directMs: number[], winoMs: number[]): (number | null)[] => {
    const entries: SchedulerTask[] = [[direct, directMs], [other, [3, 3, 3, 3]], [wino, winoMs]].map(([task, ms]) => ({
      task: task as Task, policy: new CountingPolicy(0), prior: (ms as number[]).map(cost),
    }));
    return new TaskScheduler(entries, { batchSize: 4, seed: 1, trials: 1000 }, { measurer: new TableMeasurer(falling), costModel: new RecordingModel(), record: () => undefined }).gradients();
  };
  const w = direct.weight;
  // Two rounds each (t = 2): the optimistic target is g / 2.
  // Winograd 10 ms against direct 4: its target 5 stays above 4, so it moves nothing; direct keeps TVM's gradient.
  let g = gradientsOf([4, 4, 4, 4, 4, 4, 4, 4], [10, 10, 10, 10, 10, 10, 10, 10]);
  assert.is(g[2], 0, 'a slower alternative that cannot pass the layer\'s best');
  assert.ok(Math.abs(g[0]! - w * (1 - ALPHA) * (2 - 4)) < 1e-12, 'the layer\'s best: TVM\'s forward term');
  // Winograd 6 ms: its target 3 passes direct's 4 by 1 ms; only that counts.
  g = gradientsOf([4, 4, 4, 4, 4, 4, 4, 4], [6, 6, 6, 6, 6, 6, 6, 6]);
  assert.ok(Math.abs(g[2]! - w * (1 - ALPHA) * (3 - 4)) < 1e-12, String(g[2]));
  // The alternative not yet measured: nothing bounds the direct task's gain.
  g = gradientsOf([4, 4, 4, 4, 4, 4, 4, 4], []);
  assert.ok(Math.abs(g[0]! - w * (1 - ALPHA) * (2 - 4)) < 1e-12);
  assert.is(g[2], null);
});

test.run();
