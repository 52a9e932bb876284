// Computes behind ONNX operators that exporters of transformers and the training losses use:
//  - isnan / isinf: bool tests of float elements (x != x; x == +-inf). The C kernels are
//    built without -ffast-math (codegen/c.ts KERNEL_CFLAGS), so NaN compares unequal to itself;
//  - safe_softmax: softmax along the last axis whose fully masked rows (every element -inf)
//    are 0, not NaN, as ONNX's Attention defines them;
//  - rms_norm: x / sqrt(mean(x^2 over axes [axis, rank)) + eps) * scale;
//  - rotary_embedding: ONNX RotaryEmbedding in one injective stage (halves or interleaved
//    pairs rotated by the cos/sin caches, read directly or through position ids);
//  - nll_loss / nll_weight: the per-element loss -input[n, target, d...] * weight[target] and
//    its weight, 0 where the target is ignore_index (the reductions are the graph's).

import {
  add, call, div, eq, f32, floordiv, floormod, int, load, lt, max, maxReduce, min, mul, ne, or, prodReduce, reduceAxis, select, sub, sum,
  type Expr,
} from '../ir/expr';
import { compute, type Tensor } from '../ir/tensor';

const names = (rank: number, prefix = 'ax'): string[] => Array.from({ length: rank }, (_, i) => `${prefix}${i}`);
const vr = (name: string): Expr => ({ k: 'var', name });

/** A data-dependent index clamped into [0, n). */
const clampIndex = (e: Expr, n: number): Expr => max(min(e, int(n - 1)), int(0));

function floatOnly(what: string, x: Tensor): void {
  if (x.dtype !== 'float32') throw new Error(`${what}: input is ${x.dtype}, expected float32`);
}

/** Bool tensor: x is NaN. */
export function isNan(x: Tensor): Tensor {
  floatOnly('isnan', x);
  return compute('T_isnan', x.shape, names(x.shape.length), (...ax) => ne(load(x, ax), load(x, ax)), 'elemwise');
}

/** Bool tensor: x is +inf (when `positive`) or -inf (when `negative`). */
export function isInf(x: Tensor, positive: boolean, negative: boolean): Tensor {
  floatOnly('isinf', x);
  return compute('T_isinf', x.shape, names(x.shape.length), (...ax) => {
    const e = load(x, ax);
    const pos = eq(e, f32(Infinity)), neg = eq(e, f32(-Infinity));
    if (positive && negative) return or(pos, neg);
    if (positive) return pos;
    if (negative) return neg;
    return ne(int(0), int(0));
  }, 'elemwise');
}

/**
 * Softmax along the last axis as ONNX's Attention defines it: the row maximum (0 for a row
 * of -inf), exp(x - max), and a sum of 0 (a fully masked row) taken as 1, so such a row is 0.
 */
export function safeSoftmax(x: Tensor): Tensor {
  floatOnly('safe_softmax', x);
  const rank = x.shape.length;
  const all = names(rank, 'i');
  const outer = all.slice(0, rank - 1);
  const reduced = x.shape.slice(0, rank - 1);
  const k = reduceAxis('k', x.shape[rank - 1]);
  const maxelem = compute('T_safe_softmax_maxelem', reduced, outer, (...o) => maxReduce(load(x, [...o, vr(k.name)]), [k]), 'softmax');
  const exp = compute('T_safe_softmax_exp', x.shape, all, (...ax) => {
    const m = load(maxelem, ax.slice(0, rank - 1));
    return call('exp', sub(load(x, ax), select(eq(m, f32(-Infinity)), f32(0), m)));
  }, 'softmax');
  const expsum = compute('T_safe_softmax_expsum', reduced, outer, (...o) => sum(load(exp, [...o, vr(k.name)]), [k]), 'softmax');
  return compute('T_safe_softmax_norm', x.shape, all, (...ax) => {
    const s = load(expsum, ax.slice(0, rank - 1));
    return div(load(exp, ax), select(eq(s, f32(0)), f32(1), s));
  }, 'softmax');
}

/** Indices into `t` for element `ax` of a rank-`rank` tensor, `t` broadcast against its trailing axes. */
function trailing(t: Tensor, rank: number, ax: readonly Expr[]): Expr[] {
  const off = rank - t.shape.length;
  return t.shape.map((d, i) => (d === 1 ? int(0) : ax[off + i]));
}

