// The GPU rules (sketch-gpu.ts, annotate-gpu.ts) on ResNet-50's last 3x3 conv, a conv with no
// epilogue, a depthwise conv, a dense layer, an element-wise op, softmax and a global pool:
// which sketches each target gets, and that their random annotations replay from their
// steps and lower for the device with lowerGpu, as the structure TVM gives them.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { lowerGpu, type GpuProgram } from '../codegen/gpu';
import type { Task } from '../graph/extract';
import { State } from '../schedule/state';
import { stepsKey, type Step } from '../schedule/steps';
import type { Target } from '../target';
import { buildState, RandomSource, type Built } from './annotate';
import { GPU_UNROLL_STEPS } from './annotate-gpu';
import { bareConv, elementwise, MALI, mobilenetTask, OPENCL, resnet50LastConv } from './gpu-fixtures.fixture';
import { Rng } from './rng';
import type { Sketch } from './sketch';
import { generateGpuSketches } from './sketch-gpu';

const sketchesOf = (task: Task, target: Target): Sketch[] => generateGpuSketches(task.dag, { gpu: target.gpu!, mali: target.device === 'mali' });
const namesOf = (task: Task, target: Target): string[] => sketchesOf(task, target).map((s) => s.name);

/** `n` random annotations of sketch `index` that the builder accepts; each replays to the same steps and lowers for `target`. */
function samples(task: Task, target: Target, index: number, n: number, seed: number): { built: Built; program: GpuProgram }[] {
  const sketches = sketchesOf(task, target);
  const rng = new Rng(seed);
  const out: { built: Built; program: GpuProgram }[] = [];
  for (let attempt = 0; attempt < 50 * n && out.length < n; attempt++) {
    let built: Built;
    try {
      built = buildState(task.dag, sketches, index, new RandomSource(rng));
    } catch {
      continue;
    }
    const replayed = State.replay(task.dag, built.steps);
    assert.is(stepsKey(replayed.steps), stepsKey(built.steps));
    out.push({ built, program: lowerGpu(replayed, 'k', target.gpu!) });
  }
  assert.is(out.length, n, `${task.desc} / ${sketches[index].name}: ${out.length} of ${n} states`);
  return out;
}

const stepsOf = (steps: readonly Step[], kind: Step['s']): Step[] => steps.filter((s) => s.s === kind);
const binds = (steps: readonly Step[], stage: string): string[] =>
  steps.flatMap((s) => (s.s === 'bind' && s.stage === stage ? [s.thread] : []));

test('ResNet-50\'s last 3x3 conv: one SSSRRSRS sketch fused into the relu; padding and bias inlined; padded data and weights through shared memory', () => {
  const task = resnet50LastConv();
  assert.equal(namesOf(task, OPENCL), ['conv2d_nhwc:gpu-tile+shared>T_relu T_relu:fused<conv2d_nhwc']);
  const [sk] = sketchesOf(task, OPENCL);
  assert.equal(sk.plans.get('conv2d_nhwc'), { k: 'gpu-tile', consumer: 'T_relu', cacheWrite: false, shared: ['pad_temp', 'p1'] });
  assert.is(sk.plans.get('pad_temp')!.k, 'inline');
  assert.is(sk.plans.get('T_add')!.k, 'inline');
  for (const { built, program } of samples(task, OPENCL, 0, 8, 1)) {
    const steps = built.steps;
    // The relu takes blockIdx.x, vthread and threadIdx.x; the conv sits at its thread loop.
    assert.equal(binds(steps, 'T_relu'), ['blockIdx.x', 'vthread', 'threadIdx.x']);
    const at = steps.find((s) => s.s === 'compute_at' && s.stage === 'conv2d_nhwc');
    assert.ok(at && at.s === 'compute_at' && at.target === 'T_relu' && at.iter.endsWith('.2') && at.iter.includes('@'), JSON.stringify(at));
    // Each shared copy sits at the conv's last outer reduce loop and binds threadIdx.x with the block's thread count.
    assert.equal(stepsOf(steps, 'cache_read').map((s) => s.s === 'cache_read' && `${s.stage}:${s.scope}:${s.reader}`), ['pad_temp:shared:conv2d_nhwc', 'p1:shared:conv2d_nhwc']);
    for (const copy of ['pad_temp.shared', 'p1.shared']) {
      assert.ok(steps.some((s) => s.s === 'compute_at' && s.stage === copy && s.target === 'conv2d_nhwc' && s.iter === 'rc.0'), copy);
      assert.equal(binds(steps, copy), ['threadIdx.x']);
    }
    assert.is(program.kernels.length, 1);
    const k = program.kernels[0];
    assert.equal(k.shared.map((s) => s.buf), ['pad_temp_shared', 'p1_shared']);
    const split = steps.find((s) => s.s === 'split' && s.stage === 'pad_temp.shared');
    assert.ok(split && split.s === 'split' && split.lengths[0] === k.block[0], 'the fetch split follows the thread count');
    const pragma = steps.find((s) => s.s === 'pragma');
    assert.ok(pragma && pragma.s === 'pragma' && pragma.stage === 'conv2d_nhwc' && GPU_UNROLL_STEPS.includes(pragma.value));
  }
});

