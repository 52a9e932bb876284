// The C renderer for CPU targets: one function per kernel, restrict pointers, parallel
// loops run by tensortune's thread pool (native/pool/tt_pool.c, linked beside the kernels;
// its declarations, native/include/tt_pool.h, are in the prelude): each becomes a static
// function over a range of its iterations, called through tt_parallel_for with the
// pointers and loop variables it reads. Loops the schedule unrolls or vectorises are
// expanded here rather than left to the compiler's heuristics, so that what the schedule
// says is what runs:
//  - an `unroll` loop is emitted once per iteration with its variable replaced by a
//    constant (GCC's own `#pragma GCC unroll` is the fallback for very large bodies);
//  - a `vectorize` loop whose stores are contiguous in it is emitted as GCC vector
//    extension code, one statement per `lanes`-wide chunk: contiguous loads become
//    unaligned vector loads, loads that do not depend on the loop become scalars that
//    the vector arithmetic broadcasts; anything else falls back to `omp simd`;
//  - a local buffer (a stage computed inside a loop) whose every access ends up at a
//    constant index after that expansion is replaced by named variables, so register
//    tiles really live in registers (GCC does not promote arrays of this size itself).
// Names reaching the C source are rebuilt from our own identifiers (cName), never pasted
// from records or config.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { add, children, dtypeOf, freeVars, int, mathArity, readTensors, v, type DType, type Expr, type MathFn } from '../ir/expr';
import { formatFloat32, printExpr } from '../ir/printer';
import type { Kernel, Stmt } from './lower';
import { packageRoot } from '../package-root';
import { MAX_UNROLL, type ThreadTag } from '../schedule/steps';
import { affineIn, constBindings, constValue, mentions, substFold } from './fold';
import { partitionTails } from './partition';
import { prefetchNextPanels } from './prefetch';
import { vectorMath, VECTOR_MATH_FNS } from './vector-math';
import { MINI_FLOAT_FNS, MINI_FLOATS, type MiniFloatFormat } from '../ir/float8';
import type { MiniFloatFn } from '../ir/nodes';

/** The C helper of each 8/4-bit float rounding intrinsic: tt_round_f8e4m3fnf, ... (miniFloatHelpers). */
export const MINI_FLOAT_C_NAMES = Object.fromEntries(MINI_FLOAT_FNS.map(({ fn }) => [fn, `tt_${fn}f`])) as Record<MiniFloatFn, string>;

const MATH: Record<MathFn, string> = {
  exp: 'expf', log: 'logf', sqrt: 'sqrtf', rsqrt: 'tt_rsqrtf', tanh: 'tanhf', sigmoid: 'tt_sigmoidf', fabs: 'fabsf', erf: 'erff',
  // rintf rounds half to even (the default rounding mode), as ONNX's Round.
  log1p: 'log1pf', floor: 'floorf', ceil: 'ceilf', round: 'rintf', sin: 'sinf', cos: 'cosf', tan: 'tanf', atan: 'atanf',
  pow: 'powf', fmod: 'fmodf', round_f16: 'tt_round_f16f', round_bf16: 'tt_round_bf16f',
  ...MINI_FLOAT_C_NAMES,
};

/** The bits of a float32 (finite; powers of two and the types' largest values). */
function f32Bits(x: number): number {
  return new Uint32Array(Float32Array.of(x).buffer)[0];
}

/** IEEE binary16 as a format of roundingHelper's: its rule is the 8-bit types' with 10 fraction bits. */
const FLOAT16: MiniFloatFormat = { exp: 5, man: 10, bias: 15, max: 65504, inf: true, uz: false, nan: true };

/**
 * One rounding intrinsic's helper, named `name`, for the float format `f`: integer arithmetic
 * on the float's bits, so no rounding mode, fast-math flag or compiler support for _Float16
 * changes the result, and one text serves C, CUDA and OpenCL (`q` qualifies the function,
 * `uint` is the dialect's 32-bit unsigned type, `toBits` / `fromBits` reinterpret a float as
 * those bits and back). With `man` fraction bits and smallest normal exponent `emin`: NaN as
 * is (float4 e2m1, which has none: the zero of the other sign); below 2^emin (subnormals) the
 * significand shifted to units of 2^(emin - man) with half to even (a shift past 24 leaves
 * under half a unit: 0), times the unit (exact); else 23 - man fraction bits dropped, half to
 * even (a carry into the exponent is right; inf's bits overflow). Past the largest finite
 * value's bits: those bits (saturate), inf's (float16, E5M2) or NaN's. The FNUZ types drop
 * the sign of a zero. ir/half.ts and ir/float8.ts have the rules and the references.
 */
function roundingHelper(q: string, uint: string, toBits: (x: string) => string, fromBits: (u: string) => string, name: string, f: MiniFloatFormat, saturate: boolean): string {
  const emin = 1 - f.bias, sh = 23 - f.man;
  const hex = (x: number): string => `0x${x.toString(16)}u`;
  const maxBits = f32Bits(f.max);
  const over = saturate || !f.nan ? maxBits : f.inf ? 0x7f800000 : 0x7fc00000;
  const unit = 2 ** (emin - f.man);
  return `${q} float ${name}(float x) {
  ${uint} u = ${toBits('x')}, sign = u & 0x80000000u, a = u ^ sign, r;
  if (a > 0x7f800000u) return ${f.nan ? 'x' : fromBits('sign ^ 0x80000000u')};
  if (a < ${hex(f32Bits(2 ** emin))}) {
    ${uint} e = a >> 23, n = 0u;
    if (e >= ${126 + emin - f.man}u) {
      ${uint} s = ${150 + emin - f.man}u - e, m = (a & 0x7fffffu) | 0x800000u, rem = m & ((1u << s) - 1u), mid = 1u << (s - 1u);
      n = m >> s;
      if (rem > mid || (rem == mid && (n & 1u))) n += 1u;
    }
    r = ${toBits(`(float)n * ${unit.toExponential()}f`)};
  } else {
    a += ${hex((1 << (sh - 1)) - 1)} + ((a >> ${sh}) & 1u);
    r = a & ~${hex((1 << sh) - 1)};
  }
  if (r > ${hex(maxBits)}) r = ${hex(over)};
  return ${fromBits(f.uz ? '(r == 0u ? 0u : sign | r)' : 'sign | r')};
}`;
}

/**
 * tt_round_f16f and tt_round_bf16f, the round_f16 / round_bf16 intrinsics, in a dialect
 * (roundingHelper's arguments). float16: 65520 and up to inf; below 2^-14 (subnormals) units
 * of 2^-24, half to even; else 13 fraction bits dropped, half to even. bfloat16 keeps float32's
 * exponent range, subnormals included: 16 bits dropped, half to even; NaN as is; the largest
 * finite values round to inf by the carry.
 */
