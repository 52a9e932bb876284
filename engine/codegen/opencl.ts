// The OpenCL C renderer: a GpuProgram (gpu.ts) -> one OpenCL C source with a __kernel per
// launch, plus the launch table the host side needs (opencl-host.ts, native/opencl/).
//
// The statements are written by c.ts's Renderer with the OpenCL dialect: the same explicit
// unrolling, vectorisation (float4/8/16 through vload/vstore) and register promotion as on
// CPUs, the expansion bounded by GPU_EXPANSION_BUDGET statements (a longer unrolled loop
// stays a loop under `#pragma unroll N`, which the OpenCL compilers' clang accepts). The
// prelude gives the helper names the C renderer uses (expf, tt_maxf, tt_v4_load, ...) their
// OpenCL meaning, so both languages share one statement writer. Bound loops
// become get_group_id / get_local_id; shared buffers are `__local` arrays at the kernel's
// top; barriers are barrier(CLK_LOCAL_MEM_FENCE). Buffer names come from lowering (cName in
// lower.ts) and kernel names from our callers, never from records.

import { numElements } from '../ir/tensor';
import { GPU_EXPANSION_BUDGET, MINI_FLOAT_C_NAMES, miniFloatHelpers, narrowFloatHelpers, renderBody, type GpuDialect } from './c';
import type { Dim3, GpuProgram } from './gpu';
import type { ThreadTag } from '../schedule/steps';
import { mathArity, type MathFn } from '../ir/expr';

const VECTOR_MATH: Record<MathFn, string> = {
  exp: 'exp(a)', log: 'log(a)', sqrt: 'sqrt(a)', rsqrt: 'rsqrt(a)', tanh: 'tanh(a)',
  sigmoid: '(1.0f / (1.0f + exp(-(a))))', fabs: 'fabs(a)', erf: 'erf(a)',
  log1p: 'log1p(a)', floor: 'floor(a)', ceil: 'ceil(a)', round: 'rint(a)', sin: 'sin(a)', cos: 'cos(a)', tan: 'tan(a)', atan: 'atan(a)',
  pow: 'pow(a, b)', fmod: 'fmod(a, b)',
  // Scalar helpers (OPENCL_PRELUDE) lane by lane: OpenCL C has no vector overloads of ours.
  round_f16: 'tt_round_f16f', round_bf16: 'tt_round_bf16f',
  ...MINI_FLOAT_C_NAMES,
};

/** The math functions whose VECTOR_MATH entry is a scalar helper to apply to each lane. */
const PER_LANE: ReadonlySet<string> = new Set(['round_f16', 'round_bf16', ...Object.keys(MINI_FLOAT_C_NAMES)]);

function vectorHelpers(n: number): string {
  const t = `tt_v${n}`;
  return [
    `typedef float${n} ${t};`,
    `#define ${t}_load(p) vload${n}(0, (p))`,
    `#define ${t}_store(p, x) vstore${n}((x), 0, (p))`,
    `#define ${t}_splat(x) ((${t})(x))`,
    // a > b ? a : b per lane, as tt_maxf (fmax differs on NaN).
    `#define ${t}_max(a, b) select((b), (a), (a) > (b))`,
    `#define ${t}_min(a, b) select((b), (a), (a) < (b))`,
    ...Object.entries(VECTOR_MATH).map(([fn, body]) => (PER_LANE.has(fn)
      ? `inline ${t} ${t}_${fn}(${t} a) { ${t} r; ${Array.from({ length: n }, (_, i) => `r.s${i.toString(16)} = ${body}(a.s${i.toString(16)});`).join(' ')} return r; }`
      : `#define ${t}_${fn}(${mathArity(fn as MathFn) === 2 ? 'a, b' : 'a'}) ${body}`)),
  ].join('\n');
}

/** What every generated OpenCL source starts with. */
export const OPENCL_PRELUDE = `typedef int int32_t;
#define expf(x) exp(x)
#define logf(x) log(x)
#define sqrtf(x) sqrt(x)
#define tanhf(x) tanh(x)
#define fabsf(x) fabs(x)
#define erff(x) erf(x)
#define log1pf(x) log1p(x)
#define floorf(x) floor(x)
#define ceilf(x) ceil(x)
#define rintf(x) rint(x)
#define sinf(x) sin(x)
#define cosf(x) cos(x)
#define tanf(x) tan(x)
#define atanf(x) atan(x)
#define powf(x, y) pow(x, y)
#define fmodf(x, y) fmod(x, y)
inline float tt_maxf(float a, float b) { return a > b ? a : b; }
inline float tt_minf(float a, float b) { return a < b ? a : b; }
inline int tt_maxi(int a, int b) { return a > b ? a : b; }
inline int tt_mini(int a, int b) { return a < b ? a : b; }
inline int tt_floordiv(int a, int b) { int q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
inline int tt_floormod(int a, int b) { int m = a % b; return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m; }
inline float tt_sigmoidf(float x) { return 1.0f / (1.0f + exp(-x)); }
inline float tt_rsqrtf(float x) { return rsqrt(x); }
${narrowFloatHelpers('inline', 'uint', (x) => `as_uint(${x})`, (u) => `as_float(${u})`)}
${miniFloatHelpers('inline', 'uint', (x) => `as_uint(${x})`, (u) => `as_float(${u})`)}
${[4, 8, 16].map(vectorHelpers).join('\n')}
`;

