// The cost model's saved training data: it carries the feature version, a model warm-started
// from it scores as the model that saved it, and data of another feature version or layout
// is refused in one line naming the field.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { UserError } from '../errors';
import type { Task } from '../graph/extract';
import { State } from '../schedule/state';
import type { Step } from '../schedule/steps';
import { FEATURE_VERSION, NUM_FEATURES } from './features';
import { FIXTURE_TASKS } from './fixtures/tasks';
import { LearnedCostModel, type CostModelData } from './model';

interface Fixture { tasks: { name: string; samples: { steps: Step[]; costs_ms: number[]; error: string | null }[] }[] }
const fixture = JSON.parse(readFileSync(path.join(__dirname, 'fixtures', 'measured.json'), 'utf8')) as Fixture;
const entry = fixture.tasks[0];
const task: Task = FIXTURE_TASKS[entry.name]();
const samples = entry.samples.slice(0, 40);
const measured = samples.map((s) => ({ steps: s.steps, cost_ms: s.error === null ? Math.min(...s.costs_ms) : null }));
// Trees by count alone (no time budget), so that two trainings on the same data are equal.
const OPTIONS = { minSamples: 8, seed: 5, gbdt: { rounds: 10, timeBudgetMs: Infinity } };
const states = samples.slice(0, 10).map((s) => State.replay(task.dag, s.steps));

function trained(): LearnedCostModel {
  const model = new LearnedCostModel(OPTIONS);
  model.update(task, measured);
  return model;
}

test('saved data carries the feature version; a model warm-started from it scores the same', () => {
  const original = trained();
  const data = JSON.parse(JSON.stringify(original.trainingData())) as CostModelData;
  assert.is(data.feature_version, FEATURE_VERSION);
  assert.is(data.num_features, NUM_FEATURES);
  const copy = new LearnedCostModel(OPTIONS);
  assert.is(copy.warmStartFromData(data, 'saved.json'), data.tasks[0].samples.length);
  assert.ok(copy.trained);
  assert.equal(copy.predict(task, states), original.predict(task, states));
});

function refusal(data: CostModelData): string {
  try {
    new LearnedCostModel().warmStartFromData(data, 'saved.json');
  } catch (e) {
    assert.instance(e, UserError);
    return (e as Error).message;
  }
  throw new Error('stale data was accepted');
}

test('data of another feature version or layout is refused in one line', () => {
  const data = trained().trainingData();
  const stale = refusal({ ...data, feature_version: FEATURE_VERSION - 1 });
  assert.is(stale, `saved.json: feature_version is ${FEATURE_VERSION - 1}, expected ${FEATURE_VERSION} (cost-model data of another engine's features; warm-start from the record log instead)`);
  assert.is(refusal({ ...data, num_features: NUM_FEATURES + 1 }), `saved.json: num_features is ${NUM_FEATURES + 1}, expected ${NUM_FEATURES}`);
  const cut = { ...data, tasks: [{ key: 'k', samples: [{ rows: [[1, 2, 3]], cost: 1 }] }] };
  assert.is(refusal(cut), `saved.json: a feature row has 3 entries, expected ${NUM_FEATURES}`);
});

test.run();
