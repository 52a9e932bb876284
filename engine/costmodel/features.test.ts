// Program features: shapes of the vectors, and that schedule changes move the features
// that describe them in the expected direction.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { State } from '../schedule/state';
import type { Step } from '../schedule/steps';
import { lowerGpu } from '../codegen/gpu';
import { buildState, RandomSource } from '../search/annotate';
import { Rng } from '../search/rng';
import { generateGpuSketches } from '../search/sketch-gpu';
import { parseTarget } from '../target';
import { FEATURE_NAMES, NUM_FEATURES, featureIndex, stateFeatures } from './features';
import { fixtureConvTask, fixtureDenseTask } from './fixtures/tasks';

const slog = (x: number): number => Math.log2(x + 1);
const f = (row: Float32Array, name: string): number => row[featureIndex(name)];
const close = (a: number, b: number, what: string): void => assert.ok(Math.abs(a - b) < 1e-3, `${what}: ${a} vs ${b}`);

/**
 * A hand-written schedule of the fixture conv, as the default schedule (defaults.ts) had it:
 * a 7×16 register tile of the output held inside the output's loops, the reduction
 * outside the tile, 16 channels vectorised, the 7-wide block unrolled, outer loops
 * fused and parallel. Spelled out so that a change of the defaults does not change this test.
 */
const TILED: Step[] = [
  { s: 'compute_inline', stage: 'pad_temp' },
  { s: 'compute_inline', stage: 'T_add' },
  { s: 'split', stage: 'T_relu', iter: 'ax3', lengths: [16] },
  { s: 'split', stage: 'T_relu', iter: 'ax2', lengths: [7] },
  { s: 'reorder', stage: 'T_relu', order: ['ax0', 'ax1', 'ax2.0', 'ax3.0', 'ax2.1', 'ax3.1'] },
  { s: 'fuse', stage: 'T_relu', iters: ['ax0', 'ax1', 'ax2.0'] },
  { s: 'annotate', stage: 'T_relu', iter: 'ax0@ax1@ax2.0', ann: 'parallel' },
  { s: 'annotate', stage: 'T_relu', iter: 'ax2.1', ann: 'unroll' },
  { s: 'annotate', stage: 'T_relu', iter: 'ax3.1', ann: 'vectorize' },
  { s: 'compute_at', stage: 'conv2d_nhwc', target: 'T_relu', iter: 'ax3.0' },
  { s: 'reorder', stage: 'conv2d_nhwc', order: ['nn', 'yy', 'ry', 'rx', 'rc', 'xx', 'ff'] },
  { s: 'annotate', stage: 'conv2d_nhwc', iter: 'xx', ann: 'unroll' },
  { s: 'annotate', stage: 'conv2d_nhwc', iter: 'ff', ann: 'vectorize' },
];

/** The row of the store that does the multiply-adds (the reduction's update). */
function reductionRow(rows: Float32Array[]): Float32Array {
  const r = rows.filter((x) => f(x, 'is_reduction_update') > 0 && f(x, 'float_mul') > 0);
  assert.is(r.length, 1, 'one reduction row');
  return r[0];
}

test('one finite row of NUM_FEATURES values per stored buffer', () => {
  const conv = fixtureConvTask();
  assert.is(FEATURE_NAMES.length, NUM_FEATURES);
  assert.is(new Set(FEATURE_NAMES).size, NUM_FEATURES);
  const naive = stateFeatures(State.replay(conv.dag, []));
  assert.is(naive.length, 4); // pad_temp, conv2d_nhwc, T_add, T_relu
  const tuned = stateFeatures(State.replay(conv.dag, TILED));
  assert.is(tuned.length, 2); // the conv's register tile and the fused epilogue
  for (const row of [...naive, ...tuned]) {
    assert.is(row.length, NUM_FEATURES);
    assert.ok(row.every(Number.isFinite));
  }
});

test('conv: a tiled, vectorised schedule vs the naive one', () => {
  const conv = fixtureConvTask();
  const naive = reductionRow(stateFeatures(State.replay(conv.dag, [])));
  const tuned = reductionRow(stateFeatures(State.replay(conv.dag, TILED)));
  // Same multiply-adds either way: 14·14·32 outputs × 3·3·32 taps.
  close(f(naive, 'float_mul'), slog(14 * 14 * 32 * 9 * 32), 'naive float_mul');
  close(f(tuned, 'float_mul'), slog(14 * 14 * 32 * 9 * 32), 'tuned float_mul');
  // The tiled schedule vectorises 16 output channels, unrolls a 7-wide register block, runs in parallel.
  close(f(tuned, 'vectorize_len'), slog(16), 'vectorize_len');
  assert.is(f(naive, 'vectorize_len'), 0);
  close(f(tuned, 'unroll_len'), slog(7), 'unroll_len');
  assert.ok(f(tuned, 'parallel_num') > 0 && f(naive, 'parallel_num') === 0);
  // Its accumulator is a small local tile instead of the whole output...
  assert.ok(f(tuned, 'alloc_size') < f(naive, 'alloc_size'), 'smaller accumulator');
  // ...so the same work touches fewer distinct bytes per operation: higher arithmetic intensity.
  assert.ok(f(tuned, 'arith_intensity_9') > f(naive, 'arith_intensity_9'), 'more intense');
  // The naive loop order walks the kernel across output channels in the innermost loop
  // (stride 32 floats = two cache lines per step); the tiled one reads it contiguously.
  const strides = (row: Float32Array): number[] => [0, 1, 2].map((b) => f(row, `B${b}.inner_stride`));
  assert.ok(strides(naive).some((x) => Math.abs(x - slog(32)) < 1e-3), `naive strides ${strides(naive)}`);
  assert.ok(strides(tuned).every((x) => x <= slog(1) + 1e-3), `tuned strides ${strides(tuned)}`);
});

