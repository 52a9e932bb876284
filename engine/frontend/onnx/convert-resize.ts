// ONNX Resize (opsets 10, 11, 13, 18, 19) and Upsample (7, 9) as the table-driven
// `resize` op (topi/resize.ts). The converter decides the output shape and, per resized
// axis, the source indices and weights of every output position, computed in float32 the
// way ONNX Runtime's CPU kernel computes them (upsamplebase.h, upsample.cc), so a nearest
// index at an exact half, or a coordinate a rounding away from a pixel edge, comes out as
// it does there:
//  - scales or sizes (sizes win; keep_aspect_ratio_policy and axes at 18); an output
//    dimension from a scale is trunc(scale * input) in float32, a scale from sizes is
//    out / in in float32;
//  - coordinate_transformation_mode: half_pixel (default), half_pixel_symmetric,
//    pytorch_half_pixel, align_corners, asymmetric (the only one before 11),
//    tf_half_pixel_for_nn, tf_crop_and_resize (roi, extrapolation_value);
//  - nearest with round_prefer_floor (default), round_prefer_ceil, floor, ceil; opset 10
//    Resize and Upsample use the older rule (truncate when upsampling, ceil when downsampling);
//  - linear: n-linear over every resized axis (2 taps each, both 0.5 where they coincide at
//    the border); cubic: 4 taps each with cubic_coeff_a (default -0.75), edge taps clamped
//    or, with exclude_outside, dropped and the rest renormalized;
//  - an axis with scale 1 is copied as it is, and a resize that changes no dimension is the
//    input (ONNX Runtime does both, whatever the mode and roi);
//  - a nearest axis whose indices are floor((a*o + b) / c) gets that expression, not a table;
//  - antialias=1 (opset 18+, linear and cubic): ONNX Runtime's filter (upsample_antialias.h),
//    see antialiasTables; nearest ignores it (the spec gives it to linear and cubic only;
//    ONNX Runtime and the ONNX reference refuse the pair), and so do opsets before 18,
//    where the attribute does not exist (ONNX Runtime does not read it there).

import { numElements } from '../../ir/tensor';
import { UnsupportedError, type Converter, type NodeView, type Value } from './context';
import { normAxis } from './static';

const f = Math.fround;

export type CoordinateMode =
  | 'half_pixel' | 'half_pixel_symmetric' | 'pytorch_half_pixel' | 'align_corners' | 'asymmetric' | 'tf_half_pixel_for_nn' | 'tf_crop_and_resize';
export type NearestMode = 'round_prefer_floor' | 'round_prefer_ceil' | 'floor' | 'ceil' | 'simple';
export type ResizeMethod = 'nearest' | 'linear' | 'cubic';

const COORDINATE_MODES: readonly string[] = ['half_pixel', 'half_pixel_symmetric', 'pytorch_half_pixel', 'align_corners', 'asymmetric', 'tf_half_pixel_for_nn', 'tf_crop_and_resize'];
const NEAREST_MODES: readonly string[] = ['round_prefer_floor', 'round_prefer_ceil', 'floor', 'ceil'];

/** One resized axis: lengths, the float32 scale, the roi of tf_crop_and_resize. */
export interface AxisResize {
  readonly inLen: number;
  readonly outLen: number;
  readonly scale: number;
  readonly roiStart: number;
  readonly roiEnd: number;
}

/** The input coordinate of output position x, in float32 as ONNX Runtime computes it. */
export function originalCoordinate(mode: CoordinateMode, x: number, a: AxisResize): number {
  const { scale, inLen, outLen, roiStart, roiEnd } = a;
  switch (mode) {
    case 'asymmetric': return f(x / scale);
    case 'pytorch_half_pixel': return outLen > 1 ? f(f(f(x + 0.5) / scale) - 0.5) : 0;
    case 'tf_half_pixel_for_nn': return f(f(x + 0.5) / scale);
    case 'align_corners': return outLen === 1 ? 0 : f(f(x * (inLen - 1)) / (outLen - 1));
    case 'tf_crop_and_resize':
      return outLen > 1
        ? f(f(roiStart * (inLen - 1)) + f(f(f(x * f(roiEnd - roiStart)) * (inLen - 1)) / (outLen - 1)))
        : f(0.5 * f(roiStart + roiEnd) * (inLen - 1)); // in double there
    case 'half_pixel_symmetric': {
      const adjustment = f(outLen / f(scale * inLen));
      const offset = f(f(inLen / 2) * f(1 - adjustment));
      return f(offset + (x + 0.5) / scale - 0.5); // in double there
    }
    case 'half_pixel': return f(f(f(x + 0.5) / scale) - 0.5);
  }
}