export function narrowFloatHelpers(q: string, uint: string, toBits: (x: string) => string, fromBits: (u: string) => string): string {
  return `${roundingHelper(q, uint, toBits, fromBits, 'tt_round_f16f', FLOAT16, false)}
${q} float tt_round_bf16f(float x) {
  ${uint} u = ${toBits('x')};
  if ((u & 0x7fffffffu) > 0x7f800000u) return x;
  u += 0x7fffu + ((u >> 16) & 1u);
  return ${fromBits('u & 0xffff0000u')};
}`;
}

/** The helpers of the 8- and 4-bit float rounding intrinsics (MINI_FLOAT_C_NAMES), in a dialect (roundingHelper's arguments). */
export function miniFloatHelpers(q: string, uint: string, toBits: (x: string) => string, fromBits: (u: string) => string): string {
  return MINI_FLOAT_FNS.map(({ fn, kind, saturate }) => roundingHelper(q, uint, toBits, fromBits, MINI_FLOAT_C_NAMES[fn], MINI_FLOATS[kind], saturate)).join('\n');
}

const VECTOR_WIDTHS = [4, 8, 16] as const;

/**
 * tt_v<n>_reduce_add/max/min: a vector's lanes combined into one float, by halves (a tree:
 * log2 n dependent steps) where the compiler has __builtin_shufflevector (GCC 12, clang),
 * lane by lane otherwise. Lane by lane, a row's sum waited on 16 dependent adds at 16 lanes,
 * and a softmax over ViT's rows of 197 paid it twice per row: 0.162 ms by lanes, 0.138 by
 * halves (6 x 197 rows, one thread, kernel alone).
 */
function acrossLanes(n: number): string[] {
  const t = `tt_v${n}`, h = n / 2;
  const part = (from: number): string => `__builtin_shufflevector(a, a, ${Array.from({ length: h }, (_, i) => from + i).join(', ')})`;
  const ops = [
    { name: 'add', scalar: (x: string, y: string) => `(${x} + ${y})`, vector: (x: string, y: string) => `${x} + ${y}` },
    { name: 'max', scalar: (x: string, y: string) => `tt_maxf(${x}, ${y})`, vector: (x: string, y: string) => `tt_v${h}_max(${x}, ${y})` },
    { name: 'min', scalar: (x: string, y: string) => `tt_minf(${x}, ${y})`, vector: (x: string, y: string) => `tt_v${h}_min(${x}, ${y})` },
  ];
  return ops.map(({ name, scalar, vector }) => {
    const serial = `float r = a[0]; for (int i = 1; i < ${n}; ++i) r = ${scalar('r', 'a[i]')}; return r;`;
    const tree = n === 4 ? `return ${scalar(scalar('a[0]', 'a[2]'), scalar('a[1]', 'a[3]'))};` : `return tt_v${h}_reduce_${name}(${vector(part(0), part(h))});`;
    return `static inline float ${t}_reduce_${name}(${t} a) {\n#if TT_HAS_SHUFFLEVECTOR\n  ${tree}\n#else\n  ${serial}\n#endif\n}`;
  });
}

/**
 * x86's max and min instructions, by GCC's builtins, where the target has them: MAXPS(a, b)
 * is `a > b ? a : b` lane by lane, NaN and signed zeros included (either operand NaN, or
 * both zero: b), the select below bit for bit, in one instruction where the select's
 * compare, mask and blend take three. The clamps of exp and erf (vector-math.ts) and every
 * fused ReLU go through them: ViT's softmax kernel, 0.150 against 0.126 ms (one thread,
 * AVX-512 EPYC, kernel alone, best of 200). The builtins, not <immintrin.h>: that header
 * alone doubled the compile time of a kernel (0.12 against 0.23 s), the tuner's main cost.
 * Clang and other architectures take the select (AArch64's FMAX propagates NaN instead).
 */
const X86_MIN_MAX: Record<number, { guard: string; call: (op: 'max' | 'min') => string }> = {
  4: { guard: '__SSE__', call: (op) => `__builtin_ia32_${op}ps(a, b)` },
  8: { guard: '__AVX__', call: (op) => `__builtin_ia32_${op}ps256(a, b)` },
  16: { guard: '__AVX512F__', call: (op) => `__builtin_ia32_${op}ps512_mask(a, b, a, (unsigned short)0xffff, 4)` },
};

function minMax(n: number): string[] {
  const t = `tt_v${n}`;
  const x86 = X86_MIN_MAX[n];
  const fn = (op: 'max' | 'min', body: string): string => `static inline ${t} ${t}_${op}(${t} a, ${t} b) { return ${body}; }`;
  const portable = [fn('max', `${t}_select(a > b, a, b)`), fn('min', `${t}_select(a < b, a, b)`)];
  if (!x86) return portable;
  return [`#if defined(${x86.guard}) && defined(__GNUC__) && !defined(__clang__)`, fn('max', x86.call('max')), fn('min', x86.call('min')), '#else', ...portable, '#endif'];
}

function vectorPrelude(n: number): string {
  const t = `tt_v${n}`;
  const lanes = (body: string): string => `{ ${t} r; for (int i = 0; i < ${n}; ++i) ${body}; return r; }`;
  return [
    `typedef float ${t} __attribute__((vector_size(${n * 4})));`,
    // Unaligned, may-alias view of a float buffer as vectors.
    `typedef float ${t}u __attribute__((vector_size(${n * 4}), aligned(4), may_alias));`,
    `static inline ${t} ${t}_load(const float* p) { return *(const ${t}u*)p; }`,
    `static inline void ${t}_store(float* p, ${t} x) { *(${t}u*)p = x; }`,
    `static inline ${t} ${t}_splat(float x) { return (${t}){${Array(n).fill('x').join(', ')}}; }`,
    // max and min select through a whole-vector compare mask. Written as a loop over lanes,
    // gcc on AVX-512 (which prefers 256-bit vectors) split each one into two halves that went
    // through the stack, and the 64-byte reload missed store forwarding: a fused ReLU cost a
    // depthwise conv half its speed (0.098 ms against 0.049 in one harness).
    `typedef int32_t ${t}i __attribute__((vector_size(${n * 4})));`,
    `static inline ${t} ${t}_select(${t}i m, ${t} a, ${t} b) { return (${t})((m & (${t}i)a) | (~m & (${t}i)b)); }`,
    ...minMax(n),
    // Across the lanes, for vectorised reductions.
    ...acrossLanes(n),
    // exp, erf, tanh and sigmoid as vector polynomials (vector-math.ts); the other math
    // functions lane by lane through libm.
    ...Object.entries(MATH).filter(([fn]) => !VECTOR_MATH_FNS.has(fn)).map(([fn, c]) => (mathArity(fn as MathFn) === 2
      ? `static inline ${t} ${t}_${fn}(${t} a, ${t} b) ${lanes(`r[i] = ${c}(a[i], b[i])`)}`
      : `static inline ${t} ${t}_${fn}(${t} a) ${lanes(`r[i] = ${c}(a[i])`)}`)),
    vectorMath(n),
  ].join('\n');
}

