// The normalizations of topi/normalization.ts by the reference evaluator against naive
// float64 loops over ONNX's definitions. Tolerance: each stage is rounded to float32 and
// the normalized values are O(1), so |got - want| <= 1e-5 * (|want| + 1).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { numElements, placeholder } from '../ir/tensor';
import { random, run } from './check.fixture';
import { groupNorm, hardmax, instanceNorm, layerNorm, layerNormStat, logSoftmax, lrn, meanVarianceNorm } from './normalization';



const close = (got: ArrayLike<number>, want: ArrayLike<number>, what: string, tol = 1e-5): void => {
  assert.is(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= tol * (Math.abs(want[i]) + 1))) assert.unreachable(`${what}[${i}]: ${got[i]}, want ${want[i]}`);
  }
};

/** Normalize consecutive runs of `inner` elements (rows), each row by its own mean and variance. */
function normRows(x: Float32Array, inner: number, eps: number, mvn = false): { y: number[]; mean: number[]; rstd: number[] } {
  const y: number[] = [], mean: number[] = [], rstd: number[] = [];
  for (let r = 0; r < x.length / inner; r++) {
    const row = Array.from(x.subarray(r * inner, (r + 1) * inner));
    const m = row.reduce((a, b) => a + b, 0) / inner;
    const v = row.reduce((a, b) => a + (b - m) ** 2, 0) / inner;
    const inv = mvn ? 1 / (Math.sqrt(v) + 1e-9) : 1 / Math.sqrt(v + eps);
    mean.push(m); rstd.push(inv);
    for (const e of row) y.push((e - m) * inv);
  }
  return { y, mean, rstd };
}

test('layer_norm over the last axes, scale broadcast, with and without bias; its Mean and InvStdDev', () => {
  const shape = [2, 3, 8];
  const x = placeholder('x', shape), s = placeholder('s', [8]), b = placeholder('b', [1, 8]);
  const xd = random(48, 1, -2, 3), sd = random(8, 2), bd = random(8, 3);
  const ref = normRows(xd, 8, 1e-3);
  const want = ref.y.map((v, i) => v * sd[i % 8] + bd[i % 8]);
  close(run(layerNorm(x, s, b, -1, 1e-3), [[x, xd], [s, sd], [b, bd]]), want, 'layer_norm axis -1');
  close(run(layerNorm(x, s, undefined, 2, 1e-3), [[x, xd], [s, sd]]), ref.y.map((v, i) => v * sd[i % 8]), 'no bias');
  const mean = layerNormStat(x, -1, 1e-3, 'mean');
  assert.equal(mean.shape, [2, 3, 1]);
  close(run(mean, [[x, xd]]), ref.mean, 'Mean');
  close(run(layerNormStat(x, -1, 1e-3, 'inv_std_dev'), [[x, xd]]), ref.rstd, 'InvStdDev');
  // Over the last two axes.
  const s2 = placeholder('s2', [3, 1]);
  const s2d = random(3, 4);
  const ref2 = normRows(xd, 24, 1e-5);
  close(run(layerNorm(x, s2, undefined, 1, 1e-5), [[x, xd], [s2, s2d]]), ref2.y.map((v, i) => v * s2d[Math.floor(i / 8) % 3]), 'axis 1');
  // A scale per row broadcasts too (numpy's rules against x, as ONNX Runtime applies them).
  const s3 = placeholder('s3', [3, 1]);
  close(run(layerNorm(x, s3, undefined, -1, 1e-3), [[x, xd], [s3, s2d]]), ref.y.map((v, i) => v * s2d[Math.floor(i / 8) % 3]), 'scale [3, 1]');
  assert.throws(() => layerNorm(x, placeholder('bad', [4]), undefined, -1, 1e-5), /does not broadcast/);
});