/** C's std::round: halves away from zero. */
const roundAway = (x: number): number => (x < 0 ? -Math.round(-x) : Math.round(x));

/** Within 1e-6 of a half (ONNX Runtime 1.30's rounding modes count such a coordinate as the half: measured). */
const nearHalf = (x: number): boolean => Math.abs(f(x - f(Math.floor(x) + 0.5))) < f(1e-6);

export function nearestIndex(mode: NearestMode, x: number, downsampling: boolean): number {
  switch (mode) {
    case 'simple': return downsampling ? Math.ceil(x) : Math.trunc(x);
    case 'round_prefer_ceil': return nearHalf(x) ? Math.ceil(x) : roundAway(x);
    case 'floor': return Math.floor(x);
    case 'ceil': return Math.ceil(x);
    case 'round_prefer_floor': return nearHalf(x) ? Math.floor(x) : roundAway(x);
  }
}

/** Keys' cubic convolution weights of the 4 taps around a coordinate with fraction s, in float32. */
export function cubicCoefficients(s: number, A: number): number[] {
  const a = f(A), t = f(Math.abs(s));
  const s1 = f(t + 1), s2 = f(1 - t), s3 = f(2 - t);
  const outer = (u: number): number => f(f(f(f(f(f(a * u) - f(5 * a)) * u) + f(8 * a)) * u) - f(4 * a));
  const inner = (u: number): number => f(f(f(f(f(f(a + 2) * u) - f(a + 3)) * u) * u) + 1);
  return [outer(s1), inner(t), inner(s2), outer(s3)];
}

export interface ResizeTables {
  readonly taps: number;
  /** [outLen, taps (+1 inside flag when extrapolating)] */
  readonly index: Int32Array;
  /** [outLen, taps], absent for nearest */
  readonly weight?: Float32Array;
}

export interface ResizeOptions {
  readonly method: ResizeMethod;
  readonly coordinate: CoordinateMode;
  readonly nearest: NearestMode;
  readonly cubicA: number;
  readonly excludeOutside: boolean;
  readonly extrapolate: boolean;
}

/** The tables of one axis whose scale is not 1. */
export function axisTables(a: AxisResize, o: ResizeOptions): ResizeTables {
  const taps = o.method === 'nearest' ? 1 : o.method === 'linear' ? 2 : 4;
  const cols = taps + (o.extrapolate ? 1 : 0);
  const index = new Int32Array(a.outLen * cols);
  const weight = taps > 1 ? new Float32Array(a.outLen * taps) : undefined;
  const last = a.inLen - 1;
  const clampIndex = (i: number): number => Math.min(Math.max(i, 0), last);
  for (let x = 0; x < a.outLen; x++) {
    const orig = originalCoordinate(o.coordinate, x, a);
    const row = x * cols;
    if (o.extrapolate) index[row + taps] = orig < 0 || orig > last ? 0 : 1;
    if (o.method === 'nearest') {
      index[row] = clampIndex(nearestIndex(o.nearest, orig, a.scale < 1));
    } else if (o.method === 'linear') {
      const c = Math.max(0, Math.min(orig, last));
      const i1 = Math.min(Math.trunc(c), last), i2 = Math.min(i1 + 1, last);
      const same = i1 === i2;
      index[row] = i1; index[row + 1] = i2;
      weight![x * 2] = same ? 0.5 : f(Math.abs(c - i2));
      weight![x * 2 + 1] = same ? 0.5 : f(Math.abs(c - i1));
    } else {
      const xi = Math.floor(orig);
      const coeffs = cubicCoefficients(f(orig - xi), o.cubicA);
      let sum = 1;
      if (o.excludeOutside) {
        sum = 0;
        for (let t = 0; t < 4; t++) {
          if (xi - 1 + t < 0 || xi - 1 + t > last) coeffs[t] = 0;
          sum = f(sum + coeffs[t]);
        }
      }
      for (let t = 0; t < 4; t++) {
        index[row + t] = clampIndex(xi - 1 + t);
        weight![x * 4 + t] = f(coeffs[t] / sum);
      }
    }
  }
  return { taps, index, weight };
}

