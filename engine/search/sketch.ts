// Sketch generation (TVM's derivation rules for CPU, reference §3.2): walk the stages from
// the output to the inputs and decide each one's structure, branching where a rule keeps
// several variants. A sketch fixes structure only (what is inlined, tiled, fused, cached,
// rfactored); annotate.ts turns it into concrete steps by choosing tile sizes and pragmas.
//
// The rules are a table (CPU_SKETCH_RULES), in the order of TVM's CPU sketch_rules
// (apache/tvm src/auto_scheduler/search_policy/sketch_policy.cc): always-inline (strictly
// inlineable elementwise stages), simplify-compute-with-const-tensor (a Winograd
// transform: its constant-indexed axes unrolled), rfactor (reductions with little spatial
// work; two variants), cache-write (a tiled reduction with no fusible consumer),
// multi-level tiling with fusion of the elementwise consumer at tile level 1 or 2, plain
// multi-level tiling ("SSRSRS"), and skip-stage (no tiling) for everything else.

import type { ComputeDAG } from '../ir/dag';
import type { GpuParams } from '../target';
import { CONST_INDEXED_TAGS } from '../topi/winograd';
import { StageAnalysis } from './analysis';

export type Plan =
  /** compute_inline. */
  | { k: 'inline' }
  /**
   * Multi-level tiling. `level` 0: the stage is tiled SSRSRS at root. 1 or 2: the consumer
   * (`consumer`, or the stage itself after `cacheWrite` with the reduction in `<stage>.local`)
   * takes the outer `level` spatial tile levels and the reduction is computed inside them.
   */
  | { k: 'tile'; level: 0 | 1 | 2; consumer?: string; cacheWrite: boolean }
  /** Loops are laid out by the tiled producer `producer` fused into it. */
  | { k: 'fused-consumer'; producer: string }
  /** Fuse the reduce loops, split them, and rfactor the inner (vectorisable) or the outer (parallel) part. */
  | { k: 'rfactor'; inner: boolean }
  /** No tiling: compute location, parallel outer loops, a vectorised inner loop, unroll. */
  | { k: 'simple' }
  /**
   * A stage whose first two axes index constant matrices (a Winograd transform,
   * CONST_INDEXED_TAGS; TVM's RuleSimplifyComputeWithConstTensor): those axes unrolled
   * inside the other loops, so the selects on them fold (annotate.ts constIndexed).
   */
  | { k: 'const-tensor' }
  /**
   * GPU multi-level tiling SSSRRSRS (sketch-gpu.ts): the bound stage (`consumer`, or the stage
   * itself after `cacheWrite` with the reduction in `<stage>.local`) takes the three outer
   * spatial levels (blockIdx.x, vthread, threadIdx.x) and holds the tiled reduction at its
   * thread loop; each tensor of `shared` is copied into shared memory at the outer reduce
   * loop, fetched cooperatively by the block's threads.
   */
  | { k: 'gpu-tile'; consumer?: string; cacheWrite: boolean; shared: readonly string[] }
  /**
   * GPU: the fused reduction is split and one part (the inner one, or with `inner` false the
   * outer one) becomes a spatial axis of `<stage>.rf`: two launches, each fused and bound.
   */
  | { k: 'gpu-rfactor'; inner: boolean }
  /**
   * GPU: a cross-thread reduction: the fused reduction is split and its inner part bound to
   * threadIdx.x (the block's threads combine their partial results in shared memory), the
   * fused spatial loops bound to blockIdx.x: one block per output element.
   */
  | { k: 'gpu-cross-thread' }
  /** GPU: all spatial loops fused, split by a thread count and bound to blockIdx.x / threadIdx.x; a reduction runs inside each thread. */
  | { k: 'gpu-simple' };

/** The GPU a sketch's plans are for (GPU sketches only): its limits and whether it is a Mali. */
export interface GpuSpace {
  readonly params: GpuParams;
  /** `opencl -device=mali`: TVM's Mali rules (no shared memory, rfactor, innermost vectorisation). */
  readonly mali: boolean;
}

