// The reference evaluator: runs a compute DAG straight from its definition, the ground
// truth every generated kernel is checked against.
//
// Each compute stage is translated, one to one, into a JavaScript loop nest over its
// spatial axes with the reduction innermost (`new Function`, no scheduling, no reuse of
// buffers). Arithmetic runs in float64 and each stored element is rounded to float32, so
// the reference is at least as accurate as any float32 kernel it checks. int32 and bool
// stages store into Int32Array buffers (bool as 0/1).

import type { ComputeDAG } from './dag';
import type { Expr, MathFn } from './expr';
import { roundBfloat16, roundFloat16 } from './half';
import { MINI_FLOAT_FNS, roundMiniFloat } from './float8';
import type { MiniFloatFn } from './nodes';
import { allocData, dataFits, numElements, type ComputeOp, type Tensor, type TensorData } from './tensor';

type StageFn = (buffers: TensorData[]) => void;

const MATH: Record<MathFn, (x: string, y?: string) => string> = {
  exp: (x) => `Math.exp(${x})`,
  log: (x) => `Math.log(${x})`,
  sqrt: (x) => `Math.sqrt(${x})`,
  rsqrt: (x) => `(1 / Math.sqrt(${x}))`,
  tanh: (x) => `Math.tanh(${x})`,
  sigmoid: (x) => `(1 / (1 + Math.exp(-(${x}))))`,
  fabs: (x) => `Math.abs(${x})`,
  erf: (x) => `erf(${x})`,
  log1p: (x) => `Math.log1p(${x})`,
  floor: (x) => `Math.floor(${x})`,
  ceil: (x) => `Math.ceil(${x})`,
  round: (x) => `mf.rint(${x})`,
  sin: (x) => `Math.sin(${x})`,
  cos: (x) => `Math.cos(${x})`,
  tan: (x) => `Math.tan(${x})`,
  atan: (x) => `Math.atan(${x})`,
  pow: (x, y) => `mf.pow(${x}, ${y})`,
  // JavaScript's % on numbers is C's fmod (the dividend's sign; NaN for a zero divisor or an infinite dividend).
  fmod: (x, y) => `(${x} % ${y})`,
  round_f16: (x) => `mf.f16(${x})`,
  round_bf16: (x) => `mf.bf16(${x})`,
  ...Object.fromEntries(MINI_FLOAT_FNS.map(({ fn, kind, saturate }) => [fn, (x: string) => `mf.mini('${kind}', ${x}, ${saturate})`])) as Record<MiniFloatFn, (x: string) => string>,
};

/** Math with C's semantics where JavaScript's differs (rintf, powf), and the narrow float types' rounding (half.ts). */
const mf = {
  /** The nearest float16 / bfloat16 of the argument rounded to float32, as the C kernels compute it from their float32 operand. */
  f16: roundFloat16,
  bf16: roundBfloat16,
  /** The nearest 8/4-bit float (float8.ts), as the C kernels compute it. */
  mini: roundMiniFloat,
  /** Round half to even, as rintf in the default rounding mode. */
  rint(x: number): number {
    const r = Math.round(x);
    return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
  },
  /** C's pow: pow(1, y) and pow(x, ±0) are 1 even for NaN, pow(-1, ±inf) is 1 (JavaScript: NaN). */
  pow(x: number, y: number): number {
    if (x === 1 || y === 0) return 1;
    if (x === -1 && (y === Infinity || y === -Infinity)) return 1;
    return Math.pow(x, y);
  },
};

