// Sample values for the float16 / bfloat16 rounding tests (half.test.ts, and the generated
// C's in codegen/narrow-float.test.ts): every finite value of each type, each midpoint
// between neighbours and the float32 values just below and above it (where rounding
// decides), the float32 edges (subnormals, the largest finite, ±0, ±inf, NaN) and seeded
// random float32 bit patterns.

import { bfloat16Value, float16Value } from './half';

const word = new Float32Array(1);
const bits = new Uint32Array(word.buffer);
const fromBits = (u: number): number => { bits[0] = u >>> 0; return word[0]; };
const toBits = (x: number): number => { word[0] = x; return bits[0]; };

/** The samples as float32 values (a Float32Array: each is exactly representable). */
export function narrowFloatSamples(randomCount = 100_000): Float32Array {
  const out: number[] = [0, -0, Infinity, -Infinity, NaN, 3.4028234663852886e38, -3.4028234663852886e38, 2 ** -149, -(2 ** -149), 2 ** -126, 2 ** -126 - 2 ** -149];
  const around = (m: number): void => {
    const u = toBits(Math.fround(m));
    if (Math.fround(m) !== m) { out.push(Math.fround(m)); return; }
    out.push(m, fromBits(u - 1), fromBits(u + 1));
  };
  for (const value of [float16Value, bfloat16Value]) {
    for (let h = 0; h < 0x8000; h++) {
      const a = value(h), b = value(h + 1);
      if (!Number.isFinite(a)) continue;
      for (const s of [1, -1]) {
        out.push(s * a);
        if (Number.isFinite(b)) around((s * (a + b)) / 2);
      }
    }
  }
  // float16's overflow edge (65520: halfway to 65536) and bfloat16's (past the largest float32).
  around(65520);
  around(-65520);
  let s = 0x9e3779b9;
  for (let i = 0; i < randomCount; i++) {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    out.push(fromBits(s));
  }
  return Float32Array.from(out);
}
