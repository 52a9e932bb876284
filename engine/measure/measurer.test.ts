// The measurer end to end on a small conv task: default steps give a verified time; a
// crashing, a hanging and a wrong kernel, bad steps and C that does not compile each come
// back with their error class while the measurer carries on. A verified schedule's library
// stays for its next measurement (tune's confirmation pass); a failed one's is removed.

import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { placeholder } from '../ir/tensor';
import type { Step } from '../schedule/steps';
import { dense } from '../topi/nn';
import { parseTarget } from '../target';
import { renderCandidate } from './builder';
import { convKernels } from './conv-kernels.fixture';
import { HostRate, MAX_RETAKES, NEW_BEST_SHARE } from './host-rate';
import { coldInputs, LocalMeasurer, SLOW_CUTOFF_FLOOR_MS } from './measurer';
import { compareOutput, computeReference } from './verify';

const target = parseTarget('llvm -mcpu=native');
const { tasks, conv, defaults, outSize, good, crashing, hanging, wrong } = convKernels(target);
const broken = 'int tt_candidate(float* const* args) { return args[0] +; }';

test('the reference evaluator is deterministic and the comparison has a stated tolerance', () => {
  const [a, b, c] = [3, 3, 4].map((seed) => computeReference(conv.dag, seed) as { seed: number; outputs: Float32Array[] });
  assert.equal(compareOutput(a.outputs[0], b.outputs[0]), { ok: true });
  assert.not.ok(compareOutput(a.outputs[0], c.outputs[0]).ok);
  const near = Float32Array.from(a.outputs[0], (x) => x * (1 + 5e-5));
  assert.ok(compareOutput(near, a.outputs[0]).ok);
  const nan = Float32Array.from(a.outputs[0]);
  nan[3] = NaN;
  const cmp = compareOutput(nan, a.outputs[0]);
  assert.ok(!cmp.ok && cmp.message.startsWith('1 of ') && cmp.message.includes('index 3'), JSON.stringify(cmp));
});

test('default steps on a conv task: a verified time; every error class with the measurer carrying on', async () => {
  assert.ok(conv, `no small conv task in ${tasks.map((t) => t.desc).join('; ')}`);
  assert.ok(wrong !== good.code, 'the wrong kernel differs from the good one');
  const measurer = new LocalMeasurer(target, { timeoutMs: 1500, repeat: 2, minRepeatMs: 1, buildJobs: 2, seed: 5 });
  try {
    const [valid] = await measurer.measure(conv, [defaults]);
    assert.is(valid.error, null, valid.message);
    // The default tile covers all output channels only when there are few of them; then the
    // weight needs no blocking. Either way the layouts the candidate chose were verified.
    const rendered = renderCandidate(conv.dag, defaults, target, new Set(conv.constInputs));
    assert.ok(rendered.ok, 'the defaults render');
    assert.is(valid.costs_ms.length, 2);
    assert.ok(valid.costs_ms.every((c) => c > 0 && Number.isFinite(c)));
    assert.ok(valid.build_ms > 0 && valid.run_ms > 0);

    const badSteps: Step[][] = [
      [{ s: 'split', stage: 'no_such_stage', iter: 'x', lengths: [2] }],
      [{ s: 'split', stage: 'conv2d_nhwc', iter: 'ff', lengths: [0] }],
    ];
    const invalid = await measurer.measure(conv, badSteps);
    assert.equal(invalid.map((o) => o.error), ['invalid_schedule', 'invalid_schedule']);
    assert.match(invalid[0].message!, /no_such_stage/);
    assert.match(invalid[1].message!, /steps\/0\/lengths\/0 must be >= 1/);

    const steps = (tag: string): Step[] => [{ s: 'compute_root', stage: tag }];
    const outcomes = await measurer.measureSources(conv, [
      { steps: steps('crash'), code: crashing },
      { steps: steps('hang'), code: hanging },
      { steps: steps('wrong'), code: wrong },
      { steps: steps('broken'), code: broken },
      { steps: steps('good'), code: good.code },
    ]);
    assert.equal(outcomes.map((o) => o.error), ['runtime_error', 'timeout', 'wrong_answer', 'compile_error', null]);
    assert.equal(outcomes.map((o) => o.steps[0]), ['crash', 'hang', 'wrong', 'broken', 'good'].map(steps).map((s) => s[0]));
    assert.match(outcomes[0].message!, /SIGSEGV/);
    assert.match(outcomes[1].message!, /did not finish within 1500 ms/);
    assert.match(outcomes[2].message!, new RegExp(`1 of ${outSize} elements differ; worst at index ${outSize >> 1}`));
    assert.match(outcomes[3].message!, /error/);
    assert.ok(outcomes.slice(0, 4).every((o) => o.costs_ms.length === 0));
    assert.is(outcomes[4].costs_ms.length, 2);
    assert.is(measurer.workerRestarts, 2, 'one restart after the crash, one after the hang');
  } finally {
    await measurer.close();
  }
});