const INDEX: Record<ThreadTag, string> = {
  'blockIdx.x': 'get_group_id(0)', 'blockIdx.y': 'get_group_id(1)', 'blockIdx.z': 'get_group_id(2)',
  'threadIdx.x': 'get_local_id(0)', 'threadIdx.y': 'get_local_id(1)', 'threadIdx.z': 'get_local_id(2)',
  vthread: '0', // never reached: gpu.ts turns vthread loops into unrolled loops
};

export const OPENCL_DIALECT: GpuDialect = {
  family: 'gpu',
  lane: (reg, i) => `${reg}.s${i.toString(16)}`,
  unroll: (n) => `#pragma unroll ${n}`,
  barrier: 'barrier(CLK_LOCAL_MEM_FENCE);',
  threadIndex: (tag) => `(int)${INDEX[tag]}`,
  expansionBudget: GPU_EXPANSION_BUDGET,
};

/** OPENCL_DIALECT without the expansion budget: the C dialect's bound, a thread scope counting one statement (bench/gpu-source-size.ts compares). */
const OPENCL_DIALECT_UNBOUNDED: GpuDialect = { ...OPENCL_DIALECT, expansionBudget: undefined };

export type BufferRole = 'in' | 'out' | 'temp';

/** What the host needs besides the source: buffers and launches, in order. */
export interface OpenclLaunchTable {
  readonly buffers: readonly { name: string; size: number; role: BufferRole }[];
  readonly launches: readonly { kernel: string; args: readonly number[]; global: Dim3; local: Dim3 }[];
}

export interface OpenclRenderOptions {
  /** float32 lanes of the device's vectors (target vectorLanes): 4, 8 or 16. */
  vectorLanes: number;
  /** Expand unrolled loops under the C dialect's bound instead of GPU_EXPANSION_BUDGET (for comparisons only). */
  unboundedUnroll?: boolean;
}

/** The OpenCL C source of one program's kernels (without the prelude: sources of several programs share one). */
export function renderOpenclKernels(p: GpuProgram, opts: OpenclRenderOptions): string {
  const out: string[] = [];
  for (const k of p.kernels) {
    // Buffer names are C names already (lowering made them with cName, as the body uses them).
    const params = k.params.map((b) => `__global float* restrict ${b}`).join(', ');
    out.push(`__kernel __attribute__((reqd_work_group_size(${k.block.join(', ')}))) void ${k.name}(${params}) {`);
    for (const s of k.shared) out.push(`  __local float ${s.buf}[${s.size}];`);
    out.push(...renderBody(k.body, opts.vectorLanes, opts.unboundedUnroll ? OPENCL_DIALECT_UNBOUNDED : OPENCL_DIALECT, '  '));
    out.push('}', '');
  }
  return out.join('\n');
}

/** The complete source (prelude and kernels) and launch table of one program. */
export function renderOpencl(p: GpuProgram, opts: OpenclRenderOptions): { source: string; table: OpenclLaunchTable } {
  return { source: `${OPENCL_PRELUDE}\n${renderOpenclKernels(p, opts)}`, table: launchTable(p) };
}

export function launchTable(p: GpuProgram): OpenclLaunchTable {
  const nIn = p.args.length - p.outputs;
  const buffers = [
    ...p.args.map((a, i) => ({ name: a.buf, size: numElements(a.tensor.shape), role: (i < nIn ? 'in' : 'out') as BufferRole })),
    ...p.temps.map((t) => ({ name: t.buf, size: t.size, role: 'temp' as const })),
  ];
  const index = new Map(buffers.map((b, i) => [b.name, i]));
  const launches = p.kernels.map((k) => ({
    kernel: k.name,
    args: k.params.map((b) => index.get(b)!),
    global: k.grid.map((g, d) => g * k.block[d]) as Dim3,
    local: k.block,
  }));
  return { buffers, launches };
}
