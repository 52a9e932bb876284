// CUDA candidates in the measurement worker. Where the machine has a CUDA driver and GPU,
// ResNet-50's last 3x3 conv's default schedule and random states of each GPU sketch run on it and
// match the reference evaluator (the measurer's tolerance). Where it has none (CI: nvcc
// only), the same candidates build (nvcc, the host library with the CUDA runtime) and the
// worker reports a runtime_error naming the missing driver, one line, for each: no crash,
// no hang. Skipped without nvcc.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { LocalMeasurer } from '../measure/measurer';
import { defaultOptionsOf, defaultSchedule } from '../schedule/defaults';
import type { Step } from '../schedule/steps';
import { buildState, RandomSource } from '../search/annotate';
import { resnet50LastConv } from '../search/gpu-fixtures.fixture';
import { Rng } from '../search/rng';
import { generateGpuSketches } from '../search/sketch-gpu';
import { skip } from '../skip.fixture';
import { parseTarget } from '../target';
import { cudaTestTarget } from './cuda-target.fixture';
import { nvccMissing } from './nvcc';

/** What the runtime says when the driver cannot be opened or initialised (tt_cuda.c). */
const NO_DRIVER = /^(no CUDA driver: .*libcuda\.so\.1.*|cuInit failed: .*)$/;

test('CUDA candidates of ResNet-50\'s last 3x3 conv: verified on the GPU where there is one, else a runtime_error naming the missing driver', async () => {
  const why = nvccMissing();
  if (why) { skip('CUDA candidates in the measurement worker', why); return; }
  const target = parseTarget(cudaTestTarget());
  const task = resnet50LastConv();
  const rng = new Rng(5);
  const sketches = generateGpuSketches(task.dag, { gpu: target.gpu!, mali: false });
  const candidates: Step[][] = [defaultSchedule(task.dag, defaultOptionsOf(target))];
  sketches.forEach((_, i) => {
    for (let attempt = 0; attempt < 50; attempt++) {
      try {
        candidates.push(buildState(task.dag, sketches, i, new RandomSource(rng)).steps);
        return;
      } catch { /* an invalid fill: draw again */ }
    }
  });
  const measurer = new LocalMeasurer(target, { threads: 1, number: 1, repeat: 1, minRepeatMs: 0 });
  try {
    const outcomes = await measurer.measure(task, candidates);
    const built = outcomes.filter((o) => o.error !== 'invalid_schedule');
    assert.ok(built.length >= 1, 'the default schedule at least builds');
    const noDriver = built.filter((o) => o.error === 'runtime_error' && NO_DRIVER.test(o.message ?? ''));
    if (noDriver.length === built.length) {
      for (const o of built) assert.not.match(o.message ?? '', /\n/, 'one line');
      skip('CUDA candidates verified on a GPU', noDriver[0].message);
      return;
    }
    outcomes.forEach((o, i) => {
      if (o.error === 'invalid_schedule') return; // over a limit ptxas found: refused, as it should be
      assert.is(o.error, null, `candidate ${i}: ${o.error}: ${o.message ?? ''}`);
    });
  } finally {
    await measurer.close();
  }
});

test.run();
