// A 2-D transposed conv with constant weights, one group and no dilation becomes one conv2d
// and a gather (sub-pixel convolution): with stride s and kernel K, output position
// f = o + pad_begin is reached only by the taps k = f mod s + s*t, t in [0, M), M = ceil(K/s),
// from input i = floor(f/s) - t. So for each of the s*s output phases r the transposed conv
// is a plain correlation of the input with the M x M kernel g_r[j] = w[r + s*(M - 1 - j)]
// (zero past K), padded by M - 1: one conv2d with s*s*Co output channels computes all
// phases at once, and subpixel_gather interleaves them and crops the pads. The conv then
// gets the conv2d default schedules and rules (register tiles over output channels, weights
// packed at compile time), where the direct form's neighbouring output columns read
// different taps. Same multiply-adds as the direct form; float sums in another order only.

import { isOpNode, type Graph, type OpNode } from '../graph';
import { floatConstantOf, rebuild } from '../rewrite';

interface Plan { s: number[]; m: number[]; k: number[]; padBegin: number[]; out: number[]; padAfter: number[]; channelsLast: boolean; ci: number; co: number }

function planOf(g: Graph, n: OpNode): Plan | undefined {
  if (n.op !== 'conv2d_transpose' || (n.attrs.groups as number | undefined ?? 1) !== 1) return undefined;
  const w = floatConstantOf(g, n.inputs[1]);
  if (!w) return undefined;
  const dilation = (n.attrs.dilation as number[] | undefined) ?? [1, 1];
  const padding = (n.attrs.padding as number[] | undefined) ?? [0, 0, 0, 0];
  if (dilation.some((d) => d !== 1) || padding.some((p) => p < 0)) return undefined;
  const channelsLast = ((n.attrs.layout as string | undefined) ?? 'NHWC').endsWith('C');
  const x = g.node(n.inputs[0]).shape;
  const s = (n.attrs.strides as number[] | undefined) ?? [1, 1];
  const k = channelsLast ? w.shape.slice(0, 2) : w.shape.slice(2);
  const [ci, co] = channelsLast ? w.shape.slice(2) : w.shape.slice(0, 2);
  const inDims = channelsLast ? x.slice(1, 3) : x.slice(2);
  const out = channelsLast ? n.shape.slice(1, 3) : n.shape.slice(2);
  const m = k.map((kk, i) => Math.ceil(kk / s[i]));
  // The conv's output must cover every phase position the crop reads: q up to floor((out - 1 + pad_begin) / s).
  const padAfter = m.map((mm, i) => Math.max(mm - 1, Math.floor((out[i] - 1 + padding[i]) / s[i]) + 1 - inDims[i]));
  return { s, m, k, padBegin: padding.slice(0, 2), out, padAfter, channelsLast, ci, co };
}

/** The conv2d weight of all phases: [M, M, Ci, s*s*Co] (HWIO) or [s*s*Co, Ci, M, M] (OIHW). */
function phaseWeights(w: Float32Array, p: Plan): Float32Array {
  const [sy, sx] = p.s, [my, mx] = p.m, [ky, kx] = p.k, { ci, co } = p;
  const oc = sy * sx * co;
  const out = new Float32Array(my * mx * ci * oc);
  const src = (ty: number, tx: number, c: number, o: number): number =>
    (p.channelsLast ? ((ty * kx + tx) * ci + c) * co + o : ((c * co + o) * ky + ty) * kx + tx);
  for (let ry = 0; ry < sy; ry++) for (let rx = 0; rx < sx; rx++) {
    for (let jy = 0; jy < my; jy++) for (let jx = 0; jx < mx; jx++) {
      const ty = ry + sy * (my - 1 - jy), tx = rx + sx * (mx - 1 - jx);
      if (ty >= ky || tx >= kx) continue;
      for (let c = 0; c < ci; c++) for (let o = 0; o < co; o++) {
        const f = (ry * sx + rx) * co + o;
        const dst = p.channelsLast ? ((jy * mx + jx) * ci + c) * oc + f : ((f * ci + c) * my + jy) * mx + jx;
        out[dst] = w[src(ty, tx, c, o)];
      }
    }
  }
  return out;
}

export function convTransposeAsConv(g: Graph): Graph {
  return rebuild(g, (n, b) => {
    if (!isOpNode(n)) return undefined;
    const p = planOf(g, n);
    if (!p) return undefined;
    const w = floatConstantOf(g, n.inputs[1])!;
    const [my, mx] = p.m;
    const oc = p.s[0] * p.s[1] * p.co;
    const weight = b.out.constant(`${w.name}.phases`, p.channelsLast ? [my, mx, p.ci, oc] : [oc, p.ci, my, mx], phaseWeights(w.data, p));
    const layout = p.channelsLast ? 'NHWC' : 'NCHW';
    const conv = b.out.op('conv2d', [b.map(n.inputs[0]), weight], {
      strides: [1, 1], dilation: [1, 1], groups: 1, layout, padding: [my - 1, mx - 1, p.padAfter[0], p.padAfter[1]],
    }, `${n.name}.phases`);
    return b.out.op('subpixel_gather', [conv], { strides: p.s, padBegin: p.padBegin, out: p.out, layout }, n.name);
  });
}