/**
 * The most taps an antialiased axis may have: each is one term of the unrolled sum (a
 * linear downscale to 1/64, a cubic one to 1/32, still fit).
 */
export const MAX_ANTIALIAS_TAPS = 129;

/** The antialias filter at distance x (in output pixels): the triangle, or Keys' cubic with coefficient a, in float32. */
function antialiasFilter(method: 'linear' | 'cubic', x: number, a: number): number {
  const t = Math.abs(x);
  if (method === 'linear') return t < 1 ? f(1 - t) : 0;
  if (t < 1) return f(f(f(f(f(f(a + 2) * t) - f(a + 3)) * t) * t) + 1);
  if (t < 2) return f(f(f(f(f(f(t - 5) * t) + 8) * t) - 4) * a);
  return 0;
}

/** Taps of an antialiased axis: ceil(support) * 2 + 1, the support stretched by 1/scale when downsampling. */
export function antialiasTaps(method: 'linear' | 'cubic', scale: number): number {
  const half = method === 'linear' ? 1 : 2;
  const inv = f(1 / scale);
  return Math.ceil(inv >= 1 ? f(half * inv) : half) * 2 + 1;
}

/**
 * The tables of one antialiased axis (linear or cubic), as ONNX Runtime's CPU kernel
 * builds them (SetupUpsampleFilterAntiAlias), in float32:
 *  - when downsampling (scale < 1) the filter is stretched by 1/scale: its support (1 for
 *    the triangle, 2 for the cubic, each side) grows to support/scale and its argument is
 *    the distance times scale; when upsampling it is the plain filter (the result is
 *    plain linear/cubic interpolation);
 *  - output x covers the input pixels j in [floor(c - support + 0.5), floor(c + support + 0.5))
 *    with c = originalCoordinate(x) + 0.5, at most `taps` of them, each weighted
 *    filter((j - c + 0.5) * min(scale, 1)) and all divided by their sum;
 *  - pixels outside the input: with exclude_outside they are left out before the sum is
 *    taken; without it their weights go to the nearest edge pixel (the edge is repeated).
 * Rows have `taps` columns; the unused ones weigh 0 and point at a pixel of the window.
 * With `extrapolate` the last column is 1 where the coordinate lies inside the input.
 */
