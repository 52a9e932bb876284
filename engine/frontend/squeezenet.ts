// SqueezeNet 1.0 / 1.1 as TVM's `relay.testing.squeezenet`. Every conv has its own bias
// (`<conv>_bias`) and a ReLU; a fire module is squeeze 1x1 then expand 1x1 and 3x3 (pad
// 1), concatenated on the channel axis. Max pools are 3x3/2 without padding. The head is
// conv_final 1x1 -> 1000 (+ bias, ReLU), global average pool, flatten, softmax. Dropout
// is omitted (inference).

import type { NetBuilder } from './builder';

export type SqueezenetVersion = '1.0' | '1.1';

function fireConv(b: NetBuilder, x: number, channels: number, k: number, pad: number, prefix: string): number {
  const y = b.conv2d(x, `${prefix}_conv`, { channels, kernel: [k, k], padding: [pad, pad] });
  return b.relu(b.bias(y, `${prefix}_conv_bias`));
}

function fire(b: NetBuilder, x: number, squeeze: number, e1: number, e3: number, prefix: string): number {
  const s = fireConv(b, x, squeeze, 1, 0, `${prefix}_input`);
  const left = fireConv(b, s, e1, 1, 0, `${prefix}_left`);
  const right = fireConv(b, s, e3, 3, 1, `${prefix}_right`);
  return b.concat([left, right]);
}

export function squeezenet(b: NetBuilder, version: SqueezenetVersion): number {
  let x = b.input();
  const pool = (y: number): number => b.maxPool(y, [3, 3], [2, 2]);
  if (version === '1.0') {
    x = b.conv2d(x, 'conv1', { channels: 96, kernel: [7, 7], strides: [2, 2], padding: [3, 3] });
    x = pool(b.relu(b.bias(x, 'conv1_bias')));
    x = fire(b, x, 16, 64, 64, 'fire1');
    x = fire(b, x, 16, 64, 64, 'fire2');
    x = fire(b, x, 32, 128, 128, 'fire3');
    x = pool(x);
    x = fire(b, x, 32, 128, 128, 'fire4');
    x = fire(b, x, 48, 192, 192, 'fire5');
    x = fire(b, x, 48, 192, 192, 'fire6');
    x = fire(b, x, 64, 256, 256, 'fire7');
    x = pool(x);
    x = fire(b, x, 64, 256, 256, 'fire8');
  } else {
    x = b.conv2d(x, 'conv1', { channels: 64, kernel: [3, 3], strides: [2, 2], padding: [1, 1] });
    x = pool(b.relu(b.bias(x, 'conv1_bias')));
    x = fire(b, x, 16, 64, 64, 'fire1');
    x = fire(b, x, 16, 64, 64, 'fire2');
    x = pool(x);
    x = fire(b, x, 32, 128, 128, 'fire3');
    x = fire(b, x, 32, 128, 128, 'fire4');
    x = pool(x);
    x = fire(b, x, 48, 192, 192, 'fire5');
    x = fire(b, x, 48, 192, 192, 'fire6');
    x = fire(b, x, 64, 256, 256, 'fire7');
    x = fire(b, x, 64, 256, 256, 'fire8');
  }
  x = b.conv2d(x, 'conv_final', { channels: 1000, kernel: [1, 1] });
  x = b.relu(b.bias(x, 'conv_final_bias'));
  x = b.flatten(b.globalAvgPool(x));
  return b.softmax(x);
}
