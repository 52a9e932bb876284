// Elementwise and broadcasting operators.

import { and, call, cast as castExpr, f32, ge, gt, int, lt, ne, select, load, max, min, mul, add, sub, div, dtypeOf, truncdiv, type Expr, type MathFn } from '../ir/expr';
import { compute, type Tensor } from '../ir/tensor';
import { MINI_FLOAT_FNS } from '../ir/float8';
import type { MiniFloatFn } from '../ir/nodes';

const axisNames = (rank: number): string[] => Array.from({ length: rank }, (_, i) => `ax${i}`);

/** NumPy broadcasting of two shapes; throws when they are incompatible. */
export function broadcastShape(a: readonly number[], b: readonly number[]): number[] {
  const rank = Math.max(a.length, b.length);
  const out: number[] = [];
  for (let i = 0; i < rank; i++) {
    const da = a[a.length - rank + i] ?? 1, db = b[b.length - rank + i] ?? 1;
    if (da !== db && da !== 1 && db !== 1) throw new Error(`cannot broadcast [${a.join(', ')}] with [${b.join(', ')}]`);
    out.push(Math.max(da, db));
  }
  return out;
}

/** Indices into `t` for output axes `ax` of `outShape`: broadcast dims read index 0. */
function broadcastIndex(t: Tensor, outShape: readonly number[], ax: readonly Expr[]): Expr[] {
  const offset = outShape.length - t.shape.length;
  return t.shape.map((d, i) => (d === 1 && outShape[offset + i] !== 1 ? f0 : ax[offset + i]));
}
const f0: Expr = { k: 'const', value: 0, dtype: 'int32' };

export type BinaryKind = 'add' | 'subtract' | 'multiply' | 'divide' | 'maximum' | 'minimum';
const BINARY: Record<BinaryKind, (a: Expr, b: Expr) => Expr> = {
  add: (a, b) => add(a, b),
  subtract: (a, b) => sub(a, b),
  multiply: (a, b) => mul(a, b),
  // Integer division truncates toward zero (ONNX Div on ints, C's /; a zero divisor gives 0).
  divide: (a, b) => (dtypeOf(a) === 'float32' || dtypeOf(b) === 'float32' ? div(a, b) : truncdiv(a, b)),
  maximum: (a, b) => max(a, b),
  minimum: (a, b) => min(a, b),
};

/** Broadcasting binary op, named T_<kind> as in TOPI. */
export function binary(kind: BinaryKind, a: Tensor, b: Tensor): Tensor {
  const shape = broadcastShape(a.shape, b.shape);
  return compute(`T_${kind}`, shape, axisNames(shape.length), (...ax) =>
    BINARY[kind](load(a, broadcastIndex(a, shape, ax)), load(b, broadcastIndex(b, shape, ax))), 'broadcast');
}

function unary(name: string, x: Tensor, f: (e: Expr) => Expr): Tensor {
  return compute(name, x.shape, axisNames(x.shape.length), (...ax) => f(load(x, ax)), 'elemwise');
}

export const relu = (x: Tensor): Tensor => unary('T_relu', x, (e) => max(e, f32(0)));
/** max(min(x, hi), lo), in TOPI's order. */
export const clip = (x: Tensor, lo: number, hi: number): Tensor => {
  if (x.dtype === 'float32') return unary('T_clip', x, (e) => max(min(e, f32(hi)), f32(lo)));
  // Integer data (a clamped index, DeBERTa's relative positions): bounds as int32, inside the type's range.
  const ilo = Math.max(-2147483648, Math.ceil(lo)), ihi = Math.min(2147483647, Math.floor(hi));
  return unary('T_clip', x, (e) => max(min(e, int(ihi)), int(ilo)));
};
export const leakyRelu = (x: Tensor, alpha: number): Tensor =>
  unary('T_leaky_relu', x, (e) => select(gt(e, f32(0)), e, mul(e, f32(alpha))));
export const math = (fn: MathFn, x: Tensor): Tensor => unary(`T_${fn}`, x, (e) => call(fn, e));
export const sigmoid = (x: Tensor): Tensor => math('sigmoid', x);
export const tanh = (x: Tensor): Tensor => math('tanh', x);
/** y = x * a + b, elementwise (scale/shift with scalar constants). */
export const affine = (x: Tensor, a: number, b: number, name = 'T_affine'): Tensor => unary(name, x, (e) => add(mul(e, f32(a)), f32(b)));
/** ONNX HardSigmoid: max(0, min(1, alpha * x + beta)). */
export const hardSigmoid = (x: Tensor, alpha: number, beta: number): Tensor =>
  unary('T_hard_sigmoid', x, (e) => max(min(add(mul(e, f32(alpha)), f32(beta)), f32(1)), f32(0)));