/** The thread pool's declarations (its code is native/pool/tt_pool.c, which every library
 *  of kernels links: engine/native/build.ts, poolObject). */
const POOL_DECLARATIONS = readFileSync(path.join(packageRoot(), 'native', 'include', 'tt_pool.h'), 'utf8');

/** Helpers every generated translation unit starts with, the thread pool's declarations among them. */
export const C_PRELUDE = `#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <float.h>
#ifndef __has_builtin
#define __has_builtin(x) 0
#endif
#define TT_HAS_SHUFFLEVECTOR __has_builtin(__builtin_shufflevector)
static inline float tt_maxf(float a, float b) { return a > b ? a : b; }
static inline float tt_minf(float a, float b) { return a < b ? a : b; }
static inline int32_t tt_maxi(int32_t a, int32_t b) { return a > b ? a : b; }
static inline int32_t tt_mini(int32_t a, int32_t b) { return a < b ? a : b; }
static inline int32_t tt_floordiv(int32_t a, int32_t b) { int32_t q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
static inline int32_t tt_floormod(int32_t a, int32_t b) { int32_t m = a % b; return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m; }
static inline int32_t tt_truncdiv(int32_t a, int32_t b) { return b == 0 ? 0 : b == -1 ? (int32_t)(0u - (uint32_t)a) : a / b; }
static inline int32_t tt_truncmod(int32_t a, int32_t b) { return b == 0 || b == -1 ? 0 : a % b; }
static inline float tt_sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }
static inline float tt_rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline uint32_t tt_f32_bits(float x) { union { float f; uint32_t u; } v = { x }; return v.u; }
static inline float tt_f32_from_bits(uint32_t u) { union { uint32_t u; float f; } v = { u }; return v.f; }
${narrowFloatHelpers('static inline', 'uint32_t', (x) => `tt_f32_bits(${x})`, (u) => `tt_f32_from_bits(${u})`)}
${miniFloatHelpers('static inline', 'uint32_t', (x) => `tt_f32_bits(${x})`, (u) => `tt_f32_from_bits(${u})`)}
${VECTOR_WIDTHS.map(vectorPrelude).join('\n')}
${POOL_DECLARATIONS}`;

/**
 * Flags of every generated kernel (the target's flags follow). -O2, not -O3: the renderer
 * already unrolls, vectorises and keeps register tiles in variables, and what -O3 adds on
 * top (GCC 12: more loop versioning and vectorisation of the scalar remainders) made
 * default-schedule mobilenet slower (14.5 vs 12.0 ms median at 1 thread; resnet-18 and
 * resnet-50 unchanged within noise) and took twice as long to compile (0.4 vs 0.15 s for
 * a typical conv candidate), which is the tuner's main cost. Measured with
 * `tensortune compile` + `tensortune benchmark --repeat 20`, both builds interleaved.
 * `-fopenmp-simd`: the `omp simd` pragmas only; parallel loops run on tt_pool.c's threads,
 * so kernels do not load libgomp. Their order is part of the object cache's keys.
 */
export const KERNEL_CFLAGS: readonly string[] = ['-O2', '-std=gnu11', '-fPIC', '-pthread', '-fopenmp-simd', '-fno-math-errno', '-ffp-contract=fast'];

function floatLiteral(x: number): string {
  if (x === Infinity) return 'INFINITY';
  if (x === -Infinity) return '(-INFINITY)';
  if (Number.isNaN(x)) return 'NAN';
  // -0 is its own value (x * -0 is -0 for a positive x); formatFloat32 writes it as "0".
  if (Object.is(x, -0)) return '(-0.0f)';
  const s = formatFloat32(x);
  return /[.eE]/.test(s) ? `${s}f` : `${s}.0f`;
}

/** Render a scalar expression; `load` decides how a buffer element is read, `named` may name a sub-expression. */
function renderScalar(e: Expr, load: (buf: string, index: Expr) => string, named?: (e: Expr) => string | undefined): string {
  const r = (x: Expr): string => renderScalar(x, load, named);
  const name = named?.(e);
  if (name) return name;
  switch (e.k) {
    case 'const':
      if (e.dtype === 'float32') return floatLiteral(e.value);
      return e.dtype === 'bool' ? (e.value ? '1' : '0') : String(e.value);
    case 'var': return e.name;
    case 'not': return `(!${r(e.a)})`;
    // To bool is `!= 0` (the evaluator's rule), not a truncation: 0.5 is true.
    case 'cast': return e.dtype === 'float32' ? `((float)${r(e.a)})` : e.dtype === 'bool' ? `(${r(e.a)} != 0)` : `((int32_t)${r(e.a)})`;
    case 'select': case 'if': return `(${r(e.cond)} ? ${r(e.t)} : ${r(e.f)})`;
    case 'call': return `${MATH[e.fn]}(${e.args.map(r).join(', ')})`;
    case 'load': return load(e.tensor.name, e.indices[0]);
    case 'reduce': throw new Error('renderExpr: reduce node after lowering');
    case 'bin': {
      const a = r(e.a), b = r(e.b);
      const isFloat = e.a.k === 'const' ? e.b.k !== 'const' && dtypeOf(e.b) === 'float32' : dtypeOf(e.a) === 'float32';
      switch (e.op) {
        case 'floordiv': return `tt_floordiv(${a}, ${b})`;
        case 'floormod': return `tt_floormod(${a}, ${b})`;
        case 'truncdiv': return `tt_truncdiv(${a}, ${b})`;
        case 'truncmod': return `tt_truncmod(${a}, ${b})`;
        case 'min': return isFloat ? `tt_minf(${a}, ${b})` : `tt_mini(${a}, ${b})`;
        case 'max': return isFloat ? `tt_maxf(${a}, ${b})` : `tt_maxi(${a}, ${b})`;
        default: return `(${a} ${e.op} ${b})`;
      }
    }
  }
}

/**
 * What differs between the C-family languages one Renderer writes, by family: the C
 * renderer's CPU dialect below; the GPU renderers (opencl.ts, cuda.ts) bring their own,
 * with a prelude that gives the helper names (tt_maxf, tt_v4_load, expf, ...) the same
 * meaning in their language. A CPU-only or GPU-only field exists only on its family.
 */
interface DialectBase {
  /** Lane `i` of vector variable `reg`. */
  lane(reg: string, i: number): string;
  /** The pragma line that unrolls the next loop (n iterations), if the language has one. */
  unroll(n: number): string | undefined;
}

