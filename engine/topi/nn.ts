// Compute declarations of the reduction operators (no schedules), named and indexed as
// TVM's TOPI declares them so that printed tasks read like the seeds.

import {
  add, all, bool, cast, call, div, eq, f32, floordiv, floormod, ifThenElse, int, load, lt,
  max, maxReduce, mul, reduceAxis, select, sub, sum, type Expr,
} from '../ir/expr';
import { compute, type Tensor } from '../ir/tensor';
import { pad } from './transform';

export type Layout = 'NHWC' | 'NCHW';

export interface Conv2dParams {
  strides: [number, number];
  /** [top, left, bottom, right] */
  padding: [number, number, number, number];
  dilation: [number, number];
}

function outSize(n: number, k: number, stride: number, dil: number, before: number, after: number): number {
  const size = Math.floor((n + before + after - (dil * (k - 1) + 1)) / stride) + 1;
  if (size < 1) throw new Error(`window of ${k} (dilation ${dil}) does not fit an input of ${n} with padding ${before}+${after}`);
  return size;
}

/** Input row/col read by output position `o` and kernel tap `r`: o*stride + r*dilation. */
const tap = (o: Expr, stride: number, r: Expr, dil: number): Expr => add(mul(o, stride), mul(r, dil));

/**
 * conv2d with input NHWC, kernel HWIO, output NHWC. `groups` > 1 gives a grouped conv
 * (kernel HW(I/groups)O); depthwise convs have their own declaration.
 */
export function conv2dNHWC(data: Tensor, kernel: Tensor, p: Conv2dParams, groups = 1): Tensor {
  const [n, h, w, ci] = data.shape;
  const [kh, kw, kci, co] = kernel.shape;
  if (kci * groups !== ci) throw new Error(`conv2d_nhwc: kernel has ${kci} input channels x ${groups} groups, data has ${ci}`);
  if (co % groups !== 0) throw new Error(`conv2d_nhwc: ${co} output channels not divisible into ${groups} groups`);
  const [sh, sw] = p.strides, [dh, dw] = p.dilation, [pt, pl, pb, pr] = p.padding;
  const oh = outSize(h, kh, sh, dh, pt, pb), ow = outSize(w, kw, sw, dw, pl, pr);
  const padded = pad(data, [0, pt, pl, 0], [0, pb, pr, 0], 'pad_temp');
  const ry = reduceAxis('ry', kh), rx = reduceAxis('rx', kw), rc = reduceAxis('rc', kci);
  if (groups === 1) {
    return compute('conv2d_nhwc', [n, oh, ow, co], ['nn', 'yy', 'xx', 'ff'], (nn, yy, xx, ff) =>
      sum(mul(load(padded, [nn, tap(yy, sh, vr(ry), dh), tap(xx, sw, vr(rx), dw), vr(rc)]),
        load(kernel, [vr(ry), vr(rx), vr(rc), ff])), [ry, rx, rc]), 'conv2d_nhwc');
  }
  const coPerGroup = co / groups;
  return compute('group_conv2d_nhwc', [n, oh, ow, co], ['nn', 'yy', 'xx', 'ff'], (nn, yy, xx, ff) =>
    sum(mul(load(padded, [nn, tap(yy, sh, vr(ry), dh), tap(xx, sw, vr(rx), dw), add(mul(floordiv(ff, coPerGroup), kci), vr(rc))]),
      load(kernel, [vr(ry), vr(rx), vr(rc), ff])), [ry, rx, rc]), 'conv2d_nhwc');
}

