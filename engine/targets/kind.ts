// The record of one target kind: everything that differs between `llvm`, `opencl`, `cuda`
// (and any kind added later) from the target string to the code that runs: how its string
// parses, what identifies the hardware, which search space and default schedule it takes,
// how a measurement candidate and a compiled model are built, and where it can be measured.
// One module per kind (llvm.ts, opencl.ts, cuda.ts) exports its record; registry.ts holds
// them, and the rest of the engine asks the record instead of testing the kind's name.

import type { Dialect } from '../codegen/c';
import type { BlockedLayout } from '../codegen/layout';
import type { Dim3, GpuProgram } from '../codegen/gpu';
import type { ComputeDAG } from '../ir/dag';
import type { Compiler } from '../native/build';
import type { CudaAnswer } from '../native/cuda';
import type { KernelUsage } from '../native/nvcc';
import type { OpenclDevice } from '../native/opencl';
import type { DefaultOptions } from '../schedule/default-options';
import type { Step } from '../schedule/steps';
import type { GpuParams, Target } from './types';

/** A target string being parsed: `parts` its tokens, the kind's name first; `where`/`hostWhere` name the string and its host in messages. */
export interface ParseContext {
  readonly text: string;
  readonly parts: readonly string[];
  readonly where: string;
  /** The host target string given with it (GPU kinds: their CPU side), if any. */
  readonly host?: string;
  readonly hostWhere: string;
}

export type OpenclProbe = () => { device: OpenclDevice } | { error: string };
export type CudaProbe = () => CudaAnswer;

/** The device probes a fingerprint may ask (tests pass their own). */
export interface Probes {
  readonly opencl?: OpenclProbe;
  readonly cuda?: CudaProbe;
}

/** A measurement candidate as source, or why its steps make no kernel. */
export type RenderResult =
  | {
    ok: true;
    /** The C translation unit of the candidate library, or (where `device` is set) the device code it is made from. */
    code: string;
    layouts: readonly BlockedLayout[];
    /** Kinds whose kernels a device compiler builds first (CUDA): compiles `code` and writes the host library's C around it. */
    device?: (ctx: DeviceBuildContext) => Promise<DeviceBuild>;
  }
  | { ok: false; message: string };

export interface DeviceBuildContext {
  /** Where the device compiler's outputs are cached. */
  readonly cacheDir: string;
  readonly timeoutMs: number;
  /** Lines of the device compiler's message kept in an error. */
  readonly messageLines: number;
  /** The exported entry point the host library defines. */
  readonly symbol: string;
}

export type DeviceBuild =
  | { ok: true; host: string; usage?: readonly KernelUsage[] }
  | { ok: false; error: 'invalid_schedule' | 'compile_error'; message: string };

/** How the kind's candidates become a library the measuring worker loads (measure/builder.ts). */
export interface CandidateBackend {
  /** `steps` (checked) lowered and rendered; `packable`: the DAG's constant inputs, which may be read in a blocked layout. `symbol`: the entry point. */
  render(dag: ComputeDAG, steps: Step[], target: Target, packable: ReadonlySet<string>, symbol: string): RenderResult;
  /** The C compiler's flags (before the target's own cflags). */
  readonly cflags: readonly string[];
  /** What every candidate links with: objects built once per compiler (a runtime, the thread pool) and libraries. */
  link(compiler: Compiler): Promise<{ objects: readonly string[]; libs: readonly string[] }>;
}

/** A launch as the manifest lists it. */
export interface ManifestLaunchShape { kernel: string; global: Dim3; local: Dim3 }

/** A launch of a device launch table: its kernel and the table's buffers it takes. */
export interface DeviceLaunch { readonly kernel: string; readonly args: readonly number[] }

/** A device launch table: buffers and launches, in order (codegen/opencl.ts, cuda.ts). */
export interface DeviceTable<L extends DeviceLaunch> {
  readonly buffers: readonly { name: string; size: number; role: 'in' | 'out' | 'temp' }[];
  readonly launches: readonly L[];
}

/** The model's buffers as the host source lays them out (compile/model-gpu.ts plans them). */
export interface HostBuffers {
  readonly inputs: readonly number[];
  readonly outputs: readonly number[];
  readonly params: readonly { buffer: number; offset: number }[];
}

/** A model's device source, and its compiled image where the kind has a device compiler. */
export interface DeviceCode { readonly source: string; readonly image?: Uint8Array }

/** The device code of a whole model, compiled where the kind has a device compiler. */
export type DeviceModel =
  | { ok: true; image: Uint8Array; usage: readonly KernelUsage[] }
  | { ok: false; message: string };

/**
 * How a GPU kind's compiled model is made (compile/model-gpu.ts runs it): the kernels of
 * every program in the kind's language, one source for the model, compiled for the device
 * where the kind has a device compiler, and the C host library around it. `L`: the kind's
 * launch record.
 */