/** Abramowitz-Stegun 7.1.26 is too coarse for a reference; this series/continued-fraction pair is accurate to ~1e-15. */
function erf(x: number): number {
  const ax = Math.abs(x);
  if (ax < 2.5) {
    // Maclaurin series: erf(x) = 2/sqrt(pi) * sum (-1)^n x^(2n+1) / (n! (2n+1))
    let term = ax, total = ax;
    for (let n = 1; n < 60; n++) {
      term *= (-ax * ax) / n;
      total += term / (2 * n + 1);
      if (Math.abs(term) < 1e-17) break;
    }
    return Math.sign(x) * total * 1.1283791670955126;
  }
  // Continued fraction for erfc at large |x|.
  let f = 0;
  for (let n = 60; n >= 1; n--) f = (n / 2) / (ax + f);
  const erfc = Math.exp(-ax * ax) / Math.sqrt(Math.PI) / (ax + f);
  return Math.sign(x) * (1 - erfc);
}

const jsVar = (name: string): string => `v_${name.replace(/[^A-Za-z0-9_]/g, '_')}`;

class StageCompiler {
  private readonly slots: Map<Tensor, number>;
  constructor(slots: Map<Tensor, number>) { this.slots = slots; }

  expr(e: Expr): string {
    switch (e.k) {
      case 'const': return e.dtype === 'bool' ? (e.value ? 'true' : 'false') : numberLiteral(e.value);
      case 'var': return jsVar(e.name);
      case 'not': return `(!${this.expr(e.a)})`;
      case 'cast': {
        const a = this.expr(e.a);
        if (e.dtype === 'int32') return `Math.trunc(${a})`;
        if (e.dtype === 'bool') return `(${a} != 0)`;
        return `(+${a})`;
      }
      case 'select': case 'if': return `(${this.expr(e.cond)} ? ${this.expr(e.t)} : ${this.expr(e.f)})`;
      case 'call': return MATH[e.fn](this.expr(e.args[0]), e.args[1] && this.expr(e.args[1]));
      case 'load': {
        const slot = this.slots.get(e.tensor);
        if (slot === undefined) throw new Error(`evaluate: ${e.tensor.name} is not in the DAG`);
        const read = `b${slot}[${flatIndex(e.indices.map((i) => this.expr(i)), e.tensor.shape)}]`;
        // Buffers hold bool as 0/1; read it back as a JS boolean so `==` with a bool works.
        return e.tensor.dtype === 'bool' ? `(${read} !== 0)` : read;
      }
      case 'reduce': throw new Error('evaluate: a reduction inside an expression');
      case 'bin': {
        const a = this.expr(e.a), b = this.expr(e.b);
        switch (e.op) {
          case 'floordiv': return `Math.floor(${a} / ${b})`;
          case 'floormod': return `fmod(${a}, ${b})`;
          // As C renders them (c.ts tt_truncdiv): a zero divisor gives 0; the Int32Array store wraps INT_MIN / -1.
          case 'truncdiv': return `(${b} === 0 ? 0 : Math.trunc(${a} / ${b}))`;
          case 'truncmod': return `(${b} === 0 ? 0 : (${a} % ${b}))`;
          case 'min': return `Math.min(${a}, ${b})`;
          case 'max': return `Math.max(${a}, ${b})`;
          case '==': return `(${a} === ${b})`;
          case '!=': return `(${a} !== ${b})`;
          // int32 products wrap as C's do (two's complement); sums stay exact in float64 and wrap when stored.
          case '*': return e.dtype === 'int32' ? `Math.imul(${a}, ${b})` : `(${a} * ${b})`;
          default: return `(${a} ${e.op} ${b})`;
        }
      }
    }
  }

