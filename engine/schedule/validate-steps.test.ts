// The steps schema: in step with the Step union, strict about names and numbers.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkSteps, loadSchema } from './validate-steps';
import { STEP_KINDS, type Step } from './steps';

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

test.run();