export function antialiasTables(a: AxisResize, o: ResizeOptions): ResizeTables {
  if (o.method === 'nearest') throw new Error('antialiasTables: nearest has no filter');
  const method = o.method;
  const inv = f(1 / a.scale); // input pixels per output pixel
  const support = inv >= 1 ? f((method === 'linear' ? 1 : 2) * inv) : method === 'linear' ? 1 : 2;
  const taps = antialiasTaps(method, a.scale);
  const stretch = inv >= 1 ? f(1 / inv) : 1;
  const cubicA = f(o.cubicA);
  const cols = taps + (o.extrapolate ? 1 : 0);
  const index = new Int32Array(a.outLen * cols);
  const weight = new Float32Array(a.outLen * taps);
  const clamp = (v: number, lo: number, hi: number): number => Math.min(Math.max(v, lo), hi);
  const buf = new Float64Array(taps);
  for (let x = 0; x < a.outLen; x++) {
    const center = f(0.5 + originalCoordinate(o.coordinate, x, a));
    const row = x * cols;
    if (o.extrapolate) {
      const orig = f(center - 0.5);
      index[row + taps] = orig < 0 || orig > a.inLen - 1 ? 0 : 1;
    }
    const realMin = Math.floor(f(f(center - support) + 0.5));
    const realMax = realMin + clamp(Math.floor(f(f(center + support) + 0.5)) - realMin, 0, taps);
    const cutMin = clamp(realMin, 0, a.inLen), cutMax = clamp(realMax, 0, a.inLen);
    const lo = o.excludeOutside ? cutMin : realMin;
    const len = (o.excludeOutside ? cutMax : realMax) - lo;
    buf.fill(0);
    let total = 0;
    for (let k = 0; k < len; k++) {
      buf[k] = antialiasFilter(method, f(f(f(lo + k - center) + 0.5) * stretch), cubicA);
      total = f(total + buf[k]);
    }
    if (!o.excludeOutside && cutMin < cutMax) {
      // The weights of pixels before the input go to its first pixel, those after it to its last.
      const before = clamp(-lo, 0, len - 1);
      for (let k = 0; k < before; k++) buf[before] = f(buf[before] + buf[k]);
      const after = clamp(len + lo - a.inLen, 0, len - 1);
      for (let k = len - after; k < len; k++) buf[len - after - 1] = f(buf[len - after - 1] + buf[k]);
      if (before > 0) for (let k = 0; k < cutMax - cutMin; k++) buf[k] = buf[k + before];
    }
    const scaleBy = total === 0 ? 1 : f(1 / total);
    const used = cutMax - cutMin;
    const spare = clamp(cutMin, 0, a.inLen - 1);
    for (let k = 0; k < taps; k++) {
      index[row + k] = k < used ? cutMin + k : spare;
      weight[x * taps + k] = k < used ? f(buf[k] * scaleBy) : 0;
    }
  }
  return { taps, index, weight };
}

/**
 * [a, b, c] with index[o] = floor((a*o + b) / c) for every o, c <= 64, when there is one
 * (nearest tables of rational scales are such steps: a 2x upsample is [1, 0, 2]).
 */
export function affineFit(index: Int32Array): [number, number, number] | undefined {
  const n = index.length;
  if (n === 1) return [0, index[0], 1];
  for (let c = 1; c <= 64; c++) {
    const slope = (c * (index[n - 1] - index[0])) / (n - 1);
    for (let a = Math.max(0, Math.floor(slope) - 1); a <= Math.ceil(slope) + 1; a++) {
      let lo = -Infinity, hi = Infinity;
      for (let o = 0; o < n && lo <= hi; o++) {
        lo = Math.max(lo, c * index[o] - a * o);
        hi = Math.min(hi, c * index[o] + c - 1 - a * o);
      }
      if (lo <= hi) return [a, lo, c];
    }
  }
  return undefined;
}

interface Plan {
  readonly outShape: number[];
  readonly scales: number[];
  readonly roi: number[];
}

