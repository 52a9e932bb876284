// ir/float8.ts against values computed with the pinned onnx 1.23.1 and ml_dtypes 0.6.0 (what
// onnx's reference Cast gives, and ONNX Runtime 1.30's Cast agrees on the float8 ones):
//   sat:   onnx.numpy_helper.saturate_cast(np.float32(x), ml_dtypes.float8_e4m3fn ...)
//          (float4 e2m1: x.astype(ml_dtypes.float4_e2m1fn), which saturates);
//   nosat: np.float32(x).astype(ml_dtypes.float8_...) (Cast saturate=0);
//   bits:  the saturated result's bit pattern (.view(np.uint8)).
// Then every encoding decoded and rounded back to itself, and random float32s against the
// nearest encodable value found by search (ties to the even encoding).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MINI_FLOATS, MINI_FLOAT_KINDS, miniFloatBits, miniFloatValue, roundMiniFloat, type MiniFloat } from './float8';

const same = (a: number, b: number): boolean => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));

const TABLE: Record<MiniFloat, { x: number[]; sat: number[]; nosat?: number[]; bits: number[] }> = {
  f8e4m3fn: {
    x: [0, -0, Infinity, -Infinity, 1000000.0, -1000000.0, 1.0000000116860974e-07, -1.0000000116860974e-07, 1.0, -1.0, 0.4789254665374756, 0.7229037880897522, -3.5, 9.0, -8.0, 448.0, 464.0, 464.0000305175781, 463.9999694824219, 480.0, -464.0, 0.001953125, 0.0009765625, 0.0029296875, 0.0009766601724550128, 0.015625, 0.0146484375, 1.0625, 1.1875, -0.00048828125],
    sat: [0, -0, 448.0, -448.0, 448.0, -448.0, 0, -0, 1.0, -1.0, 0.46875, 0.75, -3.5, 9.0, -8.0, 448.0, 448.0, 448.0, 448.0, 448.0, -448.0, 0.001953125, 0, 0.00390625, 0.001953125, 0.015625, 0.015625, 1.0, 1.25, -0],
    nosat: [0, -0, NaN, NaN, NaN, NaN, 0, -0, 1.0, -1.0, 0.46875, 0.75, -3.5, 9.0, -8.0, 448.0, 448.0, NaN, 448.0, NaN, -448.0, 0.001953125, 0, 0.00390625, 0.001953125, 0.015625, 0.015625, 1.0, 1.25, -0],
    bits: [0, 128, 126, 254, 126, 254, 0, 128, 56, 184, 47, 52, 198, 81, 208, 126, 126, 126, 126, 126, 254, 1, 0, 2, 1, 8, 8, 56, 58, 128],
  },
  f8e4m3fnuz: {
    x: [0, -0, Infinity, -Infinity, 1000000.0, -1000000.0, 1.0000000116860974e-07, -1.0000000116860974e-07, 1.0, -1.0, 0.4789254665374756, 0.7229037880897522, -3.5, 9.0, -8.0, 240.0, 248.0, 248.00001525878906, 247.99998474121094, 256.0, -248.0, 0.0009765625, 0.00048828125, 0.00146484375, 0.0078125, 1.0625, 1.1875, -0.000244140625],
    sat: [0, 0, 240.0, -240.0, 240.0, -240.0, 0, 0, 1.0, -1.0, 0.46875, 0.75, -3.5, 9.0, -8.0, 240.0, 240.0, 240.0, 240.0, 240.0, -240.0, 0.0009765625, 0, 0.001953125, 0.0078125, 1.0, 1.25, 0],
    nosat: [0, 0, NaN, NaN, NaN, NaN, 0, 0, 1.0, -1.0, 0.46875, 0.75, -3.5, 9.0, -8.0, 240.0, NaN, NaN, 240.0, NaN, NaN, 0.0009765625, 0, 0.001953125, 0.0078125, 1.0, 1.25, 0],
    bits: [0, 0, 127, 255, 127, 255, 0, 0, 64, 192, 55, 60, 206, 89, 216, 127, 127, 127, 127, 127, 255, 1, 0, 2, 8, 64, 66, 0],
  },
  f8e5m2: {
    x: [0, -0, Infinity, -Infinity, 1000000.0, -1000000.0, 1.0000000116860974e-07, -1.0000000116860974e-07, 1.0, -1.0, 0.4789254665374756, 0.7229037880897522, -3.5, 9.0, -8.0, 57344.0, 61440.0, 61440.00390625, 61439.99609375, 65536.0, -61440.0, 1.52587890625e-05, 7.62939453125e-06, 2.288818359375e-05, 6.103515625e-05, 1.125, 1.375, -3.814697265625e-06, 65504.0],
    sat: [0, -0, 57344.0, -57344.0, 57344.0, -57344.0, 0, -0, 1.0, -1.0, 0.5, 0.75, -3.5, 8.0, -8.0, 57344.0, 57344.0, 57344.0, 57344.0, 57344.0, -57344.0, 1.52587890625e-05, 0, 3.0517578125e-05, 6.103515625e-05, 1.0, 1.5, -0, 57344.0],
    nosat: [0, -0, Infinity, -Infinity, Infinity, -Infinity, 0, -0, 1.0, -1.0, 0.5, 0.75, -3.5, 8.0, -8.0, 57344.0, Infinity, Infinity, 57344.0, Infinity, -Infinity, 1.52587890625e-05, 0, 3.0517578125e-05, 6.103515625e-05, 1.0, 1.5, -0, Infinity],
    bits: [0, 128, 123, 251, 123, 251, 0, 128, 60, 188, 56, 58, 195, 72, 200, 123, 123, 123, 123, 123, 251, 1, 0, 2, 4, 60, 62, 128, 123],
  },
  f8e5m2fnuz: {
    x: [0, -0, Infinity, -Infinity, 1000000.0, -1000000.0, 1.0000000116860974e-07, -1.0000000116860974e-07, 1.0, -1.0, 0.4789254665374756, 0.7229037880897522, -3.5, 9.0, -8.0, 57344.0, 61440.0, 61440.00390625, 61439.99609375, 65536.0, -61440.0, 7.62939453125e-06, 3.814697265625e-06, 1.1444091796875e-05, 3.0517578125e-05, 1.125, 1.375, -1.9073486328125e-06],
    sat: [0, 0, 57344.0, -57344.0, 57344.0, -57344.0, 0, 0, 1.0, -1.0, 0.5, 0.75, -3.5, 8.0, -8.0, 57344.0, 57344.0, 57344.0, 57344.0, 57344.0, -57344.0, 7.62939453125e-06, 0, 1.52587890625e-05, 3.0517578125e-05, 1.0, 1.5, 0],
    nosat: [0, 0, NaN, NaN, NaN, NaN, 0, 0, 1.0, -1.0, 0.5, 0.75, -3.5, 8.0, -8.0, 57344.0, NaN, NaN, 57344.0, NaN, NaN, 7.62939453125e-06, 0, 1.52587890625e-05, 3.0517578125e-05, 1.0, 1.5, 0],
    bits: [0, 0, 127, 255, 127, 255, 0, 0, 64, 192, 60, 62, 199, 76, 204, 127, 127, 127, 127, 127, 255, 1, 0, 2, 4, 64, 66, 0],
  },
  f4e2m1: {
    x: [0, -0, Infinity, -Infinity, 1000000.0, -1000000.0, 1.0000000116860974e-07, -1.0000000116860974e-07, 1.0, -1.0, 0.4789254665374756, 0.7229037880897522, -3.5, 9.0, -8.0, 6.0, 7.0, 5.0, 5.000100135803223, 4.999899864196777, 0.25, 0.25000008940696716, 0.75, 1.25, 1.75, 2.5, 3.5, -0.25, -5.0, 100.0],
    sat: [0, -0, 6.0, -6.0, 6.0, -6.0, 0, -0, 1.0, -1.0, 0.5, 0.5, -4.0, 6.0, -6.0, 6.0, 6.0, 4.0, 6.0, 4.0, 0, 0.5, 1.0, 1.0, 2.0, 2.0, 4.0, -0, -4.0, 6.0],
    bits: [0, 8, 7, 15, 7, 15, 0, 8, 2, 10, 1, 1, 14, 7, 15, 7, 7, 6, 7, 6, 0, 1, 2, 2, 4, 4, 6, 8, 14, 7],
  },
};

