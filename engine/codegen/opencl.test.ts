// GPU lowering and the OpenCL renderer: hand-written GPU schedules (thread binding, vthread,
// a register tile through cache_write, shared copies filled cooperatively, splits that do
// not divide) render to OpenCL C; on an OpenCL device (PoCL's CPU device in CI) they build,
// run through the measurement worker and agree with the reference evaluator (the
// measurer's tolerance: |got - ref| <= 1e-5 + 1e-4 * |ref|, engine/measure/verify.ts).
// Schedules that do not fit the device are refused before anything is built.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { placeholder } from '../ir/tensor';
import { LocalMeasurer } from '../measure/measurer';
import { openclAvailable } from '../native/opencl';
import { ScheduleError, State } from '../schedule/state';
import type { Step, ThreadTag } from '../schedule/steps';
import { skip } from '../skip.fixture';
import { parseTarget } from '../target';
import { relu } from '../topi/elemwise';
import { adaptivePool2d, conv2dNHWC, dense, depthwiseConv2dNHWC, softmax } from '../topi/nn';
import { lowerGpu, type GpuLimits } from './gpu';
import { renderOpencl } from './opencl';

const LIMITS: GpuLimits = { maxThreadsPerBlock: 256, maxSharedMemoryPerBlock: 49152, maxVthreadExtent: 4, maxLocalMemoryPerBlock: 2 ** 31 - 1 };
const TARGET = 'opencl -max_vthread_extent=4';

function denseDag(n = 64, k = 128): ComputeDAG {
  return new ComputeDAG([dense(placeholder('data', [1, k]), placeholder('weight', [n, k]))]);
}

function convDag(c = 32, f = 64, size = 14): ComputeDAG {
  const data = placeholder('data', [1, size, size, c]);
  const kernel = placeholder('kernel', [3, 3, c, f]);
  return new ComputeDAG([conv2dNHWC(data, kernel, { strides: [1, 1], padding: [1, 1, 1, 1], dilation: [1, 1] })]);
}

/** Fuse all spatial loops of a root stage, split by `threads`, bind block and thread. */
function fuseAndBind(stage: string, axes: readonly string[], threads: number): Step[] {
  const fused = axes.join('@');
  return [
    ...(axes.length > 1 ? [{ s: 'fuse', stage, iters: [...axes] } as Step] : []),
    { s: 'split', stage, iter: fused, lengths: [threads] },
    { s: 'bind', stage, iter: `${fused}.0`, thread: 'blockIdx.x' },
    { s: 'bind', stage, iter: `${fused}.1`, thread: 'threadIdx.x' },
  ];
}

/**
 * TVM's GPU multi-level tiling (SSSRRSRS) of an NHWC conv, written out: `tiles[axis]` =
 * [vthread, thread, inner, innermost] lengths, `red[axis]` = [middle, inner] lengths of
 * each reduce axis. The reduction is computed into `<conv>.local` at the thread loop; the
 * padded data and the kernel are copied into shared memory at the outer reduce loop,
 * fetched cooperatively by the block's threads.
 */
function tiledConv(tiles: Record<string, number[]>, red: Record<string, number[]>, shared = true): Step[] {
  const C = 'conv2d_nhwc', L = 'conv2d_nhwc.local';
  const S = Object.keys(tiles), R = Object.keys(red);
  const lv = (i: number, xs: string[]): string[] => xs.map((a) => `${a}.${i}`);
  const steps: Step[] = [{ s: 'compute_inline', stage: 'pad_temp' }, { s: 'cache_write', stage: C }];
  for (const a of S) steps.push({ s: 'split', stage: L, iter: a, lengths: [1, 1, tiles[a][2], tiles[a][3]] });
  for (const a of R) steps.push({ s: 'split', stage: L, iter: a, lengths: red[a] });
  steps.push({ s: 'reorder', stage: L, order: [...lv(0, S), ...lv(1, S), ...lv(2, S), ...lv(0, R), ...lv(1, R), ...lv(3, S), ...lv(2, R), ...lv(4, S)] });
  for (const a of S) steps.push({ s: 'split', stage: C, iter: a, lengths: [tiles[a][0], tiles[a][1], tiles[a][2] * tiles[a][3]] });
  steps.push({ s: 'reorder', stage: C, order: [...lv(0, S), ...lv(1, S), ...lv(2, S), ...lv(3, S)] });
  const tags: ThreadTag[] = ['blockIdx.x', 'vthread', 'threadIdx.x'];
  tags.forEach((thread, i) => {
    steps.push({ s: 'fuse', stage: C, iters: lv(i, S) }, { s: 'bind', stage: C, iter: lv(i, S).join('@'), thread });
  });
  steps.push({ s: 'compute_at', stage: L, target: C, iter: lv(2, S).join('@') });
  const threads = S.reduce((a, s) => a * tiles[s][1], 1);
  if (shared) {
    for (const src of ['pad_temp', 'kernel']) {
      const copy = `${src}.shared`;
      steps.push(
        { s: 'cache_read', stage: src, scope: 'shared', reader: L },
        { s: 'compute_at', stage: copy, target: L, iter: `${R[R.length - 1]}.0` },
        { s: 'fuse', stage: copy, iters: ['ax0', 'ax1', 'ax2', 'ax3'] },
        { s: 'split', stage: copy, iter: 'ax0@ax1@ax2@ax3', lengths: [threads] },
        { s: 'bind', stage: copy, iter: 'ax0@ax1@ax2@ax3.1', thread: 'threadIdx.x' },
      );
    }
  }
  steps.push({ s: 'pragma', stage: L, iter: 'nn.0', pragma: 'auto_unroll_max_step', value: 64 });
  return steps;
}

