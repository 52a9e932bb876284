// Normalizations as reduction stages plus elementwise stages, as TOPI declares them, so
// that each statistic is a reduction the search can schedule (split, rfactor) on its own:
//  - layer, instance, group and mean-variance normalization: a sum (the mean), a sum of
//    squared deviations from it (the variance, two passes: no cancellation), then the
//    normalized, scaled and shifted output;
//  - LRN: a windowed sum of squares across channels, then x / (bias + alpha/size * s)^beta;
//  - log-softmax and hardmax along one axis (softmax itself is topi/nn.ts's).

import {
  add, and, call, cast, div, eq, f32, ge, ifThenElse, int, load, lt, maxReduce, minReduce, mul, select, sub, sum,
  type Expr, type IterVar, type Var,
} from '../ir/expr';
import { compute, numElements, type Tensor } from '../ir/tensor';
import { normalizeAxes } from './reduce';

const asVar = (axis: IterVar): Var => ({ k: 'var', name: axis.name });
const names = (rank: number, prefix = 'ax'): string[] => Array.from({ length: rank }, (_, i) => `${prefix}${i}`);

/**
 * Statistics of `x` over groups of its elements: `stat` is the shape of one statistic per
 * group, `source(o, r)` the index into `x` of reduce position `r` of group `o`, and
 * `groupOf(ax)` the group of element `ax` of x. Returns the mean and 1/sqrt(var + eps).
 */
interface Grouping {
  readonly stat: readonly number[];
  readonly raxes: readonly IterVar[];
  source(o: readonly Expr[], r: readonly Expr[]): Expr[];
  groupOf(ax: readonly Expr[]): Expr[];
}

interface Moments { readonly mean: Tensor; readonly rstd: Tensor }

function moments(x: Tensor, g: Grouping, eps: number, prefix: string, rstd: (variance: Expr) => Expr = (v) => call('rsqrt', add(v, f32(eps)))): Moments {
  const count = numElements(g.raxes.map((a) => a.extent));
  const on = names(g.stat.length);
  const r = g.raxes.map(asVar);
  const total = compute(`${prefix}_sum`, g.stat, on, (...o) => sum(load(x, g.source(o, r)), g.raxes), 'comm_reduce');
  const mean = compute(`${prefix}_mean`, g.stat, on, (...o) => div(load(total, o), f32(count)), 'elemwise');
  const sq = compute(`${prefix}_sqsum`, g.stat, on, (...o) => {
    const d = sub(load(x, g.source(o, r)), load(mean, o));
    return sum(mul(d, d), g.raxes);
  }, 'comm_reduce');
  const inv = compute(`${prefix}_rstd`, g.stat, on, (...o) => rstd(div(load(sq, o), f32(count))), 'elemwise');
  return { mean, rstd: inv };
}

/** Statistics over `axes` of x (sorted, in range), one per position of the other axes, kept with extent 1. */
function overAxes(x: Tensor, axes: readonly number[]): Grouping {
  const raxes = axes.map((a, i) => ({ name: `k${i}`, extent: x.shape[a] }));
  return {
    stat: x.shape.map((d, i) => (axes.includes(i) ? 1 : d)),
    raxes,
    source: (o, r) => o.map((e, i) => (axes.includes(i) ? r[axes.indexOf(i)] : e)),
    groupOf: (ax) => ax.map((e, i) => (axes.includes(i) ? int(0) : e)),
  };
}

/** The normalized element ((x - mean) * rstd) of x at `ax`. */
const normalized = (x: Tensor, g: Grouping, m: Moments, ax: readonly Expr[]): Expr =>
  mul(sub(load(x, [...ax]), load(m.mean, g.groupOf(ax))), load(m.rstd, g.groupOf(ax)));

/** Indices into `t` for element `ax` of a tensor of rank `rank`, `t` broadcast against its trailing axes (numpy rules). */
function trailing(t: Tensor, rank: number, ax: readonly Expr[]): Expr[] {
  const off = rank - t.shape.length;
  return t.shape.map((d, i) => (d === 1 ? int(0) : ax[off + i]));
}

function checkTrailing(t: Tensor, shape: readonly number[], what: string): void {
  const off = shape.length - t.shape.length;
  if (off < 0 || t.shape.some((d, i) => d !== 1 && d !== shape[off + i])) {
    throw new Error(`${what}: shape [${t.shape.join(', ')}] does not broadcast to [${shape.join(', ')}]`);
  }
}

/**
 * ONNX LayerNormalization: normalize over axes [axis, rank), then `* scale + bias`, both
 * broadcast against x by numpy's rules (ONNX Runtime accepts [D], [S, D], [S, 1]...);
 * `bias` optional.
 */
