// conv3d (NCDHW/OIDHW and NDHWC/DHWIO) by the reference evaluator against a naive float64
// loop over the definition, on small shapes with strides, dilations, asymmetric pads and
// groups. Tolerance as nn.test.ts: |got - want| <= 1e-6 * (|want| + 1).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { numElements, permute, placeholder } from '../ir/tensor';
import { close, random, run } from './check.fixture';
import { conv3dNCDHW, conv3dNDHWC, type Conv3dParams } from './conv3d';

/** conv3d over NCDHW data and an OIDHW kernel, by the definition. */
function naive(x: Float32Array, [N, C, D, H, W]: number[], w: Float32Array, [CO, KC, KD, KH, KW]: number[], p: Conv3dParams, groups: number): { out: Float64Array; shape: number[] } {
  const dims = [D, H, W], ks = [KD, KH, KW];
  const o = [0, 1, 2].map((i) => Math.floor((dims[i] + p.padding[i] + p.padding[3 + i] - p.dilation[i] * (ks[i] - 1) - 1) / p.strides[i]) + 1);
  const out = new Float64Array(N * CO * o[0] * o[1] * o[2]);
  for (let n = 0; n < N; n++) for (let co = 0; co < CO; co++) for (let z = 0; z < o[0]; z++) for (let y = 0; y < o[1]; y++) for (let xx = 0; xx < o[2]; xx++) {
    const g = Math.floor(co / (CO / groups));
    let acc = 0;
    for (let kc = 0; kc < KC; kc++) for (let kd = 0; kd < KD; kd++) for (let kh = 0; kh < KH; kh++) for (let kw = 0; kw < KW; kw++) {
      const iz = z * p.strides[0] + kd * p.dilation[0] - p.padding[0];
      const iy = y * p.strides[1] + kh * p.dilation[1] - p.padding[1];
      const ix = xx * p.strides[2] + kw * p.dilation[2] - p.padding[2];
      if (iz < 0 || iz >= D || iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
      acc += x[(((n * C + g * KC + kc) * D + iz) * H + iy) * W + ix] * w[(((co * KC + kc) * KD + kd) * KH + kh) * KW + kw];
    }
    out[(((n * CO + co) * o[0] + z) * o[1] + y) * o[2] + xx] = acc;
  }
  return { out, shape: [N, CO, ...o] };
}

const cases: { what: string; x: number[]; w: number[]; p: Conv3dParams; groups: number }[] = [
  { what: '3x3x3 pad 1', x: [1, 3, 4, 5, 5], w: [4, 3, 3, 3, 3], p: { strides: [1, 1, 1], padding: [1, 1, 1, 1, 1, 1], dilation: [1, 1, 1] }, groups: 1 },
  { what: 'strided, dilated, asymmetric pads', x: [2, 2, 5, 6, 7], w: [3, 2, 2, 3, 2], p: { strides: [2, 1, 2], padding: [0, 1, 2, 1, 0, 1], dilation: [1, 2, 1] }, groups: 1 },
  { what: 'groups 2', x: [1, 4, 3, 4, 4], w: [6, 2, 1, 3, 3], p: { strides: [1, 2, 1], padding: [0, 1, 1, 0, 1, 1], dilation: [1, 1, 1] }, groups: 2 },
  { what: 'depthwise', x: [1, 3, 3, 4, 4], w: [3, 1, 3, 3, 3], p: { strides: [1, 1, 1], padding: [1, 1, 1, 1, 1, 1], dilation: [1, 1, 1] }, groups: 3 },
];

for (const c of cases) {
  test(`conv3d ${c.what}: NCDHW and NDHWC match the definition`, () => {
    const x = random(numElements(c.x), 1), w = random(numElements(c.w), 2);
    const want = naive(x, c.x, w, c.w, c.p, c.groups);
    const X = placeholder('x', c.x), K = placeholder('w', c.w);
    const y = conv3dNCDHW(X, K, c.p, c.groups);
    assert.equal(y.shape, want.shape);
    close(run(y, [[X, x], [K, w]]), want.out, `${c.what} NCDHW`);
    // NDHWC data, DHWIO kernel.
    const xl = permute(x, c.x, [0, 2, 3, 4, 1]), wl = permute(w, c.w, [2, 3, 4, 1, 0]);
    const Xl = placeholder('x', [0, 2, 3, 4, 1].map((a) => c.x[a])), Kl = placeholder('w', [2, 3, 4, 1, 0].map((a) => c.w[a]));
    const yl = conv3dNDHWC(Xl, Kl, c.p, c.groups);
    close(run(yl, [[Xl, xl], [Kl, wl]]), permute(Float32Array.from(want.out), want.shape, [0, 2, 3, 4, 1]), `${c.what} NDHWC`);
  });
}

test('conv3d refuses a kernel whose channels do not fit the groups', () => {
  assert.throws(() => conv3dNCDHW(placeholder('x', [1, 4, 3, 3, 3]), placeholder('w', [4, 3, 1, 1, 1]), { strides: [1, 1, 1], padding: [0, 0, 0, 0, 0, 0], dilation: [1, 1, 1] }, 2), /input channels/);
});

test.run();
