// Indexing computes: take (ONNX Gather), gather_elements, gather_nd, argmax/argmin,
// cumsum, one_hot, the scatters and topk's positions, named as TVM's TOPI names them. Indices are int32 tensors read
// inside the body (a load whose index is another load).
//
// Every data-dependent index is wrapped (a negative index counts from the end, as ONNX
// defines) and then CLAMPED into [0, extent - 1]: ONNX leaves an out-of-range index
// undefined (ONNX Runtime raises), and a generated kernel must never read outside its
// buffer whatever the ids it is fed, so an out-of-range index reads the nearest edge
// element (TVM's take mode "clip" after the "wrap" of negative ones).

import {
  add, all, and, eq, floordiv, floormod, ge, gt, int, load, lt, max, maxReduce, min, minReduce, mul, or, prodReduce, reduceAxis, select, sum, type DType, type Expr,
} from '../ir/expr';
import { compute, numElements, type Tensor } from '../ir/tensor';

const names = (prefix: string, rank: number): string[] => Array.from({ length: rank }, (_, i) => `${prefix}${i}`);

function checkIndices(op: string, t: Tensor): void {
  if (t.dtype !== 'int32') throw new Error(`${op}: indices must be int32, not ${t.dtype}`);
}

function checkAxis(op: string, axis: number, rank: number): number {
  const a = axis < 0 ? axis + rank : axis;
  if (!Number.isInteger(a) || a < 0 || a >= rank) throw new Error(`${op}: axis ${axis} is out of range for rank ${rank}`);
  return a;
}

/** A data-dependent index into an axis of `extent`: negative ones wrapped, then clamped into range (see the header). */
export function safeIndex(i: Expr, extent: number): Expr {
  const wrapped = select(lt(i, 0), add(i, extent), i);
  return min(max(wrapped, int(0)), int(extent - 1));
}

/**
 * TOPI's take / ONNX Gather along `axis`: out[o..., j..., i...] = data[o..., indices[j...], i...].
 * Output shape data.shape[:axis] + indices.shape + data.shape[axis+1:] (a scalar index drops the axis).
 */
export function take(data: Tensor, indices: Tensor, axis: number): Tensor {
  checkIndices('take', indices);
  const a = checkAxis('take', axis, data.shape.length);
  const r = indices.shape.length;
  const shape = [...data.shape.slice(0, a), ...indices.shape, ...data.shape.slice(a + 1)];
  return compute('T_take', shape, names('ax', shape.length), (...ax) => {
    const idx = safeIndex(load(indices, ax.slice(a, a + r)), data.shape[a]);
    return load(data, [...ax.slice(0, a), idx, ...ax.slice(a + r)]);
  }, 'injective');
}

/** ONNX GatherElements: out[i...] = data[i... with i_axis replaced by indices[i...]]; out has the indices' shape. */
export function gatherElements(data: Tensor, indices: Tensor, axis: number): Tensor {
  checkIndices('gather_elements', indices);
  const a = checkAxis('gather_elements', axis, data.shape.length);
  if (indices.shape.length !== data.shape.length) throw new Error(`gather_elements: indices of rank ${indices.shape.length} for data of rank ${data.shape.length}`);
  indices.shape.forEach((d, i) => {
    if (i !== a && d > data.shape[i]) throw new Error(`gather_elements: indices dimension ${i} (${d}) exceeds the data's (${data.shape[i]})`);
  });
  return compute('T_gather_elements', indices.shape, names('ax', indices.shape.length), (...ax) => {
    const idx = safeIndex(load(indices, ax), data.shape[a]);
    return load(data, ax.map((x, i) => (i === a ? idx : x)));
  }, 'injective');
}

/**
 * ONNX GatherND with `batchDims` leading batch axes: indices [b..., n..., q] pick the slices
 * data[b..., idx_0..idx_{q-1}, rest...]; out shape indices.shape[:-1] + data.shape[batchDims+q:].
 */