/** conv2d with input NCHW, kernel OIHW (O, I/groups, H, W), output NCHW. */
export function conv2dNCHW(data: Tensor, kernel: Tensor, p: Conv2dParams, groups = 1): Tensor {
  const [n, ci, h, w] = data.shape;
  const [co, kci, kh, kw] = kernel.shape;
  if (kci * groups !== ci) throw new Error(`conv2d_nchw: kernel has ${kci} input channels x ${groups} groups, data has ${ci}`);
  if (co % groups !== 0) throw new Error(`conv2d_nchw: ${co} output channels not divisible into ${groups} groups`);
  const [sh, sw] = p.strides, [dh, dw] = p.dilation, [pt, pl, pb, pr] = p.padding;
  const oh = outSize(h, kh, sh, dh, pt, pb), ow = outSize(w, kw, sw, dw, pl, pr);
  const padded = pad(data, [0, 0, pt, pl], [0, 0, pb, pr], 'pad_temp');
  const rc = reduceAxis('rc', kci), ry = reduceAxis('ry', kh), rx = reduceAxis('rx', kw);
  const coPerGroup = co / groups;
  const name = groups === 1 ? 'conv2d_nchw' : 'group_conv2d_nchw';
  return compute(name, [n, co, oh, ow], ['nn', 'ff', 'yy', 'xx'], (nn, ff, yy, xx) => {
    const c = groups === 1 ? vr(rc) : add(mul(floordiv(ff, coPerGroup), kci), vr(rc));
    return sum(mul(load(padded, [nn, c, tap(yy, sh, vr(ry), dh), tap(xx, sw, vr(rx), dw)]),
      load(kernel, [ff, vr(rc), vr(ry), vr(rx)])), [rc, ry, rx]);
  }, 'conv2d_nchw');
}

/** Depthwise conv2d, NHWC data, kernel HWOI = [kh, kw, C, multiplier]; output channel c*m+q. */
export function depthwiseConv2dNHWC(data: Tensor, kernel: Tensor, p: Conv2dParams): Tensor {
  const [n, h, w, c] = data.shape;
  const [kh, kw, kc, m] = kernel.shape;
  if (kc !== c) throw new Error(`depthwise_conv2d_nhwc: kernel has ${kc} channels, data has ${c}`);
  const [sh, sw] = p.strides, [dh, dw] = p.dilation, [pt, pl, pb, pr] = p.padding;
  const oh = outSize(h, kh, sh, dh, pt, pb), ow = outSize(w, kw, sw, dw, pl, pr);
  const padded = pad(data, [0, pt, pl, 0], [0, pb, pr, 0], 'PaddedInput');
  const di = reduceAxis('di', kh), dj = reduceAxis('dj', kw);
  return compute('DepthwiseConv2d', [n, oh, ow, c * m], ['b', 'i', 'j', 'c'], (b, i, j, cc) =>
    sum(mul(load(padded, [b, tap(i, sh, vr(di), dh), tap(j, sw, vr(dj), dw), m === 1 ? cc : floordiv(cc, m)]),
      load(kernel, [vr(di), vr(dj), m === 1 ? cc : floordiv(cc, m), m === 1 ? 0 : floormod(cc, m)])), [di, dj]),
  'depthwise_conv2d_nhwc');
}

/** Depthwise conv2d, NCHW data, kernel [C, multiplier, kh, kw]. */
export function depthwiseConv2dNCHW(data: Tensor, kernel: Tensor, p: Conv2dParams): Tensor {
  const [n, c, h, w] = data.shape;
  const [kc, m, kh, kw] = kernel.shape;
  if (kc !== c) throw new Error(`depthwise_conv2d_nchw: kernel has ${kc} channels, data has ${c}`);
  const [sh, sw] = p.strides, [dh, dw] = p.dilation, [pt, pl, pb, pr] = p.padding;
  const oh = outSize(h, kh, sh, dh, pt, pb), ow = outSize(w, kw, sw, dw, pl, pr);
  const padded = pad(data, [0, 0, pt, pl], [0, 0, pb, pr], 'PaddedInput');
  const di = reduceAxis('di', kh), dj = reduceAxis('dj', kw);
  return compute('DepthwiseConv2d', [n, c * m, oh, ow], ['b', 'c', 'i', 'j'], (b, cc, i, j) => {
    const ic = m === 1 ? cc : floordiv(cc, m);
    return sum(mul(load(padded, [b, ic, tap(i, sh, vr(di), dh), tap(j, sw, vr(dj), dw)]),
      load(kernel, [ic, m === 1 ? 0 : floormod(cc, m), vr(di), vr(dj)])), [di, dj]);
  }, 'depthwise_conv2d_nchw');
}

