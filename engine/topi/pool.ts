// Pooling over any number of spatial axes (TOPI `pool1d`/`pool3d`, and 2-D pools with
// dilations): max and average windows with strides, dilations and explicit padding, and
// global pooling of 3-D images. The 2-D pools without dilations stay nn.ts's `pool2d`.
//
// Layouts name where the channel sits: channels first (NCW, NCHW, NCDHW) or last (NWC,
// NHWC, NDHWC). `spatialAxes` gives the positions of the spatial axes of either.

import {
  add, call, cast, div, f32, floordiv, load, max, maxReduce, min, mul, reduceAxis, sub, sum, type Expr, type IterVar,
} from '../ir/expr';
import { compute, type Tensor } from '../ir/tensor';
import { pad } from './transform';

/** The 3-D layouts (TVM's names); 2-D ops keep nn.ts's 'NCHW' | 'NHWC'. */
export type Layout3d = 'NCDHW' | 'NDHWC';

/** Whether a layout string puts channels last (NHWC, NDHWC, NWC). */
export const channelsLast = (layout: string): boolean => layout.endsWith('C');

/** Positions of the spatial axes of a `rank`-d tensor (channels first: 2.., last: 1..rank-2). */
export function spatialAxes(rank: number, last: boolean): number[] {
  return Array.from({ length: rank - 2 }, (_, i) => (last ? 1 + i : 2 + i));
}

/** Output extent of a window of `k` taps (dilation `d`) sliding by `s` over `n` + padding. */
export function windowOut(n: number, k: number, s: number, d: number, before: number, after: number): number {
  const size = Math.floor((n + before + after - (d * (k - 1) + 1)) / s) + 1;
  if (size < 1) throw new Error(`window of ${k} (dilation ${d}) does not fit an input of ${n} with padding ${before}+${after}`);
  return size;
}

const MIN_FLOAT32 = -3.4028234663852886e38;

export interface PoolParams {
  /** lp: (sum of |x|^p over the window)^(1/p), ONNX's LpPool (padding adds 0). */
  kind: 'max' | 'avg' | 'lp';
  /** lp only: the integer exponent (default 2). */
  p?: number;
  /** One entry per spatial axis, in order (D, H, W). */
  kernel: readonly number[];
  strides: readonly number[];
  dilation?: readonly number[];
  /** [begin..., end...], one pair per spatial axis (ONNX's `pads` order). */
  padding: readonly number[];
  /**
   * Extra padding after `padding`'s end (ceil_mode's last partial window): read like
   * padding, never counted by count_include_pad (ONNX Runtime's rule).
   */
  ceilPadding?: readonly number[];
  /** avg only: padded positions count in the divisor. */
  countIncludePad?: boolean;
  /** Channels last (NWC, NHWC, NDHWC) or first. */
  channelsLast: boolean;
}

/** Taps of a window starting at `start` (step `d`, `k` taps) that land in [lo, hi): a count as an int expression. */
function tapsInside(start: Expr, k: number, d: number, lo: number, hi: number): Expr {
  // Tap r sits at start + r*d; r in [ceil((lo - start)/d), ceil((hi - start)/d)) clipped to [0, k).
  const ceilDiv = (a: Expr): Expr => floordiv(add(a, d - 1), d);
  const first = max(ceilDiv(sub(lo, start)), 0);
  const end = min(ceilDiv(sub(hi, start)), k);
  return max(sub(end, first), 0);
}

/**
 * max/avg pooling over the spatial axes of a 3-d (1-D pool), 4-d or 5-d (3-D pool) tensor.
 * Stages as TOPI's pool: the padded input (when padded), `pool_max` or `pool_sum`, and for
 * avg `pool_avg` dividing by the window's count (all taps, or only those inside the input).
 */
