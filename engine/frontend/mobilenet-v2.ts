// MobileNet v2 (width 1.0), the network of the Ansor paper's end-to-end table (its
// MobileNet-V2 row), as torchvision and Gluon's model zoo define it: a 3x3/2 conv to 32
// channels, 17 inverted-residual blocks (1x1 expansion by t + BN + ReLU6, 3x3 depthwise +
// BN + ReLU6, 1x1 linear projection + BN, a residual add where stride 1 keeps the
// channels), a 1x1 conv to 1280 + BN + ReLU6, global average pool, dense `fc` + bias,
// softmax. ReLU6 is clip(0, 6); batch norms use eps 1e-5.

import type { NetBuilder } from './builder';

const EPS = 1e-5;

/** Inverted-residual stages: [expansion t, output channels c, repeats n, first stride s]. */
export const MOBILENET_V2_STAGES: readonly (readonly [number, number, number, number])[] = [
  [1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1], [6, 160, 3, 2], [6, 320, 1, 1],
];

const relu6 = (b: NetBuilder, x: number): number => b.graph.op('clip', [x], { min: 0, max: 6 });

function convBn(b: NetBuilder, x: number, name: string, channels: number, kernel: number, stride: number, groups = 1): number {
  const pad = (kernel - 1) / 2;
  const y = b.conv2d(x, `${name}_conv`, { channels, kernel: [kernel, kernel], strides: [stride, stride], padding: [pad, pad], groups });
  return b.batchNorm(y, `${name}_bn`, EPS);
}

export function mobilenetV2(b: NetBuilder): number {
  let x = relu6(b, convBn(b, b.input(), 'features_0', 32, 3, 2));
  let block = 1;
  for (const [t, c, n, s] of MOBILENET_V2_STAGES) {
    for (let i = 0; i < n; i++, block++) {
      const name = `features_${block}`;
      const cin = b.channels(x), stride = i === 0 ? s : 1;
      let y = x;
      if (t !== 1) y = relu6(b, convBn(b, y, `${name}_expand`, cin * t, 1, 1));
      y = relu6(b, convBn(b, y, `${name}_depthwise`, cin * t, 3, stride, cin * t));
      y = convBn(b, y, `${name}_project`, c, 1, 1);
      x = stride === 1 && cin === c ? b.add(x, y) : y;
    }
  }
  x = relu6(b, convBn(b, x, `features_${block}`, 1280, 1, 1));
  x = b.flatten(b.globalAvgPool(x));
  x = b.dense(x, 'fc', 1000);
  return b.softmax(x);
}
