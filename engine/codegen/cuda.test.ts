// The CUDA renderer: its structure on a conv with shared copies (kernel signature with
// __launch_bounds__ from the bound thread extents, __shared__ arrays, __syncthreads, the
// hardware indices, const inputs), and every GPU sketch of resnet-18's tasks (a random
// fill of each, fixed seed, and each task's default schedule) rendered into ONE translation
// unit and compiled to a cubin by nvcc for sm_80 and for sm_90, with ptxas's
// resource usage read back for every kernel and within the device's limits. These run
// without a GPU (nvcc only); skipped with one line where nvcc is missing.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { getNetwork } from '../frontend/networks';
import { extractTasks, type Task } from '../graph/extract';
import { compileCubin, cudaLimitsOf, findNvcc, nvccMissing, usageProblem } from '../native/nvcc';
import { defaultOptionsOf, defaultSchedule } from '../schedule/defaults';
import { State } from '../schedule/state';
import type { Step } from '../schedule/steps';
import { buildState, RandomSource } from '../search/annotate';
import { bareConv, elementwise } from '../search/gpu-fixtures.fixture';
import { Rng } from '../search/rng';
import { generateGpuSketches } from '../search/sketch-gpu';
import { skip } from '../skip.fixture';
import { parseTarget, type Target } from '../target';
import { CUDA_PRELUDE, cudaLaunchTable, renderCuda, renderCudaKernels, threadsOf } from './cuda';
import { lowerGpu, type GpuProgram } from './gpu';

const SM80 = parseTarget('cuda -arch=sm_80');
const SM90 = parseTarget('cuda -arch=sm_90');

/** A random valid state of sketch `i` of `task` (up to 50 draws), or undefined. */
function randomState(task: Task, target: Target, i: number, rng: Rng): Step[] | undefined {
  const sketches = generateGpuSketches(task.dag, { gpu: target.gpu!, mali: false });
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      const steps = buildState(task.dag, sketches, i, new RandomSource(rng)).steps;
      lowerGpu(State.replay(task.dag, steps), 'probe', target.gpu!);
      return steps;
    } catch {
      // an invalid fill: draw again
    }
  }
  return undefined;
}

/** The first state (of a few seeds) of a conv whose program has a shared copy. */
function sharedConvProgram(): GpuProgram {
  const task = bareConv(16, 32, 10);
  const sketches = generateGpuSketches(task.dag, { gpu: SM80.gpu!, mali: false });
  const rng = new Rng(7);
  for (let n = 0; n < 200; n++) {
    const steps = randomState(task, SM80, n % sketches.length, rng);
    if (!steps) continue;
    const p = lowerGpu(State.replay(task.dag, steps), 'conv', SM80.gpu!);
    if (p.kernels.some((k) => k.shared.length > 0)) return p;
  }
  throw new Error('no state with a shared copy');
}

