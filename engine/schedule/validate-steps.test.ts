// The steps schema: in step with the Step union, strict about names and numbers; and the
// unroll bound (MAX_UNROLL), from the steps alone and, in lowering, with the task's extents.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { lower } from '../codegen/lower';
import { getNetwork } from '../frontend/networks';
import { extractTasks } from '../graph/extract';
import { renderCandidate } from '../measure/builder';
import { defaultSchedule } from './defaults';
import { State } from './state';
import { checkSteps, loadSchema } from './validate-steps';
import { MAX_UNROLL, STEP_KINDS, type Step } from './steps';

test('the schema knows exactly the step kinds of steps.ts', () => {
  const schema = loadSchema('steps.schema.json') as { definitions: { step: { properties: { s: { enum: string[] } }; oneOf: { properties: { s: { const: string } } }[] } } };
  const step = schema.definitions.step;
  assert.equal([...step.properties.s.enum].sort(), [...STEP_KINDS].sort());
  assert.equal(step.oneOf.map((b) => b.properties.s.const).sort(), [...STEP_KINDS].sort());
});

test('well-formed steps pass', () => {
  const steps: Step[] = [
    { s: 'split', stage: 'conv2d_nhwc', iter: 'ff', lengths: [4, 8] },
    { s: 'fuse', stage: 'T_relu', iters: ['nn', 'yy.0'] },
    { s: 'reorder', stage: 'T_relu', order: ['nn@yy.0', 'xx'] },
    { s: 'compute_at', stage: 'conv2d_nhwc.local', target: 'T_relu', iter: 'nn@yy.0' },
    { s: 'compute_inline', stage: 'pad_temp' },
    { s: 'cache_write', stage: 'conv2d_nhwc' },
    { s: 'annotate', stage: 'T_relu', iter: 'xx', ann: 'parallel' },
    { s: 'pragma', stage: 'T_relu', iter: 'xx', pragma: 'auto_unroll_max_step', value: 64 },
  ];
  assert.equal(checkSteps(steps), { ok: true, steps });
});

test('anything that could reach C as text, or an absurd number, is rejected with its path', () => {
  const cases: [unknown, RegExp][] = [
    [[{ s: 'compute_inline', stage: 'a;}system("x");{' }], /steps\/0\/stage must match pattern/],
    [[{ s: 'annotate', stage: 'a', iter: 'x y', ann: 'parallel' }], /steps\/0\/iter must match pattern/],
    [[{ s: 'annotate', stage: 'a', iter: 'x', ann: 'parallel' }, { s: 'fuse', stage: 'a', iters: ['x', '1x'] }], /steps\/1\/iters\/1 must match pattern/],
    [[{ s: 'split', stage: 'a', iter: 'x', lengths: [2.5] }], /steps\/0\/lengths\/0 must be integer/],
    [[{ s: 'pragma', stage: 'a', iter: 'x', pragma: 'auto_unroll_max_step', value: 1e9 }], /steps\/0\/value must be <= 65536/],
    [[{ s: 'pragma', stage: 'a', iter: 'x', pragma: 'asm("nop")', value: 1 }], /steps\/0\/pragma must be equal to constant/],
    [[{ s: 'cache_write', stage: 'a', code: 'x' }], /additional properties 'code'/],
    [[{ s: 'jump' }], /steps\/0\/s must be equal to one of the allowed values/],
    ['split', /^steps must be array/],
  ];
  for (const [value, re] of cases) {
    const r = checkSteps(value);
    assert.not.ok(r.ok, JSON.stringify(value));
    if (!r.ok) assert.match(r.message, re);
  }
});

const tasks = extractTasks(getNetwork('mobilenet', { weights: 'zeros' }).graph);
const task = (desc: string) => tasks.find((t) => t.desc === desc)!;
const failure = (steps: unknown): string => {
  const r = checkSteps(steps);
  return r.ok ? 'accepted' : r.message;
};

