// VGG as TVM's `relay.testing.vgg`: blocks of 3x3 pad-1 convs (+ bias, optional BN with
// eps 1e-5, ReLU), each block closed by a 2x2/2 max pool; classifier fc6 4096, fc7 4096,
// fc8 1000 (each + bias, ReLU between); softmax. Dropout is omitted (inference).

import type { NetBuilder } from './builder';

export const VGG_DEPTHS = [11, 13, 16, 19] as const;
export type VggDepth = (typeof VGG_DEPTHS)[number];

const SPEC: Record<VggDepth, readonly number[]> = {
  11: [1, 1, 2, 2, 2], 13: [2, 2, 2, 2, 2], 16: [2, 2, 3, 3, 3], 19: [2, 2, 4, 4, 4],
};
const FILTERS = [64, 128, 256, 512, 512];

export function vgg(b: NetBuilder, depth: VggDepth, batchNorm: boolean): number {
  let x = b.input();
  SPEC[depth].forEach((convs, i) => {
    for (let j = 0; j < convs; j++) {
      const id = `${i + 1}_${j + 1}`;
      x = b.conv2d(x, `conv${id}`, { channels: FILTERS[i], kernel: [3, 3], padding: [1, 1] });
      x = b.bias(x, `conv${id}_bias`);
      if (batchNorm) x = b.batchNorm(x, `bn${id}`, 1e-5);
      x = b.relu(x);
    }
    x = b.maxPool(x, [2, 2], [2, 2]);
  });
  x = b.flatten(x);
  x = b.relu(b.dense(x, 'fc6', 4096));
  x = b.relu(b.dense(x, 'fc7', 4096));
  x = b.dense(x, 'fc8', 1000);
  return b.softmax(x);
}
