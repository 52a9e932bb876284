// batch_matmul with broadcast batch axes, transpose_a/transpose_b and operand views, and
// dense over an N-D input: the reference evaluator against plain float64 loops over the
// definition. Tolerance as nn.test.ts: |got - want| <= 1e-6 * (|want| + 1).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { numElements, permute, placeholder, rowMajorStrides, type Tensor } from '../ir/tensor';
import { batchMatmul, dense, splitGroups, viewShape, type OperandView } from './nn';

function random(n: number, seed: number): Float32Array {
  let s = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), s | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) / 4294967296) * 2 - 1;
  });
}

function run(out: Tensor, inputs: [Tensor, Float32Array][]): Float32Array {
  return evaluate(new ComputeDAG([out]), new Map(inputs)).get(out.name) as Float32Array;
}

function close(got: Float32Array, want: ArrayLike<number>, what: string): void {
  assert.is(got.length, want.length, `${what}: size`);
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= 1e-6 * (Math.abs(want[i]) + 1))) assert.unreachable(`${what}: [${i}] ${got[i]} vs ${want[i]}`);
  }
}

/** numpy's matmul of row-major a [..., M, K] and b [..., K, N], batch axes broadcast. */
function matmulRef(a: Float32Array, as: number[], b: Float32Array, bs: number[]): { data: Float64Array; shape: number[] } {
  const r = Math.max(as.length, bs.length);
  const pa = [...new Array<number>(r - as.length).fill(1), ...as], pb = [...new Array<number>(r - bs.length).fill(1), ...bs];
  const batch = pa.slice(0, -2).map((d, i) => Math.max(d, pb[i]));
  const [M, K, N] = [pa[r - 2], pa[r - 1], pb[r - 1]];
  const shape = [...batch, M, N];
  const out = new Float64Array(numElements(shape));
  const sa = rowMajorStrides(pa), sb = rowMajorStrides(pb);
  for (let o = 0; o < numElements(batch); o++) {
    let rest = o, offA = 0, offB = 0;
    for (let d = batch.length - 1; d >= 0; d--) {
      const idx = rest % batch[d]; rest = Math.floor(rest / batch[d]);
      if (pa[d] !== 1) offA += idx * sa[d];
      if (pb[d] !== 1) offB += idx * sb[d];
    }
    for (let i = 0; i < M; i++) for (let j = 0; j < N; j++) {
      let acc = 0;
      for (let k = 0; k < K; k++) acc += a[offA + i * K + k] * b[offB + k * N + j];
      out[(o * M + i) * N + j] = acc;
    }
  }
  return { data: out, shape };
}

const swapLast = (r: number): number[] => [...Array.from({ length: r - 2 }, (_, i) => i), r - 1, r - 2];

test('batch_matmul: broadcast batch axes of any rank, in all four transpose forms', () => {
  const cases: [number[], number[]][] = [[[2, 3, 4], [2, 4, 5]], [[2, 1, 3, 4], [5, 4, 6]], [[3, 4], [2, 4, 5]], [[1, 3, 4], [4, 5]], [[3, 4], [4, 5]]];
  let seed = 1;
  for (const [as, bs] of cases) {
    const ad = random(numElements(as), seed++), bd = random(numElements(bs), seed++);
    const want = matmulRef(ad, as, bd, bs);
    for (const transA of [false, true]) for (const transB of [false, true]) {
      // Store each operand as the form asks: transposed operands hold the permuted data.
      const sa = transA ? swapLast(as.length).map((p) => as[p]) : as, sb = transB ? swapLast(bs.length).map((p) => bs[p]) : bs;
      const x = placeholder('x', sa), y = placeholder('y', sb);
      const xd = transA ? permute(ad, as, swapLast(as.length)) : ad, yd = transB ? permute(bd, bs, swapLast(bs.length)) : bd;
      const out = batchMatmul(x, y, { transA, transB });
      assert.equal(out.shape, want.shape);
      assert.ok(out.name === `T_batch_matmul_${transA ? 'T' : 'N'}${transB ? 'T' : 'N'}`);
      close(run(out, [[x, xd], [y, yd]]), want.data, `[${as}] x [${bs}] transA=${transA} transB=${transB}`);
    }
  }
  assert.throws(() => batchMatmul(placeholder('x', [2, 2, 4]), placeholder('y', [3, 2, 4])), /batch mismatch 2 vs 3/);
});