test('dense: loop order changes strides, lines and reuse of the weight', () => {
  const dense = fixtureDenseTask();
  const rowOf = (steps: Step[]): Float32Array => reductionRow(stateFeatures(State.replay(dense.dag, steps)));
  const kInner = rowOf([]); // i, j, k: the weight row is read contiguously, the output reused over k
  const jInner = rowOf([{ s: 'reorder', stage: 'T_matmul_NT', order: ['i', 'k', 'j'] }]);
  const bufferOf = (row: Float32Array, read: boolean, stride: number): number => {
    for (let b = 0; b < 5; b++) {
      const isRead = f(row, `B${b}.read`) === 1;
      if (isRead === read && Math.abs(f(row, `B${b}.stride`) - slog(stride)) < 1e-3) return b;
    }
    return -1;
  };
  // i,j,k: weight [j, k] moves by 1 in k. i,k,j: it moves by 256 floats in j.
  assert.ok(bufferOf(kInner, true, 1) >= 0);
  const w = bufferOf(jInner, true, 256);
  assert.ok(w >= 0, 'weight at stride 256');
  // Stride 256 floats = a new cache line per access: the weight is now the buffer with the most lines.
  assert.is(w, 0);
  close(f(jInner, 'B0.lines'), slog(16 * 128 * 256), 'one line per access');
  // The accumulator is reused across the reduction loop k in i,j,k (loop reuse of extent 256).
  const acc = [0, 1, 2].find((b) => f(kInner, `B${b}.read_write`) === 1)!;
  close(f(kInner, `B${acc}.reuse_ct`), slog(256), 'reuse count');
  assert.is(f(kInner, `B${acc}.reuse_loop`), 1);
});

test('auto_unroll_max_step: the pragma value and the loops lower.ts unrolls', () => {
  const dense = fixtureDenseTask();
  const base: Step[] = [
    { s: 'split', stage: 'T_matmul_NT', iter: 'j', lengths: [8] },
    { s: 'reorder', stage: 'T_matmul_NT', order: ['i', 'j.0', 'k', 'j.1'] },
  ];
  const plain = reductionRow(stateFeatures(State.replay(dense.dag, base)));
  const pragma = reductionRow(stateFeatures(State.replay(dense.dag, [...base, { s: 'pragma', stage: 'T_matmul_NT', iter: 'i', pragma: 'auto_unroll_max_step', value: 16 }])));
  assert.is(f(plain, 'auto_unroll_max_step'), 0);
  close(f(pragma, 'auto_unroll_max_step'), slog(16), 'pragma value');
  assert.is(f(plain, 'unroll_num'), 0);
  // Only the 8-wide inner loop has a trip count <= 16.
  close(f(pragma, 'unroll_len'), slog(8), 'unrolled j.1');
  close(f(pragma, 'unroll_num'), slog(1), 'one unrolled loop');
  assert.is(f(pragma, 'unroll_pos_innermost'), 1);
});

const GPU_FEATURES = [
  'blockIdx_x_len', 'blockIdx_y_len', 'blockIdx_z_len', 'vthread_len', 'threadIdx_x_len', 'threadIdx_y_len', 'threadIdx_z_len',
  'gpu_blocks', 'gpu_threads_per_block', 'gpu_shared_bytes', 'gpu_local_floats_per_thread', 'store_in_shared',
];

test('GPU quantities come last: the launch\'s blocks, threads, shared bytes and registers; 0 in CPU programs', () => {
  assert.equal(FEATURE_NAMES.slice(-GPU_FEATURES.length), GPU_FEATURES);
  const conv = fixtureConvTask();
  for (const row of [...stateFeatures(State.replay(conv.dag, [])), ...stateFeatures(State.replay(conv.dag, TILED))]) {
    for (const name of GPU_FEATURES) assert.is(f(row, name), 0, name);
  }
  const gpu = parseTarget('opencl -max_threads_per_block=256 -max_shared_memory_per_block=49152 -max_vthread_extent=4').gpu!;
  const sketches = generateGpuSketches(conv.dag, { gpu });
  for (let seed = 0; seed < 5; seed++) {
    // SSSRRSRS fused into the relu, padded data and weights in shared memory: one launch.
    const built = buildState(conv.dag, sketches, 0, new RandomSource(new Rng(seed)));
    const [k] = lowerGpu(built.state, 'k', gpu).kernels;
    const rows = stateFeatures(built.state);
    const mac = reductionRow(rows);
    close(f(mac, 'blockIdx_x_len'), slog(k.grid[0]), 'blockIdx.x around the multiply-adds');
    close(f(mac, 'threadIdx_x_len'), slog(k.block[0]), 'threadIdx.x around the multiply-adds');
    assert.ok(f(mac, 'vthread_len') >= slog(1), 'vthread around the multiply-adds');
    for (const row of rows) {
      close(f(row, 'gpu_blocks'), slog(k.grid[0]), 'blocks');
      close(f(row, 'gpu_threads_per_block'), slog(k.block[0]), 'threads per block');
      close(f(row, 'gpu_shared_bytes'), slog(k.shared.reduce((a, x) => a + 4 * x.size, 0)), 'shared bytes');
      close(f(row, 'gpu_local_floats_per_thread'), slog(k.localBytes / 4), 'registers');
    }
    assert.is(rows.filter((r) => f(r, 'store_in_shared') === 1).length, 2, 'the two shared copies');
  }
});

test.run();
