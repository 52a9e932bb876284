// Transform steps: a schedule is a list of these small JSON records, replayed in order on
// a task's compute DAG (schemas/steps.schema.json is their contract). Stages and
// iterators are referred to by name: `ff` split in three gives `ff.0`, `ff.1`, `ff.2`;
// fusing `nn` and `yy.0` gives `nn@yy.0`. A cache_write of `conv` adds stage `conv.local`.

export type Annotation = 'parallel' | 'vectorize' | 'unroll';

/**
 * GPU thread indices a loop can be bound to (TVM's IteratorAnnotation). A bound loop
 * does not run: each block (blockIdx.*) or thread (threadIdx.*) of the launch takes one
 * of its iterations. `vthread` is TVM's virtual thread: a loop every thread runs itself.
 */
export type ThreadTag = 'blockIdx.x' | 'blockIdx.y' | 'blockIdx.z' | 'vthread' | 'threadIdx.x' | 'threadIdx.y' | 'threadIdx.z';
export const THREAD_TAGS: readonly ThreadTag[] = ['blockIdx.x', 'blockIdx.y', 'blockIdx.z', 'vthread', 'threadIdx.x', 'threadIdx.y', 'threadIdx.z'];

/** Memory a cache_read copy lives in: `shared` by the threads of a block (OpenCL `__local`), `local` per thread (registers). */
export type CacheScope = 'shared' | 'local';

export type Step =
  /** Split `iter` into an outer loop and inner loops of the given lengths (innermost last). */
  | { s: 'split'; stage: string; iter: string; lengths: number[] }
  /** Fuse consecutive iterators into one. */
  | { s: 'fuse'; stage: string; iters: string[] }
  /** New loop order; must name every current iterator of the stage. */
  | { s: 'reorder'; stage: string; order: string[] }
  | { s: 'compute_at'; stage: string; target: string; iter: string }
  | { s: 'compute_inline'; stage: string }
  | { s: 'compute_root'; stage: string }
  /** Compute `stage` into a new local stage `<stage>.local`; `stage` becomes a copy of it. */
  | { s: 'cache_write'; stage: string }
  | { s: 'annotate'; stage: string; iter: string; ann: Annotation }
  /**
   * Factor a reduction (TVM's rfactor): the reduce loop `iter` becomes a spatial axis of a new
   * stage `<stage>.rf` that reduces over the other reduce loops; `stage` then reduces `.rf` over `iter`.
   */
  | { s: 'rfactor'; stage: string; iter: string }
  /** Unroll loops below `iter` whose total trip count is at most `value` (TVM's auto_unroll_max_step). */
  | { s: 'pragma'; stage: string; iter: string; pragma: 'auto_unroll_max_step'; value: number }
  /**
   * GPU: the loop `iter` becomes the launch's `thread` index (TVM's bind). A reduce loop
   * may be bound to threadIdx.x: a cross-thread reduction, each thread reducing its share
   * and the block combining the partial results in shared memory.
   */
  | { s: 'bind'; stage: string; iter: string; thread: ThreadTag }
  /**
   * GPU: `reader` reads tensor `stage` (an input or a compute stage) through a copy in
   * `scope`, a new stage `<stage>.<scope>` computed at root until a compute_at places it
   * (TVM's cache_read; TVM names the copy `<stage>.shared` too).
   */
  | { s: 'cache_read'; stage: string; scope: CacheScope; reader: string }
  /**
   * GPU: pad the buffer of `stage` (a stage computed at a loop of its reader: a shared or
   * local copy, a register tile) so that the stride of its root axis `iter` is the smallest
   * one at least the natural stride with `stride % factor == offset` (TVM's storage_align;
   * a row padded by one float spreads a warp's column reads over the shared-memory banks).
   */
  | { s: 'storage_align'; stage: string; iter: string; factor: number; offset: number };

export type StepKind = Step['s'];

/**
 * The most iterations one loop may unroll, by an `unroll` annotation or by
 * auto_unroll_max_step: 512, the largest auto_unroll_max_step TVM's CPU search tries
 * (auto_unroll_configs_cpu = {0, 16, 64, 512}, our UNROLL_STEPS), so every schedule the
 * search makes stays within it. A 64 cap would refuse a quarter of the search's own
 * candidates. Above it, a loop the C renderer cannot expand becomes `#pragma GCC unroll N`,
 * and a record that turns a large outer loop (1792 iterations) from `parallel` into `unroll`
 * keeps GCC busy for good. checkSteps refuses what the steps alone show; lowering refuses
 * the rest, with the task's real extents.
 */
export const MAX_UNROLL = 512;

export const STEP_KINDS: readonly StepKind[] = [
  'split', 'fuse', 'reorder', 'compute_at', 'compute_inline', 'compute_root', 'cache_write', 'annotate', 'pragma', 'rfactor',
  'bind', 'cache_read', 'storage_align',
];

/**
 * The identity of a schedule: a canonical string of its step list. Equal strings, equal
 * programs. The search deduplicates candidates by it; the record logs group the timings of
 * one schedule measured more than once by it (records/best.ts, records/open.ts).
 */
export function stepsKey(steps: readonly Step[]): string {
  return JSON.stringify(steps);
}
