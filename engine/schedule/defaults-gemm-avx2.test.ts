// The AVX2 (8-lane) register tile of a dense or batch matmul over rows that 6 does not
// divide (BERT's 128 tokens): 6 rows by 2 vectors, the last tile partial. Its whole tiles
// and its tail must give the reference's values.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runKernel } from '../codegen/run-c';
import { renderKernel } from '../codegen/c';
import { lower } from '../codegen/lower';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { placeholder, type Tensor } from '../ir/tensor';
import { uniform } from '../runtime/random';
import { batchMatmul, dense } from '../topi/nn';
import { defaultSchedule } from './defaults';
import { State } from './state';
import type { Step } from './steps';

const lanes = 8;

function rowSplit(steps: readonly Step[]): number[] {
  return steps.flatMap((s) => (s.s === 'split' ? [s.lengths[0]] : []));
}

function check(dag: ComputeDAG, out: Tensor, inputs: Tensor[]): void {
  const steps = defaultSchedule(dag, { vectorLanes: lanes });
  assert.equal(rowSplit(steps).slice(0, 2), [16, 6], 'two vectors of columns by 6 rows');
  const kernel = lower(State.replay(dag, steps), 'k');
  assert.match(renderKernel(kernel, { vectorLanes: lanes }), /tt_v8/);
  const data = inputs.map((t, i) => uniform(t.shape.reduce((a, b) => a * b, 1), 3, i));
  const want = evaluate(dag, new Map(inputs.map((t, i) => [t, data[i]]))).get(out.name) as Float32Array;
  const got = runKernel(kernel, data, undefined, { vectorLanes: lanes });
  assert.is(got[0].length, want.length);
  want.forEach((w, i) => { if (!(Math.abs(got[0][i] - w) <= 1e-4 * Math.abs(w) + 1e-5)) assert.unreachable(`${i}: ${got[0][i]} vs ${w}`); });
}

test('dense 128x48 by 32x48 at 8 lanes: 6-row tiles and a 2-row tail give the reference values', () => {
  const a = placeholder('p0', [128, 48]), w = placeholder('p1', [32, 48]);
  const out = dense(a, w);
  check(new ComputeDAG([out]), out, [a, w]);
});

test('batch_matmul 2x128x24 by 2x24x32 at 8 lanes: 6-row tiles and a 2-row tail give the reference values', () => {
  const a = placeholder('p0', [2, 128, 24]), b = placeholder('p1', [2, 24, 32]);
  const out = batchMatmul(a, b, { transB: false });
  check(new ComputeDAG([out]), out, [a, b]);
});

test.run();