/** ONNX RMSNormalization: x * 1/sqrt(mean(x^2 over axes [axis, rank)) + eps) * scale (scale broadcast to x's trailing axes). */
export function rmsNorm(x: Tensor, scale: Tensor, axis: number, eps: number): Tensor {
  floatOnly('rms_norm', x);
  const rank = x.shape.length;
  const a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) throw new Error(`rms_norm: axis ${axis} out of range for rank ${rank}`);
  const off = rank - scale.shape.length;
  if (off < 0 || scale.shape.some((d, i) => d !== 1 && d !== x.shape[off + i])) {
    throw new Error(`rms_norm: scale of shape [${scale.shape.join(', ')}] does not broadcast to [${x.shape.join(', ')}]`);
  }
  const raxes = x.shape.slice(a).map((d, i) => reduceAxis(`k${i}`, d));
  const count = x.shape.slice(a).reduce((p, d) => p * d, 1);
  const stat = x.shape.slice(0, a);
  const on = names(a);
  const sq = compute('T_rms_norm_sqsum', stat, on, (...o) => {
    const e = load(x, [...o, ...raxes.map((r) => vr(r.name))]);
    return sum(mul(e, e), raxes);
  }, 'comm_reduce');
  const inv = compute('T_rms_norm_rrms', stat, on, (...o) => div(f32(1), call('sqrt', add(div(load(sq, o), f32(count)), f32(eps)))), 'elemwise');
  return compute('T_rms_norm', x.shape, names(rank), (...ax) =>
    mul(mul(load(x, ax), load(inv, ax.slice(0, a))), load(scale, trailing(scale, rank, ax))), 'elemwise');
}

export interface RotaryOptions {
  readonly interleaved: boolean;
  /** Rotated leading part of each head (even; 0: the whole head). */
  readonly rotaryDim: number;
  /** Heads of a 3-D input [B, S, heads * head]; ignored for 4-D [B, heads, S, head]. */
  readonly numHeads: number;
}

/**
 * ONNX RotaryEmbedding of x [B, H, S, D] or [B, S, H*D]: each head's first R elements
 * rotated pairwise ((x1, x2) -> (c x1 - s x2, s x1 + c x2), x1/x2 the halves or the
 * even/odd elements when interleaved) by cos/sin [B, S, R/2], or [P, R/2] read at
 * positionIds [B, S] (clamped into range); the rest passes through.
 */
export function rotaryEmbedding(x: Tensor, cos: Tensor, sin: Tensor, positionIds: Tensor | undefined, o: RotaryOptions): Tensor {
  floatOnly('rotary_embedding', x);
  const rank = x.shape.length;
  if (rank !== 3 && rank !== 4) throw new Error(`rotary_embedding: input of rank ${rank} (3 or 4)`);
  const head = rank === 4 ? x.shape[3] : x.shape[2] / o.numHeads;
  if (!Number.isInteger(head)) throw new Error(`rotary_embedding: hidden size ${x.shape[2]} is not a multiple of ${o.numHeads} heads`);
  const r = o.rotaryDim || head;
  if (r % 2 !== 0 || r > head) throw new Error(`rotary_embedding: rotary dimension ${r} (even, at most the head size ${head})`);
  const half = r / 2;
  const [b, s] = rank === 4 ? [x.shape[0], x.shape[2]] : [x.shape[0], x.shape[1]];
  for (const t of [cos, sin]) {
    const want = positionIds ? [t.shape[0], half] : [b, s, half];
    if (t.shape.length !== want.length || t.shape.some((d, i) => d !== want[i])) {
      throw new Error(`rotary_embedding: cache of shape [${t.shape.join(', ')}], expected [${positionIds ? 'positions, ' : `${b}, ${s}, `}${half}]`);
    }
  }
  if (positionIds && (positionIds.shape.length !== 2 || positionIds.shape[0] !== b || positionIds.shape[1] !== s || positionIds.dtype !== 'int32')) {
    throw new Error(`rotary_embedding: position ids must be int [${b}, ${s}]`);
  }
  return compute('T_rotary_embedding', x.shape, names(rank), (...ax) => {
    const bi = ax[0], si = rank === 4 ? ax[2] : ax[1];
    // d: position within the head; base: the index of the head's element 0 along the last axis.
    const last = ax[rank - 1];
    const d = rank === 4 ? last : floormod(last, int(head));
    const base = rank === 4 ? int(0) : sub(last, d);
    let j: Expr, partner: Expr, first: Expr;
    if (o.interleaved) {
      const odd = floormod(d, int(2));
      first = eq(odd, int(0));
      j = floordiv(d, int(2));
      partner = add(d, sub(int(1), mul(odd, int(2))));
    } else {
      first = lt(d, int(half));
      j = select(first, d, sub(d, int(half)));
      partner = select(first, add(d, int(half)), sub(d, int(half)));
    }
    // Loads in range everywhere (the pass-through part selects x itself).
    j = clampIndex(j, half);
    partner = clampIndex(partner, head);
    const at = (dd: Expr): Expr[] => ax.map((e, i) => (i === rank - 1 ? add(base, dd) : e));
    const cache = (t: Tensor): Expr => (positionIds
      ? load(t, [clampIndex(load(positionIds, [bi, si]), t.shape[0]), j])
      : load(t, [bi, si, j]));
    const xv = load(x, ax), xp = load(x, at(partner));
    const c = cache(cos), sn = cache(sin);
    const rotated = select(first, sub(mul(c, xv), mul(sn, xp)), add(mul(sn, xp), mul(c, xv)));
    return select(lt(d, int(r)), rotated, xv);
  }, 'injective');
}

