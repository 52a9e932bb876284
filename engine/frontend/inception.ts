// Inception v3 as TVM's `relay.testing.inception_v3` (from MXNet's symbol): every
// `Conv` is conv (no bias) + BN (eps 2e-5, scale=False) + ReLU, named `<name><suffix>_conv1`
// and `<name><suffix>_bn`; average pools count padding; the head is an 8x8 average pool,
// flatten, dense `fc1_weight` + `fc2_bias`, softmax. Built for 299x299 images.

import type { NetBuilder } from './builder';

/** Smallest image for which the final feature map still covers the 8x8 average pool. */
export const INCEPTION_MIN_IMAGE = 299;

type Pair = [number, number];

function makeConv(b: NetBuilder) {
  return (x: number, channels: number, name: string, kernel: Pair = [1, 1], stride: Pair = [1, 1], pad: Pair = [0, 0]): number => {
    const y = b.conv2d(x, `${name}_conv1`, { channels, kernel, strides: stride, padding: pad });
    return b.relu(b.batchNorm(y, `${name}_bn`, 2e-5, false));
  };
}

export function inceptionV3(b: NetBuilder): number {
  const conv = makeConv(b);
  const pool = (x: number, kind: 'avg' | 'max', kernel: Pair, stride: Pair, pad: Pair): number =>
    kind === 'max' ? b.maxPool(x, kernel, stride, pad) : b.avgPool(x, kernel, stride, pad, true);

  const blockA = (x: number, n1: number, n3r: number, n31: number, n32: number, n5r: number, n5: number, kind: 'avg' | 'max', proj: number, name: string): number => {
    const t1 = conv(x, n1, `${name}_conv`);
    let t5 = conv(x, n5r, `${name}_tower_conv`);
    t5 = conv(t5, n5, `${name}_tower_conv_1`, [5, 5], [1, 1], [2, 2]);
    let t3 = conv(x, n3r, `${name}_tower_1_conv`);
    t3 = conv(t3, n31, `${name}_tower_1_conv_1`, [3, 3], [1, 1], [1, 1]);
    t3 = conv(t3, n32, `${name}_tower_1_conv_2`, [3, 3], [1, 1], [1, 1]);
    const p = conv(pool(x, kind, [3, 3], [1, 1], [1, 1]), proj, `${name}_tower_2_conv`);
    return b.concat([t1, t5, t3, p]);
  };

  const blockB = (x: number, n3: number, d3r: number, d31: number, d32: number, name: string): number => {
    const t3 = conv(x, n3, `${name}_conv`, [3, 3], [2, 2]);
    let d = conv(x, d3r, `${name}_tower_conv`);
    d = conv(d, d31, `${name}_tower_conv_1`, [3, 3], [1, 1], [1, 1]);
    d = conv(d, d32, `${name}_tower_conv_2`, [3, 3], [2, 2]);
    return b.concat([t3, d, pool(x, 'max', [3, 3], [2, 2], [0, 0])]);
  };

  const blockC = (x: number, n1: number, d7r: number, d71: number, d72: number,
    q7r: number, q71: number, q72: number, q73: number, q74: number, kind: 'avg' | 'max', proj: number, name: string): number => {
    const t1 = conv(x, n1, `${name}_conv`);
    let d = conv(x, d7r, `${name}_tower_conv`);
    d = conv(d, d71, `${name}_tower_conv_1`, [1, 7], [1, 1], [0, 3]);
    d = conv(d, d72, `${name}_tower_conv_2`, [7, 1], [1, 1], [3, 0]);
    let q = conv(x, q7r, `${name}_tower_1_conv`);
    q = conv(q, q71, `${name}_tower_1_conv_1`, [7, 1], [1, 1], [3, 0]);
    q = conv(q, q72, `${name}_tower_1_conv_2`, [1, 7], [1, 1], [0, 3]);
    q = conv(q, q73, `${name}_tower_1_conv_3`, [7, 1], [1, 1], [3, 0]);
    q = conv(q, q74, `${name}_tower_1_conv_4`, [1, 7], [1, 1], [0, 3]);
    const p = conv(pool(x, kind, [3, 3], [1, 1], [1, 1]), proj, `${name}_tower_2_conv`);
    return b.concat([t1, d, q, p]);
  };

  const blockD = (x: number, n3r: number, n3: number, d7r: number, d71: number, d72: number, d73: number, name: string): number => {
    let t = conv(x, n3r, `${name}_tower_conv`);
    t = conv(t, n3, `${name}_tower_conv_1`, [3, 3], [2, 2]);
    let d = conv(x, d7r, `${name}_tower_1_conv`);
    d = conv(d, d71, `${name}_tower_1_conv_1`, [1, 7], [1, 1], [0, 3]);
    d = conv(d, d72, `${name}_tower_1_conv_2`, [7, 1], [1, 1], [3, 0]);
    d = conv(d, d73, `${name}_tower_1_conv_3`, [3, 3], [2, 2]);
    return b.concat([t, d, pool(x, 'max', [3, 3], [2, 2], [0, 0])]);
  };

  const blockE = (x: number, n1: number, d3r: number, d31: number, d32: number,
    r: number, n3: number, a1: number, a2: number, kind: 'avg' | 'max', proj: number, name: string): number => {
    const t1 = conv(x, n1, `${name}_conv`);
    const d = conv(x, d3r, `${name}_tower_conv`);
    const da = conv(d, d31, `${name}_tower_mixed_conv`, [1, 3], [1, 1], [0, 1]);
    const db = conv(d, d32, `${name}_tower_mixed_conv_1`, [3, 1], [1, 1], [1, 0]);
    let t = conv(x, r, `${name}_tower_1_conv`);
    t = conv(t, n3, `${name}_tower_1_conv_1`, [3, 3], [1, 1], [1, 1]);
    const ta = conv(t, a1, `${name}_tower_1_mixed_conv`, [1, 3], [1, 1], [0, 1]);
    const tb = conv(t, a2, `${name}_tower_1_mixed_conv_1`, [3, 1], [1, 1], [1, 0]);
    const p = conv(pool(x, kind, [3, 3], [1, 1], [1, 1]), proj, `${name}_tower_2_conv`);
    return b.concat([t1, da, db, ta, tb, p]);
  };

  let x = b.input();
  x = conv(x, 32, 'conv', [3, 3], [2, 2]);
  x = conv(x, 32, 'conv_1', [3, 3]);
  x = conv(x, 64, 'conv_2', [3, 3], [1, 1], [1, 1]);
  x = pool(x, 'max', [3, 3], [2, 2], [0, 0]);
  x = conv(x, 80, 'conv_3');
  x = conv(x, 192, 'conv_4', [3, 3]);
  x = pool(x, 'max', [3, 3], [2, 2], [0, 0]);

  x = blockA(x, 64, 64, 96, 96, 48, 64, 'avg', 32, 'mixed');
  x = blockA(x, 64, 64, 96, 96, 48, 64, 'avg', 64, 'mixed_1');
  x = blockA(x, 64, 64, 96, 96, 48, 64, 'avg', 64, 'mixed_2');
  x = blockB(x, 384, 64, 96, 96, 'mixed_3');
  x = blockC(x, 192, 128, 128, 192, 128, 128, 128, 128, 192, 'avg', 192, 'mixed_4');
  x = blockC(x, 192, 160, 160, 192, 160, 160, 160, 160, 192, 'avg', 192, 'mixed_5');
  x = blockC(x, 192, 160, 160, 192, 160, 160, 160, 160, 192, 'avg', 192, 'mixed_6');
  x = blockC(x, 192, 192, 192, 192, 192, 192, 192, 192, 192, 'avg', 192, 'mixed_7');
  x = blockD(x, 192, 320, 192, 192, 192, 192, 'mixed_8');
  x = blockE(x, 320, 384, 384, 384, 448, 384, 384, 384, 'avg', 192, 'mixed_9');
  x = blockE(x, 320, 384, 384, 384, 448, 384, 384, 384, 'max', 192, 'mixed_10');

  x = pool(x, 'avg', [8, 8], [1, 1], [0, 0]);
  x = b.flatten(x);
  x = b.dense(x, 'fc1', 1000, 'fc2_bias');
  return b.softmax(x);
}
