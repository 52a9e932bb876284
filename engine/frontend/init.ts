// Deterministic parameter initialisation for the builtin networks, following TVM's
// `relay.testing.init` rules (Xavier for weights, constants for biases and batch-norm
// statistics).
//
// TVM draws every parameter from numpy's global Mersenne-Twister stream after
// `np.random.seed(0)`, in the order of the function's free variables. We do not (and
// cannot cheaply) reproduce that stream, so our numbers differ from TVM's; only the
// distributions match. Instead each parameter gets its own stream of a small seeded PRNG
// (mulberry32, a 32-bit counter-based generator), seeded from a hash of the network seed
// and the parameter's name. A parameter's values therefore depend only on (seed, name,
// canonical shape): the NHWC and NCHW versions of a network hold the same numbers, and
// adding a layer does not reshuffle the others.

import { numElements } from '../ir/tensor';

/** FNV-1a hash of a string, 32 bits. */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The PRNG state for parameter `name` of a network built with `seed`. */
export const streamSeed = (seed: number, name: string): number => hashString(`${seed >>> 0}:${name}`);

/**
 * Fill `out` with uniform numbers in [lo, hi) from a mulberry32 stream started at
 * `state`. Inlined (no closure) because the large networks draw ~10^8 numbers.
 */
export function fillUniform(out: Float32Array, state: number, lo: number, hi: number): Float32Array {
  let a = state | 0;
  const scale = (hi - lo) / 4294967296;
  for (let i = 0; i < out.length; i++) {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    out[i] = lo + ((t ^ (t >>> 14)) >>> 0) * scale;
  }
  return out;
}

/**
 * TVM's Xavier bound (uniform, factor_type "avg", magnitude 3) for a weight of `shape` in
 * TVM's canonical layout (OIHW for convs, [C, multiplier, kh, kw] for depthwise convs,
 * [units, in] for dense): fan_in = shape[1]*prod(shape[2:]), fan_out = shape[0]*prod(shape[2:]),
 * factor = (fan_in + fan_out)/2, or prod(shape[2:]) when the name contains "depthwise";
 * bound = sqrt(3/factor).
 */
export function xavierBound(name: string, shape: readonly number[], depthwise = name.includes('depthwise')): number {
  if (shape.length < 2) throw new Error(`xavier: ${name} has shape [${shape.join(', ')}], needs at least 2 dims`);
  const hw = numElements(shape.slice(2));
  const fanIn = shape[1] * hw, fanOut = shape[0] * hw;
  const factor = depthwise ? hw : (fanIn + fanOut) / 2;
  return Math.sqrt(3 / factor);
}

/** Xavier-uniform weight of canonical `shape`, drawn from the stream of (seed, name). */
export function xavierWeight(seed: number, name: string, shape: readonly number[], depthwise?: boolean): Float32Array {
  const b = xavierBound(name, shape, depthwise);
  return fillUniform(new Float32Array(numElements(shape)), streamSeed(seed, name), -b, b);
}