export interface CpuDialect extends DialectBase {
  readonly family: 'cpu';
  /** Whether `#pragma omp simd` lines may be emitted. */
  openmp: boolean;
  /** Parallel loops become functions over a range of iterations, run by tt_parallel_for (tt_pool.c). */
  pool: boolean;
  /**
   * A vectorised reduce loop into one element (a row's sum or max) runs on vector
   * accumulators (tt_v<N>_reduce_add/max/min in the prelude); false, it runs serially.
   */
  vectorReductions: boolean;
  /** The statement (without `;`) that asks the cache for the line holding byte address `address`. */
  prefetch(address: string): string;
}

export interface GpuDialect extends DialectBase {
  readonly family: 'gpu';
  /** A block-wide barrier statement. */
  barrier: string;
  /** The expression of a hardware thread index. */
  threadIndex(tag: ThreadTag): string;
  /**
   * Bounded textual expansion. When set, an unrolled or vectorised loop is expanded
   * only while all it would emit stays within this many statements, counting the bodies
   * of the thread scopes and serial loops inside it (a thread scope under a vthread loop
   * holds the whole fetch-compute-store of a tile); a larger one stays a loop under the
   * `unroll` pragma, for the device compiler to unroll. Its copies are put in braces only
   * where they declare something. Unset, the CPU dialect's rules (kept for comparisons,
   * bench/gpu-source-size.ts): thread scopes count as one statement, every copy gets
   * braces, MAX_EXPANDED_STMTS is the bound.
   */
  expansionBudget?: number;
}

export type Dialect = CpuDialect | GpuDialect;

export const C_DIALECT: CpuDialect = {
  family: 'cpu',
  lane: (reg, i) => `${reg}[${i}]`,
  unroll: (n) => `#pragma GCC unroll ${n}`,
  openmp: true,
  pool: true,
  vectorReductions: true,
  // Read access, high temporal locality: the panel is read by the next T tiles.
  prefetch: (address) => `__builtin_prefetch(${address}, 0, 3)`,
};

export interface RenderOptions {
  /** float32 lanes of the target's vectors (target.vectorLanes): 4, 8 or 16. Default 16. */
  vectorLanes?: number;
}

/** Statements emitted by explicit unrolling/vectorisation above which GCC's unroll pragma is used instead. */
const MAX_EXPANDED_STMTS = 512;
/**
 * The GPU dialects' expansionBudget: TVM's auto-scheduler draws auto_unroll_max_step for
 * GPUs from {0, 16, 64, 512, 1024}, a bound on the statements an unrolled body expands to.
 */
export const GPU_EXPANSION_BUDGET = 512;
/** Largest local buffer (floats) turned into named variables. */
const MAX_PROMOTED_FLOATS = 512;
/** The lane variable of a vectorised loop: `v = base + LANE`. */
const LANE = '__lane';
const LANE_AT_ZERO: ReadonlyMap<string, Expr> = new Map([[LANE, int(0)]]);

/** How accesses to a local buffer were seen while rendering (first pass). */
interface AccessLog { vec: Set<number>; scalar: Set<number>; dynamic: boolean }

type Promotion = { mode: 'vector'; lanes: number } | { mode: 'scalar' };

class VectorFail extends Error {}

class Renderer {
  private readonly lanes: number;
  private readonly vt: string;
  /** Local buffers (allocated in the body) and what the first pass saw of them. */
  readonly logs = new Map<string, AccessLog>();
  private readonly sizes = new Map<string, number>();
  /** Loop variables bound by the loops being rendered (not the expanded ones). */
  private readonly bound = new Set<string>();
  /** printExpr(sub-expression) -> the const variable holding it, in the current scope. */
  private hoisted = new Map<string, string>();
  private hoistCount = 0;
  /** Vector accumulators of vectorised reductions emitted so far (their names). */
  private accCount = 0;
  /** CPU: the functions parallel loops became (parallelLoop), to be emitted before the kernel. */
  readonly functions: string[] = [];
  private parallelCount = 0;

  /** Buffers of int32 or bool elements (int32_t in C); every other buffer holds floats. */
  private readonly intBufs: Set<string>;

  constructor(
    lanes: number, private readonly promoted: ReadonlyMap<string, Promotion>, private readonly dialect: Dialect = C_DIALECT,
    /** Prefix of the names of those functions. */
    private readonly prefix = 'tt',
    intBufs: ReadonlySet<string> = new Set(),
    /** Buffers that may share memory with another (an output written in place of an input): never __restrict__. */
    private readonly aliased: ReadonlySet<string> = new Set(),
  ) {
    this.intBufs = new Set(intBufs);
    if (!(VECTOR_WIDTHS as readonly number[]).includes(lanes)) throw new Error(`renderKernel: vectorLanes ${lanes} not in ${VECTOR_WIDTHS.join(', ')}`);
    this.lanes = lanes;
    this.vt = `tt_v${lanes}`;
  }

  /** The C element type of a buffer. */
  private elemType(buf: string): string {
    return this.intBufs.has(buf) ? 'int32_t' : 'float';
  }

  private note(buf: string, kind: 'vec' | 'scalar', index: number | undefined): void {
    const log = this.logs.get(buf);
    if (!log) return;
    if (index === undefined) log.dynamic = true;
    else log[kind].add(index);
  }

  /** Scalar read/write target of `buf[index]`. */
  private scalarRef(buf: string, index: Expr): string {
    const c = constValue(index);
    this.note(buf, 'scalar', c);
    const p = this.promoted.get(buf);
    if (p && c !== undefined) {
      if (p.mode === 'scalar') return `${buf}_s${c}`;
      return this.dialect.lane(`${buf}_v${Math.floor(c / p.lanes)}`, c % p.lanes);
    }
    return `${buf}[${this.scalar(index)}]`;
  }

  private scalar(e: Expr): string {
    return renderScalar(e, (b, i) => this.scalarRef(b, i), (x) => this.hoistedName(x));
  }

  private hoistedName(e: Expr): string | undefined {
    if (this.hoisted.size === 0 || e.k !== 'bin' || (e.op !== 'floordiv' && e.op !== 'floormod')) return undefined;
    return this.hoisted.get(printExpr(e));
  }

