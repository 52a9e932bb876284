// GridSample (ONNX GridSample, opsets 16, 20, 22; PyTorch's grid_sample): the input X
// [N, C, d_1..d_r] sampled at the positions a grid [N, o_1..o_r, r] gives, normalised to
// [-1, 1]; the output is [N, C, o_1..o_r]. The grid is data, so every index is computed in
// the kernel, in one injective stage, the way ONNX Runtime's CPU kernel computes it
// (grid_sample.cc; the ONNX reference agrees but where said):
//  - the grid's last axis lists the coordinates innermost axis first: component 0 indexes
//    d_r (x, the width), component r - 1 indexes d_1;
//  - unnormalised in float32: align_corners ((g + 1) / 2) * (d - 1), so -1 and 1 are the
//    centres of the corner pixels; otherwise ((g + 1) * d - 1) / 2, so they are the outer
//    edges of the corner pixels;
//  - nearest rounds the coordinate half to even (rintf) before the padding rule;
//  - reflection folds a coordinate outside [lo, hi] (align_corners [0, d - 1], else
//    [-0.5, d - 0.5]) back about lo and hi (period 2 (hi - lo)), each axis on its own
//    (the taps are reflected anyway and the kernels are symmetric, so this changes no
//    result, but it brings the coordinate inside for the guard below);
//    border and zeros leave it (border clamps the taps: ONNX Runtime's and PyTorch's rule.
//    The ONNX reference clamps the coordinate to [0, d - 1] first, which gives the same
//    result for nearest and linear but not for cubic, whose weights then change);
//  - taps: nearest 1, linear 2 (floor(x), floor(x) + 1, weights 1 - t and t), cubic 4
//    (floor(x) - 1 .. floor(x) + 2, Keys' cubic convolution with A = -0.75 at t), where
//    t = x - floor(x); the taps' weights multiply across axes, summed innermost axis first
//    (ONNX Runtime's order: the rows of a 2-D window first, then across them);
//  - a tap index outside [0, d) reads 0 with zeros, the nearest pixel with border, and is
//    reflected (as an integer, about the same bounds) with reflection. Under zeros the index
//    is clamped and the value selected away, so no read leaves the input.
// Two guards keep the arithmetic defined where ONNX Runtime's is not: a coordinate is
// clamped to [-3, d + 2] before its taps are taken (every tap of a point beyond that is
// outside the input, so zeros and border read the same pixels, and reflection has already
// folded it inside), so the cast to int32 never overflows; and reflection over one pixel with
// align_corners (lo = hi = 0, a zero period) samples that pixel.

import { add, and, call, cast, div, f32, floormod, ge, gt, int, load, lt, max, min, mul, or, select, sub, type Expr } from '../ir/expr';
import { compute, type Tensor } from '../ir/tensor';

export type GridSampleMode = 'nearest' | 'linear' | 'cubic';
export type GridSamplePadding = 'zeros' | 'border' | 'reflection';

export interface GridSampleOptions {
  readonly mode: GridSampleMode;
  readonly padding: GridSamplePadding;
  readonly alignCorners: boolean;
}

/** Keys' cubic convolution coefficient (ONNX Runtime and PyTorch use A = -0.75 for GridSample). */
export const CUBIC_A = -0.75;

const floorF = (x: Expr): Expr => call('floor', x);

/** The four cubic weights of taps floor(x) - 1 .. floor(x) + 2 at t = x - floor(x), in [0, 1). */
export function cubicWeights(t: Expr): Expr[] {
  const a = CUBIC_A;
  const far = (s: Expr): Expr => sub(mul(add(mul(sub(mul(f32(a), s), f32(5 * a)), s), f32(8 * a)), s), f32(4 * a)); // 1 < s < 2
  const near = (s: Expr): Expr => add(mul(mul(sub(mul(f32(a + 2), s), f32(a + 3)), s), s), f32(1)); // 0 <= s <= 1
  return [far(add(t, f32(1))), near(t), near(sub(f32(1), t)), far(sub(f32(2), t))];
}

/** The coordinate, in pixels, of normalised grid value `g` along an axis of `d` pixels. */
function unnormalise(g: Expr, d: number, alignCorners: boolean): Expr {
  return alignCorners
    ? mul(div(add(g, f32(1)), f32(2)), f32(d - 1))
    : div(sub(mul(add(g, f32(1)), f32(d)), f32(1)), f32(2));
}

