import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { permute } from '../ir/tensor';
import { fillUniform, hashString, streamSeed, xavierBound, xavierWeight } from './init';

test('fillUniform is deterministic, in range, and roughly uniform', () => {
  const a = fillUniform(new Float32Array(100000), 42, -2, 3);
  const b = fillUniform(new Float32Array(100000), 42, -2, 3);
  assert.equal(a, b);
  let lo = Infinity, hi = -Infinity, mean = 0;
  for (const x of a) { lo = Math.min(lo, x); hi = Math.max(hi, x); mean += x / a.length; }
  assert.ok(lo >= -2 && hi <= 3, `range [${lo}, ${hi}]`);
  assert.ok(lo < -1.99 && hi > 2.99, `range [${lo}, ${hi}] does not fill the interval`);
  assert.ok(Math.abs(mean - 0.5) < 0.02, `mean ${mean}`);
  const c = fillUniform(new Float32Array(16), 43, -2, 3);
  assert.not.equal(Array.from(c), Array.from(a.subarray(0, 16)));
});

test('parameter streams depend on seed and name', () => {
  assert.is(hashString(''), 0x811c9dc5);
  assert.is.not(streamSeed(0, 'conv0_weight'), streamSeed(1, 'conv0_weight'));
  assert.is.not(streamSeed(0, 'conv0_weight'), streamSeed(0, 'conv1_weight'));
  assert.equal(xavierWeight(0, 'w', [4, 3]), xavierWeight(0, 'w', [4, 3]));
});

test('Xavier bound follows TVM (avg factor, magnitude 3, depthwise hack)', () => {
  // conv0 of resnet: OIHW [64, 3, 7, 7]: fan_in 147, fan_out 3136.
  assert.ok(Math.abs(xavierBound('conv0_weight', [64, 3, 7, 7]) - Math.sqrt(3 / ((147 + 3136) / 2))) < 1e-15);
  // dense [1000, 512]
  assert.ok(Math.abs(xavierBound('fc1_weight', [1000, 512]) - Math.sqrt(3 / 756)) < 1e-15);
  // depthwise by name or by flag: factor = kh*kw.
  assert.ok(Math.abs(xavierBound('x_depthwise_weight', [32, 1, 3, 3]) - Math.sqrt(3 / 9)) < 1e-15);
  assert.ok(Math.abs(xavierBound('x_weight', [32, 1, 3, 3], true) - Math.sqrt(3 / 9)) < 1e-15);
  assert.throws(() => xavierBound('v', [3]), /at least 2 dims/);
  const w = xavierWeight(5, 'fc_weight', [100, 50]);
  const bound = Math.sqrt(3 / 75);
  assert.ok(w.every((x) => Math.abs(x) <= bound));
});

test('permute is numpy transpose', () => {
  // OIHW [2, 3, 1, 2] -> HWIO
  const shape = [2, 3, 1, 2];
  const data = Float32Array.from({ length: 12 }, (_, i) => i);
  const out = permute(data, shape, [2, 3, 1, 0]);
  // out[h][w][i][o] = data[o][i][h][w]
  for (let o = 0; o < 2; o++) for (let i = 0; i < 3; i++) for (let w = 0; w < 2; w++) {
    assert.is(out[((0 * 2 + w) * 3 + i) * 2 + o], data[((o * 3 + i) * 1 + 0) * 2 + w]);
  }
  assert.equal(permute(out, [1, 2, 3, 2], [3, 2, 0, 1]), data);
  assert.throws(() => permute(data, shape, [0, 1, 1, 2]), /not a permutation/);
});

test.run();
