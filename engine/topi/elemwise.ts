// Elementwise and broadcasting operators.

import { call, f32, gt, select, load, max, min, mul, add, sub, div, dtypeOf, truncdiv, type Expr, type MathFn } from '../ir/expr';
import { compute, type Tensor } from '../ir/tensor';

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
export const clip = (x: Tensor, lo: number, hi: number): Tensor => unary('T_clip', x, (e) => max(min(e, f32(hi)), f32(lo)));
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