test('rounding of edge values (ties, saturation, NaN, inf, signed zeros, subnormals) as onnx / ml_dtypes give', () => {
  for (const kind of MINI_FLOAT_KINDS) {
    const { x, sat, nosat, bits } = TABLE[kind];
    x.forEach((v, i) => {
      const s = roundMiniFloat(kind, v, true);
      if (!same(s, sat[i])) assert.unreachable(`${kind}(${v}) = ${s}, expected ${sat[i]}`);
      const n = roundMiniFloat(kind, v, false);
      const wantN = nosat ? nosat[i] : sat[i]; // float4 e2m1 always saturates
      if (!same(n, wantN)) assert.unreachable(`${kind}(${v}, saturate=0) = ${n}, expected ${wantN}`);
      assert.is(miniFloatBits(kind, v), bits[i], `${kind} bits of ${v}`);
    });
    if (kind === 'f4e2m1') assert.ok(Object.is(roundMiniFloat(kind, NaN), -0), 'f4e2m1(NaN) is -0, as ml_dtypes gives (it has no NaN)');
    else assert.ok(Number.isNaN(roundMiniFloat(kind, NaN)), `${kind}(NaN)`);
  }
});

/** Every value of `kind`'s encodings (NaNs left out), with the encoding. */
function encodings(kind: MiniFloat): { b: number; v: number }[] {
  const f = MINI_FLOATS[kind];
  const n = 1 << (1 + f.exp + f.man);
  return Array.from({ length: n }, (_, b) => ({ b, v: miniFloatValue(kind, b) })).filter((e) => !Number.isNaN(e.v));
}