/**
 * dense: data [M, K] x weight [N, K] -> [M, N] (weight transposed, as in TVM). As Relay's
 * nn.dense, data may have more leading axes ([..., K] -> [..., N]), so a linear layer over
 * a sequence needs no reshape (and keeps its bias/activation epilogue).
 */
export function dense(data: Tensor, weight: Tensor): Tensor {
  const kd = data.shape[data.shape.length - 1], [n, kw] = weight.shape;
  if (data.shape.length < 2 || weight.shape.length !== 2) throw new Error(`dense: data of rank ${data.shape.length} and weight of rank ${weight.shape.length} (need >= 2 and 2)`);
  if (kd !== kw) throw new Error(`dense: data has K=${kd}, weight has K=${kw}`);
  const k = reduceAxis('k', kd);
  const lead = data.shape.slice(0, -1);
  const names = lead.length === 1 ? ['i', 'j'] : [...lead.slice(0, -1).map((_, a) => `b${a}`), 'i', 'j'];
  return compute('T_matmul_NT', [...lead, n], names, (...ax) =>
    sum(mul(load(data, [...ax.slice(0, -1), vr(k)]), load(weight, [ax[ax.length - 1], vr(k)])), [k]), 'dense');
}

/**
 * How a batch_matmul operand reads its stored tensor: the operand is
 * transpose(reshape(stored[begin : begin + box], shape), perm), where the reshape only
 * splits axes (each axis of the box is the product of consecutive `shape` axes, extent-1
 * axes anywhere). This is how attention's head split and K^T (Reshape [B, S, H*D] ->
 * [B, S, H, D], Transpose), and q, k, v as parts of one fused qkv projection (Split), are
 * read in place, through the index arithmetic, with no copy.
 */
export interface OperandView {
  /** The region read, per stored axis: first index and extent (default: the whole tensor). */
  readonly begin?: readonly number[];
  readonly box?: readonly number[];
  readonly shape: readonly number[];
  readonly perm: readonly number[];
}

/** The stored region a view reads: its extents (the whole tensor without a box). */
export const viewBox = (stored: readonly number[], view: OperandView): readonly number[] => view.box ?? stored;

/** For each axis of `from`, the consecutive axes of `to` it splits into (extent-1 axes anywhere), or undefined. */
export function splitGroups(from: readonly number[], to: readonly number[]): number[][] | undefined {
  const groups: number[][] = [];
  let p = 0;
  for (const e of from) {
    const g: number[] = [];
    let prod = 1;
    while (prod < e) {
      if (p >= to.length) return undefined;
      prod *= to[p];
      g.push(p++);
    }
    if (prod !== e) return undefined;
    groups.push(g);
  }
  for (; p < to.length; p++) {
    if (to[p] !== 1 || groups.length === 0) return undefined;
    groups[groups.length - 1].push(p);
  }
  return groups;
}

/** The shape an operand view gives a stored tensor of shape `stored` (throws when the view does not fit it). */
export function viewShape(stored: readonly number[], view: OperandView | undefined): number[] {
  if (!view) return [...stored];
  const r = view.shape.length;
  if (view.perm.length !== r || [...view.perm].sort((a, b) => a - b).some((p, i) => p !== i)) throw new Error(`operand view: perm [${view.perm.join(', ')}] is not a permutation of ${r} axes`);
  const box = viewBox(stored, view), begin = view.begin ?? stored.map(() => 0);
  if (box.length !== stored.length || begin.length !== stored.length || box.some((e, j) => e < 1 || begin[j] < 0 || begin[j] + e > stored[j])) {
    throw new Error(`operand view: region [${begin.join(', ')}] + [${box.join(', ')}] is not inside [${stored.join(', ')}]`);
  }
  if (!splitGroups(box, view.shape)) throw new Error(`operand view: [${box.join(', ')}] does not split into [${view.shape.join(', ')}]`);
  return view.perm.map((p) => view.shape[p]);
}

