import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { outputFileName, outputFileNames } from './abi';
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

test('outputFileName: safe names are kept, changed ones get the FNV-1a-32 of their bytes', () => {
  assert.is(outputFileName('logits'), 'logits');
  assert.is(outputFileName('a_b_0'), 'a_b_0');
  assert.is(outputFileName('resnet/dense:0'), 'resnet_dense_0-71299826');
  assert.is(outputFileName('a/b:0'), 'a_b_0-069de8c3');
  assert.is(outputFileName('..'), '_-a3d4a70d');
  assert.is(outputFileName(''), '_-811c9dc5');
  assert.is(outputFileName('é'), '__-1e9de8c1', 'one _ per UTF-8 byte');
  assert.is(outputFileName('a'.repeat(64)), 'a'.repeat(64));
  assert.is(outputFileName('a'.repeat(65)), `${'a'.repeat(64)}-2dd603ec`, 'longer names are cut to 64 bytes');
});

test('outputFileNames: two outputs never share a file', () => {
  assert.equal(outputFileNames(['a/b:0', 'a_b_0']), ['a_b_0-069de8c3', 'a_b_0']);
  assert.throws(() => outputFileNames(['a/b:0', 'a_b_0-069de8c3']), /outputs 'a\/b:0' and 'a_b_0-069de8c3' would both be saved as a_b_0-069de8c3\.bin/);
});

test.run();