function lossShapes(input: Tensor, target: Tensor): void {
  floatOnly('nll_loss', input);
  if (target.dtype !== 'int32') throw new Error(`nll_loss: target is ${target.dtype}, expected an integer tensor`);
  const want = [input.shape[0], ...input.shape.slice(2)];
  if (input.shape.length < 2 || target.shape.length !== want.length || target.shape.some((d, i) => d !== want[i])) {
    throw new Error(`nll_loss: target of shape [${target.shape.join(', ')}] for input [${input.shape.join(', ')}] (expected [${want.join(', ')}])`);
  }
}

/** The weight of each target element: weight[target] (1 without weights), 0 where target == ignoreIndex. */
function targetWeight(target: Tensor, weight: Tensor | undefined, classes: number, ignoreIndex: number | undefined, ax: readonly Expr[]): Expr {
  const t = load(target, ax);
  const w = weight ? load(weight, [clampIndex(t, classes)]) : f32(1);
  return ignoreIndex === undefined ? w : select(eq(t, int(ignoreIndex)), f32(0), w);
}

/** NegativeLogLikelihoodLoss without reduction: out[n, d...] = -input[n, target[n, d...], d...] * its weight. */
export function nllLoss(input: Tensor, target: Tensor, weight: Tensor | undefined, ignoreIndex: number | undefined): Tensor {
  lossShapes(input, target);
  const classes = input.shape[1];
  return compute('T_nll_loss', target.shape, names(target.shape.length), (...ax) => {
    const c = clampIndex(load(target, ax), classes);
    const x = load(input, [ax[0], c, ...ax.slice(1)]);
    return mul(sub(f32(0), x), targetWeight(target, weight, classes, ignoreIndex, ax));
  }, 'injective');
}

/** The weights nll_loss multiplies by (their sum divides the mean reduction). */
export function nllWeight(target: Tensor, weight: Tensor | undefined, classes: number, ignoreIndex: number | undefined): Tensor {
  if (target.dtype !== 'int32') throw new Error(`nll_weight: target is ${target.dtype}, expected an integer tensor`);
  return compute('T_nll_weight', target.shape, names(target.shape.length), (...ax) =>
    targetWeight(target, weight, classes, ignoreIndex, ax), 'injective');
}

/** ONNX Swish: x * sigmoid(alpha * x). */
export function swish(x: Tensor, alpha: number): Tensor {
  floatOnly('swish', x);
  return compute('T_swish', x.shape, names(x.shape.length), (...ax) => mul(load(x, ax), call('sigmoid', mul(load(x, ax), f32(alpha)))), 'elemwise');
}

/** ONNX Shrink: x + bias where x < -lambd, x - bias where x > lambd, else 0. */
export function shrink(x: Tensor, lambd: number, bias: number): Tensor {
  floatOnly('shrink', x);
  return compute('T_shrink', x.shape, names(x.shape.length), (...ax) => {
    const e = load(x, ax);
    return select(lt(e, f32(-lambd)), add(e, f32(bias)), select(lt(f32(lambd), e), sub(e, f32(bias)), f32(0)));
  }, 'elemwise');
}

