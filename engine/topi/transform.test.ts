// Injective operators (pad and its reflect/edge/wrap modes, reshape, batch_flatten,
// transpose, concatenate, strided_slice, broadcast_to, tile, depth_to_space,
// space_to_depth, trilu, reverse_sequence) on small tensors whose expected values are
// written out by hand (numpy's results) or produced by plain index loops. These ops only
// move data, so results must be exact.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { placeholder, type Tensor } from '../ir/tensor';
import {
  batchFlatten, broadcastTo, concatenate, depthToSpace, pad, padMode, reshape, reverseSequence, spaceToDepth, stridedSlice, tile, transpose, trilu,
} from './transform';

function run(out: Tensor, inputs: [Tensor, ArrayLike<number>][]): number[] {
  return [...evaluate(new ComputeDAG([out]), new Map(inputs.map(([t, d]) => [t, Float32Array.from(d)]))).get(out.name)!];
}

const iota = (n: number, from = 0): number[] => Array.from({ length: n }, (_, i) => i + from);

test('pad by hand: value and asymmetric widths', () => {
  const x = placeholder('x', [2, 2]);
  // one row on top, none below; none on the left, two columns on the right; fill with 9
  const out = pad(x, [1, 0], [0, 2], 'P', 9);
  assert.equal(out.shape, [3, 4]);
  assert.equal(run(out, [[x, [1, 2, 3, 4]]]), [
    9, 9, 9, 9,
    1, 2, 9, 9,
    3, 4, 9, 9,
  ]);
  // Default value 0, padding on a leading axis too.
  const y = placeholder('y', [1, 2]);
  assert.equal(run(pad(y, [1, 1], [1, 0]), [[y, [5, 6]]]), [0, 0, 0, 0, 5, 6, 0, 0, 0]);
});

test('pad: no widths is an identity stage; both styles compute the same values', () => {
  const x = placeholder('x', [2, 3]);
  const id = pad(x, [0, 0], [0, 0], 'pad_temp');
  assert.equal(run(id, [[x, iota(6)]]), iota(6));
  assert.is(new ComputeDAG([id]).print().split('\n')[1], 'pad_temp(i0, i1) = x[i0, i1]');
  const data = iota(6, 1);
  const py = run(pad(x, [0, 1], [2, 0], 'P', -1), [[x, data]]);
  const cc = run(pad(x, [0, 1], [2, 0], 'P', -1, 'cpp'), [[x, data]]);
  assert.equal(py, cc);
  assert.equal(py, [-1, 1, 2, 3, -1, 4, 5, 6, -1, -1, -1, -1, -1, -1, -1, -1]);
  assert.throws(() => pad(x, [1], [1]), /2-d data needs 2 pad widths/);
});

test('pad prints like TOPI: Python pad checks both bounds, C++ pad only the padded sides', () => {
  const x = placeholder('p0', [4, 4]);
  const line = (t: Tensor) => new ComputeDAG([t]).print().split('\n')[1];
  assert.is(line(pad(x, [0, 1], [0, 0], 'pad_temp')),
    'pad_temp(i0, i1) = tir.if_then_else(((i1 >= 1) && (i1 < 5)), p0[i0, (i1 - 1)], 0f)');
  assert.is(line(pad(x, [0, 1], [0, 0], 'pad_temp', 0, 'cpp')),
    'pad_temp(ax0, ax1) = tir.if_then_else((ax1 >= 1), p0[ax0, (ax1 - 1)], 0f)');
  assert.is(line(pad(x, [0, 0], [0, 2], 'pad_temp', 0, 'cpp')),
    'pad_temp(ax0, ax1) = tir.if_then_else((ax1 < 4), p0[ax0, ax1], 0f)');
});