const CONV_TILES = { nn: [1, 1, 1, 1], yy: [1, 7, 1, 1], xx: [1, 7, 1, 1], ff: [2, 2, 2, 2] };
const CONV_RED = { ry: [1, 1], rx: [3, 1], rc: [8, 1] };
/** 4 vthreads, each a thread scope with an 8-output register tile and 3x3 inner reduce loops, unrolled up to 512 steps. */
const OVER_BUDGET: Step[] = tiledConv({ nn: [1, 1, 1, 1], yy: [1, 7, 1, 2], xx: [1, 7, 1, 1], ff: [4, 1, 2, 4] }, { ry: [1, 3], rx: [1, 3], rc: [8, 1] })
  .map((st) => (st.s === 'pragma' ? { ...st, value: 512 } : st));

test('a bound dense layer lowers to one launch whose grid and block are the bound extents', () => {
  const p = lowerGpu(State.replay(denseDag(), fuseAndBind('T_matmul_NT', ['i', 'j'], 16)), 'k', LIMITS);
  assert.is(p.kernels.length, 1);
  assert.equal(p.kernels[0].grid, [4, 1, 1]);
  assert.equal(p.kernels[0].block, [16, 1, 1]);
  const { source, table } = renderOpencl(p, { vectorLanes: 4 });
  assert.match(source, /__kernel __attribute__\(\(reqd_work_group_size\(16, 1, 1\)\)\) void k_k0\(__global float\* restrict data, __global float\* restrict weight, __global float\* restrict T_matmul_NT\)/);
  assert.match(source, /\(int\)get_group_id\(0\)/);
  assert.match(source, /\(int\)get_local_id\(0\)/);
  assert.equal(table.launches, [{ kernel: 'k_k0', args: [0, 1, 2], global: [64, 1, 1], local: [16, 1, 1] }]);
  assert.equal(table.buffers.map((b) => b.role), ['in', 'in', 'out']);
});

test('shared copies become __local arrays at the kernel top, fenced by barriers; a tensor named kernel is renamed', () => {
  const p = lowerGpu(State.replay(convDag(), tiledConv(CONV_TILES, CONV_RED)), 'k', LIMITS);
  const k = p.kernels[0];
  assert.equal(k.block, [98, 1, 1]);
  // The whole block's region at one step of the outer reduce loops (one kernel row ry): 7
  // rows, 7 columns + 2 of halo (rx is inside), 8 channels of padded data.
  assert.equal(k.shared.map((s) => s.buf), ['pad_temp_shared', 'kernel_shared']);
  assert.is(k.shared[0].size, 7 * 9 * 8);
  const { source } = renderOpencl(p, { vectorLanes: 4 });
  assert.match(source, /__local float pad_temp_shared\[504\];/);
  assert.match(source, /__global float\* restrict kernel_,/);
  assert.ok((source.match(/barrier\(CLK_LOCAL_MEM_FENCE\);/g) ?? []).length >= 4, 'barriers before and after each fill');
});