test('a verified schedule measured again runs the library built the first time; a failed candidate\'s library is removed', async () => {
  const workDir = await fs.mkdtemp(path.join(tmpdir(), 'tt-measurer-kept-'));
  const measurer = new LocalMeasurer(target, { repeat: 1, minRepeatMs: 1, buildJobs: 2, seed: 5, workDir });
  const libraries = async (): Promise<string[]> => (await fs.readdir(workDir)).filter((f) => f.endsWith('.so')).sort();
  try {
    const [first] = await measurer.measure(conv, [defaults]);
    assert.is(first.error, null, first.message);
    const kept = await libraries();
    assert.is(kept.length, 1, 'the verified schedule\'s library is kept');
    const builtAt = (await fs.stat(path.join(workDir, kept[0]))).mtimeMs;
    const [wrongOne] = await measurer.measureSources(conv, [{ steps: [{ s: 'compute_root', stage: 'wrong' }], code: wrong }]);
    assert.is(wrongOne.error, 'wrong_answer');
    assert.equal(await libraries(), kept, 'the wrong kernel\'s library is gone');
    const [again] = await measurer.measure(conv, [defaults]);
    assert.is(again.error, null, again.message);
    assert.equal(await libraries(), kept);
    assert.is((await fs.stat(path.join(workDir, kept[0]))).mtimeMs, builtAt, 'not compiled again');
  } finally {
    await measurer.close();
    await fs.rm(workDir, { recursive: true, force: true });
  }
});