test('reshape: row-major order is kept', () => {
  const x = placeholder('x', [2, 3, 4]);
  const data = iota(24);
  for (const shape of [[6, 4], [4, 6], [24], [2, 12], [1, 24, 1], [3, 2, 2, 2], [1, 1, 2, 1, 3, 4]]) {
    const out = reshape(x, shape);
    assert.equal(out.shape, shape);
    assert.equal(run(out, [[x, data]]), data, `[${shape}]`);
  }
  // And back: [4, 6] -> [2, 3, 4] -> element (i, j, k) is i*12 + j*4 + k.
  const y = placeholder('y', [4, 6]);
  assert.equal(run(reshape(y, [2, 3, 4]), [[y, data]]), data);
  assert.throws(() => reshape(x, [5, 5]), /\[2, 3, 4\] has 24 elements, \[5, 5\] has 25/);
});

test('batch_flatten: [N, ...] -> [N, prod(...)]', () => {
  const x = placeholder('x', [2, 3, 1, 2]);
  const out = batchFlatten(x);
  assert.equal(out.shape, [2, 6]);
  assert.equal(run(out, [[x, iota(12)]]), iota(12));
  const nhwc = placeholder('g', [1, 1, 1, 5]);
  assert.equal(run(batchFlatten(nhwc), [[nhwc, [5, 4, 3, 2, 1]]]), [5, 4, 3, 2, 1]);
});

test('transpose by hand and against index loops', () => {
  const m = placeholder('m', [2, 3]);
  // [[0 1 2] [3 4 5]]^T
  assert.equal(run(transpose(m, [1, 0]), [[m, iota(6)]]), [0, 3, 1, 4, 2, 5]);
  const shape = [2, 3, 4];
  const x = placeholder('x', shape);
  for (const perm of [[0, 1, 2], [2, 0, 1], [1, 2, 0], [2, 1, 0], [0, 2, 1]]) {
    const out = transpose(x, perm);
    const os = perm.map((p) => shape[p]);
    assert.equal(out.shape, os);
    const want: number[] = [];
    for (let a = 0; a < os[0]; a++) for (let b = 0; b < os[1]; b++) for (let c = 0; c < os[2]; c++) {
      const idx = [0, 0, 0];
      idx[perm[0]] = a; idx[perm[1]] = b; idx[perm[2]] = c;
      want.push((idx[0] * 3 + idx[1]) * 4 + idx[2]);
    }
    assert.equal(run(out, [[x, iota(24)]]), want, `perm [${perm}]`);
  }
  assert.throws(() => transpose(x, [0, 0, 1]), /not a permutation of 3 axes/);
  assert.throws(() => transpose(x, [0, 1]), /not a permutation/);
  // Rank 11: the permutation check must sort numerically (10 after 9).
  const r11 = placeholder('r', [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2]);
  const rev = transpose(r11, iota(11).reverse());
  assert.equal(rev.shape, [2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]);
  assert.equal(run(rev, [[r11, [7, 8]]]), [7, 8]);
});

test('concatenate three inputs along axis 1 and -1', () => {
  const a = placeholder('a', [2, 1, 2]), b = placeholder('b', [2, 2, 2]), c = placeholder('c', [2, 3, 2]);
  const ad = [1, 2, 3, 4], bd = iota(8, 10), cd = iota(12, 20);
  const out = concatenate([a, b, c], 1);
  assert.equal(out.shape, [2, 6, 2]);
  assert.equal(run(out, [[a, ad], [b, bd], [c, cd]]), [
    1, 2, 10, 11, 12, 13, 20, 21, 22, 23, 24, 25,
    3, 4, 14, 15, 16, 17, 26, 27, 28, 29, 30, 31,
  ]);
  const p = placeholder('p', [2, 1]), q = placeholder('q', [2, 2]), r = placeholder('r', [2, 3]);
  const last = concatenate([p, q, r], -1);
  assert.equal(last.shape, [2, 6]);
  assert.equal(run(last, [[p, [1, 2]], [q, [3, 4, 5, 6]], [r, [7, 8, 9, 10, 11, 12]]]), [1, 3, 4, 7, 8, 9, 2, 5, 6, 10, 11, 12]);
  // The same tensor twice.
  assert.equal(run(concatenate([p, p], 0), [[p, [1, 2]]]), [1, 2, 1, 2]);
});

