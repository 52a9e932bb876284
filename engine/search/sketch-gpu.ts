// Sketch generation for GPU targets (TVM's GPU rule list: apache/tvm v0.19
// src/auto_scheduler/search_policy/sketch_policy.cc, the SketchPolicy constructor, and
// sketch_policy_rules.cc). Stages are visited from the output to the inputs as on CPU
// (sketch.ts); annotate-gpu.ts turns a sketch into steps.
//
// Rules, a table in the order of TVM's GPU sketch_rules (GPU_SKETCH_RULES; TVM's cache-read
// rule is the `shared` list of the tiling rules' plans):
//  - always inline: every stage without a reduction that is not an output (on GPUs TVM
//    inlines them all, not only the strictly inlineable ones): one launch fewer each;
//  - cross-thread reduction, for reductions with little spatial work (a tiled reduction
//    with fewer outputs than reduce iterations, e.g. dense with batch 1; any other
//    reduction longer than a warp: softmax, pooling to 1x1): the inner part of the fused
//    reduction is bound to threadIdx.x, the fused spatial loops to blockIdx.x, and the
//    lowering (lower.ts) combines the threads' partial results in shared memory. TVM also
//    computes a fusible consumer (a divide after a sum) at the reduction; here that
//    consumer is a launch of its own (or inlined, when it is not an output). The plain
//    per-thread reduction sketch (below) is kept beside it, as TVM keeps the others;
//  - cache write + multi-level tiling SSSRRSRS for reductions with data reuse (conv,
//    depthwise, dense, batch matmul), fused into the single element-wise consumer when
//    there is one (TVM's level 3: the consumer takes blockIdx / vthread / threadIdx and
//    holds the reduction at its thread loop), else through `<stage>.local`;
//  - cache read (shared): each direct producer of a tiled stage that nothing else reads is
//    copied into shared memory at the outer reduce loop (cooperative fetching);
//  - everything else: fuse all spatial loops, split by a thread count, bind.
//
// `opencl -device=mali` (TVM's Mali branch of the same constructor): the CPU rule list on
// the GPU tiling structure (MALI_SKETCH_RULES): always inline, rfactor (both variants, for every reduction that
// is not tiled: TVM's Mali parameters have num_cores = -1, so NeedsRfactor always holds),
// cache write, multi-level tiling with fusion; no shared memory, no cross-thread reduction.
// Its initial population adds TVM's InitVectorization (innermost loops vectorised).

import type { ComputeDAG } from '../ir/dag';
import type { GpuParams } from '../target';
import { StageAnalysis } from './analysis';
import { applyRules, enumerateSketches, type GpuSpace, type Sketch, type SketchRule } from './sketch';

export interface GpuSketchOptions {
  /** The device's limits (target.ts GpuParams). */
  gpu: GpuParams;
  /** `opencl -device=mali`. */
  mali?: boolean;
}

/** On GPUs every compute stage that is not an output and has no reduction is inlined (TVM's RuleAlwaysInline). */
export function inlinedOnGpu(an: StageAnalysis, name: string): boolean {
  return an.dag.computeStages.some((t) => t.name === name) && !an.isOutput(name) && !an.hasReduce(name);
}

/** TVM's RuleCrossThreadReduction condition (not on Mali); never for an ordered reduction, which the threads' tree would reassociate. */
export function needsCrossThreadReduction(an: StageAnalysis, name: string, warpSize: number): boolean {
  if (!an.hasReduce(name) || an.hasOrderedReduce(name)) return false;
  const space = an.spaceLength(name), reduce = an.reduceLength(name);
  return an.needsMultiLevelTiling(name) ? space < reduce : reduce > warpSize;
}

/**
 * The tensors a tiled stage reads through shared memory: its direct producers (inputs or
 * stages) whose only reader, looking through inlined stages, is the tiled stage (TVM's
 * RuleAddCacheRead: one consumer, a direct producer).
 */
export function sharedInputs(an: StageAnalysis, name: string): string[] {
  const inlined = (s: string): boolean => inlinedOnGpu(an, s);
  return an.producers(name).filter((p) => {
    const readers = an.effectiveConsumers(p, inlined);
    return readers.length === 1 && readers[0] === name;
  });
}

interface GpuRuleContext { readonly an: StageAnalysis; readonly gpu: GpuSpace }