/** Output shape, float32 scales and roi (start, end per axis) of a Resize/Upsample node. */
function plan(n: NodeView, inShape: readonly number[]): Plan & { antialias: boolean; options: Omit<ResizeOptions, 'extrapolate'> } {
  const rank = inShape.length;
  const isResize = n.opType === 'Resize';
  if (!isResize && n.opset >= 10) throw new UnsupportedError('Upsample is deprecated from opset 10 (use Resize)');
  const modern = isResize && n.opset >= 11;
  const method = n.attr.string('mode', 'nearest');
  if (method !== 'nearest' && method !== 'linear' && (method !== 'cubic' || !modern)) throw new UnsupportedError(`mode '${method}'`);
  const coordinate = modern ? n.attr.string('coordinate_transformation_mode', 'half_pixel') : 'asymmetric';
  if (!COORDINATE_MODES.includes(coordinate)) throw new UnsupportedError(`coordinate_transformation_mode '${coordinate}'`);
  const nearest = modern ? n.attr.string('nearest_mode', 'round_prefer_floor') : 'simple';
  if (nearest !== 'simple' && !NEAREST_MODES.includes(nearest)) throw new UnsupportedError(`nearest_mode '${nearest}'`);
  // The attribute exists from opset 18; ONNX Runtime reads it only there.
  const antialias = isResize && n.opset >= 18 && method !== 'nearest' && n.attr.int('antialias', 0) !== 0;
  const excludeOutside = n.attr.int('exclude_outside', 0) !== 0;
  if (excludeOutside && method !== 'cubic') throw new Error(`exclude_outside=1 needs mode 'cubic' (mode is '${method}')`);

  const axesAttr = isResize && n.opset >= 18 ? n.attr.ints('axes') : undefined;
  const axes = axesAttr ? axesAttr.map((a) => normAxis(a, rank, 'Resize axis')) : Array.from({ length: rank }, (_, i) => i);
  if (new Set(axes).size !== axes.length) throw new Error(`Resize: repeated axes [${axesAttr!.join(', ')}]`);

  const present = (i: number): boolean => n.optional(i) !== undefined && numElements(n.shape(i)) > 0;
  const floats = (i: number, what: string): number[] => [...n.static(i, what).data].map(f);
  let scaleList: number[] | undefined, sizeList: number[] | undefined, roiList: number[] | undefined;
  if (!isResize && n.opset < 9) {
    scaleList = (n.attr.floats('scales') ?? []).map(f);
  } else if (!modern) {
    scaleList = floats(1, 'scales');
  } else {
    if (present(3)) sizeList = n.ints(3, 'sizes');
    else if (present(2)) scaleList = floats(2, 'scales');
    else throw new Error('Resize needs scales or sizes');
    if (coordinate === 'tf_crop_and_resize' && present(1)) roiList = floats(1, 'roi');
  }
  const given = (sizeList ?? scaleList)!;
  if (given.length !== axes.length) throw new Error(`${n.opType}: ${given.length} ${sizeList ? 'sizes' : 'scales'} for ${axes.length} axes`);
  if (roiList && roiList.length !== 2 * axes.length) throw new Error(`Resize: roi has ${roiList.length} values for ${axes.length} axes`);

  const scales = new Array<number>(rank).fill(1);
  const outShape = [...inShape];
  const roi = [...new Array<number>(rank).fill(0), ...new Array<number>(rank).fill(1)];
  axes.forEach((a, k) => {
    if (roiList) { roi[a] = roiList[k]; roi[rank + a] = roiList[axes.length + k]; }
    if (sizeList) {
      outShape[a] = sizeList[k];
      scales[a] = f(sizeList[k] / inShape[a]);
    } else {
      const s = scaleList![k];
      if (!(s > 0) || (!isResize && s < 1)) throw new Error(`${n.opType}: scale ${s} (must be ${isResize ? 'positive' : '>= 1'})`);
      scales[a] = s;
      outShape[a] = Math.trunc(f(s * inShape[a]));
      // ONNX Runtime divides by the integer output length minus 1, the ONNX reference by scale * input minus 1.
      if (coordinate === 'align_corners' && s !== 1 && outShape[a] !== f(s * inShape[a])) {
        throw new UnsupportedError(`align_corners with scale ${s} on an axis of ${inShape[a]} (a fractional output length; ONNX Runtime and the ONNX reference disagree there: give sizes)`);
      }
    }
  });
  const policy = isResize && n.opset >= 18 ? n.attr.string('keep_aspect_ratio_policy', 'stretch') : 'stretch';
  if (policy !== 'stretch') {
    if (policy !== 'not_larger' && policy !== 'not_smaller') throw new UnsupportedError(`keep_aspect_ratio_policy '${policy}'`);
    if (sizeList) {
      const picked = axes.map((a) => scales[a]).reduce((x, y) => (policy === 'not_larger' ? Math.min(x, y) : Math.max(x, y)));
      for (const a of axes) {
        scales[a] = picked;
        outShape[a] = roundAway(f(picked * inShape[a]));
      }
    }
  }
  if (outShape.some((d) => !(d >= 1))) throw new UnsupportedError(`an empty output [${outShape.join(', ')}]`);
  return { outShape, scales, roi, antialias, options: { method, coordinate: coordinate as CoordinateMode, nearest: nearest as NearestMode, cubicA: n.attr.float('cubic_coeff_a', -0.75), excludeOutside } };
}