export function poolNd(data: Tensor, p: PoolParams): Tensor {
  const rank = data.shape.length;
  const sp = spatialAxes(rank, p.channelsLast);
  const n = sp.length;
  if (n < 1 || p.kernel.length !== n || p.strides.length !== n || p.padding.length !== 2 * n) {
    throw new Error(`pool: a ${rank}-d input needs ${n} kernel sizes and strides and ${2 * n} pads`);
  }
  const dil = p.dilation ?? sp.map(() => 1);
  const extra = p.ceilPadding ?? sp.map(() => 0);
  const before = data.shape.map(() => 0), after = data.shape.map(() => 0);
  sp.forEach((a, i) => { before[a] = p.padding[i]; after[a] = p.padding[n + i] + extra[i]; });
  const outShape = [...data.shape];
  sp.forEach((a, i) => { outShape[a] = windowOut(data.shape[a], p.kernel[i], p.strides[i], dil[i], before[a], after[a]); });
  const hasPad = before.some((x) => x > 0) || after.some((x) => x > 0);
  const padded = hasPad ? pad(data, before, after, 'pad_temp', p.kind === 'max' ? MIN_FLOAT32 : 0, 'cpp') : data;
  const rv: IterVar[] = sp.map((_, i) => reduceAxis(`rv${i}`, p.kernel[i]));
  const axes = data.shape.map((_, i) => `ax${i}`);
  const window = (ax: Expr[]): Expr[] => {
    const idx = [...ax];
    sp.forEach((a, i) => { idx[a] = add(mul(ax[a], p.strides[i]), mul({ k: 'var', name: rv[i].name }, dil[i])); });
    return idx;
  };
  if (p.kind === 'max') return compute('pool_max', outShape, axes, (...ax) => maxReduce(load(padded, window(ax)), rv), 'pool');
  if (p.kind === 'lp') return lpRoot(compute('pool_sum', outShape, axes, (...ax) => sum(lpPower(load(padded, window(ax)), p.p ?? 2), rv), 'pool'), p.p ?? 2);
  const total = compute('pool_sum', outShape, axes, (...ax) => sum(load(padded, window(ax)), rv), 'pool');
  const uniform = (p.countIncludePad && extra.every((x) => x === 0)) || !hasPad;
  const taps = p.kernel.reduce((a, b) => a * b, 1);
  return compute('pool_avg', outShape, axes, (...ax) => {
    if (uniform) return div(load(total, ax), f32(taps));
    // The divisor: taps inside the input (or inside input + explicit pads, with count_include_pad).
    const counts = sp.map((a, i) => {
      const start = sub(mul(ax[a], p.strides[i]), p.padding[i]);
      const lo = p.countIncludePad ? -p.padding[i] : 0;
      const hi = data.shape[a] + (p.countIncludePad ? p.padding[n + i] : 0);
      return tapsInside(start, p.kernel[i], dil[i], lo, hi);
    });
    const count = counts.reduce((acc, c) => mul(acc, c));
    return div(load(total, ax), cast('float32', max(count, 1)));
  }, 'pool');
}

/** |x|^p for a positive integer p, by multiplications. */
function lpPower(x: Expr, p: number): Expr {
  if (!Number.isInteger(p) || p < 1) throw new Error(`lp pool: p = ${p} (a positive integer)`);
  const a = p % 2 === 0 ? x : call('fabs', x);
  let out = a;
  for (let i = 1; i < p; i++) out = mul(out, a);
  return out;
}

/** The p-th root of each element of `total`: itself, sqrt, or exp(log(s)/p) (0 for s = 0). */
function lpRoot(total: Tensor, p: number): Tensor {
  const axes = total.shape.map((_, i) => `ax${i}`);
  return compute('pool_lp', total.shape, axes, (...ax) => {
    const s = load(total, ax);
    if (p === 1) return s;
    if (p === 2) return call('sqrt', s);
    return call('exp', div(call('log', s), f32(p)));
  }, 'pool');
}

/**
 * Global max/avg pooling of a 5-d tensor (TOPI `global_pool` over D, H, W; `adaptive_pool3d`
 * to 1x1x1): output [N, C, 1, 1, 1] or [N, 1, 1, 1, C].
 */
export function globalPool3d(data: Tensor, kind: 'avg' | 'max', layout: Layout3d): Tensor {
  if (data.shape.length !== 5) throw new Error(`global_pool3d: a 5-d input, got [${data.shape.join(', ')}]`);
  const sp = spatialAxes(5, channelsLast(layout));
  const rv = sp.map((a, i) => reduceAxis(`rv${i}`, data.shape[a]));
  const shape = data.shape.map((d, i) => (sp.includes(i) ? 1 : d));
  const axes = shape.map((_, i) => `ax${i}`);
  const source = (ax: Expr[]): Expr[] => ax.map((a, i) => (sp.includes(i) ? { k: 'var', name: rv[sp.indexOf(i)].name } : a));
  if (kind === 'max') return compute('adaptive_pool_max', shape, axes, (...ax) => maxReduce(load(data, source(ax)), rv), 'pool');
  const total = compute('adaptive_pool_sum', shape, axes, (...ax) => sum(load(data, source(ax)), rv), 'pool');
  const count = sp.reduce((acc, a) => acc * data.shape[a], 1);
  return compute('adaptive_pool_avg', shape, axes, (...ax) => div(load(total, ax), f32(count)), 'pool');
}
