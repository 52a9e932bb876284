// Verification of measured candidates. A task's reference output is computed once with
// the reference evaluator (engine/ir/evaluate.ts) on exactly the inputs the worker feeds
// the kernel: buffer i (the DAG's inputs in order) is uniform(size, seed, stream = i) from
// engine/runtime/random.ts. A candidate's output must then agree element by element:
//
//   |got - ref| <= rtol * |ref| + atol * max|ref|      (defaults rtol 1e-4, atol 1e-5)
//
// Why these numbers: the inputs are uniform in [0, 1), so sums do not cancel, and a float32
// kernel that sums K terms in another order than the float64 reference is off by about
// sqrt(K) * 6e-8 relative (4e-6 for K = 4608, a 3x3x512 conv); rtol 1e-4 leaves a wide
// margin while any real indexing mistake is off by far more. The atol term covers
// elements near zero. NaN in the output (the worker fills outputs with NaN before the
// runs, so an element the kernel never wrote stays NaN) is a mismatch unless the reference
// is NaN there too.

import type { ComputeDAG } from '../ir/dag';
import { unpackBlocked, type BlockedLayout } from '../codegen/layout';
import { evaluate } from '../ir/evaluate';
import { numElements, type Tensor } from '../ir/tensor';
import { uniform } from '../runtime/random';

export interface Tolerance {
  rtol: number;
  /** Relative to the largest |reference| of the output. */
  atol: number;
}

export const DEFAULT_TOLERANCE: Tolerance = { rtol: 1e-4, atol: 1e-5 };

export interface Reference {
  seed: number;
  /** Expected contents of each output buffer. */
  outputs: Float32Array[];
}

/**
 * The outputs the inputs the worker generates for `dag` under `seed` must give. An input
 * the kernel reads in a blocked layout (`layouts`) holds the same random buffer, which
 * then means the row-major tensor it unpacks to.
 */
export function computeReference(dag: ComputeDAG, seed: number, layouts: readonly BlockedLayout[] = []): Reference {
  const inputs = dag.inputs.map((t, i) => {
    const data = uniform(numElements(t.shape), seed, i);
    const l = layouts.find((x) => x.input === i);
    return l ? unpackBlocked(data, t.shape, l.axis, l.block) : data;
  });
  const result = evaluate(dag, new Map<Tensor, Float32Array>(dag.inputs.map((t, i) => [t, inputs[i]])));
  const outputs = dag.outputs.map((t) => result.get(t.name)!);
  return { seed, outputs };
}

export type Comparison = { ok: true } | { ok: false; message: string };

/** Compares one output buffer with its reference. */
export function compareOutput(got: Float32Array, ref: Float32Array, tol: Tolerance = DEFAULT_TOLERANCE): Comparison {
  if (got.length !== ref.length) return { ok: false, message: `output has ${got.length} elements, expected ${ref.length}` };
  let peak = 0;
  for (const x of ref) if (Number.isFinite(x)) peak = Math.max(peak, Math.abs(x));
  const atol = tol.atol * peak;
  let bad = 0, worst = -1, worstErr = -1;
  for (let i = 0; i < ref.length; i++) {
    const g = got[i], r = ref[i];
    let err: number;
    if (Number.isNaN(r) || Number.isNaN(g)) err = Number.isNaN(r) && Number.isNaN(g) ? 0 : Infinity;
    else if (!Number.isFinite(r) || !Number.isFinite(g)) err = g === r ? 0 : Infinity;
    else err = Math.abs(g - r) - tol.rtol * Math.abs(r);
    if (err > atol) {
      bad++;
      if (err > worstErr) { worstErr = err; worst = i; }
    }
  }
  if (bad === 0) return { ok: true };
  return {
    ok: false,
    message: `${bad} of ${ref.length} elements differ; worst at index ${worst}: got ${got[worst]}, expected ${ref[worst]} ` +
      `(tolerance |got - ref| <= ${tol.rtol} * |ref| + ${atol.toPrecision(3)})`,
  };
}
