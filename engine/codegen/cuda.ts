// The CUDA C++ renderer: a GpuProgram (gpu.ts) -> one .cu source with an
// `extern "C" __global__` kernel per launch, plus the launch table the host side needs
// (cuda-host.ts, native/cuda/).
//
// The statements are written by c.ts's Renderer with the CUDA dialect, as opencl.ts does for
// OpenCL: the same explicit unrolling (bounded by GPU_EXPANSION_BUDGET statements),
// vectorisation and register promotion. The prelude
// gives the helper names the C renderer uses (tt_maxf, tt_v4_load, ...) their CUDA meaning:
// CUDA has no float vectors with arithmetic, so tt_v4/8/16 are small structs with the
// operators the renderer writes (vector op vector, vector op scalar), loaded and stored as
// float4 where the address is 16-byte aligned (a vectorised loop's base need not be: the
// renderer vectorises contiguous accesses wherever they start, and a misaligned float4
// access is a fault on NVIDIA GPUs), lane by lane otherwise.
//
// Bound loops become blockIdx / threadIdx; shared buffers are `__shared__` arrays at the
// kernel's top; barriers are __syncthreads(); unrolled loops that are not expanded get
// `#pragma unroll N`; each kernel carries `__launch_bounds__(threads per block)`, so ptxas
// keeps its registers within what that block size allows. Parameters are `__restrict__`,
// and `const` where the kernel only reads them (loads then go through the read-only cache).
// Buffer names come from lowering (cName in lower.ts) and kernel names from our callers,
// never from records.

import { GPU_EXPANSION_BUDGET, MINI_FLOAT_C_NAMES, miniFloatHelpers, narrowFloatHelpers, renderBody, type GpuDialect } from './c';
import { storedBuffers, threadsOf, type Dim3, type GpuProgram } from './gpu';
import { launchTable, type BufferRole } from './opencl';
import type { ThreadTag } from '../schedule/steps';
import { mathArity, type MathFn } from '../ir/expr';

const VECTOR_MATH: Record<MathFn, string> = {
  exp: 'expf', log: 'logf', sqrt: 'sqrtf', rsqrt: 'rsqrtf', tanh: 'tanhf', sigmoid: 'tt_sigmoidf', fabs: 'fabsf', erf: 'erff',
  log1p: 'log1pf', floor: 'floorf', ceil: 'ceilf', round: 'rintf', sin: 'sinf', cos: 'cosf', tan: 'tanf', atan: 'atanf',
  pow: 'powf', fmod: 'fmodf', round_f16: 'tt_round_f16f', round_bf16: 'tt_round_bf16f',
  ...MINI_FLOAT_C_NAMES,
};

/** The vector type of `n` lanes and the helpers c.ts's vector code calls. */
function vectorHelpers(n: number): string {
  const t = `tt_v${n}`;
  const d = '__device__ __forceinline__';
  const each = (body: string): string => `{ ${t} r; _Pragma("unroll") for (int i = 0; i < ${n}; ++i) ${body}; return r; }`;
  const quads = n / 4;
  return [
    `struct __align__(16) ${t} { float v[${n}]; };`,
    // float4 accesses where aligned, else lane by lane (see the header).
    `${d} ${t} ${t}_load(const float* p) {`,
    `  ${t} r;`,
    `  if ((reinterpret_cast<uintptr_t>(p) & 15) == 0) {`,
    `    _Pragma("unroll") for (int q = 0; q < ${quads}; ++q) { const float4 f = reinterpret_cast<const float4*>(p)[q]; r.v[4 * q] = f.x; r.v[4 * q + 1] = f.y; r.v[4 * q + 2] = f.z; r.v[4 * q + 3] = f.w; }`,
    `  } else {`,
    `    _Pragma("unroll") for (int i = 0; i < ${n}; ++i) r.v[i] = p[i];`,
    `  }`,
    `  return r;`,
    `}`,
    `${d} void ${t}_store(float* p, ${t} x) {`,
    `  if ((reinterpret_cast<uintptr_t>(p) & 15) == 0) {`,
    `    _Pragma("unroll") for (int q = 0; q < ${quads}; ++q) reinterpret_cast<float4*>(p)[q] = make_float4(x.v[4 * q], x.v[4 * q + 1], x.v[4 * q + 2], x.v[4 * q + 3]);`,
    `  } else {`,
    `    _Pragma("unroll") for (int i = 0; i < ${n}; ++i) p[i] = x.v[i];`,
    `  }`,
    `}`,
    `${d} ${t} ${t}_splat(float x) ${each('r.v[i] = x')}`,
    ...['+', '-', '*', '/'].flatMap((op) => [
      `${d} ${t} operator${op}(${t} a, ${t} b) ${each(`r.v[i] = a.v[i] ${op} b.v[i]`)}`,
      `${d} ${t} operator${op}(${t} a, float b) ${each(`r.v[i] = a.v[i] ${op} b`)}`,
      `${d} ${t} operator${op}(float a, ${t} b) ${each(`r.v[i] = a ${op} b.v[i]`)}`,
    ]),
    `${d} ${t} ${t}_max(${t} a, ${t} b) ${each('r.v[i] = a.v[i] > b.v[i] ? a.v[i] : b.v[i]')}`,
    `${d} ${t} ${t}_min(${t} a, ${t} b) ${each('r.v[i] = a.v[i] < b.v[i] ? a.v[i] : b.v[i]')}`,
    ...Object.entries(VECTOR_MATH).map(([fn, c]) => (mathArity(fn as MathFn) === 2
      ? `${d} ${t} ${t}_${fn}(${t} a, ${t} b) ${each(`r.v[i] = ${c}(a.v[i], b.v[i])`)}`
      : `${d} ${t} ${t}_${fn}(${t} a) ${each(`r.v[i] = ${c}(a.v[i])`)}`)),
  ].join('\n');
}

