// 3-D ResNet-18 as TVM's `relay.testing.resnet_3d` builds it (the Ansor paper's
// 3D-ResNet-18 row): input [batch, 3, 16, 112, 112] (NCDHW; NDHWC when the network is
// built NHWC), a scale-free BN on the input (`bn_data`), a 3x7x7 conv with strides
// (1, 2, 2) and pads (1, 3, 3) to 64 channels + BN + ReLU (no max pool: TVM's is commented
// out), four stages of two pre-activation basic units (BN-ReLU-conv 3x3x3 twice; the
// first unit of stages 2-4 strides 2 in D, H and W, with a 1x1x1 projection shortcut from
// the unit's BN-ReLU), BN + ReLU, global average pool, dense fc1 + bias, softmax. All
// batch norms use eps 2e-5; convs have no bias. At 29-32 px TVM's small-image stem (a
// 3x3x3 conv, stride 1, no BN) replaces the first conv; below that TVM builds another
// network, so 29 is the smallest image.

import { numElements, permute } from '../ir/tensor';
import type { NetBuilder } from './builder';
import { fillUniform, streamSeed, xavierWeight } from './init';

const EPS = 2e-5;
/** Frames of the clip (TVM's image_shape (3, 16, 112, 112)). */
export const RESNET3D_FRAMES = 16;
export const RESNET3D_MIN_IMAGE = 29;
const FILTERS = [64, 64, 128, 256, 512];
const UNITS = [2, 2, 2, 2];

type Triple = readonly [number, number, number];

class Layers3d {
  readonly last: boolean;
  constructor(readonly b: NetBuilder) { this.last = b.layout === 'NHWC'; }

  get layout(): string { return this.last ? 'NDHWC' : 'NCDHW'; }
  get channelAxis(): number { return this.last ? 4 : 1; }
  channels(x: number): number { return this.b.shape(x)[this.channelAxis]; }

  private constant(name: string, shape: readonly number[], make: () => Float32Array): number {
    return this.b.graph.constant(name, shape, this.b.opts.weights === 'zeros' ? new Float32Array(numElements(shape)) : make());
  }

  /** conv3d without bias (`layers.conv3d`): weight OIDHW, DHWIO when channels last. */
  conv(x: number, name: string, channels: number, kernel: Triple, strides: Triple = [1, 1, 1], padding: Triple = [0, 0, 0]): number {
    const canonical = [channels, this.channels(x), ...kernel];
    const perm = [2, 3, 4, 1, 0];
    const weightName = `${name}_weight`;
    const w = this.constant(weightName, this.last ? perm.map((p) => canonical[p]) : canonical, () => {
      const data = xavierWeight(this.b.opts.seed, weightName, canonical);
      return this.last ? permute(data, canonical, perm) : data;
    });
    return this.b.graph.op('conv3d', [x, w], { layout: this.layout, strides: [...strides], padding: [...padding, ...padding], dilation: [1, 1, 1], groups: 1 }, name);
  }

  /** `layers.batch_norm_infer` over the channel axis (as NetBuilder.batchNorm, for 5-d maps). */
  batchNorm(x: number, name: string, scale = true): number {
    const c = this.channels(x);
    const random = this.b.opts.randomStats;
    const vec = (suffix: string, fixed: number, lo: number, hi: number, use = true): number => {
      const full = `${name}_${suffix}`;
      return this.constant(full, [c], () => (random && use ? fillUniform(new Float32Array(c), streamSeed(this.b.opts.seed, full), lo, hi) : new Float32Array(c).fill(fixed)));
    };
    const stats = [vec('gamma', 1, 0.5, 1.5, scale), vec('beta', 0, -0.5, 0.5), vec('moving_mean', 0, -0.5, 0.5), vec('moving_var', 1, 0.5, 2)];
    return this.b.graph.op('batch_norm', [x, ...stats], { axis: this.channelAxis, epsilon: EPS }, name);
  }

  bnRelu(x: number, name: string): number { return this.b.relu(this.batchNorm(x, name)); }
}

function unit(l: Layers3d, data: number, filters: number, stride: number, project: boolean, name: string): number {
  const s: Triple = [stride, stride, stride];
  const act1 = l.bnRelu(data, `${name}_bn1`);
  let body = l.conv(act1, `${name}_conv1`, filters, [3, 3, 3], s, [1, 1, 1]);
  body = l.conv(l.bnRelu(body, `${name}_bn2`), `${name}_conv2`, filters, [3, 3, 3], [1, 1, 1], [1, 1, 1]);
  const shortcut = project ? l.conv(act1, `${name}_sc`, filters, [1, 1, 1], s) : data;
  return l.b.add(body, shortcut);
}

/** The network; `frames` and `width` (the stem's channels, default 16 and 64) shrink it for tests. */
export function resnet3d18(b: NetBuilder, frames = RESNET3D_FRAMES, width = FILTERS[0]): number {
  const l = new Layers3d(b);
  const { batch: n, imageSize: size } = b.opts;
  const filters = FILTERS.map((f) => (f * width) / FILTERS[0]);
  const input = b.graph.input('data', l.last ? [n, frames, size, size, 3] : [n, 3, frames, size, size]);
  let x = l.batchNorm(input, 'bn_data', false);
  if (size <= 32) {
    x = l.conv(x, 'conv0', filters[0], [3, 3, 3], [1, 1, 1], [1, 1, 1]);
  } else {
    x = l.conv(x, 'conv0', filters[0], [3, 7, 7], [1, 2, 2], [1, 3, 3]);
    x = l.bnRelu(x, 'bn0');
  }
  UNITS.forEach((count, i) => {
    for (let j = 0; j < count; j++) {
      const first = j === 0;
      x = unit(l, x, filters[i + 1], first && i > 0 ? 2 : 1, first, `stage${i + 1}_unit${j + 1}`);
    }
  });
  x = l.bnRelu(x, 'bn1');
  x = b.flatten(b.graph.op('global_avg_pool3d', [x], { layout: l.layout }));
  return b.softmax(b.dense(x, 'fc1', 1000));
}
