// MobileNet v1 (alpha 1.0), as TVM's `relay.testing.mobilenet`: a 3x3/2 conv block, 13
// separable blocks (depthwise 3x3 + BN + ReLU, pointwise 1x1 + BN + ReLU), global
// average pool, dense `fc` + bias, softmax. All batch norms use eps 1e-5.

import type { NetBuilder } from './builder';

const EPS = 1e-5;

/** Separable blocks: [depthwise channels, pointwise channels, stride]. */
const BLOCKS: readonly (readonly [number, number, number])[] = [
  [32, 64, 1], [64, 128, 2], [128, 128, 1], [128, 256, 2], [256, 256, 1], [256, 512, 2],
  [512, 512, 1], [512, 512, 1], [512, 512, 1], [512, 512, 1], [512, 512, 1],
  [512, 1024, 2], [1024, 1024, 1],
];

export function mobilenet(b: NetBuilder): number {
  let x = b.input();
  x = b.conv2d(x, 'conv_block_1_conv', { channels: 32, kernel: [3, 3], strides: [2, 2], padding: [1, 1] });
  x = b.relu(b.batchNorm(x, 'conv_block_1_bn', EPS));
  BLOCKS.forEach(([dw, pw, s], i) => {
    const name = `separable_conv_block_${i + 1}`;
    // TVM names the depthwise weight `<block>_weight`. Having no "depthwise" in its name,
    // it misses the Xavier rule written for it (factor kh*kw) in TVM itself, and the
    // activations then shrink ~1e-13x through the network; the builder applies the rule
    // to every depthwise conv, as intended (logits ~1e-6 instead of ~1e-19).
    x = b.conv2d(x, `${name}_depthwise_conv1`, {
      channels: dw, kernel: [3, 3], strides: [s, s], padding: [1, 1], groups: dw, weightName: `${name}_weight`,
    });
    x = b.relu(b.batchNorm(x, `${name}_bn1`, EPS));
    x = b.conv2d(x, `${name}_conv2`, { channels: pw, kernel: [1, 1] });
    x = b.relu(b.batchNorm(x, `${name}_bn2`, EPS));
  });
  x = b.flatten(b.globalAvgPool(x));
  x = b.dense(x, 'fc', 1000);
  return b.softmax(x);
}
