// Mutations of an annotated state (reference §4.3): change one value of its genome and
// rebuild. TVM's CPU rule weights: tile size 0.90, auto-unroll 0.04, compute location
// 0.05, parallel granularity 0.01; we add the loop-order choice of non-tiled reductions.
// On GPUs TVM mutates tile sizes (0.90) and auto-unroll (0.10) only; thread counts and
// the cooperative fetch's vector width are tiles there too (annotate-gpu.ts), and a tile
// keeps within the device's limits (its spec's `fits`).

import type { ComputeDAG } from '../ir/dag';
import { buildState, GenomeSource, RandomSource, type Built, type ParamKind, type ParamValue, type TileFits } from './annotate';
import { divisors } from './factors';
import type { Rng } from './rng';
import type { Sketch } from './sketch';

export const MUTATION_WEIGHTS: Readonly<Record<ParamKind, number>> = {
  tile: 0.90, unroll: 0.04, location: 0.05, parallel: 0.01, order: 0.02, align: 0,
};

/**
 * TVM's GPU mutation rules (MutateTileSize 0.90, MutateAutoUnroll 0.10), and ours for the
 * padding of shared rows (annotate-gpu.ts; TVM has no such choice); GPU sketches make no other kinds.
 */
export const GPU_MUTATION_WEIGHTS: Readonly<Record<ParamKind, number>> = {
  tile: 0.90, unroll: 0.10, location: 0, parallel: 0, order: 0, align: 0.05,
};

/**
 * Move a divisor from one position of a factor list to another (the product stays the
 * extent, so the split stays exact); the innermost factor stays at most `maxInner`, and
 * the result is one `fits` accepts, if given. Null when no such move exists (all factors
 * 1, or a single part) or none was found in a few tries.
 */
export function mutateFactors(f: readonly number[], maxInner: number, rng: Rng, fits?: TileFits): number[] | null {
  const from = f.map((x, i) => (x > 1 ? i : -1)).filter((i) => i >= 0);
  if (from.length === 0 || f.length < 2) return null;
  for (let attempt = 0; attempt < 8; attempt++) {
    const src = rng.pick(from);
    let dst = rng.int(f.length - 1);
    if (dst >= src) dst++;
    const d = rng.pick(divisors(f[src]).slice(1));
    const out = [...f];
    out[src] /= d;
    out[dst] *= d;
    if (out[out.length - 1] <= maxInner && (!fits || fits(out))) return out;
  }
  return null;
}

/** One mutation of `parent`, rebuilt; null when it has nothing to mutate. Throws ScheduleError when the mutated values make an invalid state. */
export function mutate(dag: ComputeDAG, sketches: readonly Sketch[], parent: Built, rng: Rng): Built | null {
  const byKind = new Map<ParamKind, string[]>();
  for (const [key, spec] of parent.specs) {
    const usable = spec.kind === 'tile' ? spec.parts > 1 && spec.extent > 1 : spec.n > 1;
    if (!usable) continue;
    byKind.set(spec.kind, [...(byKind.get(spec.kind) ?? []), key]);
  }
  const kinds = [...byKind.keys()];
  if (kinds.length === 0) return null;
  const weights = sketches[parent.genome.sketch].gpu ? GPU_MUTATION_WEIGHTS : MUTATION_WEIGHTS;
  const kind = kinds[rng.weighted(kinds.map((k) => weights[k]))];
  const key = rng.pick(byKind.get(kind)!);
  const spec = parent.specs.get(key)!;
  const old = parent.genome.values.get(key)!;
  let value: ParamValue | null;
  if (spec.kind === 'tile') {
    value = mutateFactors(old as readonly number[], spec.maxInner, rng, spec.fits);
  } else {
    const v = rng.int(spec.n - 1);
    value = v >= (old as number) ? v + 1 : v;
  }
  if (value === null) return null;
  const values = new Map(parent.genome.values);
  values.set(key, value);
  return buildState(dag, sketches, parent.genome.sketch, new GenomeSource(values, new RandomSource(rng)));
}