export interface Sketch {
  /** e.g. `conv2d_nhwc:tile2>T_relu pad_temp:simple`, for logs and tests. */
  readonly name: string;
  /** Plan of every compute stage of the DAG, by stage name. */
  readonly plans: ReadonlyMap<string, Plan>;
  /** Set for GPU sketches (sketch-gpu.ts): annotate.ts builds them with the GPU builder (annotate-gpu.ts). */
  readonly gpu?: GpuSpace;
}

export interface SketchOptions {
  /** Cores of the target (TVM's hardware_params.num_cores): rfactor and parallel granularity depend on it. */
  numCores: number;
}

function planName(p: Plan): string {
  switch (p.k) {
    case 'inline': return 'inline';
    case 'tile': return `tile${p.level}${p.cacheWrite ? '+cache' : ''}${p.consumer ? `>${p.consumer}` : ''}`;
    case 'fused-consumer': return `fused<${p.producer}`;
    case 'rfactor': return `rfactor-${p.inner ? 'inner' : 'outer'}`;
    case 'simple': return 'simple';
    case 'const-tensor': return 'const-tensor';
    case 'gpu-tile': return `gpu-tile${p.cacheWrite ? '+cache' : ''}${p.shared.length ? '+shared' : ''}${p.consumer ? `>${p.consumer}` : ''}`;
    case 'gpu-rfactor': return `gpu-rfactor-${p.inner ? 'inner' : 'outer'}`;
    case 'gpu-cross-thread': return 'gpu-cross-thread';
    case 'gpu-simple': return 'gpu-simple';
  }
}

/** A partial sketch with `plan` for the stage being visited, and `extra` plans it fixes for other stages (a fused consumer). */
export type WithPlan = (plan: Plan, extra?: [string, Plan][]) => Map<string, Plan>;

/**
 * The sketches of `dag`: its compute stages are visited from the output to the inputs, and
 * each partial sketch with no plan yet for stage `x` becomes the alternatives `rules` gives
 * it (each made with `withPlan`). `gpu` marks GPU sketches.
 */
export function enumerateSketches(
  dag: ComputeDAG,
  rules: (x: string, plans: ReadonlyMap<string, Plan>, withPlan: WithPlan) => Map<string, Plan>[],
  gpu?: GpuSpace,
): Sketch[] {
  const names = dag.computeStages.map((t) => t.name);
  let partials: Map<string, Plan>[] = [new Map()];
  for (let i = names.length - 1; i >= 0; i--) {
    const x = names[i];
    partials = partials.flatMap((plans) => (plans.has(x) ? [plans] : rules(x, plans, (p, extra = []) => new Map([...plans, [x, p], ...extra]))));
  }
  return partials.map((plans) => ({
    name: names.filter((n) => plans.get(n)!.k !== 'inline').map((n) => `${n}:${planName(plans.get(n)!)}`).join(' '),
    plans,
    ...(gpu ? { gpu } : {}),
  }));
}

/** Whether a rule applies to a stage: no; yes; yes, and the later rules are not tried (TVM's kPass, kApply, kApplyAndSkipRest). */
export type RuleCondition = 'pass' | 'apply' | 'apply-and-skip-rest';

/**
 * One sketch derivation rule (TVM's SketchGenerationRule): whether it applies to stage `x`
 * of a partial sketch (`plans`: the plans fixed so far), and the partial sketches it makes
 * of it, each with `withPlan`. `C` is what the rules of one table share (the stage analysis,
 * the target's parameters).
 */
export interface SketchRule<C> {
  readonly name: string;
  applies(c: C, x: string, plans: ReadonlyMap<string, Plan>): RuleCondition;
  apply(c: C, x: string, withPlan: WithPlan, plans: ReadonlyMap<string, Plan>): Map<string, Plan>[];
}

