// The ordered bfloat16 sum (combiner sum_bf16, ir/ordered.ts) run by the reference evaluator
// and by the C kernel, unscheduled and under the schedules that keep its order (a split
// reduce loop with its parts in order, unrolled; the CPU default): each gives ml_dtypes'
// answer, every partial sum rounded to bfloat16 from +0 (numpy's identity) in axis order. The rows are chosen so
// that any other order or a float32 accumulator rounded once gives other numbers:
//   [1, e x 7] (e = 2^-8, half a bfloat16 step of 1): 1 + e ties to 1, so the sum stays 1;
//   [e x 7, 1]: 7e is exact, 1 + 7e rounds to 1.03125;
//   [-0 x 8]: +0, as numpy's bfloat16 sum gives (from its identity +0, not the first value).
// Equality is exact: every partial sum is a bfloat16 value.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { load, reduceAxis, sum, v } from '../ir/expr';
import { roundBfloat16 } from '../ir/half';
import { sumBf16 } from '../ir/ordered';
import { compute, placeholder } from '../ir/tensor';
import { defaultSchedule } from '../schedule/defaults';
import { State } from '../schedule/state';
import type { Step } from '../schedule/steps';
import { renderKernel } from './c';
import { lower, type Stmt } from './lower';
import { runKernel } from './run-c';

const E = 2 ** -8;
const ROWS = [[1, E, E, E, E, E, E, E], [E, E, E, E, E, E, E, 1], [-0, -0, -0, -0, -0, -0, -0, -0]];
const WANT = [1, 1.03125, 0];

/** The sums of the rows: ordered (sum_bf16) or the plain float32 sum. */
function orderedSumDag(plain = false): ComputeDAG {
  const x = placeholder('x', [3, 8]);
  const k = reduceAxis('k', 8);
  return new ComputeDAG([compute('T_bf16_sum', [3], ['i'], (i) => (plain ? sum : sumBf16)(load(x, [i, v(k.name)]), [k]))]);
}

const input = Float32Array.from(ROWS.flat());
const same = (got: ArrayLike<number>, want: readonly number[]): boolean => want.every((w, i) => Object.is(got[i], w));

test('the rows: sequential bfloat16 rounding differs from a float32 sum rounded once', () => {
  const roundedOnce = ROWS.map((r) => roundBfloat16(r.reduce((a, b) => Math.fround(a + b), 0)));
  assert.equal(roundedOnce, [1.03125, 1.03125, 0]);
  assert.not.ok(same(roundedOnce, WANT));
  const sequential = ROWS.map((r) => r.reduce((a, b) => roundBfloat16(a + b), 0));
  assert.ok(same(sequential, WANT), `sequential ${sequential.join(', ')}`);
});

test('the reference evaluator gives the sequential bfloat16 sums', () => {
  const dag = orderedSumDag();
  const got = evaluate(dag, new Map([[dag.inputs[0], input]])).get('T_bf16_sum')!;
  assert.ok(same(got, WANT), `evaluator: ${[...got].join(', ')}`);
});

const schedules: [string, (dag: ComputeDAG) => Step[]][] = [
  ['unscheduled', () => []],
  ['k split by 4, k.0 outside k.1, k.1 unrolled', () => [
    { s: 'split', stage: 'T_bf16_sum', iter: 'k', lengths: [4] },
    { s: 'annotate', stage: 'T_bf16_sum', iter: 'k.1', ann: 'unroll' },
  ]],
  ['k split by 3 (a guarded partial tile)', () => [{ s: 'split', stage: 'T_bf16_sum', iter: 'k', lengths: [3] }]],
  ['the CPU default schedule', (dag) => defaultSchedule(dag, { vectorLanes: 8 })],
];

for (const [what, steps] of schedules) {
  test(`the C kernel gives the sequential bfloat16 sums: ${what}`, () => {
    const dag = orderedSumDag();
    const [got] = runKernel(lower(State.replay(dag, steps(dag)), 'kernel'), [input], ['-O2']);
    assert.ok(same(got, WANT), `${what}: ${[...got].join(', ')}`);
  });
}

/** `stmts` with every loop over `v` made a vector loop. */
function vectorised(stmts: readonly Stmt[], v: string): Stmt[] {
  return stmts.map((s) => {
    if (s.k === 'for') return { ...s, kind: s.v === v ? 'vectorize' : s.kind, body: vectorised(s.body, v) };
    if (s.k === 'if') return { ...s, body: vectorised(s.body, v) };
    return s;
  });
}

test('the C renderer keeps a reduce loop of it serial even when the loop is marked vectorised', () => {
  // Scheduling refuses to vectorise it (schedule/ordered-reduction.test.ts); a kernel marked by
  // hand must still not take the per-lane partial results of a vector reduction.
  const marked = (dag: ComputeDAG) => {
    const k = lower(new State(dag), 'kernel');
    const loop = k.body.find((s): s is Extract<Stmt, { k: 'for' }> => s.k === 'for')!;
    const inner = loop.body.find((s): s is Extract<Stmt, { k: 'for' }> => s.k === 'for' && s.extent === 8)!;
    assert.ok(inner, 'the reduce loop inside the row loop');
    return { ...k, body: vectorised(k.body, inner.v), parts: k.parts.map((p) => ({ ...p, body: vectorised(p.body, inner.v) })) };
  };
  // The plain sum, marked so, becomes a vector reduction (its accumulators tt_acc*); the ordered one does not.
  assert.match(renderKernel(marked(orderedSumDag(true)), { vectorLanes: 4 }), /tt_acc0/);
  const kernel = marked(orderedSumDag());
  assert.not.match(renderKernel(kernel, { vectorLanes: 4 }), /tt_acc/);
  const [got] = runKernel(kernel, [input], ['-O2'], { vectorLanes: 4 });
  assert.ok(same(got, WANT), `vector-marked: ${[...got].join(', ')}`);
});

test.run();