test('once a task has a verified time, a candidate far slower is cut off before the timeout; a task with none yet waits the whole timeout', async () => {
  const measurer = new LocalMeasurer(target, { timeoutMs: 60_000, repeat: 2, minRepeatMs: 1, buildJobs: 2, seed: 5 });
  try {
    const steps = (tag: string): Step[] => [{ s: 'compute_root', stage: tag }];
    const [fast, slow] = await measurer.measureSources(conv, [{ steps: steps('good'), code: good.code }, { steps: steps('hang'), code: hanging }]);
    assert.is(fast.error, null, fast.message);
    assert.is(slow.error, 'timeout');
    // The conv runs in well under a millisecond here, so the floor applies, not the 60 s.
    assert.match(slow.message!, new RegExp(`did not finish within ${SLOW_CUTOFF_FLOOR_MS} ms`));
    assert.match(slow.message!, /cut off at 100x the run of the task's fastest schedule so far, [\d.]+ ms, instead of the 60000 ms timeout/);
  } finally {
    await measurer.close();
  }
});

/** Judges the candidates by a script (how far off each probe strayed, in turn) and keeps the rates the worker sent. */
class ScriptedHostRate extends HostRate {
  readonly rates: (readonly [number, number])[] = [];
  constructor(private readonly script: number[]) {
    super();
  }

  override observe(rates: readonly [number, number]): number {
    this.rates.push(rates);
    return this.script.shift() ?? 1;
  }
}

test('a candidate timed while the machine ran off its usual speed is timed again after the others, and keeps the on-speed time', async () => {
  // Candidates 0-2 timed once each, 1 judged off speed (1.6x); its retake on speed.
  const script = new ScriptedHostRate([1, 1.6, 1, 1]);
  const measurer = new LocalMeasurer(target, { repeat: 1, minRepeatMs: 1, buildJobs: 2, seed: 5, hostRate: script });
  try {
    const steps = (tag: string): Step[] => [{ s: 'compute_root', stage: tag }];
    const outcomes = await measurer.measureSources(conv, ['a', 'b', 'c'].map((tag) => ({ steps: steps(tag), code: good.code })));
    assert.equal(outcomes.map((o) => o.error), [null, null, null]);
    assert.equal(outcomes.map((o) => o.steps[0]), ['a', 'b', 'c'].map((t) => steps(t)[0]));
    assert.is(script.rates.length, 4, 'three candidates and one retake probed');
    assert.ok(script.rates.every((r) => r.length === 2 && r.every((x) => x > 0)), JSON.stringify(script.rates));
    assert.equal(measurer.hostMoves, { retaken: 1, keptOffSpeed: 0, newBests: 0, newBestsNotHeld: 0 });
  } finally {
    await measurer.close();
  }
});

test(`a candidate off speed at every retake keeps the time taken nearest the usual speed after ${MAX_RETAKES} retakes, and is counted`, async () => {
  const script = new ScriptedHostRate([2, 1.9, 1.5]);
  const measurer = new LocalMeasurer(target, { repeat: 1, minRepeatMs: 1, buildJobs: 2, seed: 5, hostRate: script });
  try {
    const [only] = await measurer.measureSources(conv, [{ steps: [{ s: 'compute_root', stage: 'good' }], code: good.code }]);
    assert.is(only.error, null, only.message);
    assert.is(only.costs_ms.length, 1);
    assert.is(script.rates.length, 1 + MAX_RETAKES);
    assert.equal(measurer.hostMoves, { retaken: MAX_RETAKES, keptOffSpeed: 1, newBests: 0, newBestsNotHeld: 0 });
  } finally {
    await measurer.close();
  }
});

test('a candidate timed far faster than its task\'s best before the batch is timed once more, whatever its probe said', async () => {
  const script = new ScriptedHostRate([]);
  const measurer = new LocalMeasurer(target, { repeat: 1, minRepeatMs: 1, buildJobs: 2, seed: 5, hostRate: script });
  // The same conv computed ten times over: far slower than the good kernel, whatever the machine.
  const tenfold = good.code.replace(/return tt_candidate_kernel\(([^)]*)\);/, (_, args: string) =>
    `int r = 0; for (int k = 0; k < 10; k++) r |= tt_candidate_kernel(${args}); return r;`);
  try {
    const steps = (tag: string): Step[] => [{ s: 'compute_root', stage: tag }];
    const [slow] = await measurer.measureSources(conv, [{ steps: steps('tenfold'), code: tenfold }]);
    assert.is(slow.error, null, slow.message);
    assert.equal(measurer.hostMoves.newBests, 0, 'the task\'s first timing is nothing to compare with');
    const [fast] = await measurer.measureSources(conv, [{ steps: steps('good'), code: good.code }]);
    assert.is(fast.error, null, fast.message);
    assert.ok(fast.costs_ms[0] < NEW_BEST_SHARE * slow.costs_ms[0], `${fast.costs_ms} against ${slow.costs_ms}`);
    assert.is(measurer.hostMoves.newBests, 1);
    assert.is(script.rates.length, 3, 'the tenfold kernel, the good one, and the good one again');
    assert.is(measurer.hostMoves.retaken, 0, 'not counted as an off-speed retake');
  } finally {
    await measurer.close();
  }
});

test('a flushed run evicts the task\'s weights only: a task without any runs warm', () => {
  const x = placeholder('p0', [4, 8]), w = placeholder('p1', [16, 8]);
  const dag = new ComputeDAG([dense(x, w)]);
  assert.equal([...coldInputs({ dag, constInputs: ['p1'] })], [1], 'a GEMM: its weight');
  assert.equal([...coldInputs({ dag, constInputs: [] })], [], 'both operands activations (attention)');
  assert.equal([...coldInputs({ dag })], [], 'no constants listed');
});

test.run();