/** A coordinate outside [lo, hi] folded back by reflection; the other padding rules act on the taps alone. */
function padCoordinate(x: Expr, d: number, o: GridSampleOptions): Expr {
  if (o.padding !== 'reflection') return x;
  const lo = o.alignCorners ? 0 : -0.5, hi = o.alignCorners ? d - 1 : d - 0.5;
  const range = hi - lo;
  if (range === 0) return f32(0);
  // Folding about lo and hi is periodic in 2 * range: m = (x - lo) mod 2 range, then
  // hi - |m - range| is m's image in [lo, hi]. Points inside are kept exactly.
  const u = sub(x, f32(lo));
  const m = sub(u, mul(floorF(div(u, f32(2 * range))), f32(2 * range)));
  const folded = sub(f32(hi), call('fabs', sub(m, f32(range))));
  return select(or(lt(x, f32(lo)), gt(x, f32(hi))), folded, x);
}

/** An integer tap index made a valid index of an axis of `d` pixels by the padding rule (zeros: clamped; the caller masks it). */
function padIndex(i: Expr, d: number, o: GridSampleOptions): Expr {
  const clamp = (e: Expr): Expr => max(min(e, int(d - 1)), int(0));
  if (o.padding !== 'reflection') return clamp(i);
  // Reflection about [lo, hi] of an integer: period 2d about [-0.5, d - 0.5], 2(d - 1) about [0, d - 1].
  if (o.alignCorners && d === 1) return int(0);
  const period = o.alignCorners ? 2 * (d - 1) : 2 * d;
  const m = floormod(i, int(period));
  return min(m, sub(int(o.alignCorners ? period : period - 1), m));
}

interface AxisTaps {
  readonly index: Expr[];
  readonly weight?: Expr[];
  /** Per tap, whether it lies inside the input (zeros padding only). */
  readonly inside?: Expr[];
}

function axisTaps(x: Expr, d: number, o: GridSampleOptions): AxisTaps {
  // Beyond [-3, d + 2] every tap is outside the input (and the cast stays in int32's range):
  // zeros reads 0 for all of them, border the edge pixel (the weights sum to 1) either way.
  const xc = min(max(x, f32(-3)), f32(d + 2));
  let first: Expr, offsets: number[], weight: Expr[] | undefined;
  if (o.mode === 'nearest') {
    first = cast('int32', xc);
    offsets = [0];
  } else {
    const fl = floorF(xc);
    first = cast('int32', fl);
    if (o.mode === 'linear') {
      offsets = [0, 1];
      weight = [sub(add(fl, f32(1)), xc), sub(xc, fl)];
    } else {
      offsets = [-1, 0, 1, 2];
      weight = cubicWeights(sub(xc, fl));
    }
  }
  const taps = offsets.map((k) => add(first, int(k)));
  return {
    index: taps.map((t) => padIndex(t, d, o)),
    weight,
    inside: o.padding === 'zeros' ? taps.map((t) => and(ge(t, int(0)), lt(t, int(d)))) : undefined,
  };
}

export function gridSample(data: Tensor, grid: Tensor, o: GridSampleOptions): Tensor {
  const rank = data.shape.length, r = rank - 2;
  if (r < 1) throw new Error(`grid_sample: input of rank ${rank} (at least 3: [N, C, d...])`);
  if (data.dtype !== 'float32' || grid.dtype !== 'float32') throw new Error(`grid_sample: ${data.dtype} input and ${grid.dtype} grid (float32 both)`);
  if (grid.shape.length !== rank || grid.shape[0] !== data.shape[0] || grid.shape[rank - 1] !== r) {
    throw new Error(`grid_sample: grid [${grid.shape.join(', ')}] for input [${data.shape.join(', ')}] (expected [${data.shape[0]}, ..., ${r}])`);
  }
  const sizes = data.shape.slice(2);
  const shape = [data.shape[0], data.shape[1], ...grid.shape.slice(1, rank - 1)];
  const names = shape.map((_, i) => `ax${i}`);
  return compute('grid_sample', shape, names, (...ax) => {
    const [n, c, ...pos] = ax;
    const axes = sizes.map((d, i) => {
      const g = load(grid, [n, ...pos, int(r - 1 - i)]);
      const x = unnormalise(g, d, o.alignCorners);
      return axisTaps(padCoordinate(o.mode === 'nearest' ? call('round', x) : x, d, o), d, o);
    });
    // Sum over the taps of axis k of weight * (the sum over the later axes), innermost axis deepest.
    const over = (k: number, index: Expr[], inside: Expr[]): Expr => {
      if (k === r) {
        const v = load(data, [n, c, ...index]);
        return inside.length ? select(inside.reduce((a, b) => and(a, b)), v, f32(0)) : v;
      }
      const a = axes[k];
      const terms = a.index.map((i, t) => {
        const rest = over(k + 1, [...index, i], a.inside ? [...inside, a.inside[t]] : inside);
        return a.weight ? mul(a.weight[t], rest) : rest;
      });
      return terms.reduce((p, q) => add(p, q));
    };
    return over(0, [], []);
  }, 'injective');
}
