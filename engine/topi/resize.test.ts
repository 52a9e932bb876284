// The resize compute (topi/resize.ts) on hand-written tables: nearest is a gather,
// linear/cubic the separable weighted sum over every combination of taps, the inside
// column of an extrapolating table selects the fill value. Expected values come from plain
// loops over the same tables (float64; the evaluator rounds each stored element to
// float32, so |got - want| <= 1e-6 * (1 + |want|)).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { placeholder, type Tensor, type TensorData } from '../ir/tensor';
import { close, random } from './check.fixture';
import { resize } from './resize';

function run(out: Tensor, inputs: [Tensor, TensorData][]): TensorData {
  return evaluate(new ComputeDAG([out]), new Map(inputs)).get(out.name)!;
}

test('nearest: a gather along each listed axis, any dtype', () => {
  const x = placeholder('x', [2, 3], 'int32');
  const iy = placeholder('iy', [3, 1], 'int32'), ix = placeholder('ix', [5, 1], 'int32');
  const out = resize(x, [{ axis: 0, index: iy }, { axis: 1, index: ix }], 1);
  assert.equal(out.shape, [3, 5]);
  assert.is(out.dtype, 'int32');
  const rows = [1, 0, 1], cols = [0, 0, 1, 2, 2];
  const got = run(out, [[x, Int32Array.of(1, 2, 3, 4, 5, 6)], [iy, Int32Array.from(rows)], [ix, Int32Array.from(cols)]]);
  assert.equal([...got], rows.flatMap((r) => cols.map((c) => r * 3 + c + 1)));
});

test('linear over two of four axes and cubic over one: the weighted sum of every tap combination', () => {
  const [n, c, h, w] = [1, 2, 3, 4];
  const x = placeholder('x', [n, c, h, w]);
  const data = random(n * c * h * w, 5);
  // H: 3 -> 2 with taps (0, 1), (1, 2); W: 4 -> 3 with taps (0, 1), (1, 2), (3, 3).
  const hi = [0, 1, 1, 2], hw = [0.25, 0.75, 0.6, 0.4];
  const wi = [0, 1, 1, 2, 3, 3], ww = [1, 0, 0.5, 0.5, 0.5, 0.5];
  const ih = placeholder('ih', [2, 2], 'int32'), wh = placeholder('wh', [2, 2]);
  const iw = placeholder('iw', [3, 2], 'int32'), www = placeholder('ww', [3, 2]);
  const out = resize(x, [{ axis: 2, index: ih, weight: wh }, { axis: 3, index: iw, weight: www }], 2);
  assert.equal(out.shape, [1, 2, 2, 3]);
  const got = run(out, [[x, data], [ih, Int32Array.from(hi)], [wh, Float32Array.from(hw)], [iw, Int32Array.from(wi)], [www, Float32Array.from(ww)]]);
  const want: number[] = [];
  for (let ch = 0; ch < c; ch++) for (let y = 0; y < 2; y++) for (let xx = 0; xx < 3; xx++) {
    let v = 0;
    for (let a = 0; a < 2; a++) for (let b = 0; b < 2; b++) {
      v += Math.fround(hw[y * 2 + a]) * Math.fround(ww[xx * 2 + b]) * data[(ch * h + hi[y * 2 + a]) * w + wi[xx * 2 + b]];
    }
    want.push(v);
  }
  close(got, want, 'bilinear');

  const ic = placeholder('ic', [2, 4], 'int32'), wc = placeholder('wc', [2, 4]);
  const ci = [0, 0, 1, 2, 0, 1, 2, 2], cw = [-0.07, 0.6, 0.55, -0.08, 0.1, 0.2, 0.3, 0.4];
  const cub = resize(x, [{ axis: 2, index: ic, weight: wc }], 4);
  const gotC = run(cub, [[x, data], [ic, Int32Array.from(ci)], [wc, Float32Array.from(cw)]]);
  const wantC: number[] = [];
  for (let ch = 0; ch < c; ch++) for (let y = 0; y < 2; y++) for (let xx = 0; xx < w; xx++) {
    let v = 0;
    for (let t = 0; t < 4; t++) v += Math.fround(cw[y * 4 + t]) * data[(ch * h + ci[y * 4 + t]) * w + xx];
    wantC.push(v);
  }
  close(gotC, wantC, 'cubic');
});

test('extrapolation: an output outside on any axis is the fill value', () => {
  const x = placeholder('x', [2, 2]);
  // rows: 0 inside, 1 outside; columns: 1 inside, 0 outside, 1 inside.
  const iy = placeholder('iy', [2, 2], 'int32'), ix = placeholder('ix', [3, 2], 'int32');
  const out = resize(x, [{ axis: 0, index: iy }, { axis: 1, index: ix }], 1, 9.5);
  const got = run(out, [[x, Float32Array.of(1, 2, 3, 4)], [iy, Int32Array.of(0, 1, 1, 0)], [ix, Int32Array.of(1, 1, 0, 0, 0, 1)]]);
  assert.equal([...got], [2, 9.5, 1, 9.5, 9.5, 9.5]);
});

test('an affine nearest axis: floor((a*o + b) / c) instead of a table, beside a table axis', () => {
  const x = placeholder('x', [3, 4]);
  const ix = placeholder('ix', [2, 1], 'int32');
  const out = resize(x, [{ axis: 0, affine: [1, 0, 2], length: 6 }, { axis: 1, index: ix }], 1);
  assert.equal(out.shape, [6, 2]);
  const got = run(out, [[x, Float32Array.from({ length: 12 }, (_, i) => i)], [ix, Int32Array.of(3, 0)]]);
  assert.equal([...got], [3, 0, 3, 0, 7, 4, 7, 4, 11, 8, 11, 8]);
  assert.throws(() => resize(x, [{ axis: 0, affine: [1, 0, 1], length: 6 }], 1), /affine index \(1\*o \+ 0\) \/ 1 over 6 positions/);
});

test('bad tables are refused clearly', () => {
  const x = placeholder('x', [2, 2]);
  const i2 = placeholder('i2', [3, 2], 'int32'), f2 = placeholder('f2', [3, 2]);
  assert.throws(() => resize(x, [{ axis: 2, index: i2, weight: f2 }], 2), /bad or repeated axis 2/);
  assert.throws(() => resize(x, [{ axis: 0, index: i2 }], 2), /weights go with 2 taps and are missing/);
  assert.throws(() => resize(x, [{ axis: 0, index: f2, weight: f2 }], 2), /int32 index table/);
  assert.throws(() => resize(x, [{ axis: 0, index: i2, weight: f2 }], 1), /index table \[out, 1\]/);
  const xi = placeholder('xi', [2, 2], 'int32');
  assert.throws(() => resize(xi, [{ axis: 0, index: i2, weight: f2 }], 2), /interpolating int32 data/);
});

test.run();
