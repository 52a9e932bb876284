// The policies: the evolutionary search follows its cost model, nothing is proposed twice
// or after it was measured, a seed fixes the proposals, grid exhausts a small space.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { getNetwork } from '../frontend/networks';
import { extractTasks, type Task } from '../graph/extract';
import { parseTarget } from '../target';
import { ComputeDAG } from '../ir/dag';
import { load, reduceAxis, sum, v } from '../ir/expr';
import { compute, placeholder } from '../ir/tensor';
import { State } from '../schedule/state';
import type { Step } from '../schedule/steps';
import { stepsKey } from '../schedule/steps';
import type { EvolutionaryPolicy } from './evolutionary';
import { createPolicy } from './policy';
import type { CostModel, MeasuredState, PolicyContext } from './types';

const tasks = extractTasks(getNetwork('mobilenet', { weights: 'zeros', imageSize: 32 }).graph);
const conv = tasks.find((t) => t.desc.startsWith('conv2d_nhwc+add+relu 1x16x16x32'))!;
const target = parseTarget('llvm');

/**
 * A deterministic analytical score for tests only (the product's model is engine/costmodel):
 * it likes a vectorised innermost loop of 8 lanes in the reduction's stage and a register
 * tile (spatial loops inside the innermost reduce loop) of about 64 elements.
 */
function analyticalScore(state: State): number {
  const s = state.stages.find((x) => x.reduceAxes.length > 0 && x.leaves.some((l) => x.kinds.get(l) === 'R'))!;
  const extent = new Map<string, number>([...s.axes, ...s.reduceAxes].map((a) => [a.name, a.extent]));
  for (const r of s.relations) {
    if (r.k === 'split') {
      const inner = r.lengths.reduce((a, b) => a * b, 1);
      extent.set(r.children[0], Math.ceil(extent.get(r.parent)! / inner));
      r.lengths.forEach((l, i) => extent.set(r.children[i + 1], l));
    } else extent.set(r.child, r.parents.reduce((a, p) => a * extent.get(p)!, 1));
  }
  const lastR = s.leaves.map((l) => s.kinds.get(l)).lastIndexOf('R');
  const tile = s.leaves.slice(lastR + 1).reduce((a, l) => a * extent.get(l)!, 1);
  const innermost = s.leaves[s.leaves.length - 1];
  const vec = s.ann.get(innermost) === 'vectorize' ? extent.get(innermost)! : 1;
  return -Math.abs(Math.log2(vec) - 3) - Math.abs(Math.log2(tile) - 6);
}

const analytical: CostModel = {
  update: () => undefined,
  predict: (_task: Task, states: readonly State[]) => states.map(analyticalScore),
};

const ctxOf = (seed: number, measured: MeasuredState[] = []): PolicyContext => ({ task: conv, target, costModel: analytical, measured, seed });
const opts = { numCores: 4, population: 128, generations: 3 };
const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
const scoreOf = (steps: Step[]): number => analyticalScore(State.replay(conv.dag, steps));

test('evolutionary search with a model proposes states the model rates far above random ones', () => {
  const evo = createPolicy('evolutionary', ctxOf(1), opts).nextBatch(16).map(scoreOf);
  const rnd = createPolicy('random', ctxOf(1), opts).nextBatch(16).map(scoreOf);
  assert.is(evo.length, 16);
  assert.is(rnd.length, 16);
  assert.ok(mean(evo) > mean(rnd) + 1, `evolutionary ${mean(evo).toFixed(2)} vs random ${mean(rnd).toFixed(2)}`);
});

test('no state is proposed twice or after it was measured; measured states seed later rounds', () => {
  const first = createPolicy('random', ctxOf(3), opts).nextBatch(8);
  const measured = first.map((steps, i) => ({ steps, cost_ms: 1 + i }));
  const policy = createPolicy('evolutionary', ctxOf(3, measured), opts);
  const seen = new Set(first.map(stepsKey));
  for (let round = 0; round < 3; round++) {
    const batch = policy.nextBatch(8);
    assert.is(batch.length, 8);
    for (const steps of batch) {
      const key = stepsKey(steps);
      assert.not.ok(seen.has(key), `round ${round} repeated a state`);
      seen.add(key);
    }
    policy.notify(batch.map((steps, i) => ({ steps, cost_ms: i === 0 ? null : 1 / (i + 1) })));
  }
});

test('the same seed gives the same proposals; another seed does not', () => {
  for (const name of ['evolutionary', 'random'] as const) {
    const a = createPolicy(name, ctxOf(11), opts).nextBatch(6).map(stepsKey);
    const b = createPolicy(name, ctxOf(11), opts).nextBatch(6).map(stepsKey);
    const c = createPolicy(name, ctxOf(12), opts).nextBatch(6).map(stepsKey);
    assert.equal(a, b, name);
    assert.not.equal(a, c, name);
  }
});

test('ga: selection on measured speed alone (no model) breeds states far better than random ones, never repeating one', () => {
  // The "device": a state's cost falls as the analytical score rises.
  const measure = (batch: Step[][]): MeasuredState[] => batch.map((steps) => ({ steps, cost_ms: Math.exp(-scoreOf(steps)) }));
  const ga = createPolicy('ga', ctxOf(21), { numCores: 4, poolSize: 16 });
  const seen = new Set<string>();
  let last: number[] = [];
  for (let generation = 0; generation < 8; generation++) {
    const batch = ga.nextBatch(16);
    assert.is(batch.length, 16);
    for (const steps of batch) {
      assert.not.ok(seen.has(stepsKey(steps)), `generation ${generation} repeated a state`);
      seen.add(stepsKey(steps));
    }
    last = batch.map(scoreOf);
    ga.notify(measure(batch));
  }
  const rnd = createPolicy('random', ctxOf(21), opts).nextBatch(16).map(scoreOf);
  assert.ok(mean(last) > mean(rnd) + 1, `ga's 8th generation ${mean(last).toFixed(2)} vs random ${mean(rnd).toFixed(2)}`);
  // The first generation, with nothing measured, is random: the same seed, the same states.
  assert.equal(createPolicy('ga', ctxOf(21), opts).nextBatch(6).map(stepsKey), createPolicy('ga', ctxOf(21), opts).nextBatch(6).map(stepsKey));
});