test('unrolling is bounded by MAX_UNROLL (512, TVM\'s largest CPU auto_unroll_max_step) from the steps alone', () => {
  assert.is(MAX_UNROLL, 512);
  const split = (lengths: number[]): Step[] => [{ s: 'split', stage: 'T_relu', iter: 'ax3', lengths }];
  const pragma = (value: number): Step[] => [{ s: 'pragma', stage: 'T_relu', iter: 'ax0', pragma: 'auto_unroll_max_step', value }];
  assert.is(failure(pragma(512)), 'accepted');
  assert.is(failure(pragma(513)), 'steps/0/value: auto_unroll_max_step 513 is more than 512, the most a loop may unroll');
  assert.is(failure([...split([512]), { s: 'annotate', stage: 'T_relu', iter: 'ax3.1', ann: 'unroll' }]), 'accepted');
  assert.is(failure([...split([2, 1024]), { s: 'annotate', stage: 'T_relu', iter: 'ax3.2', ann: 'unroll' }]),
    'steps/1: unroll of T_relu.ax3.2 (1024 iterations) is more than 512, the most a loop may unroll');
  assert.is(failure([...split([32, 32]), { s: 'fuse', stage: 'T_relu', iters: ['ax3.1', 'ax3.2'] }, { s: 'annotate', stage: 'T_relu', iter: 'ax3.1@ax3.2', ann: 'unroll' }]),
    'steps/2: unroll of T_relu.ax3.1@ax3.2 (1024 iterations) is more than 512, the most a loop may unroll');
  // An unroll that a later split moves to the outer part (as State does), whose extent only the DAG knows.
  assert.match(failure([{ s: 'annotate', stage: 'T_relu', iter: 'ax3', ann: 'unroll' }, ...split([4])]), /^steps\/0: unroll of T_relu\.ax3\.0, a loop of a stage computed at root/);
});

test("a record that turns the default schedule's parallel outer loop into unroll fails checkSteps (no DAG needed: distill)", () => {
  const t = task('conv2d_nhwc+add+relu 1x112x112x32 -> 1x112x112x64');
  const steps = defaultSchedule(t.dag, { vectorLanes: 16 });
  assert.ok(checkSteps(steps).ok, 'the default schedule passes');
  const at = steps.findIndex((st) => st.s === 'annotate' && st.ann === 'parallel');
  const hostile = steps.map((st, i) => (i === at ? { ...st, ann: 'unroll' as const } : st));
  const iter = (steps[at] as { iter: string }).iter;
  assert.is(failure(hostile), `steps/${at}: unroll of T_relu.${iter}, a loop of a stage computed at root whose extent the steps do not bound ` +
    '(expected an unrolled loop of at most 512 iterations: a split\'s inner part, or a loop inside a compute_at tile)');
  // What it would have asked of GCC: the loop has more iterations than the bound.
  assert.throws(() => lower(State.replay(t.dag, hostile), 'k'), (e: Error) => e.name === 'ScheduleError' && new RegExp(`^unroll T_relu\\.${iter.replace(/[.@]/g, '\\$&')}: \\d+ iterations, more than 512, the most a loop may unroll$`).test(e.message));
});

test('every default schedule passes; with the DAG, lowering bounds the real extent (the builder reports invalid_schedule)', () => {
  for (const t of tasks) assert.ok(checkSteps(defaultSchedule(t.dag, { vectorLanes: 16 })).ok, t.desc);
  // The conv is computed inside the output's tile, so the steps alone accept unrolling its
  // reduction; on this task that loop has 1024 iterations.
  const t = task('conv2d_nhwc+add+relu 1x7x7x1024 -> 1x7x7x1024');
  const steps: Step[] = [...defaultSchedule(t.dag, { vectorLanes: 16 }), { s: 'annotate', stage: 'conv2d_nhwc', iter: 'rc', ann: 'unroll' }];
  assert.ok(checkSteps(steps).ok);
  const why = 'unroll conv2d_nhwc.rc: 1024 iterations, more than 512, the most a loop may unroll';
  assert.throws(() => lower(State.replay(t.dag, steps), 'k'), (e: Error) => e.name === 'ScheduleError' && e.message === why);
  assert.equal(renderCandidate(t.dag, steps, { vectorLanes: 16 }), { ok: false, message: `ScheduleError: ${why}` });
  assert.throws(() => State.replay(t.dag, [{ s: 'pragma', stage: 'T_relu', iter: 'ax0', pragma: 'auto_unroll_max_step', value: 4096 }]),
    (e: Error) => e.message === 'pragma T_relu.ax0: auto_unroll_max_step 4096 is more than 512, the most a loop may unroll');
});

test.run();
