// poolNd (1-D, 2-D with dilations, 3-D; max, avg and Lp, count_include_pad, ceil_mode's extra
// padding) and globalPool3d by the reference evaluator against a naive float64 loop over
// ONNX's definition, channels first and last. Tolerance as nn.test.ts.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { numElements, permute, placeholder } from '../ir/tensor';
import { close, random, run } from './check.fixture';
import { globalPool3d, poolNd, type PoolParams } from './pool';

interface Case { what: string; x: number[]; kind: 'max' | 'avg' | 'lp'; k: number[]; s: number[]; d: number[]; pads: number[]; ceil?: number[]; include?: boolean; p?: number }

/** Channels-first [N, C, ...] pooling by the definition. */
function naive(x: Float32Array, c: Case): { out: Float64Array; shape: number[] } {
  const [N, C, ...dims] = c.x;
  const n = dims.length;
  const extra = c.ceil ?? dims.map(() => 0);
  const out = dims.map((d, i) => Math.floor((d + c.pads[i] + c.pads[n + i] + extra[i] - (c.d[i] * (c.k[i] - 1) + 1)) / c.s[i]) + 1);
  const y = new Float64Array(N * C * numElements(out));
  const inSize = numElements(dims), outSize = numElements(out), taps = numElements(c.k);
  for (let nc = 0; nc < N * C; nc++) for (let o = 0; o < outSize; o++) {
    const opos: number[] = [];
    for (let a = n - 1, r = o; a >= 0; a--) { opos[a] = r % out[a]; r = Math.floor(r / out[a]); }
    let acc = c.kind === 'max' ? -Infinity : 0, count = 0, padded = 0;
    for (let t = 0; t < taps; t++) {
      const pos: number[] = [];
      for (let a = n - 1, r = t; a >= 0; a--) { pos[a] = opos[a] * c.s[a] + (r % c.k[a]) * c.d[a] - c.pads[a]; r = Math.floor(r / c.k[a]); }
      if (pos.every((p, a) => p >= -c.pads[a] && p < dims[a] + c.pads[n + a])) padded++;
      if (pos.some((p, a) => p < 0 || p >= dims[a])) { if (c.kind === 'max' && pos.every((p, a) => p < dims[a] + c.pads[n + a] + extra[a])) acc = Math.max(acc, -3.4028234663852886e38); continue; }
      let flat = 0;
      for (let a = 0; a < n; a++) flat = flat * dims[a] + pos[a];
      const v = x[nc * inSize + flat];
      acc = c.kind === 'max' ? Math.max(acc, v) : c.kind === 'lp' ? acc + Math.abs(v) ** (c.p ?? 2) : acc + v;
      count++;
    }
    y[nc * outSize + o] = c.kind === 'max' ? acc : c.kind === 'lp' ? acc ** (1 / (c.p ?? 2)) : acc / Math.max(1, c.include ? padded : count);
  }
  return { out: y, shape: [N, C, ...out] };
}

const cases: Case[] = [
  { what: '1-D max, dilation 2, pads', x: [2, 3, 9], kind: 'max', k: [3], s: [2], d: [2], pads: [1, 2] },
  { what: '1-D avg without pads in the count', x: [1, 2, 7], kind: 'avg', k: [3], s: [2], d: [1], pads: [1, 1] },
  { what: '2-D avg, dilation, count_include_pad', x: [1, 2, 6, 5], kind: 'avg', k: [2, 3], s: [1, 2], d: [2, 1], pads: [1, 1, 0, 1], include: true },
  { what: '3-D max', x: [1, 2, 4, 5, 5], kind: 'max', k: [2, 3, 3], s: [2, 2, 2], d: [1, 1, 1], pads: [0, 1, 1, 0, 1, 1] },
  { what: '3-D avg, ceil_mode padding, count_include_pad', x: [1, 2, 5, 4, 5], kind: 'avg', k: [2, 2, 3], s: [2, 2, 2], d: [1, 1, 1], pads: [1, 0, 1, 0, 0, 1], ceil: [1, 0, 1], include: true },
  { what: '3-D avg, ceil_mode padding', x: [1, 1, 5, 5, 4], kind: 'avg', k: [3, 3, 3], s: [2, 2, 2], d: [1, 1, 1], pads: [0, 0, 0, 0, 0, 0], ceil: [1, 1, 0] },
  { what: '2-D Lp, p 2, pads', x: [1, 2, 5, 6], kind: 'lp', k: [2, 3], s: [1, 2], d: [1, 1], pads: [1, 0, 0, 1], p: 2 },
  { what: '3-D Lp, p 3, dilation', x: [1, 2, 4, 4, 5], kind: 'lp', k: [2, 2, 2], s: [1, 2, 1], d: [2, 1, 2], pads: [0, 0, 1, 0, 1, 0], p: 3 },
  { what: '1-D Lp, p 1', x: [2, 2, 7], kind: 'lp', k: [3], s: [2], d: [1], pads: [1, 1], p: 1 },
];

for (const c of cases) {
  test(`pool ${c.what}: channels first and last match the definition`, () => {
    const x = random(numElements(c.x), 3);
    const want = naive(x, c);
    const p: Omit<PoolParams, 'channelsLast'> = { kind: c.kind, kernel: c.k, strides: c.s, dilation: c.d, padding: c.pads, ceilPadding: c.ceil, countIncludePad: c.include, p: c.p };
    const X = placeholder('x', c.x);
    const y = poolNd(X, { ...p, channelsLast: false });
    assert.equal(y.shape, want.shape);
    close(run(y, [[X, x]]), want.out, `${c.what} channels first`);
    const rank = c.x.length;
    const toLast = [0, ...Array.from({ length: rank - 2 }, (_, i) => 2 + i), 1];
    const Xl = placeholder('x', toLast.map((a) => c.x[a]));
    close(run(poolNd(Xl, { ...p, channelsLast: true }), [[Xl, permute(x, c.x, toLast)]]), permute(Float32Array.from(want.out), want.shape, toLast), `${c.what} channels last`);
  });
}

test('globalPool3d: mean and max over D, H, W in both layouts', () => {
  const shape = [2, 3, 2, 3, 4];
  const x = random(numElements(shape), 5);
  const mean = new Float64Array(6), mx = new Float64Array(6).fill(-Infinity);
  for (let nc = 0; nc < 6; nc++) for (let i = 0; i < 24; i++) { mean[nc] += x[nc * 24 + i] / 24; mx[nc] = Math.max(mx[nc], x[nc * 24 + i]); }
  const X = placeholder('x', shape);
  const avg = globalPool3d(X, 'avg', 'NCDHW');
  assert.equal(avg.shape, [2, 3, 1, 1, 1]);
  close(run(avg, [[X, x]]), mean, 'avg NCDHW');
  close(run(globalPool3d(X, 'max', 'NCDHW'), [[X, x]]), mx, 'max NCDHW');
  const Xl = placeholder('x', [2, 2, 3, 4, 3]);
  const avgL = globalPool3d(Xl, 'avg', 'NDHWC');
  assert.equal(avgL.shape, [2, 1, 1, 1, 3]);
  close(run(avgL, [[Xl, permute(x, shape, [0, 2, 3, 4, 1])]]), mean, 'avg NDHWC');
});

test.run();