  /**
   * Loop-invariant code motion for index arithmetic: the floordiv/floormod terms that
   * rebuild a fused or split loop's root index depend only on enclosing loop variables,
   * but GCC recomputes them (with their sign branches) inside the innermost loops.
   * Name each once, at the top of the innermost loop that binds all its variables.
   */
  private hoist(body: readonly Stmt[], loopVar: string, env: ReadonlyMap<string, number>, indent: string, out: string[]): void {
    const found = new Map<string, Expr>();
    const visit = (e: Expr): void => {
      if (e.k === 'bin' && (e.op === 'floordiv' || e.op === 'floormod')) {
        const vars = freeVars(e);
        if (vars.has(loopVar) && [...vars].every((x) => this.bound.has(x))) {
          const key = printExpr(e);
          if (!this.hoisted.has(key)) found.set(key, e);
          return;
        }
      }
      for (const c of children(e)) visit(c);
    };
    // An unrolled loop is scanned once per iteration, its variable a constant as it will
    // be when expanded: a register tile's unrolled positions each have their own terms
    // (floordiv(6*t + 1, 7)), which depend on the tile loop only and would otherwise be
    // left inside the reduction loops around them.
    const scan = (stmts: readonly Stmt[], at: ReadonlyMap<string, number>): void => {
      for (const st of stmts) {
        if (st.k === 'store') { visit(substFold(st.index, constBindings(at))); visit(substFold(st.value, constBindings(at))); }
        else if (st.k === 'if') { visit(substFold(st.cond, constBindings(at))); scan(st.body, at); }
        else if (st.k === 'for' && (st.extent === 1 || st.kind === 'unroll') && st.extent <= MAX_UNROLL) {
          for (let i = 0; i < st.extent; i++) scan(st.body, new Map([...at, [st.v, i]]));
        } else if (st.k === 'for' || st.k === 'thread') scan(st.body, at);
      }
    };
    scan(body, env);
    for (const [key, e] of found) {
      const name = `h${this.hoistCount++}`;
      out.push(`${indent}const int32_t ${name} = ${this.scalar(e)};`);
      this.hoisted.set(key, name);
    }
  }

  /** A vector register holding `buf[base .. base+lanes)` if `buf` is promoted, else undefined. */
  private vectorReg(buf: string, base: Expr): string | undefined {
    const c = constValue(base);
    this.note(buf, 'vec', c);
    const p = this.promoted.get(buf);
    if (!p || c === undefined || p.mode !== 'vector' || c % p.lanes !== 0) return undefined;
    return `${buf}_v${c / p.lanes}`;
  }

  /** Render `e` (which may use LANE) as a vector expression, or `{scalar}` when it does not depend on LANE. */
  private vector(e: Expr): { code: string; vec: boolean } {
    if (!usesLane(e)) {
      if (dtypeOf(e) !== 'float32') throw new VectorFail('non-float uniform value');
      return { code: this.scalar(e), vec: false };
    }
    const splat = (x: { code: string; vec: boolean }): string => (x.vec ? x.code : `${this.vt}_splat(${x.code})`);
    switch (e.k) {
      case 'load': {
        if (e.tensor.dtype !== 'float32') throw new VectorFail('non-float load');
        const coef = affineIn(e.indices[0], LANE);
        if (coef !== 1) throw new VectorFail('non-contiguous load');
        const base = substFold(e.indices[0], LANE_AT_ZERO);
        const reg = this.vectorReg(e.tensor.name, base);
        return { code: reg ?? `${this.vt}_load(&${this.scalarRef(e.tensor.name, base)})`, vec: true };
      }
      case 'bin': {
        if (e.dtype !== 'float32') throw new VectorFail('integer arithmetic on the lane');
        const a = this.vector(e.a), b = this.vector(e.b);
        switch (e.op) {
          case '+': case '-': case '*': case '/':
            return { code: `(${a.vec ? a.code : splat(a)} ${e.op} ${b.code})`, vec: true };
          case 'min': case 'max':
            return { code: `${this.vt}_${e.op}(${splat(a)}, ${splat(b)})`, vec: true };
          default: throw new VectorFail(`operator ${e.op}`);
        }
      }
      case 'select': case 'if': {
        if (usesLane(e.cond)) throw new VectorFail('condition varies across lanes');
        const t = this.vector(e.t), f = this.vector(e.f);
        return { code: `(${this.scalar(e.cond)} ? ${splat(t)} : ${splat(f)})`, vec: true };
      }
      case 'call': {
        // erf(x / c) with c the same in every lane (GELU's x / sqrt 2): x times 1 / c, one
        // multiply per vector instead of a divide, the reciprocal computed once where the
        // compiler hoists it. The argument moves by at most an ulp or two, and erf's slope
        // is at most 2 / sqrt(pi), within erf's own stated error (vector-math.ts); ONNX
        // Runtime's fused Gelu multiplies by 1 / sqrt 2 too. A divide is kept everywhere
        // else, where the exact quotient may matter (a floor after it, say). GELU's fc1 on
        // an AVX-512 Xeon, the kernel alone: 1.53 ms with the divide, 1.47 without.
        const [arg] = e.args;
        if (e.fn === 'erf' && arg.k === 'bin' && arg.op === '/' && !usesLane(arg.b)) {
          const num = this.vector(arg.a);
          return { code: `${this.vt}_erf((${splat(num)} * (1.0f / ${this.vector(arg.b).code})))`, vec: true };
        }
        return { code: `${this.vt}_${e.fn}(${e.args.map((x) => splat(this.vector(x))).join(', ')})`, vec: true };
      }
      default: throw new VectorFail(`${e.k} on the lane`);
    }
  }

  /** Emit one vectorised chunk of a store (LANE free in `s`'s index with coefficient 1). */
  private vectorStore(s: Extract<Stmt, { k: 'store' }>, indent: string, out: string[]): void {
    if (affineIn(s.index, LANE) !== 1) throw new VectorFail('store not contiguous in the vector loop');
    const value = this.vector(s.value);
    const code = value.vec ? value.code : `${this.vt}_splat(${value.code})`;
    const base = substFold(s.index, LANE_AT_ZERO);
    const reg = this.vectorReg(s.buf, base);
    if (reg) out.push(`${indent}${reg} = ${code};`);
    else out.push(`${indent}${this.vt}_store(&${this.scalarRef(s.buf, base)}, ${code});`);
  }

  private vectorBody(body: readonly Stmt[], env: ReadonlyMap<string, number>, loopVar: string, base: number, indent: string, out: string[]): void {
    // The loop variable becomes `base + LANE`; the unrolled variables around it, constants.
    const bindings = new Map(constBindings(env));
    bindings.set(loopVar, add(int(base), v(LANE)));
    for (const s of body) {
      if (s.k === 'store') {
        const index = substFold(s.index, bindings);
        const value = substFold(s.value, bindings);
        this.vectorStore({ ...s, index, value }, indent, out);
      } else if (s.k === 'if') {
        const cond = substFold(s.cond, bindings);
        if (usesLane(cond)) throw new VectorFail('guard varies across lanes');
        const c = constValue(cond);
        if (c === 0) continue;
        if (c === undefined) out.push(`${indent}if (${this.scalar(cond)}) {`);
        this.vectorBody(s.body, env, loopVar, base, c === undefined ? indent + '  ' : indent, out);
        if (c === undefined) out.push(`${indent}}`);
      } else {
        throw new VectorFail(`${s.k} inside a vectorised loop`);
      }
    }
  }