export function layerNorm(x: Tensor, scale: Tensor, bias: Tensor | undefined, axis: number, eps: number): Tensor {
  const rank = x.shape.length;
  const a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) throw new Error(`layer_norm: axis ${axis} out of range for rank ${rank}`);
  checkTrailing(scale, x.shape, 'layer_norm scale');
  if (bias) checkTrailing(bias, x.shape, 'layer_norm bias');
  const g = overAxes(x, x.shape.map((_, i) => i).slice(a));
  const m = moments(x, g, eps, 'T_layer_norm');
  return compute('T_layer_norm', x.shape, names(rank), (...ax) => {
    const y = mul(normalized(x, g, m, ax), load(scale, trailing(scale, rank, ax)));
    return bias ? add(y, load(bias, trailing(bias, rank, ax))) : y;
  }, 'elemwise');
}

/** LayerNormalization's Mean or InvStdDev output: shape x.shape[:axis] + [1] * (rank - axis). */
export function layerNormStat(x: Tensor, axis: number, eps: number, which: 'mean' | 'inv_std_dev'): Tensor {
  const rank = x.shape.length;
  const a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) throw new Error(`layer_norm: axis ${axis} out of range for rank ${rank}`);
  const m = moments(x, overAxes(x, x.shape.map((_, i) => i).slice(a)), eps, 'T_layer_norm');
  return which === 'mean' ? m.mean : m.rstd;
}

/**
 * ONNX InstanceNormalization, generalised to the channel axis `axis` (1 for NCHW, the last
 * for NHWC): statistics per (batch, channel) over every other axis, scale and bias per channel.
 */
export function instanceNorm(x: Tensor, scale: Tensor, bias: Tensor, eps: number, axis = 1): Tensor {
  const rank = x.shape.length;
  const c = axis < 0 ? axis + rank : axis;
  if (rank < 3 || c < 1 || c >= rank) throw new Error(`instance_norm: channel axis ${axis} of a rank-${rank} input (rank >= 3, not the batch axis)`);
  for (const t of [scale, bias]) {
    if (t.shape.length !== 1 || t.shape[0] !== x.shape[c]) throw new Error(`instance_norm: ${t.name} must have shape [${x.shape[c]}]`);
  }
  const g = overAxes(x, x.shape.map((_, i) => i).filter((i) => i !== 0 && i !== c));
  const m = moments(x, g, eps, 'T_instance_norm');
  return compute('T_instance_norm', x.shape, names(rank), (...ax) =>
    add(mul(normalized(x, g, m, ax), load(scale, [ax[c]])), load(bias, [ax[c]])), 'elemwise');
}

/**
 * ONNX GroupNormalization over NCHW-style input [N, C, ...]: statistics per (batch, group of
 * C / groups channels) over the group's channels and every spatial axis. `perChannel`:
 * scale and bias have C values (opset 21), else `groups` values (opset 18).
 */
export function groupNorm(x: Tensor, scale: Tensor, bias: Tensor, groups: number, eps: number, perChannel: boolean): Tensor {
  const rank = x.shape.length;
  if (rank < 2) throw new Error(`group_norm: input of rank ${rank} (rank >= 2)`);
  const [n, ch] = x.shape;
  if (!Number.isInteger(groups) || groups < 1 || ch % groups !== 0) throw new Error(`group_norm: ${ch} channels do not split into ${groups} groups`);
  const per = ch / groups;
  const want = perChannel ? ch : groups;
  for (const t of [scale, bias]) {
    if (t.shape.length !== 1 || t.shape[0] !== want) throw new Error(`group_norm: ${t.name} must have shape [${want}]`);
  }
  const spatial = x.shape.slice(2);
  const raxes = [{ name: 'kc', extent: per }, ...spatial.map((d, i) => ({ name: `k${i}`, extent: d }))];
  const g: Grouping = {
    stat: [n, groups],
    raxes,
    source: (o, r) => [o[0], add(mul(o[1], per), r[0]), ...r.slice(1)],
    groupOf: (ax) => [ax[0], div_(ax[1], per)],
  };
  const m = moments(x, g, eps, 'T_group_norm');
  return compute('T_group_norm', x.shape, names(rank), (...ax) => {
    const k = perChannel ? [ax[1]] : [div_(ax[1], per)];
    return add(mul(normalized(x, g, m, ax), load(scale, k)), load(bias, k));
  }, 'elemwise');
}

const div_ = (a: Expr, b: number): Expr => ({ k: 'bin', op: 'floordiv', a, b: int(b), dtype: 'int32' });

/**
 * ONNX MeanVarianceNormalization: (x - mean) / (sqrt(var) + 1e-9) over `axes` (the
 * variance is the mean squared deviation, computed in a second pass).
 */
