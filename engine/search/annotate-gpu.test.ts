// GPU annotation and mutation stay within the device's limits (a property over many seeds
// and three device profiles), mutation keeps the cooperative fetch on the block's thread
// count, a genome rebuilds its steps exactly, and the policies use the GPU rules for a GPU
// target: every proposal lowers for the device.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { lowerGpu, type GpuProgram } from '../codegen/gpu';
import type { Task } from '../graph/extract';
import { State } from '../schedule/state';
import { MAX_UNROLL, stepsKey, type Step } from '../schedule/steps';
import { parseTarget, type GpuParams, type Target } from '../target';
import { buildState, GenomeSource, NO_FALLBACK, RandomSource, type Built } from './annotate';
import { GPU_MAX_LOCAL_FLOATS, GPU_UNROLL_STEPS } from './annotate-gpu';
import { SearchSpace } from './candidates';
import { bareConv, MALI, mobilenetTask, OPENCL, resnet50LastConv } from './gpu-fixtures.fixture';
import { mutate } from './mutate';
import { createPolicy } from './policy';
import { Rng } from './rng';
import { generateGpuSketches } from './sketch-gpu';
import type { CostModel, PolicyContext } from './types';

/** A small device: few threads, little shared memory, 2 vthreads. */
const TIGHT: Target = parseTarget('opencl -max_threads_per_block=64 -max_shared_memory_per_block=4096 -max_vthread_extent=2');

const TASKS: Task[] = [resnet50LastConv(), bareConv(), mobilenetTask('depthwise_conv2d_nhwc+add+relu 1x56x56x128'), mobilenetTask('dense+add')];

/** Everything a launch uses, checked against `gpu` independently of lowerGpu's own checks. */
function assertWithin(p: GpuProgram, steps: readonly Step[], gpu: GpuParams, what: string): void {
  for (const k of p.kernels) {
    const threads = k.block[0] * k.block[1] * k.block[2];
    assert.ok(threads <= gpu.maxThreadsPerBlock, `${what}: ${threads} threads`);
    const shared = k.shared.reduce((a, s) => a + 4 * s.size, 0);
    assert.ok(shared <= gpu.maxSharedMemoryPerBlock, `${what}: ${shared} shared bytes`);
    assert.ok(k.localBytes / 4 <= GPU_MAX_LOCAL_FLOATS, `${what}: ${k.localBytes} bytes of registers`);
  }
  for (const s of steps) {
    if (s.s === 'pragma') assert.ok(GPU_UNROLL_STEPS.includes(s.value) && s.value <= MAX_UNROLL, `${what}: unroll ${s.value}`);
  }
}

test('random fills and their mutations never exceed the device\'s limits (threads, vthreads, shared memory, registers)', () => {
  for (const target of [OPENCL, MALI, TIGHT]) {
    const gpu = target.gpu!;
    for (const task of TASKS) {
      const sketches = generateGpuSketches(task.dag, { gpu, mali: target.device === 'mali' });
      let accepted = 0, children = 0;
      for (let seed = 0; seed < 40; seed++) {
        const rng = new Rng(seed);
        let built: Built;
        try {
          built = buildState(task.dag, sketches, rng.int(sketches.length), new RandomSource(rng));
        } catch {
          continue;
        }
        accepted++;
        const what = `${target.text} / ${task.desc} / seed ${seed}`;
        // lowerGpu throws for a launch over the limits; assertWithin checks the same figures itself.
        assertWithin(lowerGpu(built.state, 'k', gpu), built.steps, gpu, what);
        for (let m = 0; m < 4; m++) {
          let child: Built | null;
          try {
            child = mutate(task.dag, sketches, built, rng);
          } catch {
            continue;
          }
          if (!child) continue;
          children++;
          assertWithin(lowerGpu(child.state, 'k', gpu), child.steps, gpu, `${what}, mutation ${m}`);
        }
      }
      assert.ok(accepted >= 30, `${target.text} / ${task.desc}: ${accepted} of 40 fills accepted`);
      assert.ok(children >= accepted, `${target.text} / ${task.desc}: ${children} mutations`);
    }
  }
});