test('an unrolled loop whose expansion passes the budget (a vthread loop around a thread scope) stays a loop under #pragma unroll', () => {
  const p = lowerGpu(State.replay(convDag(), OVER_BUDGET), 'k', LIMITS);
  const bounded = renderOpencl(p, { vectorLanes: 4 }).source;
  const unbounded = renderOpencl(p, { vectorLanes: 4, unboundedUnroll: true }).source;
  assert.match(bounded, /#pragma unroll 4\n\s*for \(int32_t nn_1_yy_1_xx_1_ff_1_\d+ = 0;/, 'the vthread loop, for the OpenCL compiler to unroll');
  assert.is((bounded.match(/get_local_id\(0\)/g) ?? []).length, (unbounded.match(/get_local_id\(0\)/g) ?? []).length / 4, 'one thread scope per vthread copy before, one now');
  assert.ok(bounded.length * 4 < unbounded.length, `${bounded.length} bytes bounded, ${unbounded.length} unbounded`);
});

test('schedules that do not fit the device or cannot run as launches are refused', () => {
  const dag = denseDag();
  const refuse = (steps: Step[], limits: GpuLimits, pattern: RegExp): void => {
    try {
      lowerGpu(State.replay(dag, steps), 'k', limits);
    } catch (e) {
      assert.instance(e, ScheduleError);
      assert.match((e as Error).message, pattern);
      return;
    }
    assert.unreachable(`expected ${String(pattern)}`);
  };
  refuse(fuseAndBind('T_matmul_NT', ['i', 'j'], 64), { ...LIMITS, maxThreadsPerBlock: 32 }, /64 threads per block, more than the device's 32/);
  refuse([], LIMITS, /no loop is bound to blockIdx or threadIdx/);
  // A cooperative fetch binds threadIdx.x, but the stage's own store is outside any
  // threadIdx loop: every thread would write each output.
  refuse([
    { s: 'cache_read', stage: 'data', scope: 'shared', reader: 'T_matmul_NT' },
    { s: 'split', stage: 'T_matmul_NT', iter: 'j', lengths: [16] },
    { s: 'bind', stage: 'T_matmul_NT', iter: 'j.0', thread: 'blockIdx.x' },
    { s: 'compute_at', stage: 'data.shared', target: 'T_matmul_NT', iter: 'j.0' },
    { s: 'split', stage: 'data.shared', iter: 'ax1', lengths: [32] },
    { s: 'bind', stage: 'data.shared', iter: 'ax1.1', thread: 'threadIdx.x' },
  ], LIMITS, /a store to T_matmul_NT is not inside the loops bound to threadIdx.x/);
  const conv = convDag();
  try {
    lowerGpu(State.replay(conv, tiledConv(CONV_TILES, { ry: [3, 1], rx: [3, 1], rc: [32, 1] })), 'k', { ...LIMITS, maxSharedMemoryPerBlock: 4096 });
    assert.unreachable('shared memory over the limit');
  } catch (e) {
    assert.match((e as Error).message, /bytes of shared memory per block, more than the device's 4096/);
  }
  try {
    lowerGpu(State.replay(conv, tiledConv({ ...CONV_TILES, ff: [8, 1, 2, 2] }, CONV_RED)), 'k', LIMITS);
    assert.unreachable('vthread over the limit');
  } catch (e) {
    assert.match((e as Error).message, /vthread extent 8, more than the device's 4/);
  }
});

/**
 * A cross-thread reduction of a root stage: its spatial loops fused and split by `rows`
 * (the inner part bound to threadIdx.y when `rows` > 1) with the outer part bound to
 * blockIdx.x; its reduce loops fused, split by `threads` and the inner part bound to threadIdx.x.
 */
function crossThread(stage: string, axes: readonly string[], reduce: readonly string[], threads: number, rows = 1): Step[] {
  const fs = axes.join('@'), fr = reduce.join('@');
  return [
    ...(axes.length > 1 ? [{ s: 'fuse', stage, iters: [...axes] } as Step] : []),
    ...(reduce.length > 1 ? [{ s: 'fuse', stage, iters: [...reduce] } as Step] : []),
    ...(rows > 1
      ? [{ s: 'split', stage, iter: fs, lengths: [rows] } as Step, { s: 'bind', stage, iter: `${fs}.0`, thread: 'blockIdx.x' } as Step, { s: 'bind', stage, iter: `${fs}.1`, thread: 'threadIdx.y' } as Step]
      : [{ s: 'bind', stage, iter: fs, thread: 'blockIdx.x' } as Step]),
    { s: 'split', stage, iter: fr, lengths: [threads] },
    { s: 'bind', stage, iter: `${fr}.1`, thread: 'threadIdx.x' },
  ];
}

test('a reduce loop bound to threadIdx.x lowers to a shared-memory tree: one partial result per thread, a barrier per halving step', () => {
  const p = lowerGpu(State.replay(denseDag(64, 100), crossThread('T_matmul_NT', ['i', 'j'], ['k'], 24)), 'k', LIMITS);
  const k = p.kernels[0];
  assert.equal(k.grid, [64, 1, 1]);
  assert.equal(k.block, [24, 1, 1]);
  assert.equal(k.shared, [{ buf: 'tt_red_T_matmul_NT', size: 24 }]);
  const { source } = renderOpencl(p, { vectorLanes: 4 });
  // 24 threads: halving steps 16 (threads 0..7 add 16..23), 8, 4, 2, 1, each then a
  // barrier, and one barrier after the partial results and one after the result is read.
  assert.is((source.match(/barrier\(CLK_LOCAL_MEM_FENCE\);/g) ?? []).length, 7);
  assert.match(source, /__local float tt_red_T_matmul_NT\[24\];/);
  // 5 reduce steps of 24 cover 120 > 100 iterations: the fold is guarded, the barriers are not.
  assert.match(source, /< 100\)/);
  // Rows bound to threadIdx.y reduce side by side: one row of the buffer each.
  const rows = lowerGpu(State.replay(denseDag(64, 128), crossThread('T_matmul_NT', ['i', 'j'], ['k'], 32, 4)), 'k', LIMITS).kernels[0];
  assert.equal([rows.grid, rows.block], [[16, 1, 1], [32, 4, 1]]);
  assert.is(rows.shared[0].size, 128);
});

test('cross-thread reductions and storage_align that cannot be lowered are refused with the reason', () => {
  const dense = denseDag();
  assert.throws(() => State.replay(dense, [{ s: 'bind', stage: 'T_matmul_NT', iter: 'k', thread: 'threadIdx.y' }]), /a reduce loop can be bound to threadIdx.x only/);
  assert.throws(() => State.replay(dense, [{ s: 'bind', stage: 'T_matmul_NT', iter: 'k', thread: 'blockIdx.x' }]), /threadIdx.x only \(a cross-thread reduction\), not blockIdx.x/);
  assert.throws(() => State.replay(dense, [
    { s: 'split', stage: 'T_matmul_NT', iter: 'k', lengths: [8] },
    { s: 'bind', stage: 'T_matmul_NT', iter: 'k.1', thread: 'threadIdx.x' },
    { s: 'bind', stage: 'T_matmul_NT', iter: 'k.0', thread: 'threadIdx.x' },
  ]), /reduce loop k.1 is bound already|threadIdx.x is bound to another loop/);
  assert.throws(() => State.replay(dense, [
    { s: 'bind', stage: 'T_matmul_NT', iter: 'j', thread: 'threadIdx.x' },
    { s: 'split', stage: 'T_matmul_NT', iter: 'j', lengths: [4] },
  ]), /the loop is bound to threadIdx.x/);
  // A spatial loop inside the bound reduce loop: each thread would reduce for several outputs at once.
  assert.throws(() => lowerGpu(State.replay(dense, [
    { s: 'reorder', stage: 'T_matmul_NT', order: ['i', 'k', 'j'] },
    { s: 'bind', stage: 'T_matmul_NT', iter: 'k', thread: 'threadIdx.x' },
  ]), 'k', LIMITS), /spatial loop j is inside the reduce loops/);
  assert.throws(() => State.replay(dense, [{ s: 'storage_align', stage: 'T_matmul_NT', iter: 'j', factor: 4, offset: 4 }]), /offset from 0 to factor - 1/);
  assert.throws(() => State.replay(dense, [{ s: 'storage_align', stage: 'T_matmul_NT', iter: 'k', factor: 4, offset: 1 }]), /not a root axis of the stage/);
  assert.throws(() => lowerGpu(State.replay(dense, [
    ...fuseAndBind('T_matmul_NT', ['i', 'j'], 16),
    { s: 'storage_align', stage: 'T_matmul_NT', iter: 'i', factor: 4, offset: 1 },
  ]), 'k', LIMITS), /only the buffer of a stage computed at a loop of its reader/);
});

test('storage_align pads the row stride of a shared copy: stride % factor == offset', () => {
  const plain = lowerGpu(State.replay(convDag(), tiledConv(CONV_TILES, CONV_RED)), 'k', LIMITS).kernels[0];
  // pad_temp.shared is 7 x 9 x 8 (ax1 x ax2 x ax3): rows of 9 x 8 = 72 floats become 73.
  const aligned = [...tiledConv(CONV_TILES, CONV_RED), { s: 'storage_align', stage: 'pad_temp.shared', iter: 'ax1', factor: 32, offset: 9 } as Step];
  const k = lowerGpu(State.replay(convDag(), aligned), 'k', LIMITS).kernels[0];
  assert.is(plain.shared[0].size, 7 * 9 * 8);
  assert.is(k.shared[0].size, 6 * 73 + 72);
  assert.is(73 % 32, 9);
});

test('OpenCL candidates build, run and match the reference on the OpenCL device', async () => {
  const why = openclAvailable();
  if (why) { skip('OpenCL candidates build, run and match the reference', why); return; }
  const measurer = new LocalMeasurer(parseTarget(TARGET), { threads: 1, repeat: 1, number: 1 });
  try {
    const check = async (what: string, dag: ComputeDAG, steps: Step[]): Promise<void> => {
      const [o] = await measurer.measure({ dag }, [steps]);
      assert.is(o.error, null, `${what}: ${o.error}: ${o.message ?? ''}`);
      assert.ok(o.costs_ms.length > 0 && o.costs_ms.every((c) => c > 0), what);
    };
    await check('dense, fused and bound', denseDag(), fuseAndBind('T_matmul_NT', ['i', 'j'], 16));
    await check('conv, SSSRRSRS with vthread, register tile and shared copies', convDag(), tiledConv(CONV_TILES, CONV_RED));
    // Thread tiles that do not divide the 14x14 output, and a reduce split that does not divide 32 channels.
    await check('conv, a vthread loop over the expansion budget (#pragma unroll 4)', convDag(), OVER_BUDGET);
    await check('conv, non-dividing tiles', convDag(), tiledConv({ nn: [1, 1, 1, 1], yy: [1, 4, 1, 1], xx: [1, 5, 1, 2], ff: [1, 4, 2, 2] }, { ry: [1, 1], rx: [1, 1], rc: [12, 1] }));
    const data = placeholder('data', [1, 12, 12, 16]);
    const dw = depthwiseConv2dNHWC(data, placeholder('weight', [3, 3, 16, 1]), { strides: [2, 2], padding: [1, 1, 1, 1], dilation: [1, 1] });
    const dwDag = new ComputeDAG([relu(dw)]);
    const axesOf = (name: string): string[] => dwDag.computeStages.find((t) => t.name === name)!.op.axes.map((a) => a.name);
    const out = dwDag.outputs[0].name;
    const dwSteps: Step[] = [
      { s: 'compute_inline', stage: 'PaddedInput' },
      ...fuseAndBind(dw.name, axesOf(dw.name), 32),
      ...fuseAndBind(out, axesOf(out), 64),
    ];
    await check('depthwise conv then relu: two launches and a global temporary between them', dwDag, dwSteps);
    await check('conv, a shared copy padded by storage_align', convDag(), [...tiledConv(CONV_TILES, CONV_RED), { s: 'storage_align', stage: 'pad_temp.shared', iter: 'ax1', factor: 32, offset: 9 }]);
    // Cross-thread reductions: a power of two, a count that neither is one nor divides the
    // reduction (5 x 24 > 100: guarded), rows bound to threadIdx.y, a max and a sum of softmax.
    await check('dense batch 1, cross-thread sum over 32 threads', denseDag(64, 128), crossThread('T_matmul_NT', ['i', 'j'], ['k'], 32));
    await check('dense batch 1, cross-thread sum over 24 threads of 100', denseDag(64, 100), crossThread('T_matmul_NT', ['i', 'j'], ['k'], 24));
    await check('dense batch 1, 4 rows of 32 threads', denseDag(60, 128), crossThread('T_matmul_NT', ['i', 'j'], ['k'], 32, 4));
    const sm = new ComputeDAG([softmax(placeholder('data', [6, 200]))]);
    await check('softmax: cross-thread max and sum', sm, [
      { s: 'compute_inline', stage: 'T_softmax_exp' },
      ...crossThread('T_softmax_maxelem', ['i0'], ['k'], 64),
      ...crossThread('T_softmax_expsum', ['i0'], ['k'], 48),
      ...fuseAndBind('T_softmax_norm', ['i0', 'i1'], 64),
    ]);
    const pool = new ComputeDAG([adaptivePool2d(placeholder('data', [1, 7, 7, 32]), [1, 1], 'max', 'NHWC')]);
    await check('global max pool, cross-thread over the 7x7 window', pool, crossThread('adaptive_pool_max', ['ax0', 'ax1', 'ax2', 'ax3'], ['rv0', 'rv1'], 16));
  } finally {
    await measurer.close();
  }
});

test.run();