  stage(t: Tensor & { op: ComputeOp }): string {
    const out = this.slots.get(t)!;
    const { axes, body } = t.op;
    const lines: string[] = [];
    let indent = '';
    for (const a of axes) {
      lines.push(`${indent}for (let ${jsVar(a.name)} = 0; ${jsVar(a.name)} < ${a.extent}; ${jsVar(a.name)}++) {`);
      indent += ' ';
    }
    const target = `b${out}[${flatIndex(axes.map((a) => jsVar(a.name)), t.shape)}]`;
    if (body.k === 'reduce') {
      const init = { sum: '0', max: '-Infinity', min: 'Infinity', prod: '1', sum_bf16: '0' }[body.combiner];
      lines.push(`${indent}let acc = ${init};`);
      for (const r of body.axes) {
        lines.push(`${indent}for (let ${jsVar(r.name)} = 0; ${jsVar(r.name)} < ${r.extent}; ${jsVar(r.name)}++) {`);
        indent += ' ';
      }
      const src = this.expr(body.source);
      // sum_bf16 adds as ml_dtypes does: in float32, then rounds to bfloat16.
      lines.push(body.combiner === 'sum_bf16' ? `${indent}acc = mf.bf16(Math.fround(acc + ${src}));` : body.combiner === 'sum' ? `${indent}acc += ${src};` : body.combiner === 'prod' ? `${indent}acc *= ${src};` : `${indent}acc = Math.${body.combiner}(acc, ${src});`);
      for (let i = 0; i < body.axes.length; i++) { indent = indent.slice(1); lines.push(`${indent}}`); }
      lines.push(`${indent}${target} = acc;`);
    } else {
      lines.push(`${indent}${target} = ${this.expr(body)};`);
    }
    for (let i = 0; i < axes.length; i++) { indent = indent.slice(1); lines.push(`${indent}}`); }
    return lines.join('\n');
  }
}

function numberLiteral(x: number): string {
  if (x === Infinity) return 'Infinity';
  if (x === -Infinity) return '-Infinity';
  return Number.isNaN(x) ? 'NaN' : `(${String(x)})`;
}

function flatIndex(idx: readonly string[], shape: readonly number[]): string {
  if (idx.length === 0) return '0';
  let stride = 1;
  const terms: string[] = [];
  for (let i = shape.length - 1; i >= 0; i--) {
    if (shape[i] !== 1) terms.push(stride === 1 ? `(${idx[i]})` : `(${idx[i]}) * ${stride}`);
    stride *= shape[i];
  }
  return terms.length ? terms.join(' + ') : '0';
}

const fmod = (a: number, b: number): number => a - Math.floor(a / b) * b;

function compileStage(t: Tensor & { op: ComputeOp }, slots: Map<Tensor, number>): StageFn {
  const source = new StageCompiler(slots).stage(t);
  const used = [...new Set(source.match(/\bb\d+\b/g) ?? [])];
  const header = used.map((b) => `const ${b} = buffers[${b.slice(1)}];`).join('\n');
  const fn = new Function('buffers', 'fmod', 'erf', 'mf', `"use strict";\n${header}\n${source}`) as
    (buffers: TensorData[], f: typeof fmod, e: typeof erf, m: typeof mf) => void;
  return (buffers) => fn(buffers, fmod, erf, mf);
}

/**
 * Evaluate a DAG. `inputs` maps each placeholder (by tensor or by name) to its data;
 * returns every stage's buffer by name (outputs included).
 */
export function evaluate(dag: ComputeDAG, inputs: ReadonlyMap<Tensor | string, TensorData>): Map<string, TensorData> {
  const slots = new Map<Tensor, number>();
  dag.stages.forEach((t, i) => slots.set(t, i));
  const buffers: TensorData[] = dag.stages.map((t) => {
    if (t.op.kind !== 'placeholder') return allocData(t.dtype, numElements(t.shape));
    const data = inputs.get(t) ?? inputs.get(t.name);
    if (!data) throw new Error(`evaluate: no data for input ${t.name}`);
    if (!dataFits(t.dtype, data)) throw new Error(`evaluate: input ${t.name} is ${t.dtype}, given a ${data.constructor.name}`);
    if (data.length !== numElements(t.shape)) {
      throw new Error(`evaluate: input ${t.name} has ${data.length} elements, shape [${t.shape.join(', ')}] needs ${numElements(t.shape)}`);
    }
    return data;
  });
  for (const t of dag.computeStages) compileStage(t, slots)(buffers);
  return new Map(dag.stages.map((t, i) => [t.name, buffers[i]]));
}
