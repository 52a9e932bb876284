// Helpers of the compute tests (conv3d, conv-transpose, pool, reduce, normalization): seeded data, the
// reference evaluator on one output, and the element-wise closeness check of nn.test.ts
// (|got - want| <= tol * (|want| + 1), tol 1e-6 by default: the evaluator rounds each
// stored element to float32).

import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import type { Tensor } from '../ir/tensor';

/** Deterministic uniform values in [lo, hi), default [-1, 1) (mulberry32). */
export function random(n: number, seed: number, lo = -1, hi = 1): Float32Array {
  let s = seed >>> 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    out[i] = lo + (hi - lo) * (((t ^ (t >>> 14)) >>> 0) / 4294967296);
  }
  return out;
}

/** Evaluate the DAG of `out` on the given input data; `out`'s buffer. */
export function run(out: Tensor, inputs: [Tensor, Float32Array][]): Float32Array {
  return evaluate(new ComputeDAG([out]), new Map(inputs)).get(out.name) as Float32Array;
}

export function close(got: ArrayLike<number>, want: ArrayLike<number>, what: string, tol = 1e-6): void {
  assert.is(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= tol * (Math.abs(want[i]) + 1))) assert.unreachable(`${what}: element ${i} is ${got[i]}, expected ${want[i]}`);
  }
}