export function gatherNd(data: Tensor, indices: Tensor, batchDims = 0): Tensor {
  checkIndices('gather_nd', indices);
  const ri = indices.shape.length, q = indices.shape[ri - 1];
  if (ri < 1 || batchDims < 0 || batchDims >= ri) throw new Error(`gather_nd: batch_dims ${batchDims} for indices of rank ${ri}`);
  if (batchDims + q > data.shape.length) throw new Error(`gather_nd: ${q} indices per slice after ${batchDims} batch axes exceed the data's rank ${data.shape.length}`);
  for (let i = 0; i < batchDims; i++) {
    if (indices.shape[i] !== data.shape[i]) throw new Error(`gather_nd: batch axis ${i} is ${indices.shape[i]} in the indices, ${data.shape[i]} in the data`);
  }
  const outer = indices.shape.slice(0, ri - 1), rest = data.shape.slice(batchDims + q);
  const shape = [...outer, ...rest];
  return compute('T_gather_nd', shape, names('ax', shape.length), (...ax) => {
    const pre = ax.slice(0, outer.length);
    const picked = Array.from({ length: q }, (_, k) => safeIndex(load(indices, [...pre, int(k)]), data.shape[batchDims + k]));
    return load(data, [...pre.slice(0, batchDims), ...picked, ...ax.slice(outer.length)]);
  }, 'injective');
}

/**
 * ONNX ArgMax / ArgMin (TOPI's argmax/argmin) along `axis`: the int32 position of the
 * largest (smallest) element, the first one (or with `selectLast` the last one) among ties.
 * Two stages instead of TVM's tuple (index, value) reducer, which our IR does not have:
 * the extreme value by a max (min) reduction, then the position as a min (max) reduction
 * over the positions holding that value (the others contribute the extent, or -1).
 * Both read the same float32 elements, so the equality is exact.
 */
export function argReduce(kind: 'max' | 'min', x: Tensor, axis: number, keepdims: boolean, selectLast: boolean): Tensor {
  const rank = x.shape.length;
  const a = checkAxis(`arg${kind}`, axis, rank);
  const n = x.shape[a];
  const kept = x.shape.map((d, i) => (i === a ? 1 : d));
  const at = (o: readonly Expr[], k: Expr): Expr[] => o.map((e, i) => (i === a ? k : e));
  const ext = compute(`T_arg${kind}_value`, kept, names('ax', rank), (...o) => {
    const k = reduceAxis('k', n);
    const v = load(x, at(o, { k: 'var', name: 'k' }));
    return kind === 'max' ? maxReduce(v, [k]) : minReduce(v, [k]);
  }, 'comm_reduce');
  const shape = keepdims ? kept : x.shape.filter((_, i) => i !== a);
  return compute(`T_arg${kind}`, shape, names('ax', shape.length), (...ax) => {
    const o: Expr[] = keepdims ? ax : [...ax.slice(0, a), int(0), ...ax.slice(a)];
    const r = reduceAxis('k', n);
    const kv: Expr = { k: 'var', name: 'k' };
    const hit = eq(load(x, at(o, kv)), load(ext, at(o, int(0))));
    return selectLast ? maxReduce(select(hit, kv, int(-1)), [r]) : minReduce(select(hit, kv, int(n)), [r]);
  }, 'comm_reduce');
}

/**
 * ONNX CumSum along `axis` (float32 or int32): out[..i..] = sum of x[..k..] over k <= i
 * (k < i when `exclusive`; k >= i, or k > i, when `reverse`). One reduction over the whole
 * axis with the other positions contributing 0: quadratic in the axis length, which is
 * what an IR without scans allows.
 */
export function cumsum(x: Tensor, axis: number, exclusive: boolean, reverse: boolean): Tensor {
  const rank = x.shape.length;
  const a = checkAxis('cumsum', axis, rank);
  const n = x.shape[a];
  return compute('T_cumsum', x.shape, names('ax', rank), (...ax) => {
    const r = reduceAxis('k', n);
    const k: Expr = { k: 'var', name: 'k' };
    const i = ax[a];
    const take = reverse ? (exclusive ? gt(k, i) : ge(k, i)) : exclusive ? lt(k, i) : ge(i, k);
    return sum(select(take, load(x, ax.map((e, d) => (d === a ? k : e))), 0), [r]);
  }, 'cumsum');
}

/**
 * ONNX OneHot (TOPI's one_hot): a new axis of `depth` at `axis`, `on` where it equals the
 * index (negative indices count from the end), `off` elsewhere; an index outside
 * [-depth, depth) gives a row of `off`.
 */
export function oneHot(indices: Tensor, depth: number, off: number, on: number, axis: number, dtype: DType): Tensor {
  checkIndices('one_hot', indices);
  const rank = indices.shape.length + 1;
  const a = checkAxis('one_hot', axis, rank);
  const shape = [...indices.shape.slice(0, a), depth, ...indices.shape.slice(a)];
  const value = (x: number): Expr => (dtype === 'float32' ? { k: 'const', value: Math.fround(x), dtype: 'float32' } : { k: 'const', value: Math.trunc(x), dtype });
  return compute('T_one_hot', shape, names('ax', rank), (...ax) => {
    const i = load(indices, ax.filter((_, d) => d !== a));
    const wrapped = select(lt(i, 0), add(i, depth), i);
    return select(eq(wrapped, ax[a]), value(on), value(off));
  }, 'injective');
}

