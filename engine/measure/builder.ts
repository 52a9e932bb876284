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
import { C_PRELUDE, KERNEL_CFLAGS, renderKernel } from '../codegen/c';
import type { DType } from '../ir/expr';
import { lowerGpu } from '../codegen/gpu';
import { renderOpencl } from '../codegen/opencl';
import { renderCuda, threadsOf, type CudaLaunchTable } from '../codegen/cuda';
import { cudaCandidateSource } from '../codegen/cuda-host';
import { checkArch, compileCubin, cudaLimitsOf, findNvcc, usageProblem, type KernelUsage } from '../native/nvcc';
import { openclCandidateSource } from '../codegen/opencl-host';
import type { BlockedLayout } from '../codegen/layout';
import { lower } from '../codegen/lower';
import type { ComputeDAG } from '../ir/dag';
import { compilerFailure, cudaRuntimeObject, findCompiler, loadExeca, nativeIncludeDir, OPENCL_HOST_CFLAGS, OPENCL_RUNTIME_LIBS, openclRuntimeObject, poolObject, type Compiler } from '../native/build';
import { cachedFileOk, sealIntoCache } from '../native/file-cache';
import { State } from '../schedule/state';
import type { Step } from '../schedule/steps';
import { checkSteps } from '../schedule/validate-steps';
import { isGpu, type GpuTarget, type Target } from '../target';

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

export type RenderResult =
  | { ok: true; code: string; layouts: readonly BlockedLayout[]; cuda?: CudaRendered }
  | { ok: false; message: string };

