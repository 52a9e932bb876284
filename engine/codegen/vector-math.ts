// exp, erf, tanh and sigmoid on GCC vector-extension types, for the C prelude (c.ts): a
// vectorised loop calls tt_v<N>_exp and friends once per chunk of N lanes. A loop over the
// lanes calling libm (expf, erff) stays scalar, and one erff per element made the GELU
// epilogue of a transformer's dense layer cost as much as its multiply-adds. These are
// branch-free polynomials in plain vector arithmetic (no intrinsics), so they compile
// for every width and every target GCC vectorises for (x86 AVX2 and AVX-512, AArch64).
//
// Error bounds, float32 results against float64 libm over every 38th float32 of the ranges
// below (vector-math.test.ts checks them against the reference evaluator):
//  - exp: relative error at most 1.5e-7 (about 1.2 ulp) wherever the result is a normal
//    float (x in [-87.3, 88.7]); below that the result is subnormal, within 1.5e-45 (its
//    last bit), and 0 below -104; inf from 88.73 up. Cody-Waite range reduction
//    x = n ln2 + r, |r| <= ln2/2, Cephes' degree-7 polynomial for e^r, and 2^n built from
//    the exponent bits in two halves so that n down to -150 (subnormal results) and up to
//    128 (overflow to inf) stay exact.
//  - erf: absolute and relative error at most 4e-7 (the relative bound holds down to the
//    smallest normal x: erf(x) ~ 1.128 x keeps its digits near 0); x clamped to [-4, 4],
//    where erf rounds to +-1; odd/even rational approximation of degrees 13/8 (the one
//    Eigen and XLA use), the quotient taken before the multiplication by x.
//  - tanh: absolute and relative error at most 3e-7; tanh(x) = x below 4e-4, x clamped to
//    +-7.905 (tanh rounds to +-1 beyond); rational approximation of degrees 13/6 (Eigen's).
//  - sigmoid: 1 / (1 + exp(-x)) on the exp above: absolute error at most 1e-7, relative
//    at most 2e-7.
// NaN in, NaN out for every one (each clamp is tt_v<n>_min(c, x) or _max(c, x), which return x when x is NaN).

/** The C definitions of tt_v<n>_exp, _erf, _tanh, _sigmoid, given the prelude's tt_v<n>, tt_v<n>i and tt_v<n>_select. */
export function vectorMath(n: number): string {
  const t = `tt_v${n}`;
  const splat = (x: string): string => `${t}_splat(${x})`;
  return [
    `static inline ${t} ${t}_exp(${t} x) {`,
    // Clamp: min(c, x) is c < x ? c : x and max(c, x) is c > x ? c : x, so a NaN x passes through.
    `  x = ${t}_max(${splat('-104.0f')}, ${t}_min(${splat('89.0f')}, x));`,
    // n = round(x / ln2) by the 1.5 * 2^23 trick (round to nearest, no conversion).
    `  ${t} k = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;`,
    // r = x - n ln2 in two steps: 0.693359375 has 9 significant bits, so n times it is exact.
    `  ${t} r = x - k * 0.693359375f;`,
    `  r = r - k * -2.12194440e-4f;`,
    `  ${t} p = r * 1.9875691500e-4f + 1.3981999507e-3f;`,
    `  p = p * r + 8.3334519073e-3f;`,
    `  p = p * r + 4.1665795894e-2f;`,
    `  p = p * r + 1.6666665459e-1f;`,
    `  p = p * r + 5.0000001201e-1f;`,
    `  ${t} y = p * (r * r) + r + 1.0f;`,
    // 2^n as 2^(n>>1) * 2^(n - (n>>1)): each half's biased exponent stays in 52..192. A NaN
    // lane converts from 0 (its y is NaN already).
    `  ${t}i e = __builtin_convertvector(${t}_select(k == k, k, ${splat('0.0f')}), ${t}i);`,
    `  ${t}i e1 = e >> 1;`,
    `  return y * (${t})((e1 + 127) << 23) * (${t})((e - e1 + 127) << 23);`,
    `}`,
    `static inline ${t} ${t}_erf(${t} x) {`,
    `  x = ${t}_max(${splat('-4.0f')}, ${t}_min(${splat('4.0f')}, x));`,
    `  ${t} x2 = x * x;`,
    `  ${t} p = x2 * -2.72614225801306e-10f + 2.77068142495902e-08f;`,
    `  p = p * x2 + -2.10102402082508e-06f;`,
    `  p = p * x2 + -5.69250639462346e-05f;`,
    `  p = p * x2 + -7.34990630326855e-04f;`,
    `  p = p * x2 + -2.95459980854025e-03f;`,
    `  p = p * x2 + -1.60960333262415e-02f;`,
    `  ${t} q = x2 * -1.45660718464996e-05f + -2.13374055278905e-04f;`,
    `  q = q * x2 + -1.68282697438203e-03f;`,
    `  q = q * x2 + -7.37332916720468e-03f;`,
    `  q = q * x2 + -1.42647390514189e-02f;`,
    `  ${t} y = x * (p / q);`,
    // The rational function overshoots 1 by an ulp near the clamp.
    `  return ${t}_max(${splat('-1.0f')}, ${t}_min(${splat('1.0f')}, y));`,
    `}`,
    `static inline ${t} ${t}_tanh(${t} x) {`,
    `  ${t} a = (${t})((${t}i)x & 0x7fffffff);`,
    `  ${t} c = ${t}_max(${splat('-7.90531110763549805f')}, ${t}_min(${splat('7.90531110763549805f')}, x));`,
    `  ${t} x2 = c * c;`,
    `  ${t} p = x2 * -2.76076847742355e-16f + 2.00018790482477e-13f;`,
    `  p = p * x2 + -8.60467152213735e-11f;`,
    `  p = p * x2 + 5.12229709037114e-08f;`,
    `  p = p * x2 + 1.48572235717979e-05f;`,
    `  p = p * x2 + 6.37261928875436e-04f;`,
    `  p = p * x2 + 4.89352455891786e-03f;`,
    `  ${t} q = x2 * 1.19825839466702e-06f + 1.18534705686654e-04f;`,
    `  q = q * x2 + 2.26843463243900e-03f;`,
    `  q = q * x2 + 4.89352518554385e-03f;`,
    `  ${t} y = c * (p / q);`,
    `  y = ${t}_max(${splat('-1.0f')}, ${t}_min(${splat('1.0f')}, y));`,
    `  return ${t}_select(a < ${splat('0.0004f')}, x, y);`,
    `}`,
    `static inline ${t} ${t}_sigmoid(${t} x) { return 1.0f / (1.0f + ${t}_exp(-x)); }`,
  ].join('\n');
}

/** The math functions vectorMath defines (the prelude's lane-by-lane libm fallbacks skip them). */
export const VECTOR_MATH_FNS: ReadonlySet<string> = new Set(['exp', 'erf', 'tanh', 'sigmoid']);
