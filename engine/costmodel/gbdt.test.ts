// The boosted trees: they learn a nonlinear function well beyond what a constant can, the
// pack-sum objective learns per-row contributions from sums only, and training is
// deterministic for a seed.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { GBDT, rng } from './gbdt';

const target = (x: ArrayLike<number>): number => Math.sin(3 * x[0]) * x[1] + (x[2] > 0.5 ? x[3] * x[3] : 0) - 0.5 * Math.abs(x[4] - 0.3);

function dataset(n: number, seed: number): { rows: Float32Array[]; y: number[] } {
  const random = rng(seed);
  const rows: Float32Array[] = [], y: number[] = [];
  for (let i = 0; i < n; i++) {
    const x = Float32Array.from({ length: 8 }, () => random()); // x[5..7] are noise features
    rows.push(x);
    y.push(target(x));
  }
  return { rows, y };
}

const rmse = (pred: number[], y: number[]): number => Math.sqrt(pred.reduce((a, p, i) => a + (p - y[i]) ** 2, 0) / y.length);
const mean = (y: number[]): number => y.reduce((a, b) => a + b, 0) / y.length;

test('fits a nonlinear function: held-out error far below the best constant', () => {
  const train = dataset(1200, 1), held = dataset(400, 2);
  const model = GBDT.train({ rows: train.rows, samples: train.rows.map((_, i) => [i]), labels: train.y }, { rounds: 200 });
  const constant = rmse(held.y.map(() => mean(train.y)), held.y);
  const err = rmse(held.rows.map((x) => model.predictRow(x)), held.y);
  assert.ok(constant > 0.2, `the function varies (constant rmse ${constant})`);
  assert.ok(err < 0.3 * constant, `held-out rmse ${err.toFixed(4)} vs constant ${constant.toFixed(4)}`);
  assert.ok(model.info.loss[model.info.loss.length - 1] < model.info.loss[0], 'training loss decreases');
});

test('pack-sum: learns per-row contributions from the sums of 1 to 3 rows', () => {
  const make = (n: number, seed: number) => {
    const { rows } = dataset(n * 3, seed);
    const random = rng(seed + 100);
    const samples: number[][] = [], labels: number[] = [];
    let next = 0;
    for (let s = 0; s < n; s++) {
      const k = 1 + Math.floor(random() * 3);
      const ids = Array.from({ length: k }, () => next++);
      samples.push(ids);
      labels.push(ids.reduce((a, r) => a + target(rows[r]), 0));
    }
    return { rows: rows.slice(0, next), samples, labels };
  };
  const train = make(1500, 3), held = make(300, 4);
  const model = GBDT.train(train, { rounds: 200 });
  const pred = held.samples.map((ids) => model.predictSample(ids.map((r) => held.rows[r])));
  const constant = rmse(held.labels.map(() => mean(train.labels)), held.labels);
  const err = rmse(pred, held.labels);
  assert.ok(err < 0.35 * constant, `held-out rmse ${err.toFixed(4)} vs constant ${constant.toFixed(4)}`);
  // And a single row scores its own contribution.
  const single = held.rows.slice(0, 200);
  const rowErr = rmse(single.map((x) => model.predictRow(x)), single.map(target));
  assert.ok(rowErr < 0.5 * constant, `per-row rmse ${rowErr.toFixed(4)}`);
});

test('sample weights: a heavily weighted region is fitted more closely', () => {
  const { rows, y } = dataset(800, 5);
  const samples = rows.map((_, i) => [i]);
  const heavy = rows.map((x) => (x[0] > 0.5 ? 50 : 1));
  const plain = GBDT.train({ rows, samples, labels: y }, { rounds: 20, maxDepth: 3 });
  const weighted = GBDT.train({ rows, samples, labels: y, weights: heavy }, { rounds: 20, maxDepth: 3 });
  const region = rows.map((x, i) => [x, y[i]] as const).filter(([x]) => x[0] > 0.5);
  const errOf = (m: GBDT): number => rmse(region.map(([x]) => m.predictRow(x)), region.map(([, t]) => t));
  assert.ok(errOf(weighted) < errOf(plain), `${errOf(weighted)} < ${errOf(plain)}`);
});

test('deterministic for a seed; bad parameters are refused', () => {
  const { rows, y } = dataset(300, 6);
  const data = { rows, samples: rows.map((_, i) => [i]), labels: y };
  const a = GBDT.train(data, { rounds: 30, seed: 7 }), b = GBDT.train(data, { rounds: 30, seed: 7 });
  assert.equal(rows.map((x) => a.predictRow(x)), rows.map((x) => b.predictRow(x)));
  assert.throws(() => GBDT.train(data, { maxBins: 1000 }), /maxBins/);
});

test.run();
