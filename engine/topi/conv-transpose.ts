// Transposed convolution (conv2d_transpose, conv3d_transpose; a 1-D one is a 2-D one with
// H = 1), as ONNX's ConvTranspose defines it: input position i and kernel tap k add
// x[i] * w[k] to output position i*s + k*d - pad_begin. Kernel layout [Ci, Co/groups, k...]
// (ONNX's, TVM's IOHW) with channels-first data, [k..., Ci, Co/groups] with channels-last.
//
// Written as a gather with a stride-aware index, not as a conv over the zero-dilated
// input (TOPI's form, which spends s^n - 1 of every s^n multiply-adds on inserted zeros):
// output position f = o + pad_begin is reached by the taps k = f mod s + s*t, t in
// [0, ceil(K/s)), from input i = floor(f/s) - t, so every tap of the reduction is a real
// one (a tap past K, where s does not divide K, reads 0). With a dilation above 1 and a
// stride above 1 the taps that reach f are not a simple residue class; there the reduction
// runs over all K taps and masks those with (f - k*d) mod s != 0.

import { add, and, eq, f32, floordiv, floormod, ifThenElse, load, lt, min, mul, reduceAxis, sub, sum, type Expr, type IterVar } from '../ir/expr';
import { compute, type Tensor } from '../ir/tensor';
import { spatialAxes } from './pool';
import { pad } from './transform';

export interface ConvTransposeParams {
  /** Per spatial axis (D, H, W or H, W). */
  strides: readonly number[];
  dilation: readonly number[];
  /** [begin..., end...]: ONNX's pads (cropped from the full output). */
  padding: readonly number[];
  /** Added to the end of each spatial axis of the output (ONNX's output_padding). */
  outputPadding: readonly number[];
  groups: number;
  channelsLast: boolean;
}

/** Output extent of one spatial axis. */
export function convTransposeOut(n: number, k: number, s: number, d: number, padBegin: number, padEnd: number, outPad: number): number {
  return s * (n - 1) + outPad + (k - 1) * d + 1 - padBegin - padEnd;
}

const vr = (a: { name: string }): Expr => ({ k: 'var', name: a.name });

/** conv2d_transpose / conv3d_transpose over a 4-d or 5-d input. */
export function convTranspose(data: Tensor, kernel: Tensor, p: ConvTransposeParams): Tensor {
  const rank = data.shape.length;
  if (rank !== 4 && rank !== 5) throw new Error(`conv_transpose: 4-d or 5-d data, got [${data.shape.join(', ')}]`);
  if (kernel.shape.length !== rank) throw new Error(`conv_transpose: a ${rank}-d kernel, got [${kernel.shape.join(', ')}]`);
  const last = p.channelsLast;
  const sp = spatialAxes(rank, last);
  const n = sp.length;
  const cAxis = last ? rank - 1 : 1;
  const ci = data.shape[cAxis];
  // Kernel: [Ci, Co/g, k...] or [k..., Ci, Co/g].
  const [kCi, coPerGroup] = last ? kernel.shape.slice(n) : kernel.shape.slice(0, 2);
  const ks = last ? kernel.shape.slice(0, n) : kernel.shape.slice(2);
  const groups = p.groups;
  if (kCi !== ci || ci % groups !== 0) throw new Error(`conv_transpose: kernel [${kernel.shape.join(', ')}] and ${groups} groups do not fit ${ci} input channels`);
  const co = coPerGroup * groups, ciPerGroup = ci / groups;
  const out = sp.map((a, i) => convTransposeOut(data.shape[a], ks[i], p.strides[i], p.dilation[i], p.padding[i], p.padding[n + i], p.outputPadding[i]));
  if (out.some((o) => o < 1)) throw new Error(`conv_transpose: output [${out.join(', ')}] is empty`);

  // Per spatial axis: how the reduction reaches the input, and the input range it reads.
  const plans = sp.map((a, i) => {
    const s = p.strides[i], d = p.dilation[i], k = ks[i], pb = p.padding[i], size = data.shape[a];
    const taps = d === 1 ? Math.ceil(k / s) : k;
    const hiIndex = Math.floor((out[i] - 1 + pb) / s);
    const loIndex = d === 1 ? Math.floor(pb / s) - (taps - 1) : Math.floor((pb - (k - 1) * d) / s);
    return { s, d, k, pb, taps, before: Math.max(0, -loIndex), after: Math.max(0, hiIndex - (size - 1)) };
  });
  const before = data.shape.map(() => 0), after = data.shape.map(() => 0);
  sp.forEach((a, i) => { before[a] = plans[i].before; after[a] = plans[i].after; });
  const padded = before.some((x) => x > 0) || after.some((x) => x > 0) ? pad(data, before, after, 'data_pad') : data;

  const names = rank === 5 ? ['zz', 'yy', 'xx'] : ['yy', 'xx'];
  const rs: IterVar[] = plans.map((pl, i) => reduceAxis(`r${names[i][0]}`, pl.taps));
  const rc = reduceAxis('rc', ciPerGroup);
  const shape = [...data.shape];
  shape[cAxis] = co;
  sp.forEach((a, i) => { shape[a] = out[i]; });
  const axisNames = last ? ['nn', ...names, 'ff'] : ['nn', 'ff', ...names];
  const dim = rank === 5 ? 3 : 2;
  const tag = `conv${dim}d_transpose_${last ? (dim === 3 ? 'ndhwc' : 'nhwc') : (dim === 3 ? 'ncdhw' : 'nchw')}`;
  return compute(tag, shape, axisNames, (...ax) => {
    const ff = ax[cAxis];
    const conds: Expr[] = [];
    const inIdx: Expr[] = [], kIdx: Expr[] = [];
    plans.forEach((pl, i) => {
      const f = add(ax[sp[i]], pl.pb);
      const t = vr(rs[i]);
      if (pl.s === 1) {
        // Every tap reaches f: i = f - k*d.
        inIdx.push(sub(f, mul(t, pl.d)));
        kIdx.push(t);
      } else if (pl.d === 1) {
        const k = add(floormod(f, pl.s), mul(t, pl.s));
        inIdx.push(sub(floordiv(f, pl.s), t));
        // A tap past K (s does not divide K) reads 0; its index is clamped so no load leaves the kernel.
        if (pl.k % pl.s !== 0) {
          conds.push(lt(k, pl.k));
          kIdx.push(min(k, pl.k - 1));
        } else kIdx.push(k);
      } else {
        const num = sub(f, mul(t, pl.d));
        inIdx.push(floordiv(num, pl.s));
        kIdx.push(t);
        conds.push(eq(floormod(num, pl.s), 0));
      }
    });
    const group = groups === 1 ? undefined : floordiv(ff, coPerGroup);
    const c = group === undefined ? vr(rc) : add(mul(group, ciPerGroup), vr(rc));
    const o = group === undefined ? ff : floormod(ff, coPerGroup);
    const dataIdx: Expr[] = [...ax];
    dataIdx[cAxis] = c;
    sp.forEach((a, i) => { dataIdx[a] = add(inIdx[i], plans[i].before); });
    const wIdx = last ? [...kIdx, c, o] : [c, o, ...kIdx];
    const product = mul(load(padded, dataIdx), load(kernel, wIdx));
    const body = conds.length === 0 ? product : ifThenElse(conds.reduce((x, y) => and(x, y)), product, f32(0));
    return sum(body, last ? [...rs, rc] : [rc, ...rs]);
  }, tag);
}