/** A CUDA candidate's device side: `code` is CUDA C++ for nvcc; the host library is written once its cubin exists. */
export interface CudaRendered {
  table: CudaLaunchTable;
  /** Threads per block of each kernel, by name. */
  threads: ReadonlyMap<string, number>;
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
  if ('kind' in target && target.kind === 'cuda' && isGpu(target)) return renderCudaCandidate(dag, check.steps, target, packable);
  if ('kind' in target && isGpu(target)) return renderOpenclCandidate(dag, check.steps, target, packable);
  let body: string;
  let layouts: readonly BlockedLayout[];
  try {
    const kernel = lower(State.replay(dag, check.steps), 'tt_candidate_kernel', { packable });
    layouts = kernel.layouts;
    body = renderKernel(kernel, { vectorLanes: target.vectorLanes });
  } catch (e) {
    return { ok: false, message: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
  }
  return { ok: true, code: wrapKernel(body, dag.tensors.length, dag.tensors.map((t) => t.dtype)), layouts };
}

/**
 * An OpenCL candidate: the program's host side in C (the OpenCL source embedded), with the
 * device hooks tt_measure calls around the timed runs (codegen/opencl-host.ts). A schedule
 * that does not fit the device's limits is refused here, before anything is built.
 */
function renderOpenclCandidate(dag: ComputeDAG, steps: Step[], target: GpuTarget, packable: ReadonlySet<string>): RenderResult {
  try {
    const program = lowerGpu(State.replay(dag, steps), 'tt_candidate_kernel', target.gpu, { packable });
    const { source, table } = renderOpencl(program, { vectorLanes: target.vectorLanes });
    return { ok: true, code: openclCandidateSource(CANDIDATE_SYMBOL, source, table), layouts: program.layouts };
  } catch (e) {
    return { ok: false, message: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
  }
}

/**
 * A CUDA candidate's device code (CUDA C++, compiled to a cubin by nvcc in the builder) and
 * its launch table. A schedule over the device's limits is refused here, as for OpenCL; one
 * whose registers or shared memory ptxas finds over them is refused once compiled.
 */
function renderCudaCandidate(dag: ComputeDAG, steps: Step[], target: GpuTarget, packable: ReadonlySet<string>): RenderResult {
  try {
    const program = lowerGpu(State.replay(dag, steps), 'tt_candidate_kernel', target.gpu, { packable });
    const { source, table } = renderCuda(program, { vectorLanes: target.vectorLanes });
    const threads = new Map(program.kernels.map((k) => [k.name, threadsOf(k)]));
    return { ok: true, code: source, layouts: program.layouts, cuda: { table, threads } };
  } catch (e) {
    return { ok: false, message: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
  }
}

/**
 * A rendered kernel `int32_t tt_candidate_kernel(float*, ...)` as a tt_kernel_fn library.
 * The kernel keeps external linkage, as in the compiled model (compile/model.ts builds each
 * kernel as an object of its own), so a candidate is timed as the kernel that ships.
 */
export function wrapKernel(kernelSource: string, nargs: number, dtypes: readonly DType[] = []): string {
  // The worker's buffers are float words; an int32/bool argument is passed as an int32_t*.
  const args = Array.from({ length: nargs }, (_, i) => ((dtypes[i] ?? 'float32') === 'float32' ? `args[${i}]` : `(int32_t*)args[${i}]`)).join(', ');
  return [
    C_PRELUDE,
    '#include "tensortune.h"',
    kernelSource.trimEnd(),
    `TT_EXPORT int ${CANDIDATE_SYMBOL}(float* const* args) { return tt_candidate_kernel(${args}); }`,
    '',
  ].join('\n');
}

export class Builder {
  private readonly jobs: number;
  private compiler?: Promise<Compiler>;
  private runtime?: Promise<string>;
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
      if (rendered.cuda) return this.compileCuda(steps, rendered.code, rendered.cuda, rendered.layouts, started);
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
   * A CUDA candidate: nvcc compiles its kernels to a cubin (cached by source), ptxas's
   * resource usage is held to the device's limits (over them: invalid, with ptxas's
   * numbers), then the host library embedding the cubin is compiled as any candidate.
   */
  private async compileCuda(steps: Step[], code: string, cuda: CudaRendered, layouts: readonly BlockedLayout[], started: number): Promise<BuiltCandidate> {
    const target = this.target;
    const nvcc = findNvcc();
    checkArch(nvcc, target.cuda!.arch);
    const timeoutMs = this.opts.timeoutMs ?? 60_000;
    const cubin = await compileCubin(nvcc, code, target.cuda!.arch, { cacheDir: path.join(this.opts.workDir, 'cubin'), timeoutMs, messageLines: MESSAGE_LINES });
    const ms = (): number => performance.now() - started;
    if (!cubin.ok) return { steps, error: cubin.kind === 'invalid' ? 'invalid_schedule' : 'compile_error', message: cubin.message, build_ms: ms() };
    const limits = cudaLimitsOf(target);
    const problem = cubin.usage.map((u) => usageProblem(u, cuda.threads.get(u.kernel) ?? 1, limits)).find((p) => p !== undefined);
    if (problem) return { steps, error: 'invalid_schedule', message: `over the device's limits: ${problem}`, build_ms: ms() };
    const host = cudaCandidateSource(CANDIDATE_SYMBOL, await fs.readFile(cubin.cubin), cuda.table);
    const built = await this.compileNow(steps, host, started);
    return 'lib' in built ? { ...built, layouts, ptxas: cubin.usage } : built;
  }

  private async compileNow(steps: Step[], code: string, started: number): Promise<BuiltCandidate> {
    const compiler = await (this.compiler ??= findCompiler(this.target.ccPrefix ? `${this.target.ccPrefix}gcc` : undefined));
    // A GPU candidate is host code: the runtime's object file links in; the kernels are
    // built by the OpenCL driver when the worker opens the device (or are a cubin). A CPU
    // candidate links the thread pool's object, compiled once rather than with each one.
    const gpu = isGpu(this.target);
    const runtime = gpu
      ? [await (this.runtime ??= (this.target.kind === 'cuda' ? cudaRuntimeObject : openclRuntimeObject)(compiler)), ...OPENCL_RUNTIME_LIBS]
      : [await (this.runtime ??= poolObject(compiler))];
    const flags = [...(gpu ? OPENCL_HOST_CFLAGS : KERNEL_CFLAGS), ...this.target.cflags, '-shared', `-I${nativeIncludeDir()}`];
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