  /**
   * The whole vectors of a vectorised reduce loop (`acc = acc op value(k)`, `acc` one
   * element): REDUCTION_ACCUMULATORS vector accumulators take the chunks in turn (two
   * chains of adds hide the add latency), are combined lane-wise, then across lanes into
   * `acc`. A sum is thereby reassociated, as any vectorised float sum is; max and min are
   * not changed by it.
   */
  private vectorReduction(
    s: Extract<Stmt, { k: 'for' }>, r: ReductionInto, env: ReadonlyMap<string, number>, full: number, indent: string, out: string[],
  ): void {
    if (full === 0) throw new VectorFail('a reduction shorter than a vector');
    const index = substFold(r.index, constBindings(env));
    const bindings = new Map(constBindings(env));
    const combineVec = (a: string, b: string): string => (r.op === '+' ? `(${a} + ${b})` : `${this.vt}_${r.op}(${a}, ${b})`);
    const chunks = full / this.lanes;
    const accs = Array.from({ length: Math.min(REDUCTION_ACCUMULATORS, chunks) }, () => `tt_acc${this.accCount++}`);
    const lines: string[] = [];
    for (let c = 0; c < chunks; c++) {
      bindings.set(s.v, add(int(c * this.lanes), v(LANE)));
      const value = this.vector(substFold(r.value, bindings));
      const code = value.vec ? value.code : `${this.vt}_splat(${value.code})`;
      const acc = accs[c % accs.length];
      lines.push(c < accs.length ? `${indent}  ${this.vt} ${acc} = ${code};` : `${indent}  ${acc} = ${combineVec(acc, code)};`);
    }
    const total = accs.slice(1).reduce((a, b) => combineVec(a, b), accs[0]);
    const target = this.scalarRef(r.buf, index);
    const across = `${this.vt}_reduce_${r.op === '+' ? 'add' : r.op}(${total})`;
    const combined = r.op === '+' ? `(${target} + ${across})` : `tt_${r.op}f(${target}, ${across})`;
    out.push(`${indent}{`, ...lines, `${indent}  ${target} = ${combined};`, `${indent}}`);
  }

  stmts(body: readonly Stmt[], env: ReadonlyMap<string, number>, indent: string, out: string[]): void {
    for (const s of body) this.stmt(s, env, indent, out);
  }

  private stmt(s: Stmt, env: ReadonlyMap<string, number>, indent: string, out: string[]): void {
    switch (s.k) {
      case 'alloc': {
        this.sizes.set(s.buf, s.size);
        if (s.dtype !== undefined && s.dtype !== 'float32') this.intBufs.add(s.buf);
        if (!this.logs.has(s.buf)) this.logs.set(s.buf, { vec: new Set(), scalar: new Set(), dynamic: false });
        const p = this.promoted.get(s.buf);
        const type = this.elemType(s.buf);
        if (p?.mode === 'vector') {
          const names = Array.from({ length: s.size / p.lanes }, (_, i) => `${s.buf}_v${i}`);
          out.push(`${indent}tt_v${p.lanes} ${names.join(', ')};`);
        } else if (p?.mode === 'scalar') {
          out.push(`${indent}${type} ${Array.from({ length: s.size }, (_, i) => `${s.buf}_s${i}`).join(', ')};`);
        } else {
          out.push(`${indent}${type} ${s.buf}[${s.size}] __attribute__((aligned(64)));`);
        }
        return;
      }
      case 'store': {
        const index = substFold(s.index, constBindings(env));
        out.push(`${indent}${this.scalarRef(s.buf, index)} = ${this.scalar(substFold(s.value, constBindings(env)))};`);
        return;
      }
      case 'if': {
        const cond = substFold(s.cond, constBindings(env));
        const c = constValue(cond);
        if (c === 0) return;
        if (c !== undefined) { this.stmts(s.body, env, indent, out); return; }
        out.push(`${indent}if (${this.scalar(cond)}) {`);
        this.stmts(s.body, env, indent + '  ', out);
        out.push(`${indent}}`);
        return;
      }
      case 'for': this.loop(s, env, indent, out); return;
      case 'prefetch': {
        if (this.dialect.family !== 'cpu') throw new Error('render: a prefetch in a language without one');
        const index = this.scalar(substFold(s.index, constBindings(env)));
        out.push(`${indent}for (int32_t tt_line = 0; tt_line < ${s.lines}; ++tt_line) ${this.dialect.prefetch(`(const char*)&${s.buf}[${index}] + tt_line * 64`)};`);
        return;
      }
      case 'sync':
        if (this.dialect.family !== 'gpu') throw new Error('render: a barrier in a language without one');
        out.push(`${indent}${this.dialect.barrier}`);
        return;
      case 'thread': {
        if (this.dialect.family !== 'gpu') throw new Error('render: a thread index in a language without one');
        out.push(`${indent}{`, `${indent}  const int32_t ${s.v} = ${this.dialect.threadIndex(s.tag)};`);
        this.scope(s.v, s.body, env, indent + '  ', out);
        out.push(`${indent}}`);
      }
    }
  }

  private loop(s: Extract<Stmt, { k: 'for' }>, env: ReadonlyMap<string, number>, indent: string, out: string[]): void {
    // A loop of one iteration is its body with the variable at 0 (and a parallel loop of
    // one iteration has nothing to share).
    const budget = this.dialect.family === 'gpu' ? this.dialect.expansionBudget : undefined;
    const fits = (): boolean => expandedSize([s], this.lanes, budget !== undefined) <= (budget ?? MAX_EXPANDED_STMTS);
    if (s.extent === 1 || (s.kind === 'unroll' && fits())) {
      const braces = budget === undefined || declares(s.body);
      for (let i = 0; i < s.extent; i++) {
        if (braces) out.push(`${indent}{`);
        this.stmts(s.body, new Map([...env, [s.v, i]]), braces ? indent + '  ' : indent, out);
        if (braces) out.push(`${indent}}`);
      }
      return;
    }
    if (s.kind === 'vectorize' && fits()) {
      const full = Math.floor(s.extent / this.lanes) * this.lanes;
      const attempt: string[] = [];
      const logsBefore = this.snapshotLogs();
      try {
        const reduction = this.dialect.family === 'cpu' && this.dialect.vectorReductions ? reductionInto(s) : undefined;
        if (reduction) this.vectorReduction(s, reduction, env, full, indent, attempt);
        else for (let base = 0; base < full; base += this.lanes) this.vectorBody(s.body, env, s.v, base, indent, attempt);
        // The tail as one more vector ending at the loop's end, where it only rewrites the
        // values of the vector before it (overlapsHarmlessly); a scalar loop otherwise.
        const overlap = full < s.extent && !reduction && full > 0 && this.dialect.family === 'cpu' && overlapsHarmlessly(s.body, this.aliased);
        if (overlap) this.vectorBody(s.body, env, s.v, s.extent - this.lanes, indent, attempt);
        out.push(...attempt);
        if (full < s.extent && !overlap) this.serialLoop(s, env, indent, out, full);
        return;
      } catch (e) {
        if (!(e instanceof VectorFail)) throw e;
        this.restoreLogs(logsBefore);
      }
    }
    this.serialLoop(s, env, indent, out, 0);
  }