/** 2^e for an int32 exponent e in [0, 30], exactly: the product of its binary digits' powers. */
function pow2(e: Expr): Expr {
  let p: Expr = int(1);
  for (let bit = 0; bit < 5; bit++) {
    const on = eq(floormod(floordiv(e, int(1 << bit)), int(2)), int(1));
    p = mul(p, select(on, int(2 ** (1 << bit)), int(1)));
  }
  return p;
}

/** Element type of a BitShift operand carried as int32: its width in bits and signedness. */
export interface IntType { readonly bits: 8 | 16 | 32 | 64; readonly signed: boolean }

/**
 * ONNX BitShift of int32-carried integers of type `t` (shift counts y broadcast against x):
 * RIGHT is floor division by 2^y (arithmetic for signed types; a count outside [0, width)
 * gives 0, or -1 for a negative signed x); LEFT keeps the low `width` bits, wrapped into the
 * type's range (a count outside [0, width) gives 0). Computed without int32 overflow: the
 * bits that survive a left shift by y >= 1 are x mod 2^(w-1-y) (times 2^y) and bit w-1-y
 * (the result's top bit). LEFT of 64-bit types is refused by the converter (the carrier
 * cannot hold the result).
 */
export function bitShift(x: Tensor, y: Tensor, left: boolean, t: IntType): Tensor {
  if (x.dtype !== 'int32' || y.dtype !== 'int32') throw new Error(`bit_shift: operands are ${x.dtype} and ${y.dtype}, expected int32`);
  const shape = broadcast(x.shape, y.shape);
  const w = t.bits;
  return compute('T_bit_shift', shape, names(shape.length), (...ax) => {
    const a = load(x, bcast(x, shape, ax)), s = load(y, bcast(y, shape, ax));
    const outOfRange = or(lt(s, int(0)), lt(int(w - 1), s));
    if (!left) {
      const sign = t.signed ? select(lt(a, int(0)), int(-1), int(0)) : int(0);
      // Counts of 31 and more (possible for 32/64-bit types) leave only the sign.
      const k = max(min(s, int(31)), int(0));
      return select(or(outOfRange, eq(k, int(31))), sign, floordiv(a, pow2(min(k, int(30)))));
    }
    if (w === 64) throw new Error('bit_shift: a left shift of 64-bit integers does not fit the int32 carrier');
    const k = max(min(s, int(w - 1)), int(1));
    const low = pow2(sub(int(w - 1), k));
    // k = 31 (32-bit types) keeps no low bits: 2^30 stands in for 2^31 (times 0).
    const kept = mul(floormod(a, low), pow2(min(k, int(30))));
    const top = floormod(floordiv(a, low), int(2));
    // The result's bit w-1: -2^(w-1) for signed types, +2^(w-1) for unsigned ones (w < 32 then).
    const topBit = t.signed ? mul(mul(top, int(-(2 ** (w - 2)))), int(2)) : mul(top, int(2 ** (w - 1)));
    const shifted = add(kept, topBit);
    return select(outOfRange, int(0), select(eq(s, int(0)), a, shifted));
  }, 'broadcast');
}

function broadcast(a: readonly number[], b: readonly number[]): number[] {
  const rank = Math.max(a.length, b.length);
  return Array.from({ length: rank }, (_, i) => {
    const da = a[a.length - rank + i] ?? 1, db = b[b.length - rank + i] ?? 1;
    if (da !== db && da !== 1 && db !== 1) throw new Error(`cannot broadcast [${a.join(', ')}] with [${b.join(', ')}]`);
    return Math.max(da, db);
  });
}

function bcast(t: Tensor, shape: readonly number[], ax: readonly Expr[]): Expr[] {
  const off = shape.length - t.shape.length;
  return t.shape.map((d, i) => (d === 1 && shape[off + i] !== 1 ? int(0) : ax[off + i]));
}

