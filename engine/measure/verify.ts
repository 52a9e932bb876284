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
//
// int32 and bool inputs are not random words (a random index would only test the clamp):
// they are small integers drawn from the same stream, measureInput below, which the measurer
// writes to a file for the worker. Integer outputs must match exactly.

import type { ComputeDAG } from '../ir/dag';
import { unpackBlocked, type BlockedLayout } from '../codegen/layout';
import { evaluate } from '../ir/evaluate';
import { asFloatWords, numElements, type Tensor, type TensorData } from '../ir/tensor';
import { uniform } from '../runtime/random';
import { isWinogradDag } from '../topi/winograd';

export interface Tolerance {
  rtol: number;
  /** Relative to the largest |reference| of the output. */
  atol: number;
}

export const DEFAULT_TOLERANCE: Tolerance = { rtol: 1e-4, atol: 1e-5 };

/**
 * Winograd tasks (engine/topi/winograd.ts). The transforms multiply by constants up to 5
 * (B^T) and 8 (A^T) and sum up to 36 terms of both signs, so float32 rounding of the
 * transformed tiles reaches the output amplified, and an element can be much smaller than
 * the terms it cancels from; the error is bounded relative to the largest output (atol),
 * which is how DEFAULT_TOLERANCE already bounds it. Measured (bench/winograd-error.ts, the
 * 3x3 stride-1 layers of resnet-18/50 with the builtin's weights, inputs in [0, 1) and
 * [-1, 1)): max |winograd - direct| / max |direct| is 1.1e-7 for F(2x2, 3x3) and 1.5e-6 for
 * F(4x4, 3x3); a float32 Winograd kernel against its DAG's reference (what the measurer
 * checks) stays under 4e-7. Both are within atol 1e-5 with a margin of 6x or more, so
 * Winograd needs no looser bound than the direct conv: this is the default, stated apart
 * so that the bound of Winograd tasks is one named, tested value.
 */
export const WINOGRAD_TOLERANCE: Tolerance = { ...DEFAULT_TOLERANCE };

/** The tolerance a task's output is checked with: WINOGRAD_TOLERANCE for a Winograd conv, else DEFAULT_TOLERANCE. */
export function toleranceFor(dag: ComputeDAG): Tolerance {
  return isWinogradDag(dag) ? WINOGRAD_TOLERANCE : DEFAULT_TOLERANCE;
}

export interface Reference {
  seed: number;
  /** Expected contents of each output buffer. */
  outputs: TensorData[];
}

/** Integers of an int32 input: -8..8, so that indices, offsets and signs all occur. */
const INT_INPUT_SPAN = 17;

/**
 * Input `stream` of a kernel under `seed`: float32 inputs are uniform(n, seed, stream) (the
 * worker fills them itself); int32 inputs are floor(u * 17) - 8 and bool inputs u >= 0.5 of
 * the same stream (the measurer hands these to the worker as files).
 */
export function measureInput(t: Pick<Tensor, 'shape' | 'dtype'>, seed: number, stream: number): TensorData {
  const u = uniform(numElements(t.shape), seed, stream);
  if (t.dtype === 'float32') return u;
  return t.dtype === 'bool' ? Int32Array.from(u, (x) => (x >= 0.5 ? 1 : 0)) : Int32Array.from(u, (x) => Math.floor(x * INT_INPUT_SPAN) - 8);
}

/**
 * The outputs the inputs the worker generates for `dag` under `seed` must give. An input
 * the kernel reads in a blocked layout (`layouts`) holds the same random buffer, which
 * then means the row-major tensor it unpacks to.
 */
export function computeReference(dag: ComputeDAG, seed: number, layouts: readonly BlockedLayout[] = []): Reference {
  const inputs = dag.inputs.map((t, i): TensorData => {
    const data = measureInput(t, seed, i);
    const l = layouts.find((x) => x.input === i);
    return l && data instanceof Float32Array ? unpackBlocked(data, t.shape, l.axis, l.block) : data;
  });
  const result = evaluate(dag, new Map<Tensor, TensorData>(dag.inputs.map((t, i) => [t, inputs[i]])));
  const outputs = dag.outputs.map((t) => result.get(t.name)!);
  return { seed, outputs };
}

/** The references of one seed, computed once per task and blocked layout (the measurers keep one). */
export class ReferenceCache {
  private readonly refs = new Map<string, Reference>();

  constructor(private readonly seed: number) {}

  get(dag: ComputeDAG, layouts: readonly BlockedLayout[] = []): Reference {
    const key = `${dag.workloadKey} ${JSON.stringify(layouts)}`;
    let ref = this.refs.get(key);
    if (!ref) {
      ref = computeReference(dag, this.seed, layouts);
      this.refs.set(key, ref);
    }
    return ref;
  }
}

export type Comparison = { ok: true } | { ok: false; message: string };

function compareExact(got: Int32Array, ref: Int32Array): Comparison {
  let bad = 0, first = -1;
  for (let i = 0; i < ref.length; i++) if (got[i] !== ref[i]) { bad++; if (first < 0) first = i; }
  if (bad === 0) return { ok: true };
  return { ok: false, message: `${bad} of ${ref.length} integer elements differ; first at index ${first}: got ${got[first]}, expected ${ref[first]} (integers must match exactly)` };
}

/** The 4-byte words of an input as the worker reads them from a file. */
export const inputWords = asFloatWords;

/**
 * Compares one output buffer with its reference: float32 within `tol`, int32 and bool
 * (an Int32Array reference; `got` holds the same 4-byte words) exactly.
 */
export function compareOutput(got: Float32Array, ref: TensorData, tol: Tolerance = DEFAULT_TOLERANCE): Comparison {
  if (got.length !== ref.length) return { ok: false, message: `output has ${got.length} elements, expected ${ref.length}` };
  if (ref instanceof Int32Array) return compareExact(new Int32Array(got.buffer, got.byteOffset, got.length), ref);
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