/** How scattered updates combine with what is there (ONNX's `reduction`). */
export type ScatterReduction = 'none' | 'add' | 'mul' | 'max' | 'min';

/** The update folded with the data element for a reduction; the reduction's identity for positions no update hits. */
function scatterFold(r: Exclude<ScatterReduction, 'none'>, dtype: DType, source: (ifHit: Expr) => Expr, axes: ReturnType<typeof reduceAxis>[]): Expr {
  const c = (value: number): Expr => (dtype === 'float32' ? { k: 'const', value, dtype: 'float32' } : { k: 'const', value, dtype: 'int32' });
  if (r === 'add') return sum(source(c(0)), axes);
  if (r === 'mul') return prodReduce(source(c(1)), axes);
  const lowest = dtype === 'float32' ? -Infinity : -2147483648, highest = dtype === 'float32' ? Infinity : 2147483647;
  return r === 'max' ? maxReduce(source(c(lowest)), axes) : minReduce(source(c(highest)), axes);
}

function combine(r: Exclude<ScatterReduction, 'none'>, a: Expr, b: Expr): Expr {
  return r === 'add' ? add(a, b) : r === 'mul' ? mul(a, b) : r === 'max' ? max(a, b) : min(a, b);
}

/** An index read from a tensor, negative ones wrapped (no clamp: an out-of-range one matches no position). */
const wrapIndex = (i: Expr, extent: number): Expr => select(lt(i, 0), add(i, extent), i);

/**
 * ONNX ScatterElements along `axis`: data with data[i... with i_axis = indices[j...]] =
 * updates[j...] for every j (the other coordinates equal). Per output position, the
 * updates that can land there lie on one line along the axis, so a reduction over that
 * line finds them: for 'none' the last one (ONNX Runtime applies them in order), then a
 * second stage reads it; for add/mul/max/min the line folds into the element.
 */
export function scatterElements(data: Tensor, indices: Tensor, updates: Tensor, axis: number, reduction: ScatterReduction): Tensor {
  checkIndices('scatter_elements', indices);
  const rank = data.shape.length;
  const a = checkAxis('scatter_elements', axis, rank);
  const u = indices.shape;
  if (u.length !== rank || updates.shape.length !== rank || u.some((d, i) => d !== updates.shape[i] || (i !== a && d > data.shape[i]))) {
    throw new Error(`scatter_elements: indices [${u.join(', ')}] and updates [${updates.shape.join(', ')}] do not fit data [${data.shape.join(', ')}]`);
  }
  if (updates.dtype !== data.dtype) throw new Error(`scatter_elements: updates are ${updates.dtype}, data ${data.dtype}`);
  const n = u[a];
  // The position on the line (coordinate `k` on the axis), and whether position p has a line at all.
  const at = (p: readonly Expr[], k: Expr): Expr[] => p.map((e, d) => (d === a ? k : u[d] < data.shape[d] ? min(e, int(u[d] - 1)) : e));
  const onLine = (p: readonly Expr[]): Expr | undefined => all(p.flatMap((e, d) => (d !== a && u[d] < data.shape[d] ? [lt(e, u[d])] : [])));
  const hit = (p: readonly Expr[], k: Expr): Expr => {
    const m = eq(wrapIndex(load(indices, at(p, k)), data.shape[a]), p[a]);
    const line = onLine(p);
    return line ? and(line, m) : m;
  };
  const ax = names('ax', rank);
  const kv: Expr = { k: 'var', name: 'k' };
  if (reduction !== 'none') {
    const acc = compute('T_scatter_elements_acc', data.shape, ax, (...p) =>
      scatterFold(reduction, data.dtype, (id) => select(hit(p, kv), load(updates, at(p, kv)), id), [reduceAxis('k', n)]), 'comm_reduce');
    return compute('T_scatter_elements', data.shape, ax, (...p) => combine(reduction, load(data, p), load(acc, p)), 'injective');
  }
  const last = compute('T_scatter_elements_pos', data.shape, ax, (...p) => maxReduce(select(hit(p, kv), kv, int(-1)), [reduceAxis('k', n)]), 'comm_reduce');
  return compute('T_scatter_elements', data.shape, ax, (...p) => {
    const pos = load(last, p);
    return select(ge(pos, 0), load(updates, at(p, max(pos, int(0)))), load(data, p));
  }, 'injective');
}