/** ONNX HardSwish: x * max(0, min(1, x / 6 + 0.5)) (alpha 1/6, beta 0.5, fixed by the spec). */
export const hardSwish = (x: Tensor): Tensor =>
  unary('T_hard_swish', x, (e) => mul(e, max(min(add(mul(e, f32(1 / 6)), f32(0.5)), f32(1)), f32(0))));

// ---------------------------------------------------------------- ONNX's math and activations
// Named as TOPI names its computes (T_negative, T_abs, T_power, T_fmod, ...); the float-only
// ones refuse an int32/bool input here rather than build float arithmetic over it.

const f0f = f32(0), f1f = f32(1);

function floatOnly(what: string, ...ts: Tensor[]): void {
  for (const t of ts) if (t.dtype !== 'float32') throw new Error(`${what}: ${t.name} is ${t.dtype}, only float32 is implemented`);
}

/** A broadcasting binary compute with body `f`, tagged broadcast. */
function broadcast2(name: string, a: Tensor, b: Tensor, f: (x: Expr, y: Expr) => Expr): Tensor {
  const shape = broadcastShape(a.shape, b.shape);
  return compute(name, shape, axisNames(shape.length), (...ax) => f(load(a, broadcastIndex(a, shape, ax)), load(b, broadcastIndex(b, shape, ax))), 'broadcast');
}

/** ln(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|), as ONNX Runtime computes Softplus. */
const softplusExpr = (e: Expr): Expr => add(max(e, f0f), call('log1p', call('exp', mul(call('fabs', e), f32(-1)))));

/**
 * The parameterless unary operators of ONNX (Sqrt, Exp, ..., Mish) as their TOPI-style
 * computes, and round_f16 / round_bf16: a float32 tensor rounded to the nearest float16 /
 * bfloat16 values (ONNX's Cast to those types, which run as float32; ir/half.ts), and
 * round_f8e4m3fn, ..., round_f4e2m1 (and the `_nosat` forms) to the 8- and 4-bit floats
 * (ir/float8.ts).
 */
export type UnaryKind =
  | 'sqrt' | 'exp' | 'log' | 'erf' | 'floor' | 'ceil' | 'round' | 'sin' | 'cos' | 'tan' | 'atan'
  | 'negative' | 'abs' | 'sign' | 'reciprocal' | 'softsign' | 'softplus' | 'mish' | 'round_f16' | 'round_bf16' | MiniFloatFn;

/** Operators of UnaryKind that also take int32 tensors (the others are float32 only). */
const INTEGER_UNARY: ReadonlySet<UnaryKind> = new Set(['negative', 'abs', 'sign']);

const UNARY: Record<UnaryKind, (e: Expr) => Expr> = {
  sqrt: (e) => call('sqrt', e),
  exp: (e) => call('exp', e),
  log: (e) => call('log', e),
  erf: (e) => call('erf', e),
  floor: (e) => call('floor', e),
  ceil: (e) => call('ceil', e),
  // Half to even (ONNX Round; rintf in C).
  round: (e) => call('round', e),
  sin: (e) => call('sin', e),
  cos: (e) => call('cos', e),
  tan: (e) => call('tan', e),
  atan: (e) => call('atan', e),
  // -x as x * -1 keeps -0 for +0 (ONNX Runtime's Neg); integers as 0 - x.
  negative: (e) => (dtypeOf(e) === 'float32' ? mul(e, f32(-1)) : sub(0, e)),
  abs: (e) => (dtypeOf(e) === 'float32' ? call('fabs', e) : select(lt(e, 0), sub(0, e), e)),
  // 1, -1 or 0; a float's ±0 and NaN are returned as they are.
  sign: (e) => (dtypeOf(e) === 'float32' ? select(gt(e, f0f), f1f, select(lt(e, f0f), f32(-1), e)) : select(gt(e, 0), int(1), select(lt(e, 0), int(-1), int(0)))),
  reciprocal: (e) => div(f1f, e),
  softsign: (e) => div(e, add(f1f, call('fabs', e))),
  softplus: softplusExpr,
  mish: (e) => mul(e, call('tanh', softplusExpr(e))),
  round_f16: (e) => call('round_f16', e),
  round_bf16: (e) => call('round_bf16', e),
  ...Object.fromEntries(MINI_FLOAT_FNS.map(({ fn }) => [fn, (e: Expr) => call(fn, e)])) as Record<MiniFloatFn, (e: Expr) => Expr>,
};

export const UNARY_KINDS = Object.keys(UNARY) as UnaryKind[];