/** The stored tensor's index for logical indices `idx` of a view of it. */
function viewIndex(stored: readonly number[], view: OperandView | undefined, idx: readonly Expr[]): Expr[] {
  if (!view) return [...idx];
  const inner = new Array<Expr>(view.shape.length);
  view.perm.forEach((p, i) => { inner[p] = idx[i]; });
  return splitGroups(viewBox(stored, view), view.shape)!.map((g, j) => {
    let e: Expr | undefined = view.begin?.[j] ? int(view.begin[j]) : undefined;
    for (const a of g) {
      if (view.shape[a] === 1) continue;
      const stride = g.filter((b) => b > a).reduce((acc, b) => acc * view.shape[b], 1);
      const term = stride === 1 ? inner[a] : mul(inner[a], stride);
      e = e ? add(e, term) : term;
    }
    return e ?? int(0);
  });
}

export interface BatchMatmulOptions {
  /** The logical x is stored [..., K, M] (default false: [..., M, K]). */
  transA?: boolean;
  /** The logical y is stored [..., N, K] (default true, TVM's NT form); false: [..., K, N]. */
  transB?: boolean;
  /** x's logical operand read through a view of the stored tensor (before transA). */
  viewA?: OperandView;
  /** y's logical operand read through a view of the stored tensor (before transB). */
  viewB?: OperandView;
}

/** The broadcast batch shape of two batch shapes (numpy's rules, aligned on the right). */
export function broadcastBatch(a: readonly number[], b: readonly number[], what = 'batch_matmul'): number[] {
  const rank = Math.max(a.length, b.length);
  return Array.from({ length: rank }, (_, i) => {
    const x = a[i - rank + a.length] ?? 1, y = b[i - rank + b.length] ?? 1;
    if (x !== y && x !== 1 && y !== 1) throw new Error(`${what}: batch mismatch ${x} vs ${y} ([${a.join(', ')}] and [${b.join(', ')}])`);
    return Math.max(x, y);
  });
}

/**
 * batch_matmul (TOPI's, with its transpose_a/transpose_b): x [..., M, K] (transA: [..., K, M])
 * times y [..., N, K] (the default transB) or [..., K, N] -> [..., M, N]. The batch axes
 * broadcast as numpy's matmul does (extent 1, or absent, repeats); 3-D operands in the NT
 * form are TVM's batch_matmul exactly. Transposes (and views) of the operands are read
 * through the access pattern, never materialised.
 */
