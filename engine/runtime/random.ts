// The deterministic input data of the native binaries (tt_fill_uniform in
// native/common/tt_common.c), reproduced bit for bit so that reference results can be
// computed here for the buffers tt_bench and tt_measure fill themselves.

/** The MurmurHash3 32-bit finalizer. */
export function mix32(x: number): number {
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

/** Uniform floats in [0, 1), a pure function of (seed, stream, index): buffer `stream`
 *  (input i of a model, argument i of a kernel) filled under `seed`. */
export function fillUniform(out: Float32Array, seed: number, stream: number): Float32Array {
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new RangeError(`seed must be a uint32, got ${seed}`);
  const key = mix32((seed ^ mix32((stream + 1) >>> 0)) >>> 0);
  for (let i = 0; i < out.length; i++) {
    const u = mix32((key + Math.imul(i, 0x9e3779b9)) >>> 0);
    out[i] = (u >>> 8) * 2 ** -24;
  }
  return out;
}

export function uniform(length: number, seed: number, stream: number): Float32Array {
  return fillUniform(new Float32Array(length), seed, stream);
}

/**
 * Input `stream` of a compiled model under `seed`, as tt_bench fills it when no file is
 * given: float32 inputs uniform in [0, 1); int32 and bool inputs (ids, masks) 0 or 1 from
 * the same stream (u >= 0.5), valid as an index into any axis of two or more and as a mask.
 */
export function modelInput(dtype: 'float32' | 'int32' | 'bool', length: number, seed: number, stream: number): Float32Array | Int32Array {
  const u = uniform(length, seed, stream);
  return dtype === 'float32' ? u : Int32Array.from(u, (x) => (x >= 0.5 ? 1 : 0));
}
