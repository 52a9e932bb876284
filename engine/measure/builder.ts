// The builder: candidate schedules of one task -> one shared library each, compiled in
// parallel (one compiler process per core by default), with the target's flags.
//
// Each library exports CANDIDATE_SYMBOL with the worker's calling convention
// (tt_kernel_fn: an array of buffer pointers, the DAG's inputs then its outputs) and
// calls the lowered kernel, which stays static. Errors are results, never exceptions:
// steps that fail the schema, replay or lowering are `invalid_schedule`; a compiler
// failure (or a compiler that runs past its time limit) is `compile_error` with the first
// lines of its message. Identical sources share one library (named by their hash), reused
// only while it matches its seal (native/file-cache.ts).

import { createHash, randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import type { DType } from '../ir/expr';
import type { BlockedLayout } from '../codegen/layout';
import type { ComputeDAG } from '../ir/dag';
import { compilerFailure, findCompiler, loadExeca, nativeIncludeDir, type Compiler } from '../native/build';
import { cachedFileOk, sealIntoCache } from '../native/file-cache';
import type { KernelUsage } from '../native/nvcc';
import type { Step } from '../schedule/steps';
import { checkSteps } from '../schedule/validate-steps';
import { kindOf, type Target } from '../target';
import { cpuCandidateSource, renderCpuCandidate } from '../targets/llvm';
import type { RenderResult } from '../targets/kind';

export type { RenderResult } from '../targets/kind';

/** The exported entry point of every candidate library. */
export const CANDIDATE_SYMBOL = 'tt_candidate';

/** Lines of compiler output kept in a compile_error's message. */
const MESSAGE_LINES = 12;

export type BuiltCandidate =
  | { steps: Step[]; lib: string; symbol: string; build_ms: number; layouts?: readonly BlockedLayout[]; ptxas?: readonly KernelUsage[] }
  | { steps: Step[]; error: 'invalid_schedule' | 'compile_error'; message: string; build_ms: number };

export interface BuilderOptions {
  /** Parallel compiler processes (default: number of cores). */
  jobs?: number;
  /** Where libraries are written (created if missing). */
  workDir: string;
  /** Per compiler process (default 60 s). */
  timeoutMs?: number;
}

/**
 * The C translation unit of one candidate, or why its steps do not make a kernel.
 * `packable`: the DAG's constant inputs, which the kernel may read in a blocked layout
 * (as the compiled model will); the layouts chosen come back with the code.
 */
export function renderCandidate(
  dag: ComputeDAG, steps: unknown, target: Pick<Target, 'vectorLanes'> | Target, packable: ReadonlySet<string> = new Set(),
): RenderResult {
  const check = checkSteps(steps);
  if (!check.ok) return { ok: false, message: check.message };
  // A bare { vectorLanes } (tests, benches) is a CPU target.
  if (!('kind' in target)) return renderCpuCandidate(dag, check.steps, target, packable, CANDIDATE_SYMBOL);
  return kindOf(target).candidate.render(dag, check.steps, target, packable, CANDIDATE_SYMBOL);
}

/**
 * A rendered kernel `int32_t tt_candidate_kernel(float*, ...)` as a tt_kernel_fn library
 * (targets/llvm.ts cpuCandidateSource, exporting CANDIDATE_SYMBOL).
 */
export function wrapKernel(kernelSource: string, nargs: number, dtypes: readonly DType[] = []): string {
  return cpuCandidateSource(kernelSource, nargs, dtypes, CANDIDATE_SYMBOL);
}

export class Builder {
  private readonly jobs: number;
  private compiler?: Promise<Compiler>;
  private link?: Promise<{ objects: readonly string[]; libs: readonly string[] }>;
  /**
   * CPU and OpenCL candidates built before, by DAG and steps: their library and layouts, so
   * that the same schedule measured again (tune's confirmation pass) skips lowering and
   * rendering too, not only the compiler (a Winograd state takes ~1.5 s to lower). Used only
   * while the library still matches its seal.
   */
  private readonly built = new WeakMap<ComputeDAG, Map<string, { lib: string; layouts: readonly BlockedLayout[] }>>();

  constructor(private readonly target: Target, private readonly opts: BuilderOptions) {
    this.jobs = Math.max(1, opts.jobs ?? availableParallelism());
  }

  /** Renders and compiles each candidate; results in the order of `candidates`. */
  build(dag: ComputeDAG, candidates: readonly Step[][], packable: ReadonlySet<string> = new Set()): Promise<BuiltCandidate[]> {
    let memo = this.built.get(dag);
    if (!memo) this.built.set(dag, (memo = new Map()));
    const known = memo;
    return this.pool(candidates, async (steps) => {
      const started = performance.now();
      const key = JSON.stringify([steps, [...packable].sort()]);
      const before = known.get(key);
      if (before && await cachedFileOk(before.lib)) {
        return { steps, lib: before.lib, symbol: CANDIDATE_SYMBOL, layouts: before.layouts, build_ms: performance.now() - started };
      }
      const rendered = renderCandidate(dag, steps, this.target, packable);
      if (!rendered.ok) return { steps, error: 'invalid_schedule', message: rendered.message, build_ms: performance.now() - started };
      if (rendered.device) return this.compileDevice(steps, rendered.device, rendered.layouts, started);
      const built = await this.compileNow(steps, rendered.code, started);
      if ('lib' in built) known.set(key, { lib: built.lib, layouts: rendered.layouts });
      return 'lib' in built ? { ...built, layouts: rendered.layouts } : built;
    });
  }

  /** Compiles translation units that are already written (a hand-written kernel, say). */
  buildSources(items: readonly { steps: Step[]; code: string }[]): Promise<BuiltCandidate[]> {
    return this.pool(items, (item) => this.compileNow(item.steps, item.code, performance.now()));
  }

  private async pool<I>(items: readonly I[], fn: (item: I) => Promise<BuiltCandidate>): Promise<BuiltCandidate[]> {
    await fs.mkdir(this.opts.workDir, { recursive: true });
    const results = new Array<BuiltCandidate>(items.length);
    let next = 0;
    const worker = async (): Promise<void> => {
      for (let i = next++; i < items.length; i = next++) results[i] = await fn(items[i]);
    };
    await Promise.all(Array.from({ length: Math.min(this.jobs, items.length) }, worker));
    return results;
  }

  /**
   * A candidate whose kernels a device compiler builds first (CUDA: nvcc to a cubin, cached
   * by source, with ptxas's resource usage held to the device's limits): its kind's device
   * step, then the host library around what it made, compiled as any candidate.
   */
  private async compileDevice(
    steps: Step[], device: NonNullable<Extract<RenderResult, { ok: true }>['device']>, layouts: readonly BlockedLayout[], started: number,
  ): Promise<BuiltCandidate> {
    const timeoutMs = this.opts.timeoutMs ?? 60_000;
    const built = await device({ cacheDir: path.join(this.opts.workDir, 'cubin'), timeoutMs, messageLines: MESSAGE_LINES, symbol: CANDIDATE_SYMBOL });
    if (!built.ok) return { steps, error: built.error, message: built.message, build_ms: performance.now() - started };
    const lib = await this.compileNow(steps, built.host, started);
    return 'lib' in lib ? { ...lib, layouts, ...(built.usage ? { ptxas: built.usage } : {}) } : lib;
  }

  private async compileNow(steps: Step[], code: string, started: number): Promise<BuiltCandidate> {
    const compiler = await (this.compiler ??= findCompiler(this.target.ccPrefix ? `${this.target.ccPrefix}gcc` : undefined));
    // What the kind links every candidate with (the thread pool's object, a device runtime),
    // built once per Builder rather than with each candidate.
    const candidate = kindOf(this.target).candidate;
    const link = await (this.link ??= candidate.link(compiler));
    const runtime = [...link.objects, ...link.libs];
    const flags = [...candidate.cflags, ...this.target.cflags, '-shared', `-I${nativeIncludeDir()}`];
    const hash = createHash('sha256').update(JSON.stringify([code, flags, ...runtime, compiler.identity])).digest('hex').slice(0, 24);
    const lib = path.join(this.opts.workDir, `${hash}.so`);
    const done = (): BuiltCandidate => ({ steps, lib, symbol: CANDIDATE_SYMBOL, build_ms: performance.now() - started });
    if (await cachedFileOk(lib)) return done();
    // Unique per call: two candidates of one batch can render the same source and compile at once.
    const unique = `${process.pid}-${randomBytes(4).toString('hex')}`;
    const src = path.join(this.opts.workDir, `${hash}-${unique}.c`);
    const tmp = `${lib}.tmp-${unique}`;
    await fs.writeFile(src, code);
    const { execa } = await loadExeca();
    const timeoutMs = this.opts.timeoutMs ?? 60_000;
    const r = await execa(compiler.command, [...compiler.args, ...flags, src, ...runtime, '-o', tmp, '-lm'], { reject: false, timeout: timeoutMs });
    await fs.rm(src, { force: true });
    const failed = (message: string): BuiltCandidate => ({ steps, error: 'compile_error', message, build_ms: performance.now() - started });
    if (r.failed) {
      await fs.rm(tmp, { force: true });
      return failed(compilerFailure(r, timeoutMs, MESSAGE_LINES));
    }
    return (await sealIntoCache(tmp, lib)) ? done() : failed('the compiler wrote an empty library');
  }
}