/** The alternatives a rule table makes of a stage: those of every rule that applies, in order, up to one that skips the rest. */
export function applyRules<C>(rules: readonly SketchRule<C>[], c: C): Parameters<typeof enumerateSketches>[1] {
  return (x, plans, withPlan) => {
    const next: Map<string, Plan>[] = [];
    for (const rule of rules) {
      const condition = rule.applies(c, x, plans);
      if (condition === 'pass') continue;
      next.push(...rule.apply(c, x, withPlan, plans));
      if (condition === 'apply-and-skip-rest') break;
    }
    return next;
  };
}

interface CpuRuleContext { readonly an: StageAnalysis; readonly numCores: number }

const tiled = (c: CpuRuleContext, x: string): boolean => c.an.hasReduce(x) && c.an.needsMultiLevelTiling(x);
const fusibleConsumer = (c: CpuRuleContext, x: string, plans: ReadonlyMap<string, Plan>): string | undefined =>
  c.an.fusibleConsumer(x, (s) => plans.get(s)?.k === 'inline');

/** The CPU sketch rules, in the order of TVM's CPU sketch_rules. */
export const CPU_SKETCH_RULES: readonly SketchRule<CpuRuleContext>[] = [
  {
    name: 'always-inline',
    applies: ({ an }, x) => (!an.hasReduce(x) && !an.isOutput(x) && an.isStrictlyInlineable(x) ? 'apply-and-skip-rest' : 'pass'),
    apply: (_c, _x, withPlan) => [withPlan({ k: 'inline' })],
  },
  {
    name: 'simplify-compute-with-const-tensor',
    applies: ({ an }, x) => (!an.hasReduce(x) && CONST_INDEXED_TAGS.has(an.tensor(x).op.tag) ? 'apply-and-skip-rest' : 'pass'),
    apply: (_c, _x, withPlan) => [withPlan({ k: 'const-tensor' })],
  },
  {
    name: 'add-rfactor',
    // Never for an ordered reduction (ir/ordered.ts), which rfactor would reassociate.
    applies: ({ an, numCores }, x) => (an.hasReduce(x) && !an.hasOrderedReduce(x) && an.needsRfactor(x, numCores) ? 'apply' : 'pass'),
    apply: (_c, _x, withPlan) => [withPlan({ k: 'rfactor', inner: true }), withPlan({ k: 'rfactor', inner: false })],
  },
  {
    name: 'add-cache-write',
    applies: (c, x, plans) => (tiled(c, x) && fusibleConsumer(c, x, plans) === undefined ? 'apply' : 'pass'),
    apply: (_c, _x, withPlan) => ([1, 2] as const).map((level) => withPlan({ k: 'tile', level, cacheWrite: true })),
  },
  {
    name: 'multi-level-tiling-with-fusion',
    applies: (c, x, plans) => (tiled(c, x) && fusibleConsumer(c, x, plans) !== undefined ? 'apply' : 'pass'),
    apply: (c, x, withPlan, plans) => {
      const consumer = fusibleConsumer(c, x, plans)!;
      return ([1, 2] as const).map((level) => withPlan({ k: 'tile', level, consumer, cacheWrite: false }, [[consumer, { k: 'fused-consumer', producer: x }]]));
    },
  },
  {
    name: 'multi-level-tiling',
    applies: (c, x) => (tiled(c, x) ? 'apply' : 'pass'),
    apply: (_c, _x, withPlan) => [withPlan({ k: 'tile', level: 0, cacheWrite: false })],
  },
  {
    name: 'skip-stage',
    applies: (c, x) => (tiled(c, x) ? 'pass' : 'apply'),
    apply: (_c, _x, withPlan) => [withPlan({ k: 'simple' })],
  },
];

export function generateSketches(dag: ComputeDAG, opts: SketchOptions): Sketch[] {
  return enumerateSketches(dag, applyRules(CPU_SKETCH_RULES, { an: new StageAnalysis(dag), numCores: opts.numCores }));
}