test('instance_norm (NCHW and channels-last), group_norm per group and per channel, mean_variance_normalization', () => {
  const [n, c, h, w] = [2, 4, 3, 5];
  const x = placeholder('x', [n, c, h, w]), s = placeholder('s', [c]), b = placeholder('b', [c]);
  const xd = random(n * c * h * w, 5, -1, 2), sd = random(c, 6), bd = random(c, 7);
  const inst = normRows(xd, h * w, 1e-5).y.map((v, i) => v * sd[Math.floor(i / (h * w)) % c] + bd[Math.floor(i / (h * w)) % c]);
  close(run(instanceNorm(x, s, b, 1e-5), [[x, xd], [s, sd], [b, bd]]), inst, 'instance_norm');
  // The same data channels-last gives the same values, transposed.
  const nhwc = new Float32Array(xd.length), instT = new Array<number>(xd.length);
  for (let i = 0; i < n; i++) for (let k = 0; k < c; k++) for (let p = 0; p < h * w; p++) {
    nhwc[(i * h * w + p) * c + k] = xd[(i * c + k) * h * w + p];
    instT[(i * h * w + p) * c + k] = inst[(i * c + k) * h * w + p];
  }
  const xl = placeholder('xl', [n, h, w, c]);
  close(run(instanceNorm(xl, s, b, 1e-5, 3), [[xl, nhwc], [s, sd], [b, bd]]), instT, 'instance_norm, channels last');

  const groups = 2, per = c / groups;
  const gn = normRows(xd, per * h * w, 1e-4).y;
  const sg = placeholder('sg', [groups]), bg = placeholder('bg', [groups]);
  const sgd = random(groups, 8), bgd = random(groups, 9);
  const chan = (i: number): number => Math.floor(i / (h * w)) % c;
  close(run(groupNorm(x, sg, bg, groups, 1e-4, false), [[x, xd], [sg, sgd], [bg, bgd]]),
    gn.map((v, i) => v * sgd[Math.floor(chan(i) / per)] + bgd[Math.floor(chan(i) / per)]), 'group_norm, per group (opset 18)');
  close(run(groupNorm(x, s, b, groups, 1e-4, true), [[x, xd], [s, sd], [b, bd]]),
    gn.map((v, i) => v * sd[chan(i)] + bd[chan(i)]), 'group_norm, per channel (opset 21)');
  assert.throws(() => groupNorm(x, sg, bg, 3, 1e-5, false), /do not split/);

  // MVN over [0, 2, 3]: per channel across the batch; checked on the transposed [c, n*h*w] rows.
  const byChannel = new Float32Array(xd.length);
  for (let i = 0; i < n; i++) for (let k = 0; k < c; k++) for (let p = 0; p < h * w; p++) byChannel[(k * n + i) * h * w + p] = xd[(i * c + k) * h * w + p];
  const mv = normRows(byChannel, n * h * w, 0, true).y;
  const mvWant = new Array<number>(xd.length);
  for (let i = 0; i < n; i++) for (let k = 0; k < c; k++) for (let p = 0; p < h * w; p++) mvWant[(i * c + k) * h * w + p] = mv[(k * n + i) * h * w + p];
  close(run(meanVarianceNorm(x, [0, 2, 3]), [[x, xd]]), mvWant, 'mean_variance_normalization');
});

test('lrn: windows clipped at the channel borders, odd and even sizes', () => {
  const [n, c, h] = [1, 6, 2];
  const x = placeholder('x', [n, c, h]);
  const xd = random(n * c * h, 11, -2, 2);
  for (const size of [3, 4, 1]) {
    const [alpha, beta, bias] = [0.02, 0.75, 1.5];
    const want: number[] = [];
    for (let k = 0; k < c; k++) for (let p = 0; p < h; p++) {
      let s = 0;
      for (let i = Math.max(0, k - Math.floor((size - 1) / 2)); i <= Math.min(c - 1, k + Math.ceil((size - 1) / 2)); i++) s += xd[i * h + p] ** 2;
      want.push(xd[k * h + p] / (bias + (alpha / size) * s) ** beta);
    }
    close(run(lrn(x, size, alpha, beta, bias), [[x, xd]]), want, `lrn size ${size}`);
  }
});

test('log_softmax and hardmax along an axis (the first maximum wins a tie)', () => {
  const x = placeholder('x', [2, 3, 4]);
  const xd = random(24, 13, -3, 3);
  for (const axis of [1, -1]) {
    const a = (axis + 3) % 3, shape = [2, 3, 4];
    const stride = numElements(shape.slice(a + 1));
    const want = Array.from(xd, (_, i) => {
      const base = i - (Math.floor(i / stride) % shape[a]) * stride;
      const row = Array.from({ length: shape[a] }, (__, j) => xd[base + j * stride]);
      const m = Math.max(...row);
      return xd[i] - m - Math.log(row.reduce((acc, v) => acc + Math.exp(v - m), 0));
    });
    close(run(logSoftmax(x, axis), [[x, xd]]), want, `log_softmax axis ${axis}`);
  }
  const t = placeholder('t', [2, 4]);
  const td = Float32Array.from([1, 3, 3, 2, -1, -1, -1, -1]);
  close(run(hardmax(t, 1), [[t, td]]), [0, 1, 0, 0, 1, 0, 0, 0], 'hardmax with ties');
  close(run(hardmax(t, 0), [[t, td]]), [1, 1, 1, 1, 0, 0, 0, 0], 'hardmax axis 0');
});

test.run();