test('on a device with 32-wide warps, shared rows are padded by storage_align in some states, and the padding reaches the buffer', () => {
  const warp32 = parseTarget('opencl -thread_warp_size=32');
  const task = bareConv();
  const sketches = generateGpuSketches(task.dag, { gpu: warp32.gpu! });
  const tiled = sketches.findIndex((sk) => sk.name.includes('+shared'));
  let padded = 0, plain = 0;
  for (let seed = 0; seed < 30; seed++) {
    let built: Built;
    try {
      built = buildState(task.dag, sketches, tiled, new RandomSource(new Rng(seed)));
    } catch {
      continue;
    }
    const aligns = built.steps.filter((st): st is Extract<Step, { s: 'storage_align' }> => st.s === 'storage_align');
    if (aligns.length === 0) { plain++; continue; }
    padded++;
    for (const a of aligns) assert.equal([a.factor, a.offset], [32, 1]);
    // The same state without the padding needs fewer shared floats.
    const without = State.replay(task.dag, built.steps.filter((st) => st.s !== 'storage_align'));
    const size = (p: GpuProgram): number => p.kernels[0].shared.reduce((acc, b) => acc + b.size, 0);
    assert.ok(size(lowerGpu(built.state, 'k', warp32.gpu!)) > size(lowerGpu(without, 'k', warp32.gpu!)), `seed ${seed}`);
  }
  assert.ok(padded > 0 && plain > 0, `${padded} padded, ${plain} plain`);
  // Devices without warps (PoCL's default profile, Mali) never pad.
  const none = generateGpuSketches(task.dag, { gpu: OPENCL.gpu! });
  for (let seed = 0; seed < 10; seed++) {
    try {
      assert.not.ok(buildState(task.dag, none, tiled, new RandomSource(new Rng(seed))).steps.some((st) => st.s === 'storage_align'));
    } catch (e) {
      if (!(e instanceof Error) || e.name !== 'ScheduleError') throw e;
    }
  }
});

test('tile mutations keep the cooperative fetch split at the block\'s thread count', () => {
  const task = resnet50LastConv();
  const sketches = generateGpuSketches(task.dag, { gpu: OPENCL.gpu! });
  const rng = new Rng(11);
  let built = buildState(task.dag, sketches, 0, new RandomSource(rng));
  let changed = 0;
  for (let i = 0; i < 60; i++) {
    const child = mutate(task.dag, sketches, built, rng);
    if (!child) continue;
    const p = lowerGpu(child.state, 'k', OPENCL.gpu!);
    const fetch = child.steps.filter((s): s is Extract<Step, { s: 'split' }> => s.s === 'split' && s.stage.endsWith('.shared'));
    assert.is(fetch.length, 2);
    for (const f of fetch) assert.is(f.lengths[0], p.kernels[0].block[0]);
    if (p.kernels[0].block[0] !== lowerGpu(built.state, 'k', OPENCL.gpu!).kernels[0].block[0]) changed++;
    built = child;
  }
  assert.ok(changed > 0, 'some mutations changed the thread count');
});

test('a GPU genome rebuilds exactly the steps it was built from', () => {
  for (const target of [OPENCL, MALI]) {
    for (const task of [resnet50LastConv(), mobilenetTask('softmax'), mobilenetTask('dense+add')]) {
      const sketches = generateGpuSketches(task.dag, { gpu: target.gpu!, mali: target.device === 'mali' });
      const rng = new Rng(3);
      for (let i = 0; i < sketches.length; i++) {
        const b = buildState(task.dag, sketches, i, new RandomSource(rng));
        const again = buildState(task.dag, sketches, i, new GenomeSource(b.genome.values, NO_FALLBACK));
        assert.is(stepsKey(again.steps), stepsKey(b.steps), `${target.text} / ${task.desc} / ${sketches[i].name}`);
      }
    }
  }
});

/** Prefers more threads per block (a stand-in model: the product's model is engine/costmodel). */
const likesThreads: CostModel = {
  update: () => undefined,
  predict: (_task: Task, states: readonly State[]) => states.map((s) => {
    try {
      return lowerGpu(s, 'k', OPENCL.gpu!).kernels.reduce((a, k) => a + Math.log2(k.block[0]), 0);
    } catch {
      return -Infinity;
    }
  }),
};

test('with a GPU target every policy uses the GPU rules: each proposal binds threads and lowers for the device', () => {
  for (const target of [OPENCL, MALI]) {
    for (const task of [resnet50LastConv(), mobilenetTask('softmax')]) {
      const ctx: PolicyContext = { task, target, costModel: likesThreads, measured: [], seed: 1 };
      const space = new SearchSpace(ctx);
      assert.ok(space.gpu && space.sketches.every((s) => s.gpu), 'GPU sketches');
      for (const name of ['evolutionary', 'random', 'grid'] as const) {
        const batch = createPolicy(name, ctx, { population: 64, generations: 2 }).nextBatch(6);
        assert.ok(batch.length > 0, `${name}: no proposal`);
        assert.is(new Set(batch.map(stepsKey)).size, batch.length, `${name}: duplicates`);
        for (const steps of batch) {
          assert.ok(steps.some((s) => s.s === 'bind'), `${name}: a proposal with no bound loop`);
          assertWithin(lowerGpu(State.replay(task.dag, steps), 'k', target.gpu!), steps, target.gpu!, `${target.text} / ${name} / ${task.desc}`);
        }
      }
    }
  }
});

test.run();