/** ONNX CumProd along `axis` (exclusive: the product before each element, 1 first; reverse: from the end); as cumsum, a product over the whole axis per element. */
export function cumprod(x: Tensor, axis: number, exclusive: boolean, reverse: boolean): Tensor {
  const rank = x.shape.length;
  const a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) throw new Error(`cumprod: axis ${axis} out of range for rank ${rank}`);
  const one: Expr = { k: 'const', value: 1, dtype: x.dtype === 'float32' ? 'float32' : 'int32' };
  return compute('T_cumprod', x.shape, names(rank), (...ax) => {
    const r = reduceAxis('k', x.shape[a]);
    const k = vr('k');
    const i = ax[a];
    const take = reverse ? (exclusive ? lt(i, k) : lt(int(-1), sub(k, i))) : exclusive ? lt(k, i) : lt(int(-1), sub(i, k));
    return prodReduce(select(take, load(x, ax.map((e, d) => (d === a ? k : e))), one), [r]);
  }, 'cumsum');
}

/** ONNX LpNormalization (p 1 or 2) along `axis`: x / ||x||_p, 0 where the norm is 0. */
export function lpNormalize(x: Tensor, axis: number, p: 1 | 2): Tensor {
  floatOnly('lp_normalize', x);
  const rank = x.shape.length;
  const a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) throw new Error(`lp_normalize: axis ${axis} out of range for rank ${rank}`);
  const stat = x.shape.filter((_, d) => d !== a);
  const k = reduceAxis('k', x.shape[a]);
  const norm = compute('T_lp_norm', stat, names(rank - 1), (...o) => {
    const e = load(x, [...o.slice(0, a), vr('k'), ...o.slice(a)]);
    return sum(p === 1 ? call('fabs', e) : mul(e, e), [k]);
  }, 'comm_reduce');
  return compute('T_lp_normalize', x.shape, names(rank), (...ax) => {
    const s = load(norm, ax.filter((_, d) => d !== a));
    const nrm = p === 1 ? s : call('sqrt', s);
    return select(eq(nrm, f32(0)), f32(0), div(load(x, ax), nrm));
  }, 'elemwise');
}

export type BitwiseKind = 'and' | 'or' | 'xor';

/**
 * ONNX BitwiseAnd/Or/Xor of int32-carried integers of type `t` (8/16/32 bits; 64-bit values
 * carried in int32 behave as 32-bit ones), broadcasting: bit by bit through floor division
 * and remainders (no bit operators in the IR), the sign bit from x < 0 for signed types.
 */
export function bitwise(kind: BitwiseKind, x: Tensor, y: Tensor, t: IntType): Tensor {
  if (x.dtype !== 'int32' || y.dtype !== 'int32') throw new Error(`bitwise_${kind}: operands are ${x.dtype} and ${y.dtype}, expected int32`);
  const w = Math.min(t.bits, 32);
  if (!t.signed && w === 32) throw new Error(`bitwise_${kind}: unsigned 32-bit values do not fit the int32 carrier`);
  const shape = broadcast(x.shape, y.shape);
  const bit = (e: Expr, k: number): Expr => (k === w - 1 && t.signed
    ? select(lt(e, int(0)), int(1), int(0))
    : floormod(floordiv(e, int(2 ** k)), int(2)));
  const combine = (p: Expr, q: Expr): Expr => (kind === 'and' ? mul(p, q) : kind === 'or' ? sub(add(p, q), mul(p, q)) : sub(add(p, q), mul(mul(p, q), int(2))));
  return compute(`T_bitwise_${kind}`, shape, names(shape.length), (...ax) => {
    const a = load(x, bcast(x, shape, ax)), b = load(y, bcast(y, shape, ax));
    let out: Expr = int(0);
    for (let k = 0; k < w - 1; k++) out = add(out, mul(combine(bit(a, k), bit(b, k)), int(2 ** k)));
    const top = combine(bit(a, w - 1), bit(b, w - 1));
    return add(out, t.signed ? mul(mul(top, int(-(2 ** (w - 2)))), int(2)) : mul(top, int(2 ** (w - 1))));
  }, 'broadcast');
}

/** ONNX BitwiseNot: -x - 1 for signed types, 2^w - 1 - x for unsigned ones (8/16 bits). */
export function bitwiseNot(x: Tensor, t: IntType): Tensor {
  if (x.dtype !== 'int32') throw new Error(`bitwise_not: operand is ${x.dtype}, expected int32`);
  if (!t.signed && t.bits >= 32) throw new Error('bitwise_not: unsigned 32/64-bit values do not fit the int32 carrier');
  return compute('T_bitwise_not', x.shape, names(x.shape.length), (...ax) =>
    sub(int(t.signed ? -1 : 2 ** t.bits - 1), load(x, ax)), 'elemwise');
}
