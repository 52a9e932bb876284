import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { outputFileName } from './abi';
import { mix32, uniform } from './random';

test('uniform: deterministic, in [0, 1), streams and seeds differ', () => {
  const a = uniform(1000, 42, 0);
  assert.equal(Array.from(a), Array.from(uniform(1000, 42, 0)));
  assert.ok(a.every((v) => v >= 0 && v < 1));
  const mean = a.reduce((s, v) => s + v, 0) / a.length;
  assert.ok(Math.abs(mean - 0.5) < 0.05, `mean ${mean}`);
  assert.not.equal(Array.from(uniform(8, 42, 1)), Array.from(a.subarray(0, 8)));
  assert.not.equal(Array.from(uniform(8, 43, 0)), Array.from(a.subarray(0, 8)));
  // a prefix does not depend on the length
  assert.equal(Array.from(uniform(10, 42, 0)), Array.from(a.subarray(0, 10)));
});

test('mix32 is the MurmurHash3 finalizer', () => {
  assert.is(mix32(0), 0);
  assert.is(mix32(1), 0x514e28b7);
});

test('outputFileName', () => {
  assert.is(outputFileName('logits'), 'logits');
  assert.is(outputFileName('resnet/dense:0'), 'resnet_dense_0');
  assert.is(outputFileName('..'), '_');
  assert.is(outputFileName(''), '_');
});

test.run();