test('ga: resumed records whose genome rebuilds their steps are parents from the start; failed ones never', () => {
  const first = createPolicy('random', ctxOf(23), opts);
  const batch = first.nextBatch(8);
  const measured: MeasuredState[] = batch.map((steps, i) => ({ steps, cost_ms: i < 2 ? null : 1 + i, genome: JSON.parse(JSON.stringify(first.genomeOf!(steps))) }));
  const next = createPolicy('ga', ctxOf(24, measured), opts).nextBatch(8);
  const fresh = createPolicy('ga', ctxOf(24), opts).nextBatch(8);
  // With parents, the children differ from the random first generation of the same seed.
  assert.not.equal(next.map(stepsKey), fresh.map(stepsKey));
  assert.ok(next.every((s) => !batch.some((b) => stepsKey(b) === stepsKey(s))), 'nothing recorded is proposed again');
});

test('evolutionary: the sliced search (nextBatchAsync) proposes exactly what nextBatch does, pausing between slices', async () => {
  const sync = createPolicy('evolutionary', ctxOf(31), opts).nextBatch(8).map(stepsKey);
  let pauses = 0;
  const sliced = await createPolicy('evolutionary', ctxOf(31), opts).nextBatchAsync!(8, async () => { pauses++; });
  assert.equal(sliced.map(stepsKey), sync);
  assert.ok(pauses > 10, `${pauses} pauses`);
});

test('evolutionary: a search over its work budget stops early and still proposes a full batch of new states', async () => {
  // A model that spends at least 5 ms a state: 128 states x 4 generations would be over 2.5 s
  // of work; a 200 ms budget lets it score at most 200 / 5 states, plus the slice in flight (16).
  let scored = 0;
  const slow: CostModel = {
    update: () => undefined,
    predict: (task, states) => {
      scored += states.length;
      const until = performance.now() + 5 * states.length;
      while (performance.now() < until);
      return analytical.predict(task, states);
    },
  };
  const ctx = { ...ctxOf(5), costModel: slow };
  const batch = createPolicy('evolutionary', ctx, { ...opts, searchBudgetMs: 200 }).nextBatch(16);
  assert.is(batch.length, 16);
  assert.is(new Set(batch.map(stepsKey)).size, 16);
  assert.ok(scored <= 200 / 5 + 16, `${scored} states scored`);
  // The sliced search, paused between slices (a measurement in flight), ends the same way.
  const paused = await createPolicy('evolutionary', ctx, { ...opts, searchBudgetMs: 200 }).nextBatchAsync!(16, () => new Promise((r) => setTimeout(r, 20)));
  assert.is(paused.length, 16);
});

test('grid enumerates a small space completely, without repeats, then stops', () => {
  // Row sums of a 4x16 matrix: no tiling, rfactor variants, a handful of values each.
  const x = placeholder('x', [4, 16]);
  const k = reduceAxis('k', 16);
  const dag = new ComputeDAG([compute('rowsum', [4], ['i'], (i) => sum(load(x, [i, v('k')]), [k]), 'reduce')]);
  const task: Task = { ...conv, dag, key: dag.workloadKey, shapes: dag.shapes, flops: dag.flops, desc: 'rowsum' };
  const grid = createPolicy('grid', { task, target, costModel: analytical, measured: [], seed: 0 }, { numCores: 4 });
  const all: string[] = [];
  for (;;) {
    const batch = grid.nextBatch(64);
    all.push(...batch.map(stepsKey));
    if (batch.length < 64) break;
    assert.ok(all.length < 20000, 'grid does not terminate');
  }
  assert.ok(all.length > 20, `${all.length} states`);
  assert.is(new Set(all).size, all.length);
  assert.equal(grid.nextBatch(8), []);
});

test('a resumed evolutionary search seeds its population with the best recorded states whose genome rebuilds their steps', () => {
  const first = createPolicy('evolutionary', ctxOf(5), opts);
  const batch = first.nextBatch(8);
  // As a record stores and returns it: through JSON.
  const measured: MeasuredState[] = batch.map((steps, i) => ({ steps, cost_ms: 1 + i, genome: JSON.parse(JSON.stringify(first.genomeOf!(steps))) }));
  assert.ok(measured.every((m) => m.genome !== undefined), 'every proposal has a genome');
  const resumed = createPolicy('evolutionary', ctxOf(6, measured), opts) as EvolutionaryPolicy;
  assert.is(resumed.seedCount, 8);
  const next = resumed.nextBatch(8).map(stepsKey);
  assert.ok(next.every((k) => !batch.some((s) => stepsKey(s) === k)), 'nothing recorded is proposed again');
  // A genome that does not rebuild its record's steps, a record without one, or a failed
  // measurement seeds nothing.
  const ignored: MeasuredState[] = [
    { ...measured[0], steps: measured[1].steps },
    { steps: measured[2].steps, cost_ms: 1 },
    { ...measured[3], cost_ms: null },
    { ...measured[4], genome: { sketch: 99, values: {} } },
  ];
  assert.is((createPolicy('evolutionary', ctxOf(6, ignored), opts) as EvolutionaryPolicy).seedCount, 0);
});

test.run();