test('concatenate: clear errors', () => {
  const a = placeholder('a', [2, 3]), b = placeholder('b', [3, 3]);
  assert.throws(() => concatenate([], 0), /no inputs/);
  assert.throws(() => concatenate([a, b], 1), /differ outside axis 1/);
  assert.throws(() => concatenate([a, a], 2), /axis 2 out of range for rank 2/);
  assert.throws(() => concatenate([a, a], -3), /axis -3 out of range for rank 2/);
});

function runTyped(out: Tensor, inputs: [Tensor, Float32Array | Int32Array][]): number[] {
  return [...evaluate(new ComputeDAG([out]), new Map(inputs)).get(out.name)!];
}

test('pad modes by hand (numpy.pad): reflect, edge, wrap, widths past the edge', () => {
  const x = placeholder('x', [3]);
  const d = [1, 2, 3];
  assert.equal(run(padMode(x, [2], [3], 'reflect'), [[x, d]]), [3, 2, 1, 2, 3, 2, 1, 2]);
  assert.equal(run(padMode(x, [2], [1], 'edge'), [[x, d]]), [1, 1, 1, 2, 3, 3]);
  assert.equal(run(padMode(x, [2], [2], 'wrap'), [[x, d]]), [2, 3, 1, 2, 3, 1, 2]);
  // Wider than the data: numpy reflects again (period 2(d - 1)) and wraps again.
  assert.equal(run(padMode(x, [5], [0], 'reflect'), [[x, d]]), [2, 1, 2, 3, 2, 1, 2, 3]);
  assert.equal(run(padMode(x, [4], [4], 'wrap'), [[x, d]]), [3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1]);
  // An axis of 1 repeats its element in every mode; the int dtype is kept.
  const one = placeholder('one', [1], 'int32');
  for (const mode of ['reflect', 'edge', 'wrap'] as const) {
    const out = padMode(one, [2], [1], mode);
    assert.is(out.dtype, 'int32');
    assert.equal(runTyped(out, [[one, Int32Array.of(7)]]), [7, 7, 7, 7]);
  }
  // 2-D, only the padded axis moves: [[1 2 3] [4 5 6]] reflect (0, 0), (1, 2).
  const m = placeholder('m', [2, 3]);
  assert.equal(run(padMode(m, [0, 1], [0, 2], 'reflect'), [[m, iota(6, 1)]]), [2, 1, 2, 3, 2, 1, 5, 4, 5, 6, 5, 4]);
  assert.throws(() => padMode(m, [0, -1], [0, 0], 'edge'), /negative widths/);
});

test('constant pad keeps an int dtype and its fill value', () => {
  const x = placeholder('x', [2], 'int32');
  const out = pad(x, [1], [1], 'P', 5);
  assert.is(out.dtype, 'int32');
  assert.equal(runTyped(out, [[x, Int32Array.of(-3, 4)]]), [5, -3, 4, 5]);
});

test('strided_slice: steps of both signs, bounds checked', () => {
  const x = placeholder('x', [3, 5]);
  // rows 2, 1 (step -1); columns 0, 2, 4 (step 2)
  assert.equal(run(stridedSlice(x, [2, 0], [-1, 2], [2, 3]), [[x, iota(15)]]), [10, 12, 14, 5, 7, 9]);
  assert.equal(run(stridedSlice(x, [1, 1], [1, 1], [1, 3]), [[x, iota(15)]]), [6, 7, 8]);
  assert.throws(() => stridedSlice(x, [0, 3], [1, 1], [1, 3]), /axis 1 reads 3..5 of 5/);
  assert.throws(() => stridedSlice(x, [0, 1], [1, -1], [1, 3]), /axis 1 reads 1..-1 of 5/);
});