export function batchMatmul(x: Tensor, y: Tensor, opts: BatchMatmulOptions = {}): Tensor {
  const transA = opts.transA ?? false, transB = opts.transB ?? true;
  const xs = viewShape(x.shape, opts.viewA), ys = viewShape(y.shape, opts.viewB);
  if (xs.length < 2 || ys.length < 2) throw new Error(`batch_matmul: operands of rank ${xs.length} and ${ys.length} (need >= 2)`);
  const xr = xs.length, yr = ys.length;
  const [m, kx] = transA ? [xs[xr - 1], xs[xr - 2]] : [xs[xr - 2], xs[xr - 1]];
  const [n, ky] = transB ? [ys[yr - 2], ys[yr - 1]] : [ys[yr - 1], ys[yr - 2]];
  if (kx !== ky) throw new Error(`batch_matmul: K mismatch ${kx} vs ${ky}`);
  const xb = xs.slice(0, -2), yb = ys.slice(0, -2);
  const batch = broadcastBatch(xb, yb);
  const k = reduceAxis('k', kx);
  const names = batch.length === 1 ? ['b', 'i', 'j'] : [...batch.map((_, a) => `b${a}`), 'i', 'j'];
  // An operand's batch index: its own axes aligned on the right, extent-1 axes read at 0 (TOPI's rule).
  const batchIndex = (own: readonly number[], ax: readonly Expr[]): Expr[] =>
    own.map((d, a) => (d === 1 ? int(0) : ax[a + batch.length - own.length]));
  const name = `T_batch_matmul_${transA ? 'T' : 'N'}${transB ? 'T' : 'N'}`;
  return compute(name, [...batch, m, n], names, (...ax) => {
    const i = ax[batch.length], j = ax[batch.length + 1];
    const xa = viewIndex(x.shape, opts.viewA, [...batchIndex(xb, ax), ...(transA ? [vr(k), i] : [i, vr(k)])]);
    const ya = viewIndex(y.shape, opts.viewB, [...batchIndex(yb, ax), ...(transB ? [j, vr(k)] : [vr(k), j])]);
    return sum(mul(load(x, xa), load(y, ya)), [k]);
  }, 'batch_matmul');
}

export interface Pool2dParams {
  kind: 'max' | 'avg';
  kernel: [number, number];
  strides: [number, number];
  /** [top, left, bottom, right] */
  padding: [number, number, number, number];
  /** avg only: whether padded zeros count in the divisor. */
  countIncludePad?: boolean;
  layout: Layout;
}

const MIN_FLOAT32 = -3.4028234663852886e38;

/** max/avg 2-D pooling with explicit windows (TOPI `pool2d`). */
export function pool2d(data: Tensor, p: Pool2dParams): Tensor {
  const [hAxis, wAxis] = p.layout === 'NHWC' ? [1, 2] : [2, 3];
  const h = data.shape[hAxis], w = data.shape[wAxis];
  const [kh, kw] = p.kernel, [sh, sw] = p.strides, [pt, pl, pb, pr] = p.padding;
  const oh = outSize(h, kh, sh, 1, pt, pb), ow = outSize(w, kw, sw, 1, pl, pr);
  const before = [0, 0, 0, 0], after = [0, 0, 0, 0];
  before[hAxis] = pt; before[wAxis] = pl; after[hAxis] = pb; after[wAxis] = pr;
  // TOPI's pool pads (with its C++ pad) only when some padding is non-zero.
  const hasPad = pt + pl + pb + pr > 0;
  const padded = hasPad ? pad(data, before, after, 'pad_temp', p.kind === 'max' ? MIN_FLOAT32 : 0, 'cpp') : data;
  const outShape = [...data.shape];
  outShape[hAxis] = oh; outShape[wAxis] = ow;
  const rv0 = reduceAxis('rv0', kh), rv1 = reduceAxis('rv1', kw);
  const axes = ['ax0', 'ax1', 'ax2', 'ax3'];
  const window = (ax: Expr[]): Expr[] => {
    const idx = [...ax];
    idx[hAxis] = add(mul(ax[hAxis], sh), vr(rv0));
    idx[wAxis] = add(mul(ax[wAxis], sw), vr(rv1));
    return idx;
  };
  if (p.kind === 'max') {
    return compute('pool_max', outShape, axes, (...ax) => maxReduce(load(padded, window(ax)), [rv0, rv1]), 'pool');
  }
  const total = compute('pool_sum', outShape, axes, (...ax) => sum(load(padded, window(ax)), [rv0, rv1]), 'pool');
  return compute('pool_avg', outShape, axes, (...ax) => {
    if (p.countIncludePad || !hasPad) return div(load(total, ax), f32(kh * kw));
    // Divisor = the part of the window that lies inside the unpadded input.
    const extent = (o: Expr, stride: number, k: number, padBefore: number, size: number): Expr => {
      const start = sub(mul(o, stride), padBefore);
      const end = add(start, k);
      return sub(minE(end, size), maxE(start, 0));
    };
    const count = mul(extent(ax[hAxis], sh, kh, pt, h), extent(ax[wAxis], sw, kw, pl, w));
    return div(load(total, ax), cast('float32', max(count, 1)));
  }, 'pool');
}