  private serialLoop(s: Extract<Stmt, { k: 'for' }>, env: ReadonlyMap<string, number>, indent: string, out: string[], start: number): void {
    if (s.kind === 'parallel' && this.dialect.family === 'cpu' && this.dialect.pool && this.parallelLoop(s, env, indent, out, start)) return;
    // `omp simd` only where every store moves with the loop (a reduction into one
    // element would need a reduction clause).
    if (s.kind === 'vectorize' && this.dialect.family === 'cpu' && this.dialect.openmp && storesMoveWith(s.body, s.v)) out.push(`${indent}#pragma omp simd`);
    // Lowering refuses longer unrolled loops (MAX_UNROLL); a kernel made by hand gets a plain loop.
    const pragma = s.kind === 'unroll' && s.extent <= MAX_UNROLL ? this.dialect.unroll(s.extent) : undefined;
    if (pragma) out.push(`${indent}${pragma}`);
    out.push(`${indent}for (int32_t ${s.v} = ${start}; ${s.v} < ${s.extent}; ++${s.v}) {`);
    this.scope(s.v, s.body, env, indent + '  ', out);
    out.push(`${indent}}`);
  }

  /**
   * A parallel loop as a call of tt_parallel_for (tt_pool.c): its body becomes a static
   * function over iterations [tt_begin, tt_end) that gets the buffers and enclosing loop
   * variables it reads through a struct. False, and the caller renders a serial loop,
   * where the body reads a local buffer kept in variables (threads cannot share those).
   */
  private parallelLoop(s: Extract<Stmt, { k: 'for' }>, env: ReadonlyMap<string, number>, indent: string, out: string[], start: number): boolean {
    const { buffers, vars } = captures(s.body);
    if (buffers.some((b) => this.promoted.has(b))) return false;
    const ints = vars.filter((x) => x !== s.v && this.bound.has(x));
    const name = `${this.prefix}_par${this.parallelCount++}`;
    const fields = [...buffers.map((b) => `${this.elemType(b)}* ${b};`), ...ints.map((x) => `int32_t ${x};`)];
    const fn = [
      `struct ${name}_args { ${fields.length ? fields.join(' ') : 'int32_t unused;'} };`,
      `static void ${name}(void* tt_arg, int32_t tt_begin, int32_t tt_end) {`,
      `  const struct ${name}_args* tt_a = (const struct ${name}_args*)tt_arg;`,
      ...buffers.map((b) => `  ${this.elemType(b)}*${restrictUnless(this.aliased, b)} ${b} = tt_a->${b};`),
      ...ints.map((x) => `  const int32_t ${x} = tt_a->${x};`),
      `  for (int32_t ${s.v} = tt_begin; ${s.v} < tt_end; ++${s.v}) {`,
    ];
    // Names hoisted by enclosing loops are not in the new function's scope.
    const saved = this.hoisted;
    this.hoisted = new Map();
    this.scope(s.v, s.body, env, '    ', fn);
    this.hoisted = saved;
    fn.push('  }', '}');
    this.functions.push(fn.join('\n'));
    const values = [...buffers, ...ints];
    out.push(
      `${indent}{`,
      `${indent}  struct ${name}_args tt_a = { ${values.length ? values.join(', ') : '0'} };`,
      `${indent}  tt_parallel_for(${start}, ${s.extent}, ${name}, &tt_a);`,
      `${indent}}`,
    );
    return true;
  }

  /** The body of a scope that binds variable `v` at run time (a loop, a thread index), with its index arithmetic hoisted. */
  private scope(v: string, body: readonly Stmt[], env: ReadonlyMap<string, number>, indent: string, out: string[]): void {
    const inner = new Map(env);
    inner.delete(v);
    const saved = this.hoisted;
    this.hoisted = new Map(saved);
    this.bound.add(v);
    this.hoist(body, v, inner, indent, out);
    this.stmts(body, inner, indent, out);
    this.bound.delete(v);
    this.hoisted = saved;
  }

  private snapshotLogs(): Map<string, AccessLog> {
    return new Map([...this.logs].map(([k, l]) => [k, { vec: new Set(l.vec), scalar: new Set(l.scalar), dynamic: l.dynamic }]));
  }

  private restoreLogs(saved: Map<string, AccessLog>): void {
    this.logs.clear();
    for (const [k, l] of saved) this.logs.set(k, l);
  }

  /** Which local buffers can become variables, from what this (first) pass saw. */
  promotions(): Map<string, Promotion> {
    const out = new Map<string, Promotion>();
    for (const [buf, log] of this.logs) {
      const size = this.sizes.get(buf)!;
      if (log.dynamic || size > MAX_PROMOTED_FLOATS) continue;
      if (log.vec.size > 0) {
        if (this.intBufs.has(buf)) continue; // vectors hold floats
        if (size % this.lanes !== 0 || [...log.vec].some((i) => i % this.lanes !== 0)) continue;
        out.set(buf, { mode: 'vector', lanes: this.lanes });
      } else {
        out.set(buf, { mode: 'scalar' });
      }
    }
    return out;
  }
}

const usesLane = (e: Expr): boolean => mentions(e, LANE);

/** Vector accumulators of a vectorised reduction. */
const REDUCTION_ACCUMULATORS = 2;

/** A float reduction into one element: `buf[index] = buf[index] op value`, index independent of the loop. */
interface ReductionInto { buf: string; index: Expr; op: '+' | 'max' | 'min'; value: Expr }

/**
 * The reduction a vectorised loop's body is, if it is one store of that form (lowering's
 * reduction update). Only sum, max and min take per-lane partial results; an ordered
 * reduction's update (ir/ordered.ts: sum_bf16 stores round_bf16(acc + value), a call) is
 * not of this form, so it stays a serial loop (ordered-reduction.test.ts).
 */
function reductionInto(s: Extract<Stmt, { k: 'for' }>): ReductionInto | undefined {
  if (s.body.length !== 1 || s.body[0].k !== 'store') return undefined;
  const st = s.body[0];
  const e = st.value;
  if (e.k !== 'bin' || (e.op !== '+' && e.op !== 'max' && e.op !== 'min') || e.dtype !== 'float32') return undefined;
  if (mentions(st.index, s.v) || e.a.k !== 'load' || e.a.tensor.name !== st.buf || printExpr(e.a.indices[0]) !== printExpr(st.index)) return undefined;
  if (readTensors(e.b).some((t) => t.name === st.buf)) return undefined;
  return { buf: st.buf, index: st.index, op: e.op, value: e.b };
}

/**
 * What a loop body reads from its surroundings: the buffers it loads, stores or prefetches
 * that it does not allocate itself, and the variables its expressions use, in order of
 * first use.
 */
