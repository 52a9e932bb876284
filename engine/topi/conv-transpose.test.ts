// conv2d_transpose / conv3d_transpose by the reference evaluator against a naive float64
// scatter over ONNX's definition (input i, tap k -> output i*s + k*d - pad_begin), both
// layouts, on shapes covering each form of the compute's index: stride 1, strides that
// divide the kernel (DCGAN's 4x4 stride 2), strides that do not (a masked last tap),
// dilation with stride (masked taps), groups, output_padding, pads above the kernel.
// Tolerance as nn.test.ts: |got - want| <= 1e-6 * (|want| + 1).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { numElements, permute, placeholder } from '../ir/tensor';
import { close, random, run } from './check.fixture';
import { convTranspose, convTransposeOut } from './conv-transpose';

interface Case { what: string; x: number[]; w: number[]; s: number[]; d: number[]; pads: number[]; op: number[]; groups: number }

/** Channels-first data [N, C, ...], kernel [C, Co/g, k...]. */
function naive(x: Float32Array, c: Case): { out: Float64Array; shape: number[] } {
  const [N, C, ...dims] = c.x;
  const [, cog, ...ks] = c.w;
  const n = dims.length, CO = cog * c.groups, cig = C / c.groups;
  const out = dims.map((d, i) => convTransposeOut(d, ks[i], c.s[i], c.d[i], c.pads[i], c.pads[n + i], c.op[i]));
  const y = new Float64Array(N * CO * numElements(out));
  const w = random(numElements(c.w), 2);
  const inSize = numElements(dims), outSize = numElements(out), kSize = numElements(ks);
  for (let b = 0; b < N; b++) for (let ci = 0; ci < C; ci++) for (let i = 0; i < inSize; i++) for (let o = 0; o < cog; o++) for (let k = 0; k < kSize; k++) {
    // Unflatten i and k, place the output.
    let ri = i, rk = k, flat = 0, inside = true;
    const pos: number[] = new Array<number>(n);
    for (let a = n - 1; a >= 0; a--) {
      const ii = ri % dims[a], kk = rk % ks[a];
      ri = Math.floor(ri / dims[a]); rk = Math.floor(rk / ks[a]);
      pos[a] = ii * c.s[a] + kk * c.d[a] - c.pads[a];
      if (pos[a] < 0 || pos[a] >= out[a]) inside = false;
    }
    if (!inside) continue;
    for (let a = 0; a < n; a++) flat = flat * out[a] + pos[a];
    const co = Math.floor(ci / cig) * cog + o;
    y[(b * CO + co) * outSize + flat] += x[(b * C + ci) * inSize + i] * w[(ci * cog + o) * kSize + k];
  }
  return { out: y, shape: [N, CO, ...out] };
}

const cases: Case[] = [
  { what: 'DCGAN 4x4 stride 2 pad 1', x: [2, 3, 3, 4], w: [3, 2, 4, 4], s: [2, 2], d: [1, 1], pads: [1, 1, 1, 1], op: [0, 0], groups: 1 },
  { what: 'stride 1, asymmetric pads', x: [1, 2, 4, 3], w: [2, 3, 3, 2], s: [1, 1], d: [1, 1], pads: [0, 1, 2, 0], op: [0, 0], groups: 1 },
  { what: '3x3 stride 2 (a masked tap), output_padding', x: [1, 2, 3, 3], w: [2, 2, 3, 3], s: [2, 2], d: [1, 1], pads: [1, 0, 1, 1], op: [1, 1], groups: 1 },
  { what: 'stride 3 over a 2-wide kernel, pads above the kernel', x: [1, 1, 3, 4], w: [1, 2, 2, 2], s: [3, 3], d: [1, 1], pads: [2, 3, 1, 0], op: [2, 0], groups: 1 },
  { what: 'dilation 2 stride 2 (masked), dilation 2 stride 1', x: [1, 2, 4, 3], w: [2, 2, 3, 2], s: [2, 1], d: [2, 2], pads: [1, 1, 0, 2], op: [1, 0], groups: 1 },
  { what: 'groups 2', x: [1, 4, 3, 3], w: [4, 3, 3, 3], s: [2, 2], d: [1, 1], pads: [1, 1, 1, 1], op: [0, 1], groups: 2 },
  { what: '3-D, strides 1 and 2', x: [1, 2, 2, 3, 3], w: [2, 3, 3, 4, 3], s: [1, 2, 2], d: [1, 1, 1], pads: [1, 1, 0, 1, 1, 1], op: [0, 0, 1], groups: 1 },
  { what: '3-D groups and dilation', x: [1, 2, 3, 2, 2], w: [2, 2, 2, 2, 2], s: [2, 1, 2], d: [2, 1, 1], pads: [0, 0, 1, 1, 0, 0], op: [1, 0, 0], groups: 2 },
];

for (const c of cases) {
  test(`conv_transpose ${c.what}: channels first and last match the definition`, () => {
    const x = random(numElements(c.x), 1), w = random(numElements(c.w), 2);
    const want = naive(x, c);
    const rank = c.x.length, n = rank - 2;
    const p = { strides: c.s, dilation: c.d, padding: c.pads, outputPadding: c.op, groups: c.groups };
    const X = placeholder('x', c.x), K = placeholder('w', c.w);
    const y = convTranspose(X, K, { ...p, channelsLast: false });
    assert.equal(y.shape, want.shape);
    close(run(y, [[X, x], [K, w]]), want.out, `${c.what} channels first`);
    // Channels last: data [N, ..., C], kernel [k..., Ci, Co/g].
    const toLast = [0, ...Array.from({ length: n }, (_, i) => 2 + i), 1];
    const kLast = [...Array.from({ length: n }, (_, i) => 2 + i), 0, 1];
    const Xl = placeholder('x', toLast.map((a) => c.x[a])), Kl = placeholder('w', kLast.map((a) => c.w[a]));
    const yl = convTranspose(Xl, Kl, { ...p, channelsLast: true });
    close(run(yl, [[Xl, permute(x, c.x, toLast)], [Kl, permute(w, c.w, kLast)]]), permute(Float32Array.from(want.out), want.shape, toLast), `${c.what} channels last`);
  });
}

test('conv_transpose: the tap form (stride-aware index, no inserted zeros)', () => {
  const y = convTranspose(placeholder('x', [1, 8, 4, 4]), placeholder('w', [8, 4, 4, 4]), { strides: [2, 2], dilation: [1, 1], padding: [1, 1, 1, 1], outputPadding: [0, 0], groups: 1, channelsLast: false });
  assert.equal(y.shape, [1, 4, 8, 8]);
  // 4x4 kernel at stride 2: 2 taps per axis reach each output, 8 x 2 x 2 multiply-adds.
  assert.equal(y.op.kind === 'compute' && y.op.reduceAxes.map((a) => a.extent), [8, 2, 2]);
});

test.run();
