// The DCGAN generator as TVM's `relay.testing.dcgan` builds it (after tqchen's mxnet-gan):
// a random code [batch, 100] -> dense to 4*4*1024 (no bias) -> ReLU -> reshape to a 4x4
// map of 1024 channels -> three 4x4 stride-2 deconvs (pad 1: 8x8x512, 16x16x256, 32x32x128),
// each with a scale-free batch norm (eps 1e-5 + 1e-12) and a ReLU -> a last deconv to
// 64x64x3 -> tanh. Output [batch, 3, 64, 64] (NCHW) or [batch, 64, 64, 3] (NHWC).
//
// Weights are TVM's shapes (dense [8192, 100], deconv kernels IOHW [Ci, Co, 4, 4]) with
// Xavier draws (init.ts); NHWC holds the same numbers: the kernels permuted to
// [kh, kw, Ci, Co], and the dense rows reordered from (c, h, w) to (h, w, c) so that the
// reshape yields the NHWC map of the same values.

import { permute } from '../ir/tensor';
import type { NetBuilder } from './builder';
import { xavierWeight } from './init';

/** The code length (TVM's random_len). */
export const DCGAN_CODE = 100;
/** TVM's ngf: the last deconv's input channels (the others 2x, 4x, 8x). */
const NGF = 128;
const EPS = 1e-5 + 1e-12;

function constant(b: NetBuilder, name: string, shape: readonly number[], make: () => Float32Array): number {
  return b.graph.constant(name, shape, b.opts.weights === 'zeros' ? new Float32Array(shape.reduce((a, d) => a * d, 1)) : make());
}

/** A 4x4 stride-2 deconv that doubles the map (TVM's deconv2d: pad (k-1)//2 = 1, output_padding 0). */
function deconv(b: NetBuilder, x: number, name: string, channels: number): number {
  const ci = b.channels(x);
  const canonical = [ci, channels, 4, 4];
  const nhwc = b.layout === 'NHWC';
  const weightName = `${name}_weight`;
  const w = constant(b, weightName, nhwc ? [4, 4, ci, channels] : canonical, () => {
    const data = xavierWeight(b.opts.seed, weightName, canonical);
    return nhwc ? permute(data, canonical, [2, 3, 0, 1]) : data;
  });
  return b.graph.op('conv2d_transpose', [x, w], {
    layout: b.layout, strides: [2, 2], dilation: [1, 1], padding: [1, 1, 1, 1], outputPadding: [0, 0], groups: 1,
  }, name);
}

/** The generator; `ngf` (default TVM's 128) narrows every layer, for tests. */
export function dcgan(b: NetBuilder, ngf = NGF): number {
  const n = b.opts.batch;
  const code = b.graph.input('data', [n, DCGAN_CODE]);
  const units = 4 * 4 * ngf * 8;
  const nhwc = b.layout === 'NHWC';
  const w = constant(b, 'dense_weight', [units, DCGAN_CODE], () => {
    const data = xavierWeight(b.opts.seed, 'dense_weight', [units, DCGAN_CODE]);
    // Rows (c, h, w) -> (h, w, c): the reshape below then reads the NHWC map.
    return nhwc ? permute(data, [ngf * 8, 4, 4, DCGAN_CODE], [1, 2, 0, 3]) : data;
  });
  let x = b.relu(b.graph.op('dense', [code, w], {}, 'dense'));
  x = b.graph.op('reshape', [x], { newShape: nhwc ? [n, 4, 4, ngf * 8] : [n, ngf * 8, 4, 4] });
  for (const [prefix, channels] of [['g2', ngf * 4], ['g3', ngf * 2], ['g4', ngf]] as const) {
    x = deconv(b, x, `${prefix}_deconv`, channels);
    x = b.relu(b.batchNorm(x, `${prefix}_batch_norm`, EPS, false));
  }
  return b.graph.op('tanh', [deconv(b, x, 'g5_deconv', 3)]);
}