test('batch_matmul views: attention reads Q and K^T through the head split and the transposes', () => {
  const [B, S, H, D] = [2, 5, 3, 4];
  const qd = random(B * S * H * D, 7), kd = random(B * S * H * D, 8);
  // q4 = reshape(q, [B, S, H, D]).transpose(0, 2, 1, 3); k4t = reshape(k, ...).transpose(0, 2, 3, 1)
  const qv: OperandView = { shape: [B, S, H, D], perm: [0, 2, 1, 3] }, kv: OperandView = { shape: [B, S, H, D], perm: [0, 2, 3, 1] };
  const q4 = permute(qd, [B, S, H, D], [0, 2, 1, 3]), k4t = permute(kd, [B, S, H, D], [0, 2, 3, 1]);
  const want = matmulRef(q4, [B, H, S, D], k4t, [B, H, D, S]);
  const q = placeholder('q', [B, S, H * D]), k = placeholder('k', [B, S, H * D]);
  assert.equal(viewShape(q.shape, qv), [B, H, S, D]);
  const out = batchMatmul(q, k, { transB: false, viewA: qv, viewB: kv });
  assert.equal(out.shape, [B, H, S, S]);
  close(run(out, [[q, qd], [k, kd]]), want.data, 'q k^T');
  assert.equal(splitGroups([2, 12], [2, 1, 3, 4, 1]), [[0], [1, 2, 3, 4]]);
  assert.is(splitGroups([2, 12], [2, 8, 3]), undefined);
  assert.throws(() => batchMatmul(q, k, { viewA: { shape: [B, S, 5, 3], perm: [0, 1, 2, 3] } }), /does not split/);
});

test('batch_matmul views with a region: q, k and v read in place from one fused qkv projection', () => {
  const [B, S, H, D] = [2, 3, 2, 4], C = H * D;
  const qkv = placeholder('qkv', [B, S, 3 * C]);
  const data = random(B * S * 3 * C, 21);
  // part p of the last axis, as [B, S, C] (what Split gives).
  const part = (p: number): Float32Array => Float32Array.from({ length: B * S * C }, (_, i) => data[Math.floor(i / C) * 3 * C + p * C + (i % C)]);
  const view = (p: number, perm: number[]): OperandView => ({ begin: [0, 0, p * C], box: [B, S, C], shape: [B, S, H, D], perm });
  const want = matmulRef(permute(part(0), [B, S, H, D], [0, 2, 1, 3]), [B, H, S, D], permute(part(1), [B, S, H, D], [0, 2, 3, 1]), [B, H, D, S]);
  const out = batchMatmul(qkv, qkv, { transB: false, viewA: view(0, [0, 2, 1, 3]), viewB: view(1, [0, 2, 3, 1]) });
  close(run(out, [[qkv, data]]), want.data, 'q k^T from qkv');
  assert.throws(() => viewShape(qkv.shape, { begin: [0, 0, 20], box: [B, S, C], shape: [B, S, C], perm: [0, 1, 2] }), /not inside/);
});

test('dense over an N-D input: [..., K] x [N, K] -> [..., N]', () => {
  const x = placeholder('x', [2, 3, 4]), w = placeholder('w', [5, 4]);
  const xd = random(24, 11), wd = random(20, 12);
  const want = matmulRef(xd, [2, 3, 4], permute(wd, [5, 4], [1, 0]), [4, 5]);
  const out = dense(x, w);
  assert.equal(out.shape, [2, 3, 5]);
  close(run(out, [[x, xd], [w, wd]]), want.data, 'dense 3-D');
  const d2 = dense(placeholder('a', [3, 4]), w).op;
  assert.equal(d2.kind === 'compute' ? d2.axes.map((a) => a.name) : [], ['i', 'j']);
});

test.run();
