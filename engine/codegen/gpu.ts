// GPU lowering, shared by every GPU backend: a scheduled task (State) -> launches.
//
// lower.ts gives one loop nest per stage computed at root; here each becomes one kernel
// launch. The loops bound to blockIdx.* and threadIdx.* stop being loops: their extents
// are the launch's grid and block sizes, and each becomes a `thread` statement that names
// the hardware index (the renderer spells it: get_group_id(0), blockIdx.x, ...). A loop
// bound to `vthread` stays a loop that every thread runs itself, unrolled. Shared buffers
// (cache_read copies in `shared` scope) are hoisted to the kernel's top, as OpenCL's
// `__local` and CUDA's `__shared__` require; barriers were placed by lower.ts.
//
// A schedule that does not fit the device (too many threads or too much shared memory per
// block, a vthread too long) or that a GPU cannot run correctly (a root stage with no
// bound loop, two extents for one thread index, a global store that some thread index
// does not separate) is a ScheduleError, so the search counts it invalid before building.

import { UserError } from '../errors';
import { walk } from '../ir/expr';
import { ScheduleError, type State } from '../schedule/state';
import type { ThreadTag } from '../schedule/steps';
import type { BlockedLayout } from './layout';
import { forEachExpr, lower, type Kernel, type KernelArg, type LowerOptions, type Stmt } from './lower';

/** The device limits a launch must respect (TVM's HardwareParams; target.ts GpuParams has them). */
export interface GpuLimits {
  readonly maxThreadsPerBlock: number;
  readonly maxSharedMemoryPerBlock: number;
  readonly maxVthreadExtent: number;
  /** Bytes of per-thread buffers times threads, per block (TVM's max_local_memory_per_block). */
  readonly maxLocalMemoryPerBlock: number;
}

export type Dim3 = [number, number, number];

/** Threads per block of a kernel. */
export const threadsOf = (k: Pick<GpuKernel, 'block'>): number => k.block[0] * k.block[1] * k.block[2];

export interface GpuKernel {
  /** The kernel function's name. */
  readonly name: string;
  /** The root stage this kernel computes. */
  readonly stage: string;
  /** The program buffers it reads or writes, in the program's order (its parameters). */
  readonly params: readonly string[];
  /** Blocks per dimension (blockIdx.x/y/z extents) and threads per block (threadIdx.x/y/z). */
  readonly grid: Dim3;
  readonly block: Dim3;
  /** Buffers shared by the threads of a block, float32 elements. */
  readonly shared: readonly { buf: string; size: number }[];
  /** Bytes of per-thread buffers of one thread (register tiles, local copies). */
  readonly localBytes: number;
  /** What each thread runs: bound loops replaced by `thread` statements. */
  readonly body: Stmt[];
}

export interface GpuProgram {
  readonly name: string;
  /** DAG inputs then outputs, the program's arguments. */
  readonly args: readonly KernelArg[];
  /** How many of `args` (the last ones) are outputs. */
  readonly outputs: number;
  /** Global buffers between launches (stages computed at root that are not outputs). */
  readonly temps: readonly { buf: string; size: number }[];
  /** In launch order. */
  readonly kernels: readonly GpuKernel[];
  readonly layouts: readonly BlockedLayout[];
}

const DIMS = ['x', 'y', 'z'] as const;
const isBlock = (tag: ThreadTag): boolean => tag.startsWith('blockIdx');
const isThread = (tag: ThreadTag): boolean => tag.startsWith('threadIdx');

/** Buffers a statement list reads or writes. */
function touched(body: readonly Stmt[], out: Set<string>): void {
  forEachExpr(body, (e) => walk(e, (x) => { if (x.k === 'load') out.add(x.tensor.name); }));
  storedBuffers(body, out);
}

/** Buffers a statement list stores to. */
export function storedBuffers(body: readonly Stmt[], out = new Set<string>()): Set<string> {
  for (const s of body) {
    if (s.k === 'store') out.add(s.buf);
    else if (s.k === 'if' || s.k === 'for' || s.k === 'thread') storedBuffers(s.body, out);
  }
  return out;
}

class KernelBuilder {
  /** Extent of every thread tag used in the kernel. */
  readonly extents = new Map<ThreadTag, number>();
  readonly shared: { buf: string; size: number }[] = [];
  private readonly globals: ReadonlySet<string>;
  private localFloats = 0;

  constructor(private readonly stage: string, globals: ReadonlySet<string>, private readonly limits: GpuLimits) {
    this.globals = globals;
  }

