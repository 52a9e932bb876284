// ResNet as TVM's `relay.testing.resnet`: the pre-activation MXNet ("tornadomeet")
// variant. A scale-free BN on the raw input (`bn_data`); every unit is BN-ReLU before
// each conv; the first unit of a stage has a 1x1 projection shortcut read from act1 (the
// BN-ReLU'd unit input), the others an identity shortcut; bottleneck units stride on
// their first 1x1 conv. All batch norms use eps 2e-5; convs have no bias.

import type { NetBuilder } from './builder';

const EPS = 2e-5;

export const RESNET_DEPTHS = [18, 34, 50, 101, 152] as const;
export type ResnetDepth = (typeof RESNET_DEPTHS)[number];

const UNITS: Record<ResnetDepth, readonly number[]> = {
  18: [2, 2, 2, 2], 34: [3, 4, 6, 3], 50: [3, 4, 6, 3], 101: [3, 4, 23, 3], 152: [3, 8, 36, 3],
};

/** Smallest image TVM builds these depths for: at 28 and below it switches to CIFAR ResNets (other depths). */
export const RESNET_MIN_IMAGE = 29;

function unit(b: NetBuilder, data: number, filters: number, stride: number, project: boolean, name: string, bottleneck: boolean): number {
  const act1 = b.relu(b.batchNorm(data, `${name}_bn1`, EPS));
  let body: number;
  if (bottleneck) {
    const mid = Math.floor(filters * 0.25);
    body = b.conv2d(act1, `${name}_conv1`, { channels: mid, kernel: [1, 1], strides: [stride, stride] });
    body = b.relu(b.batchNorm(body, `${name}_bn2`, EPS));
    body = b.conv2d(body, `${name}_conv2`, { channels: mid, kernel: [3, 3], padding: [1, 1] });
    body = b.relu(b.batchNorm(body, `${name}_bn3`, EPS));
    body = b.conv2d(body, `${name}_conv3`, { channels: filters, kernel: [1, 1] });
  } else {
    body = b.conv2d(act1, `${name}_conv1`, { channels: filters, kernel: [3, 3], strides: [stride, stride], padding: [1, 1] });
    body = b.relu(b.batchNorm(body, `${name}_bn2`, EPS));
    body = b.conv2d(body, `${name}_conv2`, { channels: filters, kernel: [3, 3], padding: [1, 1] });
  }
  const shortcut = project ? b.conv2d(act1, `${name}_sc`, { channels: filters, kernel: [1, 1], strides: [stride, stride] }) : data;
  return b.add(body, shortcut);
}

export function resnet(b: NetBuilder, depth: ResnetDepth): number {
  const units = UNITS[depth];
  const bottleneck = depth >= 50;
  const filters = bottleneck ? [64, 256, 512, 1024, 2048] : [64, 64, 128, 256, 512];
  let x = b.batchNorm(b.input(), 'bn_data', EPS, false);
  if (b.opts.imageSize <= 32) {
    // TVM's small-image stem (29..32 px here): 3x3/1 conv, no BN, no pooling.
    x = b.conv2d(x, 'conv0', { channels: filters[0], kernel: [3, 3], padding: [1, 1] });
  } else {
    x = b.conv2d(x, 'conv0', { channels: filters[0], kernel: [7, 7], strides: [2, 2], padding: [3, 3] });
    x = b.relu(b.batchNorm(x, 'bn0', EPS));
    x = b.maxPool(x, [3, 3], [2, 2], [1, 1]);
  }
  units.forEach((count, i) => {
    const stride = i === 0 ? 1 : 2;
    for (let j = 0; j < count; j++) {
      x = unit(b, x, filters[i + 1], j === 0 ? stride : 1, j === 0, `stage${i + 1}_unit${j + 1}`, bottleneck);
    }
  });
  x = b.relu(b.batchNorm(x, 'bn1', EPS));
  x = b.flatten(b.globalAvgPool(x));
  x = b.dense(x, 'fc1', 1000);
  return b.softmax(x);
}
