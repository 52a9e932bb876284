// Injective operators (pad, reshape, batch_flatten, transpose, concatenate) on small
// tensors whose expected values are written out by hand or produced by plain index loops.
// These ops only move data, so results must be exact.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { placeholder, type Tensor } from '../ir/tensor';
import { batchFlatten, concatenate, pad, reshape, transpose } from './transform';

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

test.run();