test('every encoding decodes to a value that rounds to itself and encodes back; the NaN encodings and largest values', () => {
  const nans: Record<MiniFloat, number> = { f8e4m3fn: 2, f8e4m3fnuz: 1, f8e5m2: 6, f8e5m2fnuz: 1, f4e2m1: 0 };
  for (const kind of MINI_FLOAT_KINDS) {
    const f = MINI_FLOATS[kind];
    const all = encodings(kind);
    assert.is((1 << (1 + f.exp + f.man)) - all.length, nans[kind], `${kind}: NaN encodings`);
    const finite = all.filter((e) => Number.isFinite(e.v));
    assert.is(Math.max(...finite.map((e) => e.v)), f.max, `${kind}: max`);
    for (const { b, v } of all) {
      assert.ok(same(roundMiniFloat(kind, v, !Number.isFinite(v) ? false : true), v), `${kind}: ${b} (${v}) rounds to itself`);
      if (Number.isFinite(v)) assert.is(miniFloatBits(kind, v), b, `${kind}: ${v} encodes as ${b}`);
    }
  }
  assert.ok(Number.isNaN(miniFloatValue('f8e4m3fnuz', 0x80)));
  assert.is(miniFloatValue('f8e5m2', 0x7c), Infinity);
  assert.is(miniFloatValue('f4e2m1', 0x9), -0.5);
});

test('random float32s round to the nearest encodable value, ties to the even encoding', () => {
  let seed = 12345;
  const rand = (): number => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed / 2 ** 31; };
  for (const kind of MINI_FLOAT_KINDS) {
    const f = MINI_FLOATS[kind];
    const finite = encodings(kind).filter((e) => Number.isFinite(e.v));
    for (let k = 0; k < 3000; k++) {
      // Log-uniform magnitudes over the type's range and a bit past it, half of them negative;
      // every tenth one a midpoint between neighbours (an exact tie).
      const mag = 2 ** ((rand() * 2 - 1) * (f.bias + 3)) * (rand() * 2 > 1 ? 1 : 1.5);
      let x = Math.fround((rand() < 0.5 ? -1 : 1) * Math.min(mag, f.max * 1.2));
      if (k % 10 === 0) {
        const i = Math.floor(rand() * (finite.length - 1));
        const sorted = finite.map((e) => e.v).sort((a, b) => a - b);
        x = (sorted[i] + sorted[i + 1]) / 2;
      }
      const r = roundMiniFloat(kind, x, true);
      const clamped = Math.max(-f.max, Math.min(f.max, x));
      let best = Infinity;
      for (const e of finite) best = Math.min(best, Math.abs(e.v - clamped));
      const near = finite.filter((e) => Math.abs(e.v - clamped) === best);
      const want = near.length === 1 ? near[0] : near.find((e) => (e.b & 1) === 0)!;
      if (!(r === want.v)) assert.unreachable(`${kind}(${x}) = ${r}, the nearest (ties even) is ${want.v}`);
    }
  }
});

test.run();
