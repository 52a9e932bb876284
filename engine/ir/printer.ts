// Prints expressions and stages in the format of TVM's auto-scheduler logs (the seeds):
//   conv2d_nhwc(nn, yy, xx, ff) += (pad_temp[nn, (yy + ry), (xx + rx), rc]*p1[ry, rx, rc, ff])
// Binary arithmetic is parenthesised, `*` and `/` print without spaces, float constants
// print as C++ streams print a double (6 significant digits) with an `f` suffix.

import type { Expr } from './expr';
import type { Tensor } from './tensor';

const SPACED = new Set(['+', '-', '==', '!=', '<', '<=', '>', '>=', '&&', '||']);
const FUNCTION_LIKE = new Set(['floordiv', 'floormod', 'truncdiv', 'truncmod', 'min', 'max']);

/** Shortest decimal that reads back as the same float32. */
export function formatFloat32(x: number): string {
  if (Number.isInteger(x) && Math.abs(x) < 1e15) return String(x);
  for (let p = 1; p <= 9; p++) {
    const s = x.toPrecision(p);
    if (Math.fround(Number(s)) === x) return String(Number(s));
  }
  return String(x);
}

/**
 * A float as TVM's printer writes a FloatImm: `std::ostream << double` with the default
 * precision, i.e. C's `%g` with 6 significant digits (`0.1`, `1e-05`, `-3.40282e+38`).
 * Not round-trip exact; code generators want formatFloat32.
 */
export function formatTvmFloat(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const [mantissa, expText] = x.toExponential(5).split('e');
  const exp = Number(expText);
  const strip = (s: string): string => (s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '') : s);
  if (exp < -4 || exp >= 6) return `${strip(mantissa)}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  return strip(x.toFixed(5 - exp));
}

export function printExpr(e: Expr): string {
  switch (e.k) {
    case 'const':
      if (e.dtype === 'float32') return `${formatTvmFloat(e.value)}f`;
      if (e.dtype === 'bool') return `(bool)${e.value}`;
      return String(e.value);
    case 'var': return e.name;
    case 'bin':
      if (FUNCTION_LIKE.has(e.op)) return `${e.op}(${printExpr(e.a)}, ${printExpr(e.b)})`;
      return SPACED.has(e.op) ? `(${printExpr(e.a)} ${e.op} ${printExpr(e.b)})` : `(${printExpr(e.a)}${e.op}${printExpr(e.b)})`;
    case 'not': return `!${printExpr(e.a)}`;
    case 'select': return `select(${printExpr(e.cond)}, ${printExpr(e.t)}, ${printExpr(e.f)})`;
    case 'if': return `tir.if_then_else(${printExpr(e.cond)}, ${printExpr(e.t)}, ${printExpr(e.f)})`;
    case 'call': return `tir.${e.fn}(${e.args.map(printExpr).join(', ')})`;
    case 'cast': return `${e.dtype}(${printExpr(e.a)})`;
    case 'load': return `${e.tensor.name}[${e.indices.map(printExpr).join(', ')}]`;
    case 'reduce': return printExpr(e.source);
  }
}

const ASSIGN = { sum: '+=', max: 'max=', min: 'min=', prod: '*=', sum_bf16: 'bf16+=' } as const;

/**
 * One line per tensor. `simple` is TVM's simple mode (`ComputeDAG::PrintDAG(true)`), the
 * text hashed into a workload key: a placeholder prints as `name = PLACEHOLDER ` (shape
 * left out, trailing space kept), and a body that is a call prints as the callee only,
 * `Op(tir.if_then_else)`, so padding extents and the like stay out of the hash (the
 * key's shape list tells those apart).
 */
export function printStage(t: Tensor, simple = false): string {
  if (t.op.kind === 'placeholder') {
    // float32 prints as TVM prints it; another dtype is named, so that it is part of the workload key.
    const type = t.dtype === 'float32' ? '' : `${t.dtype} `;
    return simple ? `${t.name} = PLACEHOLDER ${type}` : `${t.name} = PLACEHOLDER ${type}[${t.shape.join(', ')}]`;
  }
  const head = `${t.name}(${t.op.axes.map((a) => a.name).join(', ')})`;
  const body = t.op.body;
  if (body.k === 'reduce') return `${head} ${ASSIGN[body.combiner]} ${printExpr(body.source)}`;
  if (simple && body.k === 'call') return `${head} = Op(tir.${body.fn})`;
  if (simple && body.k === 'if') return `${head} = Op(tir.if_then_else)`;
  return `${head} = ${printExpr(body)}`;
}