test('broadcast_to and tile against index loops', () => {
  const x = placeholder('x', [3, 1]);
  const out = broadcastTo(x, [2, 3, 4]);
  assert.equal(out.shape, [2, 3, 4]);
  const want: number[] = [];
  for (let a = 0; a < 2; a++) for (let b = 0; b < 3; b++) for (let c = 0; c < 4; c++) want.push(b + 1);
  assert.equal(run(out, [[x, [1, 2, 3]]]), want);
  assert.throws(() => broadcastTo(x, [2, 4]), /cannot broadcast \[3, 1\] with \[2, 4\]/);
  assert.throws(() => broadcastTo(x, [3]), /does not broadcast/);

  const y = placeholder('y', [2, 3]);
  const t = tile(y, [2, 3]);
  assert.equal(t.shape, [4, 9]);
  const tw: number[] = [];
  for (let i = 0; i < 4; i++) for (let j = 0; j < 9; j++) tw.push((i % 2) * 3 + (j % 3));
  assert.equal(run(t, [[y, iota(6)]]), tw);
});

test('depth_to_space (DCR, CRD) as numpy reshape/transpose writes them; space_to_depth inverts them', () => {
  const [n, c, h, w, b] = [1, 8, 2, 3, 2];
  const x = placeholder('x', [n, c, h, w]);
  const data = iota(n * c * h * w);
  const oc = c / (b * b);
  for (const mode of ['DCR', 'CRD'] as const) {
    const out = depthToSpace(x, b, mode);
    assert.equal(out.shape, [n, oc, h * b, w * b]);
    // DCR: x.reshape(n, b, b, oc, h, w).transpose(0, 3, 4, 1, 5, 2); CRD: x.reshape(n, oc, b, b, h, w).transpose(0, 1, 4, 2, 5, 3).
    const want: number[] = [];
    for (let ch = 0; ch < oc; ch++) for (let yy = 0; yy < h * b; yy++) for (let xx = 0; xx < w * b; xx++) {
      const [hi, i, wi, j] = [Math.floor(yy / b), yy % b, Math.floor(xx / b), xx % b];
      const src = mode === 'DCR' ? (i * b + j) * oc + ch : ch * b * b + i * b + j;
      want.push((src * h + hi) * w + wi);
    }
    assert.equal(run(out, [[x, data]]), want, mode);
    const y = placeholder('y', out.shape);
    assert.equal(run(spaceToDepth(y, b, mode), [[y, want]]), data, `space_to_depth ${mode}`);
  }
  assert.throws(() => depthToSpace(x, 3, 'DCR'), /block 3/);
  assert.throws(() => spaceToDepth(x, 2), /block 2/);
});

test('trilu: upper and lower triangles with k of both signs, over a batch', () => {
  const x = placeholder('x', [2, 3, 4]);
  const data = iota(24, 1);
  for (const upper of [true, false]) {
    for (const k of [-1, 0, 2]) {
      const want = data.map((v, f) => {
        const i = Math.floor(f / 4) % 3, j = f % 4;
        return (upper ? j - i >= k : j - i <= k) ? v : 0;
      });
      assert.equal(run(trilu(x, k, upper), [[x, data]]), want, `upper ${upper} k ${k}`);
    }
  }
});

test('reverse_sequence: each batch reversed over its own length (lengths read at run time, clamped)', () => {
  // time axis 0, batch axis 1: [T=4, B=3, 2]
  const x = placeholder('x', [4, 3, 2]);
  const lens = placeholder('lens', [3], 'int32');
  const data = iota(24);
  const L = [4, 1, 2];
  const want: number[] = [];
  for (let t = 0; t < 4; t++) for (let bb = 0; bb < 3; bb++) for (let k = 0; k < 2; k++) {
    const src = t < L[bb] ? L[bb] - 1 - t : t;
    want.push((src * 3 + bb) * 2 + k);
  }
  assert.equal(runTyped(reverseSequence(x, lens, 0, 1), [[x, Float32Array.from(data)], [lens, Int32Array.from(L)]]), want);
  // batch axis 0, time axis 1, a length past the end reverses the whole sequence.
  const y = placeholder('y', [2, 3]);
  const l2 = placeholder('l2', [2], 'int32');
  assert.equal(runTyped(reverseSequence(y, l2, 1, 0), [[y, Float32Array.from(iota(6))], [l2, Int32Array.of(9, 2)]]), [2, 1, 0, 4, 3, 5]);
});

test.run();