const inlinedIn = ({ an }: GpuRuleContext) => (s: string): boolean => inlinedOnGpu(an, s);

const ALWAYS_INLINE: SketchRule<GpuRuleContext> = {
  name: 'always-inline',
  applies: (c, x) => (inlinedIn(c)(x) ? 'apply-and-skip-rest' : 'pass'),
  apply: (_c, _x, withPlan) => [withPlan({ k: 'inline' })],
};

/** Mali: both rfactor variants for a reduction that is not tiled (TVM's Mali num_cores = -1: NeedsRfactor always holds) nor ordered (rfactor reassociates it). */
const ADD_RFACTOR: SketchRule<GpuRuleContext> = {
  name: 'add-rfactor',
  applies: ({ an }, x) => (an.hasReduce(x) && !an.hasOrderedReduce(x) && !an.needsMultiLevelTiling(x) && an.reduceLength(x) > 1 ? 'apply' : 'pass'),
  apply: (_c, _x, withPlan) => [withPlan({ k: 'gpu-rfactor', inner: true }), withPlan({ k: 'gpu-rfactor', inner: false })],
};

const CROSS_THREAD_REDUCTION: SketchRule<GpuRuleContext> = {
  name: 'cross-thread-reduction',
  applies: ({ an, gpu }, x) => (needsCrossThreadReduction(an, x, gpu.params.warpSize) ? 'apply' : 'pass'),
  apply: (_c, _x, withPlan) => [withPlan({ k: 'gpu-cross-thread' })],
};

/** The tensors a tiled stage reads through shared memory (none on Mali, nor for a stage without a reduction). */
const sharedOf = ({ an, gpu }: GpuRuleContext, x: string): string[] => (gpu.mali || !an.hasReduce(x) ? [] : sharedInputs(an, x));

const ADD_CACHE_WRITE: SketchRule<GpuRuleContext> = {
  name: 'add-cache-write',
  applies: (c, x) => (c.an.needsMultiLevelTiling(x) && c.an.fusibleConsumer(x, inlinedIn(c)) === undefined ? 'apply' : 'pass'),
  apply: (c, x, withPlan) => [withPlan({ k: 'gpu-tile', cacheWrite: true, shared: sharedOf(c, x) })],
};

const MULTI_LEVEL_TILING_WITH_FUSION: SketchRule<GpuRuleContext> = {
  name: 'multi-level-tiling-with-fusion',
  applies: (c, x) => (c.an.needsMultiLevelTiling(x) && c.an.fusibleConsumer(x, inlinedIn(c)) !== undefined ? 'apply' : 'pass'),
  apply: (c, x, withPlan) => {
    const consumer = c.an.fusibleConsumer(x, inlinedIn(c))!;
    return [withPlan({ k: 'gpu-tile', consumer, cacheWrite: false, shared: sharedOf(c, x) }, [[consumer, { k: 'fused-consumer', producer: x }]])];
  },
};

const SKIP_STAGE: SketchRule<GpuRuleContext> = {
  name: 'skip-stage',
  applies: ({ an }, x) => (an.needsMultiLevelTiling(x) ? 'pass' : 'apply'),
  apply: (_c, _x, withPlan) => [withPlan({ k: 'gpu-simple' })],
};

/** The GPU sketch rules, in the order of TVM's GPU sketch_rules. */
export const GPU_SKETCH_RULES: readonly SketchRule<GpuRuleContext>[] = [ALWAYS_INLINE, CROSS_THREAD_REDUCTION, ADD_CACHE_WRITE, MULTI_LEVEL_TILING_WITH_FUSION, SKIP_STAGE];

/** `opencl -device=mali`: the rules of TVM's Mali branch, in its order. */
export const MALI_SKETCH_RULES: readonly SketchRule<GpuRuleContext>[] = [ALWAYS_INLINE, ADD_RFACTOR, ADD_CACHE_WRITE, MULTI_LEVEL_TILING_WITH_FUSION, SKIP_STAGE];

export function generateGpuSketches(dag: ComputeDAG, opts: GpuSketchOptions): Sketch[] {
  const gpu: GpuSpace = { params: opts.gpu, mali: opts.mali ?? false };
  return enumerateSketches(dag, applyRules(gpu.mali ? MALI_SKETCH_RULES : GPU_SKETCH_RULES, { an: new StageAnalysis(dag), gpu }), gpu);
}