  /**
   * Rewrites `body` as the code of one thread. `tags`: the thread tags enclosing the
   * statements (each store to a global buffer must be enclosed by every tag of the kernel,
   * checked once all are known); `inIf`: whether a guard encloses them (no barrier there).
   */
  rewrite(body: readonly Stmt[], tags: ReadonlySet<ThreadTag>, inIf: boolean, stores: { tags: ReadonlySet<ThreadTag>; buf: string }[]): Stmt[] {
    const out: Stmt[] = [];
    for (const s of body) {
      switch (s.k) {
        case 'for': {
          const kind = s.kind;
          if (kind === 'serial' || kind === 'unroll' || kind === 'vectorize' || kind === 'parallel') {
            // `parallel` means nothing inside a thread: a serial loop.
            out.push({ ...s, kind: kind === 'parallel' ? 'serial' : kind, body: this.rewrite(s.body, tags, inIf, stores) });
          } else if (kind === 'vthread') {
            if (s.extent > this.limits.maxVthreadExtent) {
              throw new ScheduleError(`${s.owner}: vthread extent ${s.extent}, more than the device's ${this.limits.maxVthreadExtent}`);
            }
            out.push({ ...s, kind: 'unroll', body: this.rewrite(s.body, tags, inIf, stores) });
          } else {
            const known = this.extents.get(kind);
            if (known !== undefined && known !== s.extent) {
              throw new ScheduleError(`${this.stage}: ${kind} has extent ${known} in one loop and ${s.extent} in another (${s.owner}); every loop bound to it must have the same extent`);
            }
            this.extents.set(kind, s.extent);
            const inner = new Set(tags).add(kind);
            out.push({ k: 'thread', v: s.v, tag: kind, body: this.rewrite(s.body, inner, inIf, stores) });
          }
          break;
        }
        case 'if':
          out.push({ ...s, body: this.rewrite(s.body, tags, true, stores) });
          break;
        case 'sync':
          if (inIf) throw new ScheduleError(`${this.stage}: a barrier under a condition (threads could disagree on reaching it)`);
          out.push(s);
          break;
        case 'alloc':
          if (s.scope === 'shared') {
            if (!this.shared.some((b) => b.buf === s.buf)) this.shared.push({ buf: s.buf, size: s.size });
          } else {
            this.localFloats += s.size;
            out.push(s);
          }
          break;
        case 'store':
          if (this.globals.has(s.buf)) stores.push({ tags, buf: s.buf });
          out.push(s);
          break;
        case 'thread':
          out.push({ ...s, body: this.rewrite(s.body, new Set(tags).add(s.tag), inIf, stores) });
          break;
      }
    }
    return out;
  }

  get localBytes(): number {
    return this.localFloats * 4;
  }
}

/**
 * Lowers `state` for a GPU: one kernel per stage computed at root, named `<name>_k<i>`.
 * Throws ScheduleError when the schedule does not fit `limits` or cannot run as launches.
 */
export function lowerGpu(state: State, name: string, limits: GpuLimits, opts: LowerOptions = {}): GpuProgram {
  return gpuProgram(state, lower(state, name, opts), limits);
}

/** lowerGpu for a kernel `state` was already lowered to (the search lowers each state once: lowerOnce). */
export function gpuProgram(state: State, k: Kernel, limits: GpuLimits): GpuProgram {
  const name = k.name;
  // The GPU renderers declare every buffer as float; integer tensors are a CPU feature for now.
  const integer = [...k.args.map((a) => ({ name: a.tensor.name, dtype: a.tensor.dtype })), ...k.temps.map((t) => ({ name: t.buf, dtype: t.dtype ?? 'float32' }))]
    .find((b) => b.dtype !== 'float32');
  if (integer) throw new UserError(`${name}: ${integer.name} holds ${integer.dtype} values; GPU targets run float32 tensors only (compile for a CPU target)`);
  const order = [...k.args.map((a) => a.buf), ...k.temps.map((t) => t.buf)];
  const globals = new Set(order);
  const kernels = k.parts.map((part, i): GpuKernel => {
    const stage = state.stage(part.stage);
    if (stage.scope === 'shared') {
      throw new ScheduleError(`${stage.name}: a shared copy must be computed at a loop of its reader (compute_at), not at root`);
    }
    const b = new KernelBuilder(stage.name, globals, limits);
    const stores: { tags: ReadonlySet<ThreadTag>; buf: string }[] = [];
    const body = b.rewrite(part.body, new Set(), false, stores);
    const used = [...b.extents.keys()];
    if (!used.some((t) => isBlock(t) || isThread(t))) {
      throw new ScheduleError(`${stage.name}: no loop is bound to blockIdx or threadIdx, so one GPU thread would compute the whole stage (bind its outer loops)`);
    }
    const parallelTags = used.filter((t) => isBlock(t) || isThread(t));
    for (const st of stores) {
      const missing = parallelTags.filter((t) => !st.tags.has(t));
      if (missing.length > 0) {
        throw new ScheduleError(`${stage.name}: a store to ${st.buf} is not inside the loops bound to ${missing.join(', ')}, so every such thread would write it`);
      }
    }
    const dim = (prefix: 'blockIdx' | 'threadIdx'): Dim3 => DIMS.map((d) => b.extents.get(`${prefix}.${d}` as ThreadTag) ?? 1) as Dim3;
    const grid = dim('blockIdx'), block = dim('threadIdx');
    const threads = block[0] * block[1] * block[2];
    if (threads > limits.maxThreadsPerBlock) {
      throw new ScheduleError(`${stage.name}: ${threads} threads per block, more than the device's ${limits.maxThreadsPerBlock}`);
    }
    const sharedBytes = b.shared.reduce((a, s) => a + s.size * 4, 0);
    if (sharedBytes > limits.maxSharedMemoryPerBlock) {
      throw new ScheduleError(`${stage.name}: ${sharedBytes} bytes of shared memory per block, more than the device's ${limits.maxSharedMemoryPerBlock}`);
    }
    if (b.localBytes * threads > limits.maxLocalMemoryPerBlock) {
      throw new ScheduleError(`${stage.name}: ${b.localBytes} bytes of per-thread buffers × ${threads} threads, more than the device's ${limits.maxLocalMemoryPerBlock} per block`);
    }
    const seen = new Set<string>();
    touched(body, seen);
    return {
      name: `${name}_k${i}`, stage: stage.name, params: order.filter((x) => seen.has(x)),
      grid, block, shared: b.shared, localBytes: b.localBytes, body,
    };
  });
  return { name, args: k.args, outputs: state.dag.outputs.length, temps: k.temps, kernels, layouts: k.layouts };
}
