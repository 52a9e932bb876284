// The options of a task's default schedule (defaults.ts), in a module of their own so the
// per-kind default schedules (defaults-winograd.ts, defaults-gpu.ts) take them without
// importing the dispatcher that calls them.

import type { DefaultGpuLimits } from './defaults-gpu';

export interface DefaultOptions {
  /** float32 lanes of the target's vector unit: 16 for AVX-512, 8 for AVX2/NEON. */
  vectorLanes: number;
  /** Parallelise only loops with at least this much work: output elements (times the multiply-adds per output, for a tiled reduction). */
  minParallelElements?: number;
  /** A GPU target's limits (target.ts `gpu`): the first-generation GPU schedule (defaults-gpu.ts) instead. */
  gpu?: DefaultGpuLimits;
  /**
   * The register tile of a CPU tiled reduction (`vec` channels of its vector loop, `rows` of
   * its block axis), each in place of the one the shape chooses: for tile studies
   * (bench/register-tiles.ts). A tile that no longer suits the task is the study's finding,
   * not an error: each candidate is verified as any other.
   */
  registerTile?: { vec?: number; rows?: number };
}

/** The default options of a target: its vector width and, for a GPU target, its limits. */
export function defaultOptionsOf(target: { readonly vectorLanes: number; readonly gpu?: DefaultGpuLimits }): DefaultOptions {
  return target.gpu ? { vectorLanes: target.vectorLanes, gpu: target.gpu } : { vectorLanes: target.vectorLanes };
}