export function meanVarianceNorm(x: Tensor, axes: readonly number[]): Tensor {
  const rank = x.shape.length;
  const red = normalizeAxes(axes, rank, 'mean_variance_normalization');
  if (red.length === 0) throw new Error('mean_variance_normalization: no axes');
  const g = overAxes(x, red);
  const m = moments(x, g, 0, 'T_mvn', (v) => div(f32(1), add(call('sqrt', v), f32(1e-9))));
  return compute('T_mvn', x.shape, names(rank), (...ax) => normalized(x, g, m, ax), 'elemwise');
}

/**
 * ONNX LRN across the channel axis `axis` (1 for NCHW): x / (bias + alpha / size *
 * sum of x^2 over channels c - floor((size-1)/2) .. c + ceil((size-1)/2))^beta, the
 * power as exp(beta * log(.)), as the base is positive for ONNX's bias > 0.
 */
export function lrn(x: Tensor, size: number, alpha: number, beta: number, bias: number, axis = 1): Tensor {
  const rank = x.shape.length;
  const c = axis < 0 ? axis + rank : axis;
  if (c < 0 || c >= rank) throw new Error(`lrn: axis ${axis} out of range for rank ${rank}`);
  if (!Number.isInteger(size) || size < 1) throw new Error(`lrn: size ${size}`);
  const channels = x.shape[c];
  const before = Math.floor((size - 1) / 2);
  const r = { name: 'rc', extent: size };
  const on = names(rank);
  const sqsum = compute('T_lrn_sqsum', x.shape, on, (...ax) => {
    const ch = sub(add(ax[c], asVar(r)), before);
    const idx = ax.map((e, i) => (i === c ? ch : e));
    const v = load(x, idx);
    return sum(ifThenElse(and(ge(ch, 0), lt(ch, channels)), mul(v, v), f32(0)), [r]);
  }, 'comm_reduce');
  return compute('T_lrn', x.shape, on, (...ax) => {
    const base = add(mul(load(sqsum, ax), f32(alpha / size)), f32(bias));
    return div(load(x, ax), call('exp', mul(call('log', base), f32(beta))));
  }, 'elemwise');
}

/** Stages of a reduction along one axis: the reduced shape and the input index of a reduced position. */
function alongAxis(data: Tensor, axis: number, what: string): { a: number; shape: number[]; names: string[]; k: IterVar; withK: (o: readonly Expr[]) => Expr[]; drop: (ax: readonly Expr[]) => Expr[] } {
  const rank = data.shape.length;
  const a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) throw new Error(`${what}: axis ${axis} out of range for rank ${rank}`);
  const k = { name: 'k', extent: data.shape[a] };
  return {
    a,
    shape: data.shape.filter((_, i) => i !== a),
    names: names(rank - 1, 'i'),
    k,
    withK: (o) => { const idx = [...o]; idx.splice(a, 0, asVar(k)); return idx; },
    drop: (ax) => ax.filter((_, i) => i !== a),
  };
}

/** log(softmax(x)) along `axis`: x - max - log(sum(exp(x - max))). */
export function logSoftmax(data: Tensor, axis = -1): Tensor {
  const s = alongAxis(data, axis, 'log_softmax');
  const all = names(data.shape.length, 'i');
  const maxelem = compute('T_log_softmax_maxelem', s.shape, s.names, (...o) => maxReduce(load(data, s.withK(o)), [s.k]), 'log_softmax');
  const expsum = compute('T_log_softmax_expsum', s.shape, s.names, (...o) =>
    sum(call('exp', sub(load(data, s.withK(o)), load(maxelem, o))), [s.k]), 'log_softmax');
  return compute('T_log_softmax', data.shape, all, (...ax) =>
    sub(sub(load(data, ax), load(maxelem, s.drop(ax))), call('log', load(expsum, s.drop(ax)))), 'log_softmax');
}

/** ONNX Hardmax along `axis`: 1 at the first maximum of each row, 0 elsewhere. */
export function hardmax(data: Tensor, axis = -1): Tensor {
  const s = alongAxis(data, axis, 'hardmax');
  const all = names(data.shape.length, 'i');
  const n = data.shape[s.a];
  const maxelem = compute('T_hardmax_maxelem', s.shape, s.names, (...o) => maxReduce(load(data, s.withK(o)), [s.k]), 'hardmax');
  // The first position of the max, as a float (exact up to 2^24).
  const first = compute('T_hardmax_first', s.shape, s.names, (...o) =>
    minReduce(select(eq(load(data, s.withK(o)), load(maxelem, o)), cast('float32', asVar(s.k)), f32(n)), [s.k]), 'hardmax');
  return compute('T_hardmax', data.shape, all, (...ax) =>
    select(eq(cast('float32', ax[s.a]), load(first, s.drop(ax))), f32(1), f32(0)), 'hardmax');
}