/** What every generated CUDA source starts with (once per translation unit). */
export const CUDA_PRELUDE = `#include <stdint.h>
#include <math.h>
#define TT_D __device__ __forceinline__
TT_D float tt_maxf(float a, float b) { return a > b ? a : b; }
TT_D float tt_minf(float a, float b) { return a < b ? a : b; }
TT_D int32_t tt_maxi(int32_t a, int32_t b) { return a > b ? a : b; }
TT_D int32_t tt_mini(int32_t a, int32_t b) { return a < b ? a : b; }
TT_D int32_t tt_floordiv(int32_t a, int32_t b) { int32_t q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
TT_D int32_t tt_floormod(int32_t a, int32_t b) { int32_t m = a % b; return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m; }
TT_D float tt_sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }
TT_D float tt_rsqrtf(float x) { return rsqrtf(x); }
${narrowFloatHelpers('TT_D', 'uint32_t', (x) => `__float_as_uint(${x})`, (u) => `__uint_as_float(${u})`)}
${miniFloatHelpers('TT_D', 'uint32_t', (x) => `__float_as_uint(${x})`, (u) => `__uint_as_float(${u})`)}
${[4, 8, 16].map(vectorHelpers).join('\n')}
`;

const INDEX: Record<ThreadTag, string> = {
  'blockIdx.x': 'blockIdx.x', 'blockIdx.y': 'blockIdx.y', 'blockIdx.z': 'blockIdx.z',
  'threadIdx.x': 'threadIdx.x', 'threadIdx.y': 'threadIdx.y', 'threadIdx.z': 'threadIdx.z',
  vthread: '0', // never reached: gpu.ts turns vthread loops into unrolled loops
};

export const CUDA_DIALECT: GpuDialect = {
  family: 'gpu',
  lane: (reg, i) => `${reg}.v[${i}]`,
  unroll: (n) => `#pragma unroll ${n}`,
  barrier: '__syncthreads();',
  threadIndex: (tag) => `(int32_t)${INDEX[tag]}`,
  expansionBudget: GPU_EXPANSION_BUDGET,
};

/** CUDA_DIALECT without the expansion budget: the C dialect's bound, a thread scope counting one statement (bench/gpu-source-size.ts compares). */
const CUDA_DIALECT_UNBOUNDED: GpuDialect = { ...CUDA_DIALECT, expansionBudget: undefined };

/** What the host needs besides the module: buffers and launches (grid and block sizes), in order. */
export interface CudaLaunchTable {
  readonly buffers: readonly { name: string; size: number; role: BufferRole }[];
  readonly launches: readonly { kernel: string; args: readonly number[]; grid: Dim3; block: Dim3; sharedBytes: number }[];
}

export interface CudaRenderOptions {
  /** float32 lanes of the vectors (target vectorLanes): 4, 8 or 16. */
  vectorLanes: number;
  /** Expand unrolled loops under the C dialect's bound instead of GPU_EXPANSION_BUDGET (for comparisons only). */
  unboundedUnroll?: boolean;
}

/** Threads per block of a kernel (codegen/gpu.ts). */
export { threadsOf };

/** The CUDA source of one program's kernels (without the prelude: sources of several programs share one). */
export function renderCudaKernels(p: GpuProgram, opts: CudaRenderOptions): string {
  const out: string[] = [];
  for (const k of p.kernels) {
    const written = storedBuffers(k.body);
    // Buffer names are C names already (lowering made them with cName, as the body uses them).
    const params = k.params.map((b) => `${written.has(b) ? '' : 'const '}float* __restrict__ ${b}`).join(', ');
    out.push(`extern "C" __global__ void __launch_bounds__(${threadsOf(k)}) ${k.name}(${params}) {`);
    for (const s of k.shared) out.push(`  __shared__ __align__(16) float ${s.buf}[${s.size}];`);
    out.push(...renderBody(k.body, opts.vectorLanes, opts.unboundedUnroll ? CUDA_DIALECT_UNBOUNDED : CUDA_DIALECT, '  '));
    out.push('}', '');
  }
  return out.join('\n');
}

/** The launch table of one program: launchTable's buffers, launches as grid and block sizes. */
export function cudaLaunchTable(p: GpuProgram): CudaLaunchTable {
  const t = launchTable(p);
  return {
    buffers: t.buffers,
    launches: t.launches.map((l, i) => ({
      kernel: l.kernel, args: l.args, grid: p.kernels[i].grid, block: p.kernels[i].block,
      sharedBytes: p.kernels[i].shared.reduce((a, s) => a + s.size * 4, 0),
    })),
  };
}

/** The complete source (prelude and kernels) and launch table of one program. */
export function renderCuda(p: GpuProgram, opts: CudaRenderOptions): { source: string; table: CudaLaunchTable } {
  return { source: `${CUDA_PRELUDE}\n${renderCudaKernels(p, opts)}`, table: cudaLaunchTable(p) };
}