function convertResize(n: NodeView): (Value | undefined)[] {
  const inShape = n.shape(0);
  const p = plan(n, inShape);
  if (p.outShape.every((d, i) => d === inShape[i])) return [n.input(0)];
  const options: ResizeOptions = { ...p.options, extrapolate: p.options.coordinate === 'tf_crop_and_resize' };
  if (options.method !== 'nearest' && n.dtype(0) !== 'float32') throw new UnsupportedError(`${options.method} interpolation of ${n.dtype(0)} data`);
  const rank = inShape.length;
  if (p.antialias) return [antialiased(n, inShape, p, options)];
  const axes: number[] = [];
  const tables: number[] = [];
  const affine: (number[] | null)[] = [];
  for (let a = 0; a < rank; a++) {
    if (p.scales[a] === 1) continue; // copied (ONNX Runtime skips the coordinate transform of such an axis)
    const t = axisTables({ inLen: inShape[a], outLen: p.outShape[a], scale: p.scales[a], roiStart: p.roi[a], roiEnd: p.roi[rank + a] }, options);
    axes.push(a);
    const fit = t.taps === 1 && !options.extrapolate ? affineFit(t.index) : undefined;
    affine.push(fit ? [...fit, p.outShape[a]] : null);
    if (fit) continue;
    const cols = t.index.length / p.outShape[a];
    tables.push(n.graph.constant(`${n.name}_index${a}`, [p.outShape[a], cols], t.index));
    if (t.weight) tables.push(n.constant(`_weight${a}`, [p.outShape[a], t.taps], t.weight));
  }
  const taps = options.method === 'nearest' ? 1 : options.method === 'linear' ? 2 : 4;
  const attrs = {
    axes, taps, ...(affine.some((f) => f) ? { affine } : {}), ...(options.extrapolate ? { extrapolation: n.attr.float('extrapolation_value', 0) } : {}),
  };
  return [n.op('resize', [n.node(0), ...tables], attrs)];
}

/**
 * An antialiased resize: one single-axis `resize` per resized axis, each with its own
 * number of taps, the last axis first (ONNX Runtime filters the width, then the height).
 * An axis whose length does not change is copied, whatever its scale (ONNX Runtime's
 * antialias kernel copies such an axis; the other modes transform it).
 */
function antialiased(n: NodeView, inShape: readonly number[], p: ReturnType<typeof plan>, options: ResizeOptions): Value {
  const rank = inShape.length;
  const axes = Array.from({ length: rank }, (_, a) => rank - 1 - a).filter((a) => p.scales[a] !== 1 && p.outShape[a] !== inShape[a]);
  const extrapolation = options.extrapolate ? { extrapolation: n.attr.float('extrapolation_value', 0) } : {};
  let out = n.node(0);
  let value: Value = n.input(0);
  axes.forEach((a, k) => {
    const t = antialiasTables({ inLen: inShape[a], outLen: p.outShape[a], scale: p.scales[a], roiStart: p.roi[a], roiEnd: p.roi[rank + a] }, options);
    if (t.taps > MAX_ANTIALIAS_TAPS) {
      throw new UnsupportedError(`antialias over ${t.taps} taps on axis ${a} (scale ${p.scales[a]}; at most ${MAX_ANTIALIAS_TAPS}: resize in steps)`);
    }
    const index = n.graph.constant(`${n.name}_aa_index${a}`, [p.outShape[a], t.index.length / p.outShape[a]], t.index);
    const weight = n.constant(`_aa_weight${a}`, [p.outShape[a], t.taps], t.weight!);
    value = n.op('resize', [out, index, weight], { axes: [a], taps: t.taps, ...extrapolation }, k === axes.length - 1 ? '' : `_aa${a}`);
    if (value.kind === 'node') out = value.id;
  });
  return value;
}

const RESIZE_ATTRS = ['mode', 'coordinate_transformation_mode', 'cubic_coeff_a', 'exclude_outside', 'extrapolation_value', 'nearest_mode', 'antialias', 'axes', 'keep_aspect_ratio_policy'];

export const RESIZE_CONVERTERS: Record<string, Converter> = {
  Resize: { attrs: RESIZE_ATTRS, convert: convertResize },
  Upsample: { attrs: ['mode', 'scales'], convert: convertResize },
};
