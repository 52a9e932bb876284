// Linear quantization as computes over int32-carried integers (uint8/int8/uint16/int16
// values live in int32 tensors, their range given by qmin/qmax):
//   quantize:    q = saturate(round_half_even(x / scale) + zero_point)          (ONNX QuantizeLinear)
//   requantize:  q = saturate(round_half_even(float(acc) * multiplier) + zero_point) (QLinearConv/MatMul's output)
//   dequantize:  y = float(x - zero_point) * scale                               (ONNX DequantizeLinear)
//   dynamicQParams: DynamicQuantizeLinear's uint8 scale and zero point from the min and max of x.
// scale / multiplier / zero_point are per tensor (shape [] or [1]) or per axis (shape [C],
// C = x.shape[axis]). Rounding is exact: the value is clamped to +-2^17 (well outside every
// 16-bit range, so saturation is unchanged), truncated to an integer, and the exact
// fraction left decides the rounding (ties to the even neighbour), as C's nearbyint does.

import { add, and, cast, div, eq, f32, gt, int, load, lt, max, min, mul, ne, or, select, sub, truncmod, type Expr } from '../ir/expr';
import { compute, numElements, type Tensor } from '../ir/tensor';

const axisNames = (rank: number): string[] => Array.from({ length: rank }, (_, i) => `ax${i}`);

/** Where saturation cannot change: beyond every quantized range here (16-bit at most). */
const ROUND_LIMIT = 2 ** 17;

/** round-half-to-even of float `v`, as int32 (|v| clamped to 2^17 first). */
export function roundHalfEven(v: Expr): Expr {
  const c = max(min(v, f32(ROUND_LIMIT)), f32(-ROUND_LIMIT));
  const t = cast('int32', c); // truncates toward zero
  const frac = sub(c, cast('float32', t)); // exact: |c| < 2^24
  const odd = ne(truncmod(t, 2), 0);
  const up = or(gt(frac, f32(0.5)), and(eq(frac, f32(0.5)), odd));
  const down = or(lt(frac, f32(-0.5)), and(eq(frac, f32(-0.5)), odd));
  return sub(add(t, select(up, 1, 0)), select(down, 1, 0));
}

/** A per-tensor or per-axis parameter's value at output index `ax`. */
function param(p: Tensor, ax: readonly Expr[], axis: number, what: string, x: Tensor): Expr {
  if (numElements(p.shape) === 1) return load(p, p.shape.map(() => 0));
  if (p.shape.length !== 1 || p.shape[0] !== x.shape[axis]) {
    throw new Error(`${what} of shape [${p.shape.join(', ')}]: per axis it must be [${x.shape[axis]}] (axis ${axis} of [${x.shape.join(', ')}])`);
  }
  return load(p, [ax[axis]]);
}

function checkAxis(x: Tensor, axis: number): void {
  if (x.shape.length > 0 && (!Number.isInteger(axis) || axis < 0 || axis >= x.shape.length)) throw new Error(`axis ${axis} out of range for rank ${x.shape.length}`);
}

export interface QuantRange { readonly qmin: number; readonly qmax: number }

function quantizeWith(name: string, x: Tensor, s: Tensor, zp: Tensor | undefined, axis: number, r: QuantRange, f: (v: Expr, s: Expr) => Expr): Tensor {
  checkAxis(x, axis);
  if (s.dtype !== 'float32') throw new Error(`${name}: the scale is ${s.dtype}, not float32`);
  if (zp && zp.dtype !== 'int32') throw new Error(`${name}: the zero point is ${zp.dtype}, not an integer`);
  const names = axisNames(x.shape.length);
  // The scaled value is a stage of its own: stored, it is rounded to float32 before it is
  // rounded to an integer, in the reference evaluator too (whose arithmetic is double).
  const scaled = compute(`${name}_scaled`, x.shape, names, (...ax) => f(load(x, ax), param(s, ax, axis, 'scale', x)), 'broadcast');
  return compute(name, x.shape, names, (...ax) => {
    const q = roundHalfEven(load(scaled, ax));
    const z = zp ? add(q, param(zp, ax, axis, 'zero point', x)) : q;
    return min(max(z, int(r.qmin)), int(r.qmax));
  }, 'broadcast');
}

/** ONNX QuantizeLinear: float x -> int32-carried integers in [qmin, qmax]. */
export function quantize(x: Tensor, scale: Tensor, zeroPoint: Tensor | undefined, axis: number, range: QuantRange): Tensor {
  if (x.dtype !== 'float32') throw new Error(`quantize: x is ${x.dtype}, not float32`);
  return quantizeWith('T_quantize', x, scale, zeroPoint, axis, range, (v, s) => div(v, s));
}

/** An int32 accumulator scaled by a float multiplier into [qmin, qmax] (exact while |acc| < 2^24). */
export function requantize(acc: Tensor, multiplier: Tensor, zeroPoint: Tensor | undefined, axis: number, range: QuantRange): Tensor {
  if (acc.dtype !== 'int32') throw new Error(`requantize: the accumulator is ${acc.dtype}, not int32`);
  return quantizeWith('T_requantize', acc, multiplier, zeroPoint, axis, range, (v, m) => mul(cast('float32', v), m));
}

/** ONNX DequantizeLinear: (x - zero_point) * scale, in float32. */
export function dequantize(x: Tensor, scale: Tensor, zeroPoint: Tensor | undefined, axis: number): Tensor {
  checkAxis(x, axis);
  if (x.dtype !== 'int32') throw new Error(`dequantize: x is ${x.dtype}, not an integer`);
  if (scale.dtype !== 'float32') throw new Error(`dequantize: the scale is ${scale.dtype}, not float32`);
  if (zeroPoint && zeroPoint.dtype !== 'int32') throw new Error(`dequantize: the zero point is ${zeroPoint.dtype}, not an integer`);
  return compute('T_dequantize', x.shape, axisNames(x.shape.length), (...ax) => {
    const v = load(x, ax);
    const d = zeroPoint ? sub(v, param(zeroPoint, ax, axis, 'zero point', x)) : v;
    return mul(cast('float32', d), param(scale, ax, axis, 'scale', x));
  }, 'broadcast');
}

/**
 * DynamicQuantizeLinear's parameters, as ONNX Runtime computes them, from scalars `lo` =
 * min(x) and `hi` = max(x) (the range widened to hold 0): 'scale' = (hi - lo) / 255, 1 when
 * the range is empty; 'zero_point' (from `lo` and that scale, `hi` = the scale) =
 * round_half_even(clamp(0 - lo / scale, 0, 255)). Each float step is a stage (float32).
 */
export function dynamicQParams(lo: Tensor, hi: Tensor, which: 'scale' | 'zero_point'): Tensor {
  if (numElements(lo.shape) !== 1 || numElements(hi.shape) !== 1) throw new Error('dynamic_qparams: scalar inputs expected');
  const at = (t: Tensor): Expr => load(t, t.shape.map(() => 0));
  const mn = (): Expr => min(at(lo), f32(0));
  if (which === 'scale') {
    const range = compute('T_dynamic_range', [], [], () => sub(max(at(hi), f32(0)), mn()), 'elemwise');
    return compute('T_dynamic_scale', [], [], () => select(eq(at(range), f32(0)), f32(1), div(at(range), f32(255))), 'elemwise');
  }
  const initial = compute('T_dynamic_zero_point_initial', [], [], () => sub(f32(0), div(mn(), at(hi))), 'elemwise');
  return compute('T_dynamic_zero_point', [], [], () => roundHalfEven(max(min(at(initial), f32(255)), f32(0))), 'elemwise');
}