function captures(body: readonly Stmt[]): { buffers: string[]; vars: string[] } {
  const buffers = new Set<string>(), vars = new Set<string>(), local = new Set<string>();
  const expr = (e: Expr): void => {
    for (const x of freeVars(e)) vars.add(x);
    for (const t of readTensors(e)) buffers.add(t.name);
  };
  const scan = (stmts: readonly Stmt[]): void => {
    for (const st of stmts) {
      if (st.k === 'alloc') local.add(st.buf);
      else if (st.k === 'store') { buffers.add(st.buf); expr(st.index); expr(st.value); }
      else if (st.k === 'prefetch') { buffers.add(st.buf); expr(st.index); }
      else if (st.k === 'if') { expr(st.cond); scan(st.body); }
      else if (st.k === 'for' || st.k === 'thread') scan(st.body);
    }
  };
  scan(body);
  return { buffers: [...buffers].filter((b) => !local.has(b)), vars: [...vars] };
}

/**
 * Whether a vectorised loop body may run again over lanes it already ran: it stores only
 * plain values into buffers it does not read (no accumulation, no read of what it wrote),
 * with no branch, so a second run writes the same values again. Then a loop of 197 runs as
 * 12 vectors and a 13th over 181..196, not a scalar tail of 5 that called libm's expf in a
 * softmax row. `aliased` buffers may be one memory (an output written over an input): a
 * store into one of them is a store into all.
 */
function overlapsHarmlessly(body: readonly Stmt[], aliased: ReadonlySet<string>): boolean {
  const stores = body.filter((s) => s.k === 'store');
  if (stores.length === 0 || body.some((s) => s.k !== 'store' && s.k !== 'alloc')) return false;
  const stored = new Set(stores.flatMap((s) => (aliased.has(s.buf) ? [...aliased] : [s.buf])));
  return stores.every((s) => [s.index, s.value].every((e) => readTensors(e).every((t) => !stored.has(t.name))));
}

function storesMoveWith(body: readonly Stmt[], loopVar: string): boolean {
  return body.every((s) => {
    if (s.k === 'store') return (affineIn(s.index, loopVar) ?? 1) !== 0;
    if (s.k === 'if' || s.k === 'for') return storesMoveWith(s.body, loopVar);
    return true;
  });
}

/**
 * Statements the expansion of `body` would emit (unrolled and vectorised loops multiplied
 * out). `threads`: count the bodies of thread scopes (GPU), else a thread scope counts one.
 */
function expandedSize(body: readonly Stmt[], lanes: number, threads: boolean): number {
  let n = 0;
  for (const s of body) {
    if (s.k === 'thread' && threads) n += expandedSize(s.body, lanes, threads) + 1;
    else if (s.k === 'for') {
      const inner = expandedSize(s.body, lanes, threads);
      if (s.kind === 'unroll') n += s.extent * inner;
      else if (s.kind === 'vectorize') n += Math.ceil(s.extent / lanes) * inner;
      else n += inner + 1;
    } else if (s.k === 'if') n += expandedSize(s.body, lanes, threads) + 1;
    else n += 1;
  }
  return n;
}

/** Whether `body` allocates a buffer anywhere (its expanded copies then need a scope each). */
function declares(body: readonly Stmt[]): boolean {
  return body.some((s) => s.k === 'alloc' || ((s.k === 'for' || s.k === 'if' || s.k === 'thread') && declares(s.body)));
}

/**
 * The lines of a lowered body in `dialect`. Two passes: the first sees how local buffers
 * are accessed once loops are expanded, the second renders with the promotable ones as variables.
 */
export function renderBody(
  body: readonly Stmt[], lanes: number, dialect: Dialect, indent: string, functions?: { prefix: string; out: string[] },
  intBufs: ReadonlySet<string> = new Set(), aliased: ReadonlySet<string> = new Set(),
): string[] {
  const probe = new Renderer(lanes, new Map(), dialect, undefined, intBufs, aliased);
  probe.stmts(body, new Map(), '', []);
  const out: string[] = [];
  const r = new Renderer(lanes, probe.promotions(), dialect, functions?.prefix, intBufs, aliased);
  r.stmts(body, new Map(), indent, out);
  if (r.functions.length > 0 && !functions) throw new Error('renderBody: parallel loops need a place for their functions');
  functions?.out.push(...r.functions);
  return out;
}

/** ` __restrict__` for a buffer nothing else points into; nothing for one of `aliased` (it may share memory with another). */
const restrictUnless = (aliased: ReadonlySet<string>, buf: string): string => (aliased.has(buf) ? '' : ' __restrict__');

/** Largest whole-tensor temporary kept on the stack (floats); larger ones are heap-allocated. */
const STACK_TEMP_FLOATS = 16384;

/** The C type of a kernel argument's elements: float, or int32_t for int32 and bool tensors. */
export const argElemType = (dtype: DType): string => (dtype === 'float32' ? 'float' : 'int32_t');

/** The buffers of a kernel that hold int32 or bool elements: arguments and whole-tensor temporaries. */
export function integerBuffers(k: Pick<Kernel, 'args' | 'temps'>): Set<string> {
  return new Set([...k.args.filter((a) => a.tensor.dtype !== 'float32').map((a) => a.buf), ...k.temps.filter((t) => t.dtype && t.dtype !== 'float32').map((t) => t.buf)]);
}

/** Render one kernel as a C function `int32_t name(float* / int32_t* args...)` returning 0, after the functions of its parallel loops. */
export function renderKernel(k: Kernel, opts: RenderOptions = {}): string {
  const lanes = opts.vectorLanes ?? 16;
  // The output and an input it may be written over (Kernel.aliased) are not __restrict__:
  // C would let the compiler assume they never overlap.
  const aliased = new Set(k.aliased);
  const params = k.args.map((a) => `${argElemType(a.tensor.dtype)}*${restrictUnless(aliased, a.buf)} ${a.buf}`).join(', ');
  const out: string[] = [`int32_t ${k.name}(${params}) {`];
  for (const t of k.temps) {
    const type = argElemType(t.dtype ?? 'float32');
    if (t.size <= STACK_TEMP_FLOATS) out.push(`  ${type} ${t.buf}[${t.size}] __attribute__((aligned(64)));`);
    else out.push(`  ${type}* __restrict__ ${t.buf} = (${type}*)aligned_alloc(64, ${Math.ceil(t.size / 16) * 64});`);
  }
  const heap = k.temps.filter((t) => t.size > STACK_TEMP_FLOATS);
  if (heap.length) out.push(`  if (${heap.map((t) => `!${t.buf}`).join(' || ')}) return -1;`);
  const functions: string[] = [];
  out.push(...renderBody(prefetchNextPanels(partitionTails(k.body), k.args, k.layouts), lanes, C_DIALECT, '  ', { prefix: k.name, out: functions }, integerBuffers(k), aliased));
  for (const t of heap) out.push(`  free(${t.buf});`);
  out.push('  return 0;', '}');
  return [...functions, ...out].join('\n') + '\n';
}
