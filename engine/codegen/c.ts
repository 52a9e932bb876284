// The C renderer for CPU targets: one function per kernel, restrict pointers, OpenMP for
// parallel loops, `omp simd` for vectorised loops, GCC unroll pragmas for unrolled ones.
// Names reaching the C source are rebuilt from our own identifiers (cName), never pasted
// from records or config.

import type { Expr, MathFn } from '../ir/expr';
import { formatFloat32 } from '../ir/printer';
import type { Kernel, Stmt } from './lower';

const MATH: Record<MathFn, string> = {
  exp: 'expf', log: 'logf', sqrt: 'sqrtf', rsqrt: 'tt_rsqrtf', tanh: 'tanhf', sigmoid: 'tt_sigmoidf', fabs: 'fabsf', erf: 'erff',
};

/** Helpers every generated translation unit starts with. */
export const C_PRELUDE = `#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <float.h>
static inline float tt_maxf(float a, float b) { return a > b ? a : b; }
static inline float tt_minf(float a, float b) { return a < b ? a : b; }
static inline int32_t tt_maxi(int32_t a, int32_t b) { return a > b ? a : b; }
static inline int32_t tt_mini(int32_t a, int32_t b) { return a < b ? a : b; }
static inline int32_t tt_floordiv(int32_t a, int32_t b) { int32_t q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
static inline int32_t tt_floormod(int32_t a, int32_t b) { int32_t m = a % b; return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m; }
static inline float tt_sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }
static inline float tt_rsqrtf(float x) { return 1.0f / sqrtf(x); }
`;

function floatLiteral(x: number): string {
  if (x === Infinity) return 'INFINITY';
  if (x === -Infinity) return '(-INFINITY)';
  if (Number.isNaN(x)) return 'NAN';
  const s = formatFloat32(x);
  return /[.eE]/.test(s) ? `${s}f` : `${s}.0f`;
}

export function renderExpr(e: Expr): string {
  switch (e.k) {
    case 'const':
      if (e.dtype === 'float32') return floatLiteral(e.value);
      return e.dtype === 'bool' ? (e.value ? '1' : '0') : String(e.value);
    case 'var': return e.name;
    case 'not': return `(!${renderExpr(e.a)})`;
    case 'cast': return e.dtype === 'float32' ? `((float)${renderExpr(e.a)})` : `((int32_t)${renderExpr(e.a)})`;
    case 'select': case 'if': return `(${renderExpr(e.cond)} ? ${renderExpr(e.t)} : ${renderExpr(e.f)})`;
    case 'call': return `${MATH[e.fn]}(${e.args.map(renderExpr).join(', ')})`;
    case 'load': return `${e.tensor.name}[${renderExpr(e.indices[0])}]`;
    case 'reduce': throw new Error('renderExpr: reduce node after lowering');
    case 'bin': {
      const a = renderExpr(e.a), b = renderExpr(e.b);
      const isFloat = e.a.k === 'const' ? e.b.k !== 'const' && isFloatExpr(e.b) : isFloatExpr(e.a);
      switch (e.op) {
        case 'floordiv': return `tt_floordiv(${a}, ${b})`;
        case 'floormod': return `tt_floormod(${a}, ${b})`;
        case 'min': return isFloat ? `tt_minf(${a}, ${b})` : `tt_mini(${a}, ${b})`;
        case 'max': return isFloat ? `tt_maxf(${a}, ${b})` : `tt_maxi(${a}, ${b})`;
        default: return `(${a} ${e.op} ${b})`;
      }
    }
  }
}

function isFloatExpr(e: Expr): boolean {
  switch (e.k) {
    case 'const': return e.dtype === 'float32';
    case 'var': return false;
    case 'bin': return e.dtype === 'float32';
    case 'not': return false;
    case 'cast': case 'select': case 'if': return e.dtype === 'float32';
    case 'call': return true;
    case 'load': return e.tensor.dtype === 'float32';
    case 'reduce': return true;
  }
}

function renderStmt(s: Stmt, indent: string, out: string[]): void {
  switch (s.k) {
    case 'alloc':
      out.push(`${indent}float ${s.buf}[${s.size}] __attribute__((aligned(64)));`);
      return;
    case 'store':
      out.push(`${indent}${s.buf}[${renderExpr(s.index)}] = ${renderExpr(s.value)};`);
      return;
    case 'if':
      out.push(`${indent}if (${renderExpr(s.cond)}) {`);
      s.body.forEach((b) => renderStmt(b, indent + '  ', out));
      out.push(`${indent}}`);
      return;
    case 'for': {
      if (s.kind === 'parallel') out.push(`${indent}#pragma omp parallel for schedule(static)`);
      if (s.kind === 'vectorize') out.push(`${indent}#pragma omp simd`);
      if (s.kind === 'unroll') out.push(`${indent}#pragma GCC unroll ${s.extent}`);
      out.push(`${indent}for (int32_t ${s.v} = 0; ${s.v} < ${s.extent}; ++${s.v}) {`);
      s.body.forEach((b) => renderStmt(b, indent + '  ', out));
      out.push(`${indent}}`);
    }
  }
}

/** Largest whole-tensor temporary kept on the stack (floats); larger ones are heap-allocated. */
const STACK_TEMP_FLOATS = 16384;

/** Render one kernel as a C function `int32_t name(float* args...)` returning 0. */
export function renderKernel(k: Kernel): string {
  const params = k.args.map((a) => `float* __restrict__ ${a.buf}`).join(', ');
  const out: string[] = [`int32_t ${k.name}(${params}) {`];
  for (const t of k.temps) {
    if (t.size <= STACK_TEMP_FLOATS) out.push(`  float ${t.buf}[${t.size}] __attribute__((aligned(64)));`);
    else out.push(`  float* __restrict__ ${t.buf} = (float*)aligned_alloc(64, ${Math.ceil(t.size / 16) * 64});`);
  }
  const heap = k.temps.filter((t) => t.size > STACK_TEMP_FLOATS);
  if (heap.length) out.push(`  if (${heap.map((t) => `!${t.buf}`).join(' || ')}) return -1;`);
  k.body.forEach((s) => renderStmt(s, '  ', out));
  for (const t of heap) out.push(`  free(${t.buf});`);
  out.push('  return 0;', '}');
  return out.join('\n') + '\n';
}
