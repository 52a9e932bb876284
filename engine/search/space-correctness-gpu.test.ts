// The GPU space is correct: random annotations of every GPU sketch of small tasks (tiles
// with shared copies and vthreads, cache_write, both rfactors, fuse-and-bind; Mali's
// variant) and the first-generation GPU schedules, built as OpenCL candidates and run on
// the OpenCL device (PoCL's CPU device in CI) by the measurer, which checks each output
// against the reference evaluator. Skipped where there is no OpenCL device.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Task } from '../graph/extract';
import { LocalMeasurer } from '../measure/measurer';
import { openclAvailable } from '../native/opencl';
import { defaultOptionsOf, defaultSchedule } from '../schedule/defaults';
import type { Step } from '../schedule/steps';
import { skip } from '../skip.fixture';
import type { Target } from '../target';
import { buildState, RandomSource } from './annotate';
import { bareConv, MALI, mobilenetTask, OPENCL, resnet50LastConv } from './gpu-fixtures.fixture';
import { Rng } from './rng';
import { generateGpuSketches } from './sketch-gpu';

/** One random valid state of each sketch of `task`, plus its default schedule. */
function candidates(task: Task, target: Target, rng: Rng): { what: string; steps: Step[] }[] {
  const sketches = generateGpuSketches(task.dag, { gpu: target.gpu!, mali: target.device === 'mali' });
  const out = [{ what: 'default', steps: defaultSchedule(task.dag, defaultOptionsOf(target)) }];
  sketches.forEach((sk, i) => {
    for (let attempt = 0; attempt < 50; attempt++) {
      try {
        out.push({ what: sk.name, steps: buildState(task.dag, sketches, i, new RandomSource(rng)).steps });
        return;
      } catch {
        // an invalid fill: draw again
      }
    }
    assert.unreachable(`${task.desc} / ${sk.name}: no valid state`);
  });
  return out;
}

async function check(target: Target, tasks: Task[], seed: number): Promise<void> {
  const why = openclAvailable();
  if (why) { skip(`GPU space on ${target.text}: random states and defaults on the OpenCL device`, why); return; }
  const measurer = new LocalMeasurer(target, { threads: 1, number: 1, repeat: 1, minRepeatMs: 0 });
  const rng = new Rng(seed);
  try {
    for (const task of tasks) {
      const list = candidates(task, target, rng);
      const outcomes = await measurer.measure(task, list.map((c) => c.steps));
      outcomes.forEach((o, i) => assert.is(o.error, null, `${target.text} / ${task.desc} / ${list[i].what}: ${o.error}: ${o.message ?? ''}`));
    }
  } finally {
    await measurer.close();
  }
}

test('opencl: conv (stride 2, padding), depthwise, pointwise, a conv with no epilogue, dense, softmax, global pool', async () => {
  await check(OPENCL, [
    mobilenetTask('conv2d_nhwc+add+relu 1x32x32x3', 32),
    mobilenetTask('depthwise_conv2d_nhwc+add+relu 1x16x16x32', 32),
    mobilenetTask('conv2d_nhwc+add+relu 1x16x16x32', 32),
    bareConv(16, 32, 10),
    mobilenetTask('dense+add', 32),
    mobilenetTask('softmax', 32),
    mobilenetTask('global_avg_pool2d', 32),
  ], 1);
});

test('opencl: ResNet-50\'s last 3x3 conv (7x7x512 -> 512)', async () => {
  await check(OPENCL, [resnet50LastConv()], 2);
});

test('opencl -device=mali: conv, depthwise, dense, softmax', async () => {
  await check(MALI, [
    mobilenetTask('conv2d_nhwc+add+relu 1x32x32x3', 32),
    mobilenetTask('depthwise_conv2d_nhwc+add+relu 1x16x16x32', 32),
    mobilenetTask('dense+add', 32),
    mobilenetTask('softmax', 32),
  ], 3);
});

test.run();
