// Scheduling an ordered reduction (sum_bf16, ir/ordered.ts): every step that would
// reassociate it is refused with its reason (rfactor, a vectorised or parallel reduce loop,
// a cross-thread reduction, reduce loops nested out of axis order, a fuse out of that
// order); the steps that keep the order (split with its parts in order, unroll, fuse in
// order, vectorising a spatial loop) are accepted. The same steps on the plain sum are
// accepted, so each refusal is the ordered combiner's. The lowering refuses a cross-thread
// reduction of it too, for a state made without the step checks.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { lowerGpu } from '../codegen/gpu';
import { ComputeDAG } from '../ir/dag';
import { load, reduceAxis, sum, v } from '../ir/expr';
import { sumBf16 } from '../ir/ordered';
import { compute, placeholder } from '../ir/tensor';
import { defaultGpuSchedule } from './defaults-gpu';
import { ScheduleError, State } from './state';
import type { Step } from './steps';

const S = 'T_s';

/** out[i, j] = sum over k, l of x[i, k, l, j]: ordered (sum_bf16) or the plain sum. */
function dag(plain = false): ComputeDAG {
  const x = placeholder('x', [4, 8, 6, 16]);
  const k = reduceAxis('k', 8), l = reduceAxis('l', 6);
  return new ComputeDAG([compute(S, [4, 16], ['i', 'j'], (i, j) => (plain ? sum : sumBf16)(load(x, [i, v('k'), v('l'), j]), [k, l]))]);
}

const ORDERED = /an ordered reduction \(sum_bf16\) accumulates serially in the order of its reduce axes/;

const refused: [string, Step[], RegExp][] = [
  ['rfactor', [{ s: 'split', stage: S, iter: 'k', lengths: [4] }, { s: 'rfactor', stage: S, iter: 'k.1' }], /^rfactor T_s\.k\.1: .*\(rfactor combines partial results\)/],
  ['vectorize a reduce loop', [{ s: 'annotate', stage: S, iter: 'l', ann: 'vectorize' }], /^vectorize T_s\.l: .*\(a vector loop keeps one partial result per lane\)/],
  ['bind a reduce loop to threadIdx.x', [{ s: 'bind', stage: S, iter: 'k', thread: 'threadIdx.x' }], /^bind T_s\.k: .*\(threads would combine partial results\)/],
  ['reorder k.1 outside k.0', [{ s: 'split', stage: S, iter: 'k', lengths: [4] }, { s: 'reorder', stage: S, order: ['i', 'j', 'k.1', 'k.0', 'l'] }],
    /^reorder T_s: .*\(reduce loops k\.1, k\.0, l; the axis order is k\.0, k\.1, l\)/],
  ['reorder l outside k', [{ s: 'reorder', stage: S, order: ['i', 'l', 'j', 'k'] }], /^reorder T_s: .*\(reduce loops l, k; the axis order is k, l\)/],
];

for (const [what, steps, message] of refused) {
  test(`refused for the ordered sum: ${what}`, () => {
    const d = dag();
    assert.throws(() => State.replay(d, steps), (e: unknown) => e instanceof ScheduleError && ORDERED.test(e.message) && message.test(e.message));
    State.replay(dag(true), steps);
  });
}

test('accepted for the ordered sum: splits in order, unroll, fuse in order, a vectorised spatial loop, cache_write', () => {
  const state = State.replay(dag(), [
    { s: 'split', stage: S, iter: 'k', lengths: [2, 2] },
    { s: 'split', stage: S, iter: 'j', lengths: [8] },
    { s: 'reorder', stage: S, order: ['i', 'j.0', 'k.0', 'k.1', 'k.2', 'l', 'j.1'] },
    // k.2 and l fused: one loop over them in row-major order, inside k.1.
    { s: 'fuse', stage: S, iters: ['k.2', 'l'] },
    { s: 'annotate', stage: S, iter: 'k.1', ann: 'unroll' },
    { s: 'annotate', stage: S, iter: 'j.1', ann: 'vectorize' },
    { s: 'annotate', stage: S, iter: 'i', ann: 'parallel' },
  ]);
  assert.equal(state.stage(S).leaves, ['i', 'j.0', 'k.0', 'k.1', 'k.2@l', 'j.1']);
  // After cache_write the local stage holds the reduction, and the guards with it.
  const d = dag();
  const local = `${S}.local`;
  assert.throws(() => State.replay(d, [{ s: 'cache_write', stage: S }, { s: 'reorder', stage: local, order: ['i', 'j', 'l', 'k'] }]), ORDERED);
  assert.throws(() => State.replay(d, [{ s: 'cache_write', stage: S }, { s: 'annotate', stage: local, iter: 'k', ann: 'vectorize' }]), ORDERED);
});

test('the GPU lowering refuses a cross-thread reduction of it (a state whose binding skipped the step checks)', () => {
  const state = State.replay(dag(), defaultGpuSchedule(dag(), { maxThreadsPerBlock: 256 }));
  const s = state.stage(S);
  s.bind.set('l', 'threadIdx.x');
  s.bind.delete('i@j.1');
  s.bind.set('i@j.1', 'threadIdx.y');
  assert.throws(() => lowerGpu(state, 'k', { maxThreadsPerBlock: 256, maxSharedMemoryPerBlock: 48 * 1024, maxLocalMemoryPerBlock: 1 << 20, maxVthreadExtent: 8 }),
    /cross-thread reduction over l: an ordered reduction \(sum_bf16\) accumulates serially in the order of its reduce axes/);
});

test.run();
