// The AVX-512 (16-lane) register tiles of a dense or batch matmul with rows to spare
// (AVX512_WIDE_TILES in defaults.ts): 64 columns by 6 rows where 64 divides the columns, 48
// by 8 where 48 does, 32 by 12 over columns that no vector divides. Whole tiles, row tails
// and partial column tiles must give the reference's values.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runKernel } from '../codegen/run-c';
import { lower } from '../codegen/lower';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { placeholder, type Tensor } from '../ir/tensor';
import { uniform } from '../runtime/random';
import { batchMatmul, dense } from '../topi/nn';
import { defaultSchedule } from './defaults';
import { State } from './state';

const lanes = 16;

function check(out: Tensor, inputs: Tensor[], tile: [number, number]): void {
  const dag = new ComputeDAG([out]);
  const steps = defaultSchedule(dag, { vectorLanes: lanes });
  assert.equal(steps.flatMap((s) => (s.s === 'split' ? [s.lengths[0]] : [])).slice(0, 2), tile, 'columns by rows');
  const data = inputs.map((t, i) => uniform(t.shape.reduce((a, b) => a * b, 1), 3, i));
  const want = evaluate(dag, new Map(inputs.map((t, i) => [t, data[i]]))).get(out.name) as Float32Array;
  const [got] = runKernel(lower(State.replay(dag, steps), 'k'), data, undefined, { vectorLanes: lanes });
  assert.is(got.length, want.length);
  want.forEach((w, i) => { if (!(Math.abs(got[i] - w) <= 1e-4 * Math.abs(w) + 1e-5)) assert.unreachable(`${i}: ${got[i]} vs ${w}`); });
}

test('dense 62x24 by 128x24: 64-column by 6-row tiles and a 2-row tail give the reference values', () => {
  const a = placeholder('p0', [62, 24]), w = placeholder('p1', [128, 24]);
  check(dense(a, w), [a, w], [64, 6]);
});

test('dense 57x20 by 96x20: 48-column by 8-row tiles and a 1-row tail give the reference values', () => {
  const a = placeholder('p0', [57, 20]), w = placeholder('p1', [96, 20]);
  check(dense(a, w), [a, w], [48, 8]);
});

test('batch_matmul 1x58x16 by 1x16x70 (columns no vector divides): 32 by 12, partial tiles in both axes, the reference values', () => {
  const a = placeholder('p0', [1, 58, 16]), b = placeholder('p1', [1, 16, 70]);
  check(batchMatmul(a, b, { transB: false }), [a, b], [32, 12]);
});

test('fewer rows than the wide tiles want (a 1-row dense): the tile the shape chose before', () => {
  const a = placeholder('p0', [4, 24]), w = placeholder('p1', [128, 24]);
  const dag = new ComputeDAG([dense(a, w)]);
  const first = defaultSchedule(dag, { vectorLanes: lanes }).find((s) => s.s === 'split');
  assert.ok(first && first.s === 'split' && first.lengths[0] === 32, JSON.stringify(first));
});

test.run();
