// How long the cost model takes on this machine: features of 2048 conv states (the
// evolutionary search scores a population of 2048 per generation) and one training on
// about 2000 programs. Run: npx tsx engine/costmodel/timing.ts
//
// The labels here are synthetic (a function of the tile sizes): training time depends on
// the number of programs, rows and features, not on what the labels mean.

import { lower } from '../codegen/lower';
import { ScheduleError, State } from '../schedule/state';
import { kernelFeatures, NUM_FEATURES, stateFeatures } from './features';
import { rng } from './gbdt';
import { LearnedCostModel } from './model';
import { randomSchedule } from './fixtures/random-schedules';
import { fixtureConvTask, fixtureDenseTask } from './fixtures/tasks';

function randomStates(n: number, seed: number, task = fixtureConvTask()): State[] {
  const random = rng(seed);
  const out: State[] = [];
  while (out.length < n) {
    try {
      out.push(State.replay(task.dag, randomSchedule(task, random)));
    } catch (e) {
      if (!(e instanceof ScheduleError)) throw e;
    }
  }
  return out;
}

function main(): void {
  const conv = fixtureConvTask(), dense = fixtureDenseTask();
  const states = randomStates(2048, 1, conv);
  for (const pass of ['first', 'second']) {
    let t0 = performance.now();
    const kernels = states.map((s) => lower(s, 'k'));
    const lowerMs = performance.now() - t0;
    t0 = performance.now();
    const rows = kernels.map((k) => kernelFeatures(k));
    const featureMs = performance.now() - t0;
    const nRows = rows.reduce((a, r) => a + r.length, 0);
    console.log(`2048 conv states, ${pass} pass: lower ${lowerMs.toFixed(0)} ms + features ${featureMs.toFixed(0)} ms (${nRows} rows of ${NUM_FEATURES})`);
  }
  const t1 = performance.now();
  states.forEach((s) => stateFeatures(s));
  console.log(`stateFeatures (lower + features) of 2048 conv states: ${(performance.now() - t1).toFixed(0)} ms`);

  for (const [samples, budget] of [[2000, Infinity], [2000, 1000], [4000, 1000]] as const) {
    const model = new LearnedCostModel({ minSamples: 1, trainBudgetMs: budget });
    const random = rng(7);
    for (const task of [conv, dense]) {
      const picked = randomStates(samples / 2, task === conv ? 2 : 3, task);
      model.add(task, picked.map((s) => ({ steps: s.steps, cost_ms: 0.05 + random() + (s.steps.length % 7) * 0.1 })));
    }
    const t0 = performance.now();
    model.train();
    const stats = model.lastTraining!;
    console.log(`train on ${stats.samples} programs (${stats.rows} rows), budget ${budget} ms: ${stats.trees} trees in ${(performance.now() - t0).toFixed(0)} ms`);
  }
}

main();
