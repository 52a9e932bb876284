// take, gather_elements, gather_nd, argmax/argmin, cumsum and one_hot of topi/indexing.ts
// by the reference evaluator against plain JavaScript over ONNX's definitions. Exact: the
// results are selected elements, integer positions, or (cumsum) float sums within 1e-6.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { placeholder, type Tensor, type TensorData } from '../ir/tensor';
import { argReduce, cumsum, gatherElements, gatherNd, oneHot, scatterElements, scatterNd, take, topkIndices } from './indexing';
import { close, random } from './check.fixture';

const run = (out: Tensor, inputs: [Tensor, TensorData][]): TensorData => evaluate(new ComputeDAG([out]), new Map(inputs)).get(out.name)!;
const iota = (n: number): Float32Array => Float32Array.from({ length: n }, (_, i) => i);

test('take along axis 0 (an embedding lookup) wraps negative ids and clamps out-of-range ones', () => {
  const table = placeholder('table', [5, 3]), ids = placeholder('ids', [1, 4], 'int32');
  const out = take(table, ids, 0);
  assert.equal(out.shape, [1, 4, 3]);
  const got = run(out, [[table, iota(15)], [ids, Int32Array.of(2, -1, 7, -9)]]);
  // rows 2, 4 (-1 wrapped), 4 (7 clamped), 0 (-9 -> -4 -> clamped to 0)
  assert.equal([...got], [6, 7, 8, 12, 13, 14, 12, 13, 14, 0, 1, 2]);
});

test('take along a middle and the last axis, with a scalar index', () => {
  const x = placeholder('x', [2, 3, 4]);
  const i = placeholder('i', [2], 'int32');
  const mid = run(take(x, i, 1), [[x, iota(24)], [i, Int32Array.of(2, 0)]]);
  const want: number[] = [];
  for (let a = 0; a < 2; a++) for (const j of [2, 0]) for (let c = 0; c < 4; c++) want.push(a * 12 + j * 4 + c);
  assert.equal([...mid], want);
  const s = placeholder('s', [], 'int32');
  const last = take(x, s, -1);
  assert.equal(last.shape, [2, 3]);
  assert.equal([...run(last, [[x, iota(24)], [s, Int32Array.of(-1)]])], [3, 7, 11, 15, 19, 23]);
});

test('gather_elements picks along the axis per element', () => {
  const x = placeholder('x', [3, 3]), i = placeholder('i', [2, 3], 'int32');
  const iv = Int32Array.of(1, 2, 0, -1, 0, 1);
  assert.equal([...run(gatherElements(x, i, 0), [[x, iota(9)], [i, iv]])], [3, 7, 2, 6, 1, 5]);
  assert.equal([...run(gatherElements(x, i, 1), [[x, iota(9)], [i, iv]])], [1, 2, 0, 5, 3, 4]);
});

test('gather_nd, with and without batch axes', () => {
  const x = placeholder('x', [2, 2, 3]);
  const i = placeholder('i', [2, 2], 'int32');
  const out = gatherNd(x, i);
  assert.equal(out.shape, [2, 3]);
  assert.equal([...run(out, [[x, iota(12)], [i, Int32Array.of(1, 0, 0, 1)]])], [6, 7, 8, 3, 4, 5]);
  const j = placeholder('j', [2, 1], 'int32');
  const batched = gatherNd(x, j, 1);
  assert.equal(batched.shape, [2, 3]);
  assert.equal([...run(batched, [[x, iota(12)], [j, Int32Array.of(1, 0)]])], [3, 4, 5, 6, 7, 8]);
});

test('argmax / argmin: first or last among ties, keepdims or not, int32 result', () => {
  const x = placeholder('x', [2, 4]);
  const xv = Float32Array.of(1, 5, 5, 0, -2, -2, 3, -2);
  const am = argReduce('max', x, 1, false, false);
  assert.is(am.dtype, 'int32');
  assert.equal(am.shape, [2]);
  assert.equal([...run(am, [[x, xv]])], [1, 2]);
  assert.equal([...run(argReduce('max', x, 1, true, true), [[x, xv]])], [2, 2]);
  assert.equal([...run(argReduce('min', x, -1, false, false), [[x, xv]])], [3, 0]);
  assert.equal([...run(argReduce('min', x, 1, false, true), [[x, xv]])], [3, 3]);
  const a0 = argReduce('max', x, 0, true, false);
  assert.equal(a0.shape, [1, 4]);
  assert.equal([...run(a0, [[x, xv]])], [0, 0, 0, 0]);
  const n = placeholder('n', [3], 'int32');
  assert.equal([...run(argReduce('max', n, 0, false, false), [[n, Int32Array.of(-5, 9, 9)]])], [1]);
});

test('cumsum: inclusive, exclusive, reverse, along either axis; ints', () => {
  const shape = [3, 4];
  const x = placeholder('x', shape);
  const xv = random(12, 5);
  for (const axis of [0, 1]) {
    for (const exclusive of [false, true]) {
      for (const reverse of [false, true]) {
        const want = new Float64Array(12);
        for (let r = 0; r < 3; r++) {
          for (let c = 0; c < 4; c++) {
            const i = axis === 0 ? r : c, n = shape[axis];
            let s = 0;
            for (let k = 0; k < n; k++) {
              const inc = reverse ? (exclusive ? k > i : k >= i) : exclusive ? k < i : k <= i;
              if (inc) s += xv[axis === 0 ? k * 4 + c : r * 4 + k];
            }
            want[r * 4 + c] = s;
          }
        }
        close(run(cumsum(x, axis, exclusive, reverse), [[x, xv]]), want, `axis ${axis} exclusive ${exclusive} reverse ${reverse}`);
      }
    }
  }
  const n = placeholder('n', [4], 'int32');
  assert.equal([...run(cumsum(n, 0, false, false), [[n, Int32Array.of(1, 2, 3, 4)]])], [1, 3, 6, 10]);
});

