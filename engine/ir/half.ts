// float16 and bfloat16 values, which run as float32: the rounding of a number to the nearest
// value of either type, and their 16-bit encodings. The IR's round_f16 / round_bf16
// intrinsics (nodes.ts) are these functions; the generated C does the same bit arithmetic
// (codegen/c.ts, narrowFloatHelpers), and the reference evaluator calls these.
//
// Rounding is IEEE's default, to nearest with ties to even, as numpy's astype(float16),
// ml_dtypes' bfloat16 and ONNX Runtime's Cast do. A number is first rounded to float32 (the
// value a float32 kernel holds), then to the narrow type. float16 (1 sign, 5 exponent, 10
// fraction bits) overflows to ±inf from 65520 on (halfway between its largest finite
// value, 65504, and 65536) and has subnormals down to 2^-24; bfloat16 is the top 16 bits of
// a float32 (8 exponent bits: float32's range, 7 fraction bits). NaN stays NaN (float16's
// encoding: the quiet NaN 0x7e00 with the sign); ±0 keep their sign.

const word = new Float32Array(1);
const bits = new Uint32Array(word.buffer);

/** The float32 bits of `x` rounded to float32. */
function float32Bits(x: number): number {
  word[0] = x;
  return bits[0];
}

function fromFloat32Bits(u: number): number {
  bits[0] = u >>> 0;
  return word[0];
}

/** The float16 encoding (16 bits) of `x`, rounded half to even. */
export function float16Bits(x: number): number {
  const u = float32Bits(x);
  const sign = (u >>> 16) & 0x8000;
  const a = u & 0x7fffffff;
  if (a > 0x7f800000) return sign | 0x7e00; // NaN
  if (a >= 0x477ff000) return sign | 0x7c00; // 65520 and up (and inf): inf
  if (a < 0x38800000) {
    // Below 2^-14, float16's subnormals: multiples of 2^-24. The significand m (24 bits with
    // the implicit one) is m * 2^(e - 150), that is (m >> (126 - e)) units of 2^-24 once
    // rounded; from a shift of 25 on (e < 102) the value is under half a unit: 0.
    const e = a >>> 23;
    if (e < 102) return sign;
    const s = 126 - e, m = (a & 0x7fffff) | 0x800000;
    const rem = m & ((1 << s) - 1), half = 1 << (s - 1);
    let q = m >>> s;
    if (rem > half || (rem === half && (q & 1) !== 0)) q++;
    return sign | q; // q = 0x400 (2^-14 itself) is the smallest normal's encoding
  }
  // Normal: drop 13 fraction bits, half to even (a carry into the exponent is right), rebias 127 -> 15.
  const r = a + 0xfff + ((a >>> 13) & 1);
  return sign | ((r - 0x38000000) >>> 13);
}

/** The number a float16 encoding holds. */
export function float16Value(h: number): number {
  const sign = h & 0x8000 ? -1 : 1, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
  if (exp === 0) return sign * 2 ** -14 * (frac / 1024);
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * 2 ** (exp - 15) * (1 + frac / 1024);
}

/** The bfloat16 encoding (16 bits) of `x`, rounded half to even. */
export function bfloat16Bits(x: number): number {
  const u = float32Bits(x);
  if ((u & 0x7fffffff) > 0x7f800000) return ((u >>> 16) & 0x8000) | 0x7fc0; // NaN
  // Adding 0x7fff (plus the kept part's last bit) then dropping 16 bits rounds half to even;
  // past the largest finite float32 the carry reaches the exponent's all-ones: inf.
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

/** The number a bfloat16 encoding holds. */
export const bfloat16Value = (b: number): number => fromFloat32Bits((b & 0xffff) << 16);

/** `x` rounded to the nearest float16 (as a number; NaN stays NaN). */
export const roundFloat16 = (x: number): number => (Number.isNaN(x) ? NaN : float16Value(float16Bits(x)));

/** `x` rounded to the nearest bfloat16 (as a number; NaN stays NaN). */
export const roundBfloat16 = (x: number): number => (Number.isNaN(x) ? NaN : bfloat16Value(bfloat16Bits(x)));