test('a conv with shared copies: extern "C" __global__ with __launch_bounds__(threads), __shared__ arrays, __syncthreads, blockIdx/threadIdx, const inputs', () => {
  const p = sharedConvProgram();
  const { source, table } = renderCuda(p, { vectorLanes: SM80.vectorLanes });
  assert.ok(source.startsWith(CUDA_PRELUDE), 'one prelude first');
  for (const k of p.kernels) {
    const threads = threadsOf(k);
    const sig = new RegExp(`^extern "C" __global__ void __launch_bounds__\\(${threads}\\) ${k.name}\\((.*)\\) \\{$`, 'm').exec(source);
    assert.ok(sig, `${k.name}: signature with __launch_bounds__(${threads})`);
    const params = sig![1].split(', ');
    assert.is(params.length, k.params.length);
    for (const s of k.shared) assert.ok(source.includes(`  __shared__ __align__(16) float ${s.buf}[${s.size}];`), `${s.buf} declared __shared__ at the kernel's top`);
    if (k.shared.length > 0) assert.ok(source.includes('__syncthreads();'), 'barriers around the cooperative fetch');
  }
  const sig = /^extern "C" __global__ void __launch_bounds__\(\d+\) conv_k0\((.*)\) \{$/m.exec(source)!;
  assert.ok(sig[1].includes('const float* __restrict__ data'), 'inputs are const __restrict__');
  assert.ok(sig[1].includes('const float* __restrict__ weight'));
  assert.match(sig[1], /(^|, )float\* __restrict__ conv2d_nhwc($|,)/, 'the output is written');
  assert.match(source, /\(int32_t\)blockIdx\.x/);
  assert.match(source, /\(int32_t\)threadIdx\.x/);
  assert.not.match(source, /get_group_id|get_local_id|__local |#pragma omp|#pragma GCC/, 'no other dialect leaks in');
  // The table: one launch per kernel, grid and block as the lowering bound them.
  assert.equal(table.launches.map((l) => [l.kernel, l.grid, l.block]), p.kernels.map((k) => [k.name, k.grid, k.block]));
  assert.equal(table.launches.map((l) => l.sharedBytes), p.kernels.map((k) => k.shared.reduce((a, s) => a + 4 * s.size, 0)));
  assert.equal(cudaLaunchTable(p).buffers.map((b) => b.role), ['in', 'in', 'out']);
});

/** relu(x + y) over 1x56x56x64 with `steps` after inlining the add. */
function elementwiseProgram(steps: Step[]): GpuProgram {
  const task = elementwise();
  return lowerGpu(State.replay(task.dag, [{ s: 'compute_inline', stage: 'T_add' }, ...steps]), 'ew', SM80.gpu!);
}

test('vectorised loops become tt_v4 loads and stores (float4 where the address is aligned); unrolled loops too long to expand get #pragma unroll', () => {
  assert.match(CUDA_PRELUDE, /struct __align__\(16\) tt_v4 \{ float v\[4\]; \};/);
  assert.match(CUDA_PRELUDE, /reinterpret_cast<const float4\*>\(p\)\[q\]/, 'float4 loads');
  assert.match(CUDA_PRELUDE, /reinterpret_cast<float4\*>\(p\)\[q\] = make_float4/, 'float4 stores');
  assert.match(CUDA_PRELUDE, /& 15\) == 0/, 'only where the address is 16-byte aligned, lane by lane elsewhere');
  // Blocks over N·H·W, 16 threads over the channels' quads, each thread a float4.
  const vec = renderCudaKernels(elementwiseProgram([
    { s: 'fuse', stage: 'T_relu', iters: ['ax0', 'ax1', 'ax2'] },
    { s: 'bind', stage: 'T_relu', iter: 'ax0@ax1@ax2', thread: 'blockIdx.x' },
    { s: 'split', stage: 'T_relu', iter: 'ax3', lengths: [4] },
    { s: 'bind', stage: 'T_relu', iter: 'ax3.0', thread: 'threadIdx.x' },
    { s: 'annotate', stage: 'T_relu', iter: 'ax3.1', ann: 'vectorize' },
  ]), { vectorLanes: 4 });
  assert.match(vec, /tt_v4_store\(&T_relu\[/, 'one vector store per 4 lanes');
  assert.match(vec, /tt_v4_load\(&x\[/, 'contiguous loads as vectors');
  assert.match(vec, /__launch_bounds__\(16\)/);
  // 64 threads, each running an unrolled loop of 512 around a loop of 2: too long to expand.
  const fused = 'ax0@ax1@ax2@ax3';
  const unrolled = renderCudaKernels(elementwiseProgram([
    { s: 'fuse', stage: 'T_relu', iters: ['ax0', 'ax1', 'ax2', 'ax3'] },
    { s: 'split', stage: 'T_relu', iter: fused, lengths: [64, 512, 2] },
    { s: 'bind', stage: 'T_relu', iter: `${fused}.0`, thread: 'blockIdx.x' },
    { s: 'bind', stage: 'T_relu', iter: `${fused}.1`, thread: 'threadIdx.x' },
    { s: 'annotate', stage: 'T_relu', iter: `${fused}.2`, ann: 'unroll' },
  ]), { vectorLanes: 4 });
  assert.match(unrolled, /#pragma unroll 512\n\s*for \(int32_t /, 'the unroll pragma on the loop itself');
  assert.not.match(unrolled, /#pragma GCC/);
});

/** All kernels of resnet-18's GPU sketches (one random fill each) and default schedules, for `target`. */
function resnet18Programs(target: Target, seed: number): { programs: GpuProgram[]; tasks: number; states: number } {
  const tasks = extractTasks(getNetwork('resnet-18', { weights: 'zeros' }).graph);
  const rng = new Rng(seed);
  const programs: GpuProgram[] = [];
  let states = 0;
  tasks.forEach((task, t) => {
    const packable = new Set(task.constInputs ?? []);
    const lowerAs = (steps: Step[], name: string): void => {
      programs.push(lowerGpu(State.replay(task.dag, steps), name, target.gpu!, { packable }));
      states++;
    };
    lowerAs(defaultSchedule(task.dag, defaultOptionsOf(target)), `t${t}_default`);
    const sketches = generateGpuSketches(task.dag, { gpu: target.gpu!, mali: false });
    sketches.forEach((_, i) => {
      const steps = randomState(task, target, i, rng);
      assert.ok(steps, `${task.desc}: sketch ${i} has a valid random state`);
      lowerAs(steps!, `t${t}_s${i}`);
    });
  });
  return { programs, tasks: tasks.length, states };
}

test('resnet-18: every GPU sketch (a random fill each) and default schedule, in one translation unit, compiles to cubins for sm_80 and sm_90; ptxas usage read back and within limits', async () => {
  const why = nvccMissing();
  if (why) { skip('resnet-18 GPU sketches to cubin for sm_80 and sm_90', why); return; }
  // sm_80 and sm_90 share every parameter the search and the lowering use: one source serves both.
  assert.equal(SM80.gpu, SM90.gpu);
  const { programs, tasks, states } = resnet18Programs(SM80, 11);
  assert.is(tasks, 24, 'resnet-18: 24 tasks (as TVM for cuda)');
  const source = `${CUDA_PRELUDE}\n${programs.map((p) => renderCudaKernels(p, { vectorLanes: SM80.vectorLanes })).join('\n')}`;
  const kernels = programs.flatMap((p) => p.kernels);
  const dir = mkdtempSync(path.join(tmpdir(), 'tt-cuda-test-'));
  try {
    // nvcc's front end takes most of the time: the two architectures compile side by side.
    const results = await Promise.all([SM80, SM90].map((t) => compileCubin(findNvcc(), source, t.cuda!.arch, { cacheDir: dir, timeoutMs: 600_000, messageLines: 30 })));
    [SM80, SM90].forEach((target, i) => {
      const r = results[i];
      if (!r.ok) { assert.unreachable(`nvcc for ${target.cuda!.arch} failed on ${states} states: ${r.message}`); return; }
      const usage = new Map(r.usage.map((u) => [u.kernel, u]));
      assert.is(usage.size, kernels.length, `${target.cuda!.arch}: ptxas reported every kernel (${kernels.length})`);
      const limits = cudaLimitsOf(target);
      for (const k of kernels) {
        const u = usage.get(k.name);
        assert.ok(u, `${target.cuda!.arch}: ptxas usage of ${k.name}`);
        assert.ok(u!.registers > 0 && u!.registers <= 255, `${k.name}: ${u!.registers} registers`);
        // Each __shared__ array starts 16-byte aligned: ptxas counts the padding.
        const shared = k.shared.reduce((a, s) => a + 4 * s.size, 0);
        assert.ok(u!.sharedBytes >= shared && u!.sharedBytes <= shared + 16 * k.shared.length, `${k.name}: ptxas's ${u!.sharedBytes} bytes of shared memory are the lowering's ${shared} (plus alignment)`);
        assert.is(usageProblem(u!, threadsOf(k), limits), undefined, `${k.name} within ${target.text}'s limits`);
      }
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