export interface GpuModelBackend<L extends DeviceLaunch> {
  /** The language in log lines ('OpenCL', 'CUDA'). */
  readonly label: string;
  /** Opens the model's source: the helpers every program's kernels use. */
  readonly prelude: string;
  /** The file beside model.so with the model's device source. */
  readonly sourceFile: string;
  /** One program's kernels in the language, its launch table and its launches for the manifest. */
  render(program: GpuProgram, vectorLanes: number): { code: string; table: DeviceTable<L>; manifest: ManifestLaunchShape[] };
  /** Refuses, before anything is built, a target the toolchain here cannot build for (a UserError). */
  check?(target: Target): void;
  /**
   * The model's source compiled for the device, with the resources each kernel takes (held
   * to the target's limits by `overLimits`). Absent: the source itself is what the host embeds.
   */
  compileDevice?(source: string, target: Target, ctx: { cacheDir: string; timeoutMs: number; name: string }): Promise<DeviceModel>;
  /** Why a kernel's resources are over the target's limits (`threads`: its threads per block), or undefined. */
  overLimits?(usage: KernelUsage, threads: number, target: Target): string | undefined;
  /** model.c: `info` (the model's info lines), the device code (its source, and what compileDevice made of it), the model's table and buffers. */
  hostSource(info: readonly string[], device: DeviceCode, table: DeviceTable<L>, roles: ReadonlyMap<number, 'param'>, buffers: HostBuffers): string;
  /** Flags, objects and libraries of the host library's link. */
  readonly hostCflags: readonly string[];
  runtimeObject(compiler: Compiler): Promise<string>;
  readonly libs: readonly string[];
  /** Files written beside model.so besides the source (CUDA: the cubin); manifest fields; the compile result's summary. */
  extraFiles?(target: Target, device: DeviceCode): Record<string, Uint8Array | string>;
  /** What the log line that sums the model up adds about its device code (CUDA: the cubin). */
  imageNote?(target: Target, device: DeviceCode): string;
  manifestExtra(target: Target): GpuManifestFields;
  summary(ctx: { target: Target; outDir: string; launches: number; spilling: number }): GpuModelSummary;
}

/** The manifest fields of a GPU model (compile/manifest.ts): its host and the files beside model.so. */
export interface GpuManifestFields { host: string; opencl_source?: string; cuda_source?: string; cubin?: string }

/** What a GPU model's compile result says besides its files (compile/model-common.ts CompileResult). */
export interface GpuModelSummary {
  opencl?: { launches: number; source: string };
  cuda?: { launches: number; source: string; cubin: string; spilling: number };
}

/** A GPU kind's model backend with its launch record hidden: `use` hands it to a function generic over it. */
export interface GpuModel {
  use<R>(f: <L extends DeviceLaunch>(backend: GpuModelBackend<L>) => R): R;
}

export const gpuModel = <L extends DeviceLaunch>(backend: GpuModelBackend<L>): GpuModel => ({ use: (f) => f(backend) });

/** How a CPU kind's compiled model is made (compile/model.ts): its kernels are the C renderer's, built with these flags and linked with these objects. */
export interface CpuModelBackend {
  /** The kernels' C compiler flags (before the target's own cflags). */
  readonly cflags: readonly string[];
  /** Objects model.so links with besides the kernels (the thread pool). */
  runtimeObject(compiler: Compiler): Promise<string>;
}

/** The GPU search space of a target: its limits and device rules (search/sketch-gpu.ts). */
export interface GpuSpaceOptions { readonly params: GpuParams; readonly mali: boolean }

export interface TargetKind {
  /** The first word of its target strings. */
  readonly name: string;
  /** Other first words that mean it (`c` for `llvm`). */
  readonly aliases?: readonly string[];
  /** CPU kinds are their own host, take tuning threads and cache flushing; GPU kinds have hardware parameters and a CPU host. */
  readonly family: 'cpu' | 'gpu';
  /** The codegen dialect its kernels are written in (codegen/c.ts C_DIALECT, opencl.ts, cuda.ts): of its family. */
  readonly dialect: Dialect;
  /** How messages name it ('CPU', 'OpenCL', 'CUDA'). */
  readonly label: string;
  /** A target string of the kind, for messages that list the kinds. */
  readonly example: string;
  parse(ctx: ParseContext): Target;
  /** The text a target's hardware fingerprint hashes: what makes its measurements comparable. */
  identity(target: Target, probes: Probes): string;
  /** The options of its tasks' default schedules (schedule/defaults.ts). */
  defaultOptions(target: Target): DefaultOptions;
  /** GPU kinds: the search space's limits and device rules; CPU kinds have none (the CPU sketch rules). */
  gpuSpace?(target: Target): GpuSpaceOptions;
  readonly candidate: CandidateBackend;
  readonly model: { readonly cpu: CpuModelBackend; readonly gpu?: never } | { readonly gpu: GpuModel; readonly cpu?: never };
  readonly runner: RunnerSupport;
}

/** Measuring through a runner (remote/): whether its candidates can be, whether its compiled models can be benchmarked there, and what the device must describe. */
export interface RunnerSupport {
  readonly tune: boolean;
  readonly benchmark: boolean;
  /** Kinds whose device the runner's worker describes with a library of theirs (OpenCL: its platforms and devices), for the fingerprint. */
  readonly describe?: RunnerDescribe;
}

export interface RunnerDescribe {
  /** The exported function of the describe library. */
  readonly symbol: string;
  /** The describe library built for the target's host, as bytes. */
  library(target: Target): Promise<Buffer>;
  /** The device a description names (what the candidates open), or why there is none. */
  device(described: unknown, describeError: string | undefined): { device: OpenclDevice } | { error: string };
  /** The fields a device fingerprint adds for that answer. */
  identity(answer: { device: OpenclDevice } | { error: string }): Record<string, unknown>;
}