test('one_hot: a new axis, negative indices wrapped, out-of-range rows all off', () => {
  const i = placeholder('i', [3], 'int32');
  const out = oneHot(i, 4, 0, 5, -1, 'float32');
  assert.equal(out.shape, [3, 4]);
  assert.equal([...run(out, [[i, Int32Array.of(1, -1, 9)]])], [0, 5, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0]);
  const first = oneHot(i, 3, -1, 1, 0, 'int32');
  assert.equal(first.shape, [3, 3]);
  assert.equal([...run(first, [[i, Int32Array.of(0, 2, -3)]])], [1, -1, 1, -1, -1, -1, -1, 1, -1]);
});

test('scatter_elements: the last update wins, reductions fold, positions off the updates keep the data', () => {
  const d = placeholder('d', [3, 3]), i = placeholder('i', [2, 2], 'int32'), u = placeholder('u', [2, 2]);
  const dv = iota(9), iv = Int32Array.of(1, 1, -1, 0), uv = Float32Array.of(10, 20, 30, 40);
  // axis 1: row 0 gets 10 then 20 at column 1 (20 wins); row 1 gets 30 at column 2, 40 at column 0.
  assert.equal([...run(scatterElements(d, i, u, 1, 'none'), [[d, dv], [i, iv], [u, uv]])], [0, 20, 2, 40, 4, 30, 6, 7, 8]);
  assert.equal([...run(scatterElements(d, i, u, 1, 'add'), [[d, dv], [i, iv], [u, uv]])], [0, 31, 2, 43, 4, 35, 6, 7, 8]);
  assert.equal([...run(scatterElements(d, i, u, 1, 'max'), [[d, dv], [i, iv], [u, uv]])], [0, 20, 2, 40, 4, 30, 6, 7, 8]);
  assert.equal([...run(scatterElements(d, i, u, 1, 'mul'), [[d, dv], [i, iv], [u, uv]])], [0, 200, 2, 120, 4, 150, 6, 7, 8]);
  // axis 0: column 0 gets 10 at row 1 and 30 at row 2; column 1 gets 20 at row 1 and 40 at row 0.
  assert.equal([...run(scatterElements(d, i, u, 0, 'none'), [[d, dv], [i, iv], [u, uv]])], [0, 40, 2, 10, 20, 5, 30, 7, 8]);
  assert.equal([...run(scatterElements(d, i, u, 0, 'min'), [[d, dv], [i, iv], [u, uv]])], [0, 1, 2, 3, 4, 5, 6, 7, 8]);
});

test('scatter_nd: rows and elements, the last duplicate wins, reductions fold', () => {
  const d = placeholder('d', [3, 2]);
  const rows = placeholder('r', [2, 1], 'int32'), ru = placeholder('ru', [2, 2]);
  assert.equal([...run(scatterNd(d, rows, ru, 'none'), [[d, iota(6)], [rows, Int32Array.of(-1, 0)], [ru, Float32Array.of(7, 8, 9, 10)]])], [9, 10, 2, 3, 7, 8]);
  const els = placeholder('e', [3, 2], 'int32'), eu = placeholder('eu', [3]);
  const feeds: [Tensor, TensorData][] = [[d, iota(6)], [els, Int32Array.of(1, 1, 0, 0, 1, 1)], [eu, Float32Array.of(5, 6, 7)]];
  assert.equal([...run(scatterNd(d, els, eu, 'none'), feeds)], [6, 1, 2, 7, 4, 5]);
  assert.equal([...run(scatterNd(d, els, eu, 'add'), feeds)], [6, 1, 2, 15, 4, 5]);
  const n = placeholder('n', [3, 2], 'int32'), nu = placeholder('nu', [3], 'int32');
  assert.equal([...run(scatterNd(n, els, nu, 'max'), [[n, Int32Array.of(0, 1, 2, 9, 4, 5)], [els, Int32Array.of(1, 1, 0, 0, 1, 1)], [nu, Int32Array.of(5, 6, 7)]])], [6, 1, 2, 9, 4, 5]);
});

test('topk positions: largest or smallest first, ties in position order, along either axis', () => {
  const x = placeholder('x', [2, 5]);
  const xv = Float32Array.of(3, 1, 3, 7, -2, 0, 0, 5, -1, 0);
  assert.equal([...run(topkIndices(x, 3, 1, true), [[x, xv]])], [3, 0, 2, 2, 0, 1]);
  assert.equal([...run(topkIndices(x, 2, -1, false), [[x, xv]])], [4, 1, 3, 0]);
  assert.equal([...run(topkIndices(x, 1, 0, true), [[x, xv]])], [0, 0, 1, 0, 1]);
  const i = placeholder('i', [4], 'int32');
  assert.equal([...run(topkIndices(i, 4, 0, true), [[i, Int32Array.of(2, 9, 2, -5)]])], [1, 0, 2, 3]);
});

test.run();