/**
 * ONNX ScatterND: indices [q..., k] name k leading coordinates of data; updates
 * [q..., data.shape[k:]...] are written there. Per output position a reduction over every
 * q finds the updates that land on it (the last for 'none', as ONNX Runtime applies them
 * in order), so the cost is |data| * |q| steps: the converter refuses big ones.
 */
export function scatterNd(data: Tensor, indices: Tensor, updates: Tensor, reduction: ScatterReduction): Tensor {
  checkIndices('scatter_nd', indices);
  const rank = data.shape.length, ri = indices.shape.length;
  const k = indices.shape[ri - 1], q = indices.shape.slice(0, ri - 1);
  const want = [...q, ...data.shape.slice(k)];
  if (ri < 1 || k > rank || updates.shape.length !== want.length || want.some((d, i) => d !== updates.shape[i])) {
    throw new Error(`scatter_nd: updates [${updates.shape.join(', ')}] for indices [${indices.shape.join(', ')}] into data [${data.shape.join(', ')}] (expected [${want.join(', ')}])`);
  }
  if (updates.dtype !== data.dtype) throw new Error(`scatter_nd: updates are ${updates.dtype}, data ${data.dtype}`);
  const qAxes = q.map((d, i) => reduceAxis(`q${i}`, d));
  const qv: Expr[] = q.map((_, i) => ({ k: 'var', name: `q${i}` }));
  const hit = (p: readonly Expr[]): Expr =>
    all(Array.from({ length: k }, (_, j) => eq(wrapIndex(load(indices, [...qv, int(j)]), data.shape[j]), p[j])))!;
  const ax = names('ax', rank);
  if (reduction !== 'none') {
    const acc = compute('T_scatter_nd_acc', data.shape, ax, (...p) =>
      scatterFold(reduction, data.dtype, (id) => select(hit(p), load(updates, [...qv, ...p.slice(k)]), id), qAxes), 'comm_reduce');
    return compute('T_scatter_nd', data.shape, ax, (...p) => combine(reduction, load(data, p), load(acc, p)), 'injective');
  }
  // The row-major number of the last q whose coordinates are p's.
  const strides = q.map((_, i) => numElements(q.slice(i + 1)));
  const flat = qv.reduce((acc: Expr, e, i) => add(acc, mul(e, strides[i])), int(0));
  const last = compute('T_scatter_nd_pos', data.shape, ax, (...p) => maxReduce(select(hit(p), flat, int(-1)), qAxes), 'comm_reduce');
  return compute('T_scatter_nd', data.shape, ax, (...p) => {
    const pos = max(load(last, p), int(0));
    const qi = q.map((d, i) => floormod(floordiv(pos, strides[i]), d));
    return select(ge(load(last, p), 0), load(updates, [...qi, ...p.slice(k)]), load(data, p));
  }, 'injective');
}

/**
 * The positions of ONNX TopK along `axis`: out[..j..] is the position of the j-th largest
 * (`largest`; else smallest) element, equal elements in position order, as ONNX defines.
 * Two reductions instead of a sort: each element's rank (how many elements come before it
 * in that order: quadratic in the axis length), then per output slot the position whose
 * rank it is. The values are a gather_elements of these positions.
 */
export function topkIndices(x: Tensor, k: number, axis: number, largest: boolean): Tensor {
  const rank = x.shape.length;
  const a = checkAxis('topk', axis, rank);
  const n = x.shape[a];
  if (!Number.isInteger(k) || k < 1 || k > n) throw new Error(`topk: k ${k} for an axis of ${n}`);
  const at = (p: readonly Expr[], m: Expr): Expr[] => p.map((e, d) => (d === a ? m : e));
  const ax = names('ax', rank);
  const mv: Expr = { k: 'var', name: 'm' };
  const before = compute('T_topk_rank', x.shape, ax, (...p) => {
    const other = load(x, at(p, mv)), mine = load(x, p);
    const ahead = largest ? gt(other, mine) : lt(other, mine);
    return sum(select(or(ahead, and(eq(other, mine), lt(mv, p[a]))), int(1), int(0)), [reduceAxis('m', n)]);
  }, 'comm_reduce');
  const shape = x.shape.map((d, i) => (i === a ? k : d));
  return compute('T_topk_indices', shape, ax, (...o) =>
    maxReduce(select(eq(load(before, at(o, mv)), o[a]), mv, int(-1)), [reduceAxis('m', n)]), 'comm_reduce');
}