/**
 * The interleave after a transposed conv computed as conv2d (graph pass
 * conv-transpose-as-conv.ts). From one conv: `data` holds, per input-grid position q and
 * output phase r = (ry, rx) in [0, s)^2, the s*s*Co channels (ry*sx + rx)*Co + c; output
 * position y = q*s + r - pad_begin reads phase y + pad_begin mod s at q = floor((y + pad_begin) / s).
 * It is the depth-to-space of sub-pixel convolution with the transposed conv's crop folded
 * in. From one conv per phase: `data` is the s*s convs of Co channels each, phase (ry, rx)
 * at ry*sx + rx, read the same way; which one a position reads depends on the position
 * alone, so a vector of channels loads from one of them.
 */
export function subpixelGather(data: Tensor | readonly Tensor[], strides: readonly [number, number], padBegin: readonly [number, number], out: readonly [number, number], channelsLast: boolean): Tensor {
  const [sy, sx] = strides;
  const cAxis = channelsLast ? 3 : 1;
  const phases = Array.isArray(data) ? (data as readonly Tensor[]) : undefined;
  const first = phases ? phases[0] : (data as Tensor);
  const co = phases ? first.shape[cAxis] : first.shape[cAxis] / (sy * sx);
  const same = (t: Tensor): boolean => t.shape.length === 4 && t.shape.every((d, i) => d === first.shape[i]);
  if (first.shape.length !== 4 || !Number.isInteger(co) || (phases && (phases.length !== sy * sx || !phases.every(same)))) {
    const shapes = (phases ?? [first]).map((t) => `[${t.shape.join(', ')}]`).join(', ');
    throw new Error(`subpixel_gather: ${shapes} with strides ${sy}x${sx}`);
  }
  const shape = channelsLast ? [first.shape[0], out[0], out[1], co] : [first.shape[0], co, out[0], out[1]];
  const names = channelsLast ? ['nn', 'yy', 'xx', 'ff'] : ['nn', 'ff', 'yy', 'xx'];
  return compute('T_subpixel', shape, names, (...ax) => {
    const [n, y, x, c] = channelsLast ? ax : [ax[0], ax[2], ax[3], ax[1]];
    const fy = add(y, padBegin[0]), fx = add(x, padBegin[1]);
    const phase = add(mul(floormod(fy, sy), sx), floormod(fx, sx));
    const qy = floordiv(fy, sy), qx = floordiv(fx, sx);
    const at = (t: Tensor, channel: Expr): Expr => load(t, channelsLast ? [n, qy, qx, channel] : [n, channel, qy, qx]);
    if (!phases) return at(first, add(mul(phase, co), c));
    let value = at(phases[phases.length - 1], c);
    for (let i = phases.length - 2; i >= 0; i--) value = ifThenElse(eq(phase, i), at(phases[i], c), value);
    return value;
  }, 'injective');
}