/** ONNX's parameterless unary operator `kind` elementwise, named T_<kind>. */
export function unaryOp(kind: UnaryKind, x: Tensor): Tensor {
  if (!INTEGER_UNARY.has(kind)) floatOnly(kind, x);
  else if (x.dtype === 'bool') throw new Error(`${kind}: ${x.name} is bool`);
  return unary(`T_${kind}`, x, UNARY[kind]);
}

/** ONNX Elu: x >= 0 ? x : alpha * (e^x - 1) (ONNX Runtime's comparison). */
export function elu(x: Tensor, alpha: number): Tensor {
  floatOnly('elu', x);
  return unary('T_elu', x, (e) => select(ge(e, f0f), e, mul(f32(alpha), sub(call('exp', e), f1f))));
}

/** ONNX Selu: gamma * (x > 0 ? x : alpha * e^x - alpha). */
export function selu(x: Tensor, alpha: number, gamma: number): Tensor {
  floatOnly('selu', x);
  return unary('T_selu', x, (e) => mul(f32(gamma), select(gt(e, f0f), e, sub(mul(f32(alpha), call('exp', e)), f32(alpha)))));
}

/** ONNX Celu: max(0, x) + min(0, alpha * (e^(x / alpha) - 1)). */
export function celu(x: Tensor, alpha: number): Tensor {
  floatOnly('celu', x);
  return unary('T_celu', x, (e) => add(max(e, f0f), min(f0f, mul(f32(alpha), sub(call('exp', div(e, f32(alpha))), f1f)))));
}

/** ONNX ThresholdedRelu: x > alpha ? x : 0. */
export function thresholdedRelu(x: Tensor, alpha: number): Tensor {
  floatOnly('thresholded_relu', x);
  return unary('T_thresholded_relu', x, (e) => select(gt(e, f32(alpha)), e, f0f));
}

/**
 * ONNX Gelu (opset 20): 'none' is 0.5 x (1 + erf(x / sqrt 2)); 'tanh' is
 * 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
 */
export function gelu(x: Tensor, approximate: 'none' | 'tanh'): Tensor {
  floatOnly('gelu', x);
  return unary('T_gelu', x, (e) => {
    const inner = approximate === 'tanh'
      ? call('tanh', mul(f32(Math.sqrt(2 / Math.PI)), add(e, mul(f32(0.044715), mul(mul(e, e), e)))))
      : call('erf', mul(e, f32(Math.SQRT1_2)));
    return mul(mul(e, f32(0.5)), add(f1f, inner));
  });
}

/** ONNX PRelu: x < 0 ? slope * x : x, the slope broadcasting to x's shape (only that way). */
export function prelu(x: Tensor, slope: Tensor): Tensor {
  floatOnly('prelu', x, slope);
  const shape = broadcastShape(x.shape, slope.shape);
  if (shape.length !== x.shape.length || shape.some((d, i) => d !== x.shape[i])) {
    throw new Error(`prelu: the slope [${slope.shape.join(', ')}] does not broadcast to the input [${x.shape.join(', ')}]`);
  }
  return broadcast2('T_prelu', x, slope, (e, s) => select(lt(e, f0f), mul(s, e), e));
}

/** Broadcasting x ** y (TOPI's power, C's powf); an integer exponent tensor is read as float. */
export function power(a: Tensor, b: Tensor): Tensor {
  floatOnly('power', a);
  if (b.dtype === 'bool') throw new Error(`power: the exponent ${b.name} is bool`);
  return broadcast2('T_power', a, b, (x, y) => call('pow', x, dtypeOf(y) === 'float32' ? y : castExpr('float32', y)));
}

/** x ** p for a constant p: 1, 2 and 3 as products, 0.5 as sqrt, any other p through powf. */
export function powerScalar(x: Tensor, p: number): Tensor {
  floatOnly('power', x);
  return unary('T_power', x, (e) => {
    if (p === 1) return mul(e, f1f);
    if (p === 2) return mul(e, e);
    if (p === 3) return mul(mul(e, e), e);
    if (p === 0.5) return call('sqrt', e);
    return call('pow', e, f32(p));
  });
}

/**
 * Broadcasting float remainder: 'trunc' is C's fmod (the dividend's sign: ONNX Mod with
 * fmod=1), 'floor' is a - floor(a / b) * b (the divisor's sign: Python's %, ONNX Mod with
 * fmod=0 on floats, opset 28), computed from fmod so that it is exact.
 */
export function floatMod(a: Tensor, b: Tensor, mode: 'trunc' | 'floor'): Tensor {
  floatOnly('fmod', a, b);
  return broadcast2(mode === 'trunc' ? 'T_fmod' : 'T_floor_mod', a, b, (x, y) => {
    const m = call('fmod', x, y);
    return mode === 'trunc' ? m : select(and(ne(m, f0f), ne(lt(m, f0f), lt(y, f0f))), add(m, y), m);
  });
}