test('a conv with no epilogue computes into conv2d_nhwc.local (cache_write), bound through conv2d_nhwc', () => {
  const task = bareConv();
  assert.equal(namesOf(task, OPENCL), ['conv2d_nhwc:gpu-tile+cache+shared']);
  for (const { built, program } of samples(task, OPENCL, 0, 4, 2)) {
    assert.ok(built.steps.some((s) => s.s === 'cache_write' && s.stage === 'conv2d_nhwc'));
    assert.equal(binds(built.steps, 'conv2d_nhwc'), ['blockIdx.x', 'vthread', 'threadIdx.x']);
    assert.ok(built.steps.some((s) => s.s === 'cache_read' && s.reader === 'conv2d_nhwc.local' && s.stage === 'weight'));
    assert.is(program.kernels.length, 1);
    assert.is(program.kernels[0].stage, 'conv2d_nhwc');
  }
});

test('depthwise conv: tiled like the conv, its padded input and weights in shared memory', () => {
  const task = mobilenetTask('depthwise_conv2d_nhwc+add+relu 1x112x112x32');
  assert.equal(namesOf(task, OPENCL), ['DepthwiseConv2d:gpu-tile+shared>T_relu T_relu:fused<DepthwiseConv2d']);
  for (const { program } of samples(task, OPENCL, 0, 4, 3)) {
    assert.is(program.kernels.length, 1);
    assert.equal(program.kernels[0].shared.map((s) => s.buf), ['PaddedInput_shared', 'p1_shared']);
  }
});

test('dense with batch 1: the tiled sketch and, for its long reduction, a cross-thread reduction', () => {
  const task = mobilenetTask('dense+add');
  assert.equal(namesOf(task, OPENCL), [
    'T_matmul_NT:gpu-cross-thread T_add:gpu-simple',
    'T_matmul_NT:gpu-tile+shared>T_add T_add:fused<T_matmul_NT',
  ]);
  for (const { built, program } of samples(task, OPENCL, 0, 3, 4)) {
    // One block per output of the dense layer, its threads splitting the 1024-long
    // reduction and combining their sums in shared memory; then the bias.
    assert.equal(program.kernels.map((k) => k.stage), ['T_matmul_NT', 'T_add']);
    assert.equal(binds(built.steps, 'T_matmul_NT'), ['blockIdx.x', 'threadIdx.x']);
    const [reduce] = program.kernels;
    assert.is(reduce.grid[0], 1000);
    assert.equal(reduce.shared, [{ buf: 'tt_red_T_matmul_NT', size: reduce.block[0] }]);
    // Threads per block: powers of two from 32 up to the device's 256.
    for (const k of program.kernels) assert.ok([32, 64, 128, 256].includes(k.block[0]), String(k.block[0]));
  }
  for (const { program } of samples(task, OPENCL, 1, 3, 5)) assert.equal(program.kernels.map((k) => k.stage), ['T_add']);
});

test('element-wise op: one fused, split and bound launch', () => {
  const task = elementwise();
  assert.equal(namesOf(task, OPENCL), ['T_relu:gpu-simple']);
  for (const { built, program } of samples(task, OPENCL, 0, 4, 6)) {
    assert.equal(built.steps.map((s) => s.s), ['compute_inline', 'fuse', 'split', 'bind', 'bind']);
    assert.is(program.kernels.length, 1);
    assert.is(program.kernels[0].grid[0] * program.kernels[0].block[0] >= 56 * 56 * 64, true);
  }
});

test('softmax and global pool: a cross-thread or a per-thread reduction for each reduction', () => {
  assert.is(namesOf(mobilenetTask('softmax'), OPENCL).length, 4);
  assert.equal(namesOf(mobilenetTask('global_avg_pool2d'), OPENCL), [
    'adaptive_pool_sum:gpu-cross-thread adaptive_pool_avg:gpu-simple',
    'adaptive_pool_sum:gpu-simple adaptive_pool_avg:gpu-simple',
  ]);
  const softmax = mobilenetTask('softmax');
  sketchesOf(softmax, OPENCL).forEach((_, i) => samples(softmax, OPENCL, i, 2, 7 + i));
});

test('Mali: the CPU rule list on the GPU structure: no shared memory, no vthread, both rfactors, innermost loops vectorised', () => {
  assert.equal(namesOf(resnet50LastConv(), MALI), ['conv2d_nhwc:gpu-tile>T_relu T_relu:fused<conv2d_nhwc']);
  assert.equal(namesOf(mobilenetTask('dense+add'), MALI), ['T_matmul_NT:gpu-tile>T_add T_add:fused<T_matmul_NT']);
  assert.is(namesOf(mobilenetTask('softmax'), MALI).length, 9);
  assert.is(namesOf(mobilenetTask('global_avg_pool2d'), MALI).length, 3);
  let vectorised = 0;
  for (const { built, program } of samples(resnet50LastConv(), MALI, 0, 12, 8)) {
    assert.is(stepsOf(built.steps, 'cache_read').length, 0);
    assert.is(program.kernels[0].shared.length, 0);
    if (built.steps.some((s) => s.s === 'annotate' && s.ann === 'vectorize')) vectorised++;
    for (const s of built.steps) {
      if (s.s === 'split' && s.stage === 'T_relu') assert.is(s.lengths[0], 1, 'vthread tile 1 (max_vthread_extent 1)');
    }
  }
  assert.ok(vectorised > 0, 'some innermost loops vectorised');
  const pool = mobilenetTask('global_avg_pool2d');
  sketchesOf(pool, MALI).forEach((_, i) => samples(pool, MALI, i, 2, 9 + i));
});

test.run();