const minE = (a: Expr, b: number): Expr => ({ k: 'bin', op: 'min', a, b: { k: 'const', value: b, dtype: 'int32' }, dtype: 'int32' });
const maxE = (a: Expr, b: number): Expr => ({ k: 'bin', op: 'max', a, b: { k: 'const', value: b, dtype: 'int32' }, dtype: 'int32' });

/**
 * Adaptive average/max pooling to `outSize` (TOPI `adaptive_pool`); global pooling is the
 * 1x1 case. Window i spans [floor(i*in/out), ceil((i+1)*in/out)).
 */
export function adaptivePool2d(data: Tensor, outSizeHW: [number, number], kind: 'avg' | 'max', layout: Layout): Tensor {
  const [hAxis, wAxis] = layout === 'NHWC' ? [1, 2] : [2, 3];
  const inH = data.shape[hAxis], inW = data.shape[wAxis];
  const [outH, outW] = outSizeHW;
  const start = (o: Expr, n: number, out: number): Expr => floordiv(mul(o, n), out);
  const end = (o: Expr, n: number, out: number): Expr => {
    const scaled = mul(add(o, 1), n);
    const cond = n % out === 0 && out === 1 ? bool(true) : eq(floormod(scaled, out), 0);
    return select(cond, floordiv(scaled, out), add(floordiv(scaled, out), 1));
  };
  const uniform = (n: number, out: number): boolean => n % out === 0;
  const maxWindow = (n: number, out: number): number => (uniform(n, out) ? n / out : Math.ceil(n / out) + 1);
  const rv0 = reduceAxis('rv0', maxWindow(inH, outH)), rv1 = reduceAxis('rv1', maxWindow(inW, outW));
  const shape = [...data.shape];
  shape[hAxis] = outH; shape[wAxis] = outW;
  const axes = ['ax0', 'ax1', 'ax2', 'ax3'];
  const source = (ax: Expr[]): Expr => {
    const idx = [...ax];
    idx[hAxis] = add(start(ax[hAxis], inH, outH), vr(rv0));
    idx[wAxis] = add(start(ax[wAxis], inW, outW), vr(rv1));
    if (uniform(inH, outH) && uniform(inW, outW)) return load(data, idx);
    // Non-uniform windows: taps past the window's end read the neutral element.
    const inside = all([lt(idx[hAxis], end(ax[hAxis], inH, outH)), lt(idx[wAxis], end(ax[wAxis], inW, outW))])!;
    const safe = [...idx];
    safe[hAxis] = minE(idx[hAxis], inH - 1); safe[wAxis] = minE(idx[wAxis], inW - 1);
    return ifThenElse(inside, load(data, safe), f32(kind === 'max' ? MIN_FLOAT32 : 0));
  };
  if (kind === 'max') return compute('adaptive_pool_max', shape, axes, (...ax) => maxReduce(source(ax), [rv0, rv1]), 'pool');
  const total = compute('adaptive_pool_sum', shape, axes, (...ax) => sum(source(ax), [rv0, rv1]), 'pool');
  return compute('adaptive_pool_avg', shape, axes, (...ax) => {
    const size = (o: Expr, n: number, out: number): Expr => cast('float32', sub(end(o, n, out), start(o, n, out)));
    return div(load(total, ax), mul(size(ax[hAxis], inH, outH), size(ax[wAxis], inW, outW)));
  }, 'pool');
}

