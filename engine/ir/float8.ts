// ONNX's 8-bit floats (FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ) and the
// 4-bit FLOAT4E2M1, which run as float32: the rounding of a number to the nearest value of
// each type, as ONNX's Cast defines it, and their 8-bit encodings. The IR's round_f8e4m3fn,
// ..., round_f4e2m1 intrinsics (nodes.ts) are these functions (their `_nosat` forms are
// Cast's saturate=0); the generated C does the same integer bit arithmetic (codegen/c.ts,
// miniFloatHelpers), and the reference evaluator calls these.
//
// A number is first rounded to float32 (the value a float32 kernel holds), then to nearest
// with ties to even at the type's precision (its subnormals included, below the smallest
// normal). Past the largest finite value (448, 240, 57344, 57344, 6) the result is, with
// saturate (Cast's default), that value with the sign, ±inf included; without it, E5M2
// gives ±inf and the others NaN (they have no inf). NaN stays NaN. The FNUZ types have no
// negative zero: a result of -0 is +0 (their 0x80 is the NaN). FLOAT4E2M1 has neither inf
// nor NaN and always saturates (ml_dtypes' astype, which onnx's reference Cast calls);
// a NaN becomes a zero of the opposite sign there (NaN -> -0, -NaN -> +0), and so here.

import type { MiniFloatFn } from './nodes';

export type MiniFloat = 'f8e4m3fn' | 'f8e4m3fnuz' | 'f8e5m2' | 'f8e5m2fnuz' | 'f4e2m1';

export interface MiniFloatFormat {
  /** Exponent and fraction (mantissa) bits. */
  readonly exp: number;
  readonly man: number;
  readonly bias: number;
  /** The largest finite value. */
  readonly max: number;
  /** The overflow without saturation: ±inf (E5M2) or NaN. */
  readonly inf: boolean;
  /** No negative zero; NaN is 0x80 (the FNUZ types). */
  readonly uz: boolean;
  /** Whether the type has a NaN encoding at all (not FLOAT4E2M1). */
  readonly nan: boolean;
}

export const MINI_FLOATS: Readonly<Record<MiniFloat, MiniFloatFormat>> = {
  f8e4m3fn: { exp: 4, man: 3, bias: 7, max: 448, inf: false, uz: false, nan: true },
  f8e4m3fnuz: { exp: 4, man: 3, bias: 8, max: 240, inf: false, uz: true, nan: true },
  f8e5m2: { exp: 5, man: 2, bias: 15, max: 57344, inf: true, uz: false, nan: true },
  f8e5m2fnuz: { exp: 5, man: 2, bias: 16, max: 57344, inf: false, uz: true, nan: true },
  f4e2m1: { exp: 2, man: 1, bias: 1, max: 6, inf: false, uz: false, nan: false },
};

export const MINI_FLOAT_KINDS = Object.keys(MINI_FLOATS) as MiniFloat[];

const word = new Float32Array(1);
const bits = new Uint32Array(word.buffer);

/** Round half to even of a double. */
function rne(v: number): number {
  const r = Math.round(v);
  return r - v === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** `x` rounded to the nearest value of `kind` (as a number), saturating past its range unless `saturate` is false. */
export function roundMiniFloat(kind: MiniFloat, x: number, saturate = true): number {
  const f = MINI_FLOATS[kind];
  const v = Math.fround(x);
  if (Number.isNaN(v)) {
    if (f.nan) return NaN;
    word[0] = x;
    return bits[0] >>> 31 ? 0 : -0;
  }
  const sign = v < 0 || Object.is(v, -0) ? -1 : 1;
  const a = Math.abs(v);
  let r: number;
  if (a === Infinity) {
    r = Infinity;
  } else {
    // The quantum at a's binade, never below the subnormals' (2^(1 - bias - man)); a / q is
    // exact (a power-of-two scaling), and so is the product.
    // a's binade from its float32 exponent (float32's subnormals lie far below every
    // type's smallest subnormal: their binade does not matter).
    word[0] = a;
    const q = 2 ** (Math.max(((bits[0] >>> 23) & 0xff) - 127, 1 - f.bias) - f.man);
    r = rne(a / q) * q;
  }
  if (r > f.max) {
    if (saturate || !f.nan) r = f.max;
    else return f.inf ? sign * Infinity : NaN;
  }
  if (r === 0 && f.uz) return 0;
  return sign * r;
}

/** The number an encoding (the low 8 bits, or 4 for FLOAT4E2M1) of `kind` holds. */
export function miniFloatValue(kind: MiniFloat, b: number): number {
  const f = MINI_FLOATS[kind];
  const width = 1 + f.exp + f.man;
  b &= (1 << width) - 1;
  const signBit = 1 << (width - 1);
  if (f.uz && b === signBit) return NaN;
  const sign = b & signBit ? -1 : 1;
  const exp = (b >> f.man) & ((1 << f.exp) - 1), frac = b & ((1 << f.man) - 1);
  const topExp = (1 << f.exp) - 1;
  if (f.inf && exp === topExp) return frac ? NaN : sign * Infinity;
  if (!f.inf && !f.uz && f.nan && exp === topExp && frac === (1 << f.man) - 1) return NaN; // E4M3FN's S.1111.111
  if (exp === 0) return sign * 2 ** (1 - f.bias) * (frac / 2 ** f.man);
  return sign * 2 ** (exp - f.bias) * (1 + frac / 2 ** f.man);
}

/** The encoding of `x` in `kind` (rounded as roundMiniFloat does). */
export function miniFloatBits(kind: MiniFloat, x: number, saturate = true): number {
  const f = MINI_FLOATS[kind];
  const width = 1 + f.exp + f.man;
  const r = roundMiniFloat(kind, x, saturate);
  const signBit = 1 << (width - 1);
  if (Number.isNaN(r)) {
    if (!f.nan) throw new Error(`miniFloatBits: ${kind} has no NaN`);
    return f.uz ? signBit : 0x7f;
  }
  const s = r < 0 || Object.is(r, -0) ? signBit : 0;
  const a = Math.abs(r);
  if (a === Infinity) return s | (((1 << f.exp) - 1) << f.man);
  const emin = 1 - f.bias, sub = 2 ** (emin - f.man);
  if (a < 2 ** emin) return s | Math.round(a / sub);
  const e = Math.floor(Math.log2(a));
  return s | ((e + f.bias) << f.man) | Math.round((a / 2 ** e - 1) * 2 ** f.man);
}

/** The rounding intrinsic (nodes.ts MiniFloatFn) of `kind`, saturating or not (FLOAT4E2M1 always saturates). */
export function miniFloatFn(kind: MiniFloat, saturate: boolean): MiniFloatFn {
  return (saturate || kind === 'f4e2m1' ? `round_${kind}` : `round_${kind}_nosat`) as MiniFloatFn;
}

/** Every MiniFloatFn with its type and saturation. */
export const MINI_FLOAT_FNS: readonly { fn: MiniFloatFn; kind: MiniFloat; saturate: boolean }[] = MINI_FLOAT_KINDS.flatMap((kind) => [
  { fn: miniFloatFn(kind, true), kind, saturate: true },
  ...(kind === 'f4e2m1' ? [] : [{ fn: miniFloatFn(kind, false), kind, saturate: false }]),
]);
