// float16 / bfloat16 rounding (half.ts) against their definition worked out by arithmetic
// (the nearest multiple of the type's spacing at each value, ties to even, the overflow
// rule), over every value of each type, every midpoint between neighbours and the float32
// values on either side of it, random float32 bit patterns and the named edge cases:
// subnormals, ties, overflow, NaN and signed zeros.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { bfloat16Bits, bfloat16Value, float16Bits, float16Value, roundBfloat16, roundFloat16 } from './half';
import { narrowFloatSamples } from './half.fixture';

/** The nearest number with `fraction` fraction bits, exponent at least `minExp` (subnormals below), ties to even; NaN, ±inf and ±0 as they are. */
function nearest(x: number, fraction: number, minExp: number): number {
  if (!Number.isFinite(x) || x === 0) return x;
  const ulp = 2 ** (Math.max(Math.floor(Math.log2(Math.abs(x))), minExp) - fraction);
  const q = x / ulp, r = Math.round(q);
  return (r - q === 0.5 && r % 2 !== 0 ? r - 1 : r) * ulp;
}

/** float16 by definition: the float32 value rounded; 65520 (halfway to 65536) and up overflow. */
function f16Def(x: number): number {
  const y = nearest(Math.fround(x), 10, -14);
  return Math.abs(y) >= 65536 ? Math.sign(y) * Infinity : y;
}

/** bfloat16 by definition: float32's exponent range with 7 fraction bits; 2^128 and up overflow. */
function bf16Def(x: number): number {
  const y = nearest(Math.fround(x), 7, -126);
  return Math.abs(y) >= 2 ** 128 ? Math.sign(y) * Infinity : y;
}

const same = (a: number, b: number): boolean => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));

test('float16: every value, midpoint and neighbour of a midpoint, random float32s, against the definition', () => {
  let checked = 0;
  for (const x of narrowFloatSamples()) {
    const got = roundFloat16(x), want = f16Def(x);
    if (!same(got, want)) assert.unreachable(`round to float16 of ${x}: ${got}, expected ${want}`);
    checked++;
  }
  assert.ok(checked > 400_000, `${checked} values`);
});

test('bfloat16: every value, midpoint and neighbour of a midpoint, random float32s, against the definition', () => {
  for (const x of narrowFloatSamples()) {
    const got = roundBfloat16(x), want = bf16Def(x);
    if (!same(got, want)) assert.unreachable(`round to bfloat16 of ${x}: ${got}, expected ${want}`);
  }
});

test('float16 edge cases: subnormals, ties to even, overflow to inf, NaN, signed zeros', () => {
  const cases: [number, number][] = [
    [0, 0], [-0, -0], [Infinity, Infinity], [-Infinity, -Infinity],
    [65504, 65504], [65519.99609375, 65504], [65520, Infinity], [-65520, -Infinity], [1e6, Infinity],
    [1 + 2 ** -11, 1], [1 + 3 * 2 ** -11, 1 + 2 ** -9], [-(1 + 2 ** -11), -1], // ties to the even neighbour
    [2 ** -14, 2 ** -14], [2 ** -24, 2 ** -24], [2 ** -25, 0], [-(2 ** -25), -0], [3 * 2 ** -25, 2 ** -23], [1.5 * 2 ** -24, 2 ** -23],
    [2 ** -25 * 1.0000001, 2 ** -24], [2 ** -14 - 2 ** -25, 2 ** -14], [1e-45, 0], [-1e-45, -0],
    [0.1, 0.0999755859375], [3.14159, 3.140625],
  ];
  for (const [x, want] of cases) assert.ok(Object.is(roundFloat16(x), want), `float16(${x}) = ${roundFloat16(x)}, expected ${want}`);
  assert.ok(Number.isNaN(roundFloat16(NaN)));
  assert.is(float16Bits(NaN), 0x7e00);
  assert.is(float16Bits(-0), 0x8000);
  assert.is(float16Bits(65504), 0x7bff);
  assert.is(float16Bits(2 ** -24), 0x0001);
  assert.is(float16Bits(2 ** -14), 0x0400);
  for (let h = 0; h < 0x10000; h++) {
    const v = float16Value(h);
    if (Number.isNaN(v)) continue;
    if (float16Bits(v) !== h) assert.unreachable(`float16 bits ${h.toString(16)} -> ${v} -> ${float16Bits(v).toString(16)}`);
  }
});

test('bfloat16 edge cases: the top 16 bits, ties to even, overflow past float32, subnormals, NaN, signed zeros', () => {
  const cases: [number, number][] = [
    [0, 0], [-0, -0], [Infinity, Infinity], [-Infinity, -Infinity],
    [1 + 2 ** -8, 1], [1 + 3 * 2 ** -8, 1 + 2 ** -6], [1 + 2 ** -8 + 2 ** -20, 1 + 2 ** -7],
    [3.4028234663852886e38, Infinity], [-3.4028234663852886e38, -Infinity], [3.3895313892515355e38, 3.3895313892515355e38],
    [2 ** -133, 2 ** -133], [2 ** -149, 0], [-(2 ** -149), -0], [2 ** -133 * 1.5, 2 ** -132], [2 ** -133 * 1.25, 2 ** -133],
    [0.47892547, 0.478515625], [0.1, 0.10009765625],
  ];
  for (const [x, want] of cases) assert.ok(Object.is(roundBfloat16(x), want), `bfloat16(${x}) = ${roundBfloat16(x)}, expected ${want}`);
  assert.ok(Number.isNaN(roundBfloat16(NaN)));
  assert.is(bfloat16Bits(1), 0x3f80);
  assert.is(bfloat16Value(0xc000), -2);
  for (let b = 0; b < 0x10000; b++) {
    const v = bfloat16Value(b);
    if (Number.isNaN(v)) continue;
    if (bfloat16Bits(v) !== b) assert.unreachable(`bfloat16 bits ${b.toString(16)} -> ${v} -> ${bfloat16Bits(v).toString(16)}`);
  }
});

test.run();