/** softmax along `axis` (TOPI's four stages: max, exp, sum, normalise). */
export function softmax(data: Tensor, axis = -1): Tensor {
  const rank = data.shape.length;
  const a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) throw new Error(`softmax: axis ${axis} out of range for rank ${rank}`);
  const names = data.shape.map((_, i) => `i${i}`);
  // TOPI's te.compute(*indices) names the reduced stages' axes i0, i1, ... afresh.
  const reducedNames = names.slice(0, rank - 1);
  const reducedShape = data.shape.filter((_, i) => i !== a);
  const k = reduceAxis('k', data.shape[a]);
  const withK = (outer: Expr[]): Expr[] => {
    const idx = [...outer];
    idx.splice(a, 0, vr(k));
    return idx;
  };
  const maxelem = compute('T_softmax_maxelem', reducedShape, reducedNames, (...o) => maxReduce(load(data, withK(o)), [k]), 'softmax');
  const drop = (ax: Expr[]): Expr[] => ax.filter((_, i) => i !== a);
  const exp = compute('T_softmax_exp', data.shape, names, (...ax) => call('exp', sub(load(data, ax), load(maxelem, drop(ax)))), 'softmax');
  const expsum = compute('T_softmax_expsum', reducedShape, reducedNames, (...o) => sum(load(exp, withK(o)), [k]), 'softmax');
  return compute('T_softmax_norm', data.shape, names, (...ax) => div(load(exp, ax), load(expsum, drop(ax))), 'softmax');
}

/** Inference batch-norm over `axis`: (x - mean) / sqrt(var + eps) * gamma + beta. */
export function batchNorm(x: Tensor, gamma: Tensor, beta: Tensor, mean: Tensor, variance: Tensor, axis: number, eps: number): Tensor {
  const rank = x.shape.length;
  const a = axis < 0 ? axis + rank : axis;
  for (const t of [gamma, beta, mean, variance]) {
    if (t.shape.length !== 1 || t.shape[0] !== x.shape[a]) throw new Error(`batch_norm: ${t.name} must have shape [${x.shape[a]}]`);
  }
  const names = x.shape.map((_, i) => `ax${i}`);
  return compute('T_batch_norm', x.shape, names, (...ax) => {
    const c = [ax[a]];
    const normed = div(sub(load(x, ax), load(mean, c)), call('sqrt', add(load(variance, c), f32(eps))));
    return add(mul(normed, load(gamma, c)), load(beta, c));
  }, 'elemwise');
}

// A reduce axis used as an index expression.
function vr(axis: { name: string }): Expr {
  return { k: 'var', name: axis.name };
}

/**
 * Mean over `axes` (TOPI `mean`: a sum stage, then a division by the number of reduced
 * elements); `keepdims` keeps the reduced axes with extent 1.
 */
export function reduceMean(data: Tensor, axes: readonly number[], keepdims: boolean): Tensor {
  const rank = data.shape.length;
  const red = [...new Set(axes.map((a) => (a < 0 ? a + rank : a)))].sort((x, y) => x - y);
  if (red.some((a) => !Number.isInteger(a) || a < 0 || a >= rank)) throw new Error(`mean: axes [${axes.join(', ')}] out of range for rank ${rank}`);
  const raxes = red.map((a, i) => reduceAxis(`k${i}`, data.shape[a]));
  const shape = data.shape.flatMap((d, i) => (red.includes(i) ? (keepdims ? [1] : []) : [d]));
  const names = shape.map((_, i) => `ax${i}`);
  const count = red.reduce((acc, a) => acc * data.shape[a], 1);
  const source = (ax: Expr[]): Expr[] => {
    let j = 0;
    return data.shape.map((_, i) => {
      const r = red.indexOf(i);
      if (r >= 0) {
        if (keepdims) j++;
        return vr(raxes[r]);
      }
      return ax[j++];
    });
  };
  const total = compute('T_sum', shape, names, (...ax) => sum(load(data, source(ax)), raxes), 'comm_reduce');
  return compute('T_mean', shape, names, (...ax) => div(load(total, ax), f32(count)), 'elemwise');
}
