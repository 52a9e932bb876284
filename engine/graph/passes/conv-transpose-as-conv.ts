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
//
// One conv for all phases computes every phase over the union of their ranges, and the crop
// drops the rest: for DCGAN's 4x4 stride-2 pad-1 layers, 5x5 positions per phase where 4x4
// are kept from a 4x4 input (36% of the multiply-adds thrown away), 9x9 for 8x8 (21%).
// Where the output is a whole number of phases in each dimension, each phase is instead a
// conv of its own over exactly its positions (phase r keeps q from ceil((pad - r) / s),
// out / s of them: the conv's padding moves by that start), and subpixel_gather reads the
// phase convs in the order it reads one conv's channel groups with no crop offset (phase r
// at (r - pad) mod s). s*s conv tasks instead of one; none of their multiply-adds is wasted.

import { isOpNode, type Graph, type OpNode } from '../graph';
import { floatConstantOf, rebuild } from '../rewrite';

interface Plan { s: number[]; m: number[]; k: number[]; padBegin: number[]; inDims: number[]; out: number[]; padAfter: number[]; channelsLast: boolean; ci: number; co: number }

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
  return { s, m, k, padBegin: padding.slice(0, 2), inDims, out, padAfter, channelsLast, ci, co };
}

/**
 * The conv2d weight of the given phases (ry, rx), phase i at output channels i*Co..: [M, M,
 * Ci, n*Co] (HWIO) or [n*Co, Ci, M, M] (OIHW). Phase r's kernel is g_r[j] = w[r + s*(M - 1 - j)],
 * zero past K.
 */
function phaseWeights(w: Float32Array, p: Plan, phases: readonly (readonly [number, number])[]): Float32Array {
  const [sy, sx] = p.s, [my, mx] = p.m, [ky, kx] = p.k, { ci, co } = p;
  const oc = phases.length * co;
  const out = new Float32Array(my * mx * ci * oc);
  const src = (ty: number, tx: number, c: number, o: number): number =>
    (p.channelsLast ? ((ty * kx + tx) * ci + c) * co + o : ((c * co + o) * ky + ty) * kx + tx);
  phases.forEach(([ry, rx], phase) => {
    for (let jy = 0; jy < my; jy++) for (let jx = 0; jx < mx; jx++) {
      const ty = ry + sy * (my - 1 - jy), tx = rx + sx * (mx - 1 - jx);
      if (ty >= ky || tx >= kx) continue;
      for (let c = 0; c < ci; c++) for (let o = 0; o < co; o++) {
        const f = phase * co + o;
        const dst = p.channelsLast ? ((jy * mx + jx) * ci + c) * oc + f : ((f * ci + c) * my + jy) * mx + jx;
        out[dst] = w[src(ty, tx, c, o)];
      }
    }
  });
  return out;
}

const mod = (a: number, b: number): number => ((a % b) + b) % b;

/**
 * Fewest output channels for a conv per phase: fewer leave most of a vector of output
 * channels empty in each. DCGAN's last layer (3 channels, 32x32 to 64x64) took 2.2 ms as
 * four phase convs of 3 channels and 0.55 ms as one conv of all 12 (one thread, AVX-512, in
 * the network); its three 256-to-1024-channel layers gained 7-15% each as phase convs.
 */
const MIN_PHASE_CHANNELS = 16;

/**
 * Per dimension and phase r, the padding [before, after] of the conv that computes exactly
 * the out / s positions phase r keeps, starting at q = ceil((pad - r) / s); undefined where
 * the output is not a whole number of phases, a padding would be negative (the input
 * would have to be cropped) or the phases have few channels, and the pass keeps one conv
 * for all phases.
 */
function exactPhasePads(p: Plan): number[][][] | undefined {
  if (p.co < MIN_PHASE_CHANNELS) return undefined;
  const pads = p.s.map((s, d) => {
    if (p.out[d] % s !== 0) return undefined;
    const per = Array.from({ length: s }, (_, r) => {
      const before = p.m[d] - 1 - Math.ceil((p.padBegin[d] - r) / s);
      return [before, p.out[d] / s + p.m[d] - 1 - p.inDims[d] - before];
    });
    return per.every(([a, b]) => a >= 0 && b >= 0) ? per : undefined;
  });
  return pads.every((x) => x !== undefined) ? (pads as number[][][]) : undefined;
}

export function convTransposeAsConv(g: Graph): Graph {
  return rebuild(g, (n, b) => {
    if (!isOpNode(n)) return undefined;
    const p = planOf(g, n);
    if (!p) return undefined;
    const w = floatConstantOf(g, n.inputs[1])!;
    const [my, mx] = p.m, [sy, sx] = p.s;
    const layout = p.channelsLast ? 'NHWC' : 'NCHW';
    const weightOf = (name: string, phases: readonly (readonly [number, number])[]) => {
      const oc = phases.length * p.co;
      return b.out.constant(name, p.channelsLast ? [my, mx, p.ci, oc] : [oc, p.ci, my, mx], phaseWeights(w.data, p, phases));
    };
    const conv = (weight: number, padding: number[], name: string) =>
      b.out.op('conv2d', [b.map(n.inputs[0]), weight], { strides: [1, 1], dilation: [1, 1], groups: 1, layout, padding }, name);
    const exact = exactPhasePads(p);
    if (exact) {
      // Input (gy, gx) of the gather is phase ((gy + pad) mod s, (gx + pad) mod s).
      const phaseConvs: number[] = [];
      for (let gy = 0; gy < sy; gy++) for (let gx = 0; gx < sx; gx++) {
        const ry = mod(gy + p.padBegin[0], sy), rx = mod(gx + p.padBegin[1], sx);
        const [ty, by] = exact[0][ry], [tx, bx] = exact[1][rx];
        phaseConvs.push(conv(weightOf(`${w.name}.phase${ry}${rx}`, [[ry, rx]]), [ty, tx, by, bx], `${n.name}.phase${ry}${rx}`));
      }
      return b.out.op('subpixel_gather', phaseConvs, { strides: p.s, padBegin: [0, 0], out: p.out, layout }, n.name);
    }
    const all: [number, number][] = [];
    for (let ry = 0; ry < sy; ry++) for (let rx = 0; rx < sx; rx++) all.push([ry, rx]);
    const phases = conv(weightOf(`${w.name}.phases`, all), [my - 1, mx - 1, p.padAfter[0], p.padAfter[1]], `${n.name}.phases`);
    return b.out.op('subpixel_gather', [phases], { strides: p.s, padBegin: p.padBegin, out: p.out, layout }, n.name);
  });
}
