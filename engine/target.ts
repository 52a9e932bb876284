// Target strings, as in TVM: `llvm -mcpu=native`, `llvm -mcpu=znver4`, `llvm -mattr=+avx2,+fma`,
// `llvm -mtriple=aarch64-linux-gnu`, and the GPU targets `opencl` and `opencl -device=mali`
// (with a CPU host target, `llvm` by default: this machine). CPU targets are rendered as C
// and compiled with the system C compiler; this module maps the string to compiler flags,
// the vector width the schedules use, the GPU hardware parameters the search keeps within,
// and the hardware fingerprint records are keyed by.

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { UserError } from './errors';
import { openclDeviceSync, type OpenclDevice } from './native/opencl';
import { cudaDeviceSync, type CudaAnswer } from './native/cuda';

/**
 * The hardware parameters of a GPU target: TVM's HardwareParams (include/tvm/auto_scheduler/
 * search_task.h) less num_cores. Sizes are in bytes where TVM's are.
 */
export interface GpuParams {
  /** Bytes of shared memory (OpenCL `__local`) one block (work-group) may use. */
  maxSharedMemoryPerBlock: number;
  /** Bytes of local memory (registers, OpenCL `__private`) one block may use. */
  maxLocalMemoryPerBlock: number;
  /** Threads (work-items) per block. */
  maxThreadsPerBlock: number;
  /** Largest product of the extents bound to vthread. */
  maxVthreadExtent: number;
  /** Threads that execute in lockstep; a thread extent below it wastes lanes. */
  warpSize: number;
  /** Bytes of one vector register (16: float4). */
  vectorUnitBytes: number;
  cacheLineBytes: number;
}

export interface Target {
  /** The string as given, normalised: single spaces; for opencl, options in a fixed order. */
  readonly text: string;
  readonly kind: 'llvm' | 'opencl' | 'cuda';
  /** `-device=`: for opencl 'mali' or absent; for llvm accepted and not used. */
  readonly device?: string;
  readonly mcpu?: string;
  readonly mattr: readonly string[];
  readonly mtriple?: string;
  /** float32 lanes of the vector unit the schedules target (GPU: vectorUnitBytes / 4). */
  readonly vectorLanes: number;
  /** Flags of the C compiler; for a GPU target, the host's (the host library is C for the host). */
  readonly cflags: readonly string[];
  /** Cross compiler prefix from -mtriple (e.g. `aarch64-linux-gnu-`), if any; for a GPU target, the host's. */
  readonly ccPrefix?: string;
  /** GPU targets: the hardware parameters the search keeps within. */
  readonly gpu?: GpuParams;
  /** GPU targets: the CPU side (TVM's target_host), `llvm` (this machine) unless given. */
  readonly host?: Target;
  /** CUDA targets: the architecture nvcc compiles for, and the register file. */
  readonly cuda?: CudaParams;
}

/** What a `cuda` target adds to its GpuParams: the architecture and the register limits ptxas reports against. */
export interface CudaParams {
  /** `sm_80`. */
  readonly arch: string;
  /** 32-bit registers one block may use (registers per thread × threads). */
  readonly maxRegistersPerBlock: number;
  /** 32-bit registers one thread may use (255 on every architecture nvcc 11+ targets). */
  readonly maxRegistersPerThread: number;
}

/** A GPU target: it has hardware parameters and a host. */
export type GpuTarget = Target & { readonly gpu: GpuParams; readonly host: Target };

export const isGpu = (target: Target): target is GpuTarget => target.kind !== 'llvm';

/** The GPU hardware parameters of a target; a CPU target has none (an Error: a caller's bug). */
export function gpuParams(target: Target): GpuParams {
  if (!isGpu(target)) throw new Error(`gpuParams: "${target.text}" is not a GPU target`);
  return target.gpu;
}

const KNOWN_OPTIONS = ['-mcpu', '-mattr', '-mtriple', '-keys', '-device', '-model'];

const INT32_MAX = 2147483647;

/** The hardware-parameter options of a GPU target string, in the order normalised text lists them (by name). */
const GPU_OPTIONS: readonly { key: keyof GpuParams; option: string; min: number; max: number; pow2?: true }[] = [
  { key: 'cacheLineBytes', option: 'cache_line_bytes', min: 4, max: 4096, pow2: true },
  { key: 'maxLocalMemoryPerBlock', option: 'max_local_memory_per_block', min: 1, max: INT32_MAX },
  { key: 'maxSharedMemoryPerBlock', option: 'max_shared_memory_per_block', min: 1, max: INT32_MAX },
  { key: 'maxThreadsPerBlock', option: 'max_threads_per_block', min: 1, max: 16384 },
  { key: 'maxVthreadExtent', option: 'max_vthread_extent', min: 1, max: 1024 },
  { key: 'warpSize', option: 'thread_warp_size', min: 1, max: 1024 },
  { key: 'vectorUnitBytes', option: 'vector_unit_bytes', min: 4, max: 256, pow2: true },
];

/** OpenCL `-device=` values with parameters of their own. */
export const OPENCL_DEVICES = ['mali'] as const;

/**
 * `opencl -device=mali`: TVM's fixed Mali parameters (src/auto_scheduler/search_task.cc,
 * HardwareParamsNode::GetDefaultHardwareParams, v0.19.0: "Mali target is normally on the
 * remote machine", so they are not queried).
 */
export const MALI_GPU_PARAMS: Readonly<GpuParams> = Object.freeze({
  maxSharedMemoryPerBlock: 32768,
  maxLocalMemoryPerBlock: INT32_MAX, // TVM: "skip the check on local memory"
  maxThreadsPerBlock: 256,
  maxVthreadExtent: 1,
  warpSize: 1,
  vectorUnitBytes: 16,
  cacheLineBytes: 64,
});

/**
 * Plain `opencl`: TVM queries the device (CL_DEVICE_MAX_WORK_GROUP_SIZE, CL_DEVICE_LOCAL_MEM_SIZE)
 * and takes the warp size from $TVM_OPENCL_WARP_SIZE, default 1 (src/runtime/opencl/
 * opencl_device_api.cc), max_vthread_extent = max(1, warp_size / 4), 16-byte vectors, 64-byte
 * cache lines (search_task.cc as above). We pin a GPU-like profile instead, so that records
 * and the Nx cache do not depend on what a CPU device such as PoCL reports (4096 threads,
 * its L2 as local memory): at most 256 threads per block (TVM's `opencl` target kind default,
 * src/target/target_kind.cc) and 48 KiB of shared memory (the common per-block limit of desktop
 * GPUs), each lowered to the device's own limit where it is smaller. Warp size 1 and so one
 * vthread follow TVM's formula; `-thread_warp_size=32` gives 8 vthreads unless
 * `-max_vthread_extent` says otherwise.
 */
export const OPENCL_GPU_PARAMS: Readonly<GpuParams> = Object.freeze({
  maxSharedMemoryPerBlock: 49152,
  maxLocalMemoryPerBlock: INT32_MAX,
  maxThreadsPerBlock: 256,
  maxVthreadExtent: 1,
  warpSize: 1,
  vectorUnitBytes: 16,
  cacheLineBytes: 64,
});

/**
 * The GPU parameters of an OpenCL target: the given overrides, else the device's defaults
 * (`device` 'mali': MALI_GPU_PARAMS; absent: OPENCL_GPU_PARAMS lowered to `opencl`'s limits,
 * the probed device, when one is known).
 */
export function openclGpuParams(device: string | undefined, overrides: Partial<GpuParams> = {}, opencl?: Pick<OpenclDevice, 'maxWorkGroupSize' | 'localMemSize'>): GpuParams {
  if (device === 'mali') return { ...MALI_GPU_PARAMS, ...overrides };
  const limit = (pinned: number, reported: number | undefined): number =>
    (reported !== undefined && Number.isSafeInteger(reported) && reported > 0 ? Math.min(pinned, reported) : pinned);
  const warpSize = overrides.warpSize ?? OPENCL_GPU_PARAMS.warpSize;
  return {
    ...OPENCL_GPU_PARAMS,
    maxThreadsPerBlock: limit(OPENCL_GPU_PARAMS.maxThreadsPerBlock, opencl?.maxWorkGroupSize),
    maxSharedMemoryPerBlock: limit(OPENCL_GPU_PARAMS.maxSharedMemoryPerBlock, opencl?.localMemSize),
    maxVthreadExtent: Math.max(1, Math.floor(warpSize / 4)),
    ...overrides,
  };
}

export type OpenclProbe = () => { device: OpenclDevice } | { error: string };

/** The OpenCL device this process measures on (engine/native/opencl.ts, which asks once per device selection). */
export const openclDevice: OpenclProbe = () => openclDeviceSync();

function hostFlags(): Set<string> {
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    const line = info.split('\n').find((l) => l.startsWith('flags')) ?? '';
    return new Set(line.split(':')[1]?.trim().split(/\s+/) ?? []);
  } catch {
    return new Set();
  }
}

/** How messages name the host of a target named `where`: `--target` -> `--host`, `targets.x.target` -> `targets.x.host`. */
function hostWhereOf(where: string): string {
  if (where === '--target') return '--host';
  if (where === 'target') return 'host';
  return where.endsWith('.target') ? `${where.slice(0, -'.target'.length)}.host` : `${where} (host)`;
}

const gpuOptionsList = (): string => GPU_OPTIONS.map((o) => `-${o.option}=N`).join(', ');

/** What is wrong with `value` for one hardware parameter, or undefined. */
function paramProblem(spec: (typeof GPU_OPTIONS)[number], value: number): string | undefined {
  const ok = Number.isSafeInteger(value) && value >= spec.min && value <= spec.max && (!spec.pow2 || (value & (value - 1)) === 0);
  if (ok) return undefined;
  return spec.pow2 ? `expected a power of two from ${spec.min} to ${spec.max}` : `expected an integer from ${spec.min} to ${spec.max}`;
}

/**
 * Parse a target string. `host` is the CPU side of a GPU target (TVM's target_host, an
 * `llvm` string; default `llvm`, this machine); a CPU target is its own host and refuses one.
 * `where` and `hostWhere` name the two in messages.
 */
export function parseTarget(text: string, where = 'target', host?: string, hostWhere = hostWhereOf(where)): Target {
  const parts = text.trim().split(/\s+/);
  const kind = parts[0];
  if (kind === 'opencl') return parseOpencl(text, parts, where, host, hostWhere);
  if (kind === 'cuda') return parseCuda(text, parts, where, host, hostWhere);
  if (kind !== 'llvm' && kind !== 'c') {
    throw new UserError(`${where}: unsupported target kind '${kind ?? ''}'; expected 'llvm' (e.g. "llvm -mcpu=native"), 'opencl' (e.g. "opencl -device=mali") or 'cuda' (e.g. "cuda -arch=sm_80")`);
  }
  if (host !== undefined) {
    throw new UserError(`${hostWhere}: a host applies to GPU targets (opencl, cuda) only; the CPU target "${parts.join(' ')}" is its own host (drop it; -mtriple in the target cross-compiles)`);
  }
  let mcpu: string | undefined, mtriple: string | undefined, device: string | undefined;
  const mattr: string[] = [];
  for (const opt of parts.slice(1)) {
    const m = /^(-[a-z]+)=(.+)$/.exec(opt);
    if (!m || !KNOWN_OPTIONS.includes(m[1])) {
      const gpu = GPU_OPTIONS.find((o) => opt.startsWith(`-${o.option}=`));
      if (gpu) throw new UserError(`${where}: '-${gpu.option}' in "${text}" is a hardware parameter of GPU targets (opencl, cuda); a CPU target has none`);
      throw new UserError(`${where}: unknown option '${opt}' in "${text}"; expected -mcpu=<cpu>, -mattr=+feat,..., -mtriple=<triple>`);
    }
    const [, key, value] = m;
    if (key === '-mcpu') mcpu = value;
    if (key === '-device') device = value;
    if (key === '-mattr') {
      for (const a of value.split(',')) {
        if (!/^[+-][a-z0-9.]+$/.test(a)) throw new UserError(`${where}: bad -mattr entry '${a}' in "${text}"; expected +feature or -feature`);
        mattr.push(a);
      }
    }
    if (key === '-mtriple') {
      if (!/^[a-z0-9_]+(-[a-z0-9_]+)+$/.test(value)) throw new UserError(`${where}: bad -mtriple '${value}'`);
      mtriple = value;
    }
  }
  if (mcpu && !/^[a-z0-9_.-]+$/.test(mcpu)) throw new UserError(`${where}: bad -mcpu '${mcpu}'`);
  const cross = mtriple !== undefined && !mtriple.startsWith(process.arch === 'x64' ? 'x86_64' : process.arch);
  const cflags: string[] = [];
  if (mcpu === 'native' || (!mcpu && !cross)) cflags.push('-march=native');
  else if (mcpu) cflags.push(mtriple?.startsWith('aarch64') ? `-mcpu=${mcpu}` : `-march=${mcpu}`);
  for (const a of mattr) cflags.push(a.startsWith('+') ? `-m${a.slice(1)}` : `-mno-${a.slice(1)}`);
  return {
    text: parts.join(' '), kind: 'llvm', mcpu, mattr, mtriple, cflags,
    vectorLanes: vectorLanes(mcpu, mattr, cross),
    ccPrefix: cross ? `${mtriple}-` : undefined,
    ...(device !== undefined ? { device } : {}),
  };
}

/** The host of a GPU target: a CPU target, `llvm` (this machine) unless given. */
function parseGpuHost(hostText: string | undefined, hostWhere: string): Target {
  const hostParts = (hostText ?? 'llvm').trim().split(/\s+/);
  if (hostParts[0] !== 'llvm' && hostParts[0] !== 'c') {
    throw new UserError(`${hostWhere}: the host of a GPU target is a CPU target ('llvm', e.g. "llvm -mtriple=aarch64-linux-gnu"), got "${hostParts.join(' ')}"`);
  }
  return parseTarget(hostParts.join(' '), hostWhere);
}

/**
 * The options of GPU target `text` (`parts`: its tokens, the kind first): the hardware
 * parameters of GPU_OPTIONS, checked, into the result; the kind's own options (`own`, by
 * name) to their handler. Anything else, or an option given twice, is a UserError naming
 * `expected` (the own options) beside the parameters.
 */
function gpuOptions(text: string, parts: readonly string[], where: string, own: Readonly<Record<string, (value: string) => void>>, expected: string): Partial<GpuParams> {
  const overrides: Partial<GpuParams> = {};
  const seen = new Set<string>();
  for (const opt of parts.slice(1)) {
    const m = /^-([a-z_]+)=(.*)$/.exec(opt);
    const name = m?.[1];
    const spec = GPU_OPTIONS.find((o) => o.option === name);
    const handler = name !== undefined && Object.hasOwn(own, name) ? own[name] : undefined;
    if (!m || (!handler && !spec)) {
      const cpu = m && ['mcpu', 'mattr', 'mtriple'].includes(m[1]) ? ` (-${m[1]} belongs to the host: --host or targets.<name>.host, e.g. "llvm -mtriple=aarch64-linux-gnu")` : '';
      throw new UserError(`${where}: unknown option '${opt}' in "${text}"${cpu}; expected ${expected} or ${gpuOptionsList()}`);
    }
    if (seen.has(m[1])) throw new UserError(`${where}: -${m[1]} is given twice in "${text}"; give it once`);
    seen.add(m[1]);
    const value = m[2];
    if (handler) {
      handler(value);
      continue;
    }
    const problem = paramProblem(spec!, /^[1-9]\d*$/.test(value) ? Number(value) : NaN);
    if (problem) throw new UserError(`${where}: bad -${spec!.option} '${value}' in "${text}"; ${problem}`);
    overrides[spec!.key] = Number(value);
  }
  return overrides;
}

/** The GPU_OPTIONS of `overrides` as target options, in a normalised target string. */
const gpuOptionsText = (overrides: Partial<GpuParams>): string[] =>
  GPU_OPTIONS.filter((o) => overrides[o.key] !== undefined).map((o) => `-${o.option}=${overrides[o.key]}`);

function parseOpencl(text: string, parts: readonly string[], where: string, hostText: string | undefined, hostWhere: string): Target {
  let device: string | undefined;
  const overrides = gpuOptions(text, parts, where, {
    device: (value) => {
      if (!(OPENCL_DEVICES as readonly string[]).includes(value)) {
        throw new UserError(`${where}: unknown OpenCL device '-device=${value}' in "${text}"; known: ${OPENCL_DEVICES.map((d) => `-device=${d}`).join(', ')}, or no -device for any other OpenCL device (its parameters: ${gpuOptionsList()})`);
      }
      device = value;
    },
  }, '-device=mali');
  const threads = overrides.maxThreadsPerBlock ?? (device === 'mali' ? MALI_GPU_PARAMS.maxThreadsPerBlock : undefined);
  if (overrides.warpSize !== undefined && threads !== undefined && overrides.warpSize > threads) {
    throw new UserError(`${where}: -thread_warp_size=${overrides.warpSize} is more than the ${threads} threads per block of "${text}"`);
  }
  const host = parseGpuHost(hostText, hostWhere);
  const normalised = ['opencl', ...(device ? [`-device=${device}`] : []), ...gpuOptionsText(overrides)].join(' ');
  // Plain `opencl` lowers its pinned threads and shared memory to the device's limits: asked
  // on first use (not at parse time: config validation and Nx graph construction parse targets).
  const needsDevice = device === undefined && (overrides.maxThreadsPerBlock === undefined || overrides.maxSharedMemoryPerBlock === undefined);
  let gpu: GpuParams | undefined = needsDevice ? undefined : openclGpuParams(device, overrides);
  const vectorUnitBytes = overrides.vectorUnitBytes ?? (device === 'mali' ? MALI_GPU_PARAMS : OPENCL_GPU_PARAMS).vectorUnitBytes;
  return {
    text: normalised, kind: 'opencl', ...(device ? { device } : {}), mattr: [],
    vectorLanes: vectorUnitBytes / 4, cflags: host.cflags, ccPrefix: host.ccPrefix, host,
    get gpu(): GpuParams {
      if (gpu === undefined) {
        const probe = openclDevice();
        gpu = openclGpuParams(device, overrides, 'device' in probe ? probe.device : undefined);
      }
      return gpu;
    },
  };
}

/**
 * `cuda`: TVM's CUDA HardwareParams (search_task.cc, GetDefaultHardwareParams for kDLCUDA:
 * the device's max shared memory and threads per block, warp size 32, max_vthread_extent =
 * warp_size / 4, 16-byte vectors, 64-byte cache lines, no check on local memory), with the
 * values every NVIDIA GPU since Maxwell reports: 1024 threads and 48 KiB of shared memory per
 * block. 48 KiB is also the most a kernel may declare statically (`__shared__` arrays, which
 * is what the CUDA renderer writes); more needs dynamic shared memory and an opt-in.
 */
export const CUDA_GPU_PARAMS: Readonly<GpuParams> = Object.freeze({
  maxSharedMemoryPerBlock: 49152,
  maxLocalMemoryPerBlock: INT32_MAX,
  maxThreadsPerBlock: 1024,
  maxVthreadExtent: 8,
  warpSize: 32,
  vectorUnitBytes: 16,
  cacheLineBytes: 64,
});

/** Registers per block by architecture where it is not 64 Ki (CUDA C Programming Guide, "Technical Specifications per Compute Capability"). */
const CUDA_REGISTERS_PER_BLOCK: Readonly<Record<string, number>> = { sm_53: 32768, sm_62: 32768 };
const CUDA_REGISTERS_PER_THREAD = 255;

/** Where a cuda target's -arch comes from when the string has none: this machine's GPU (engine/native/cuda.ts). */
export type CudaProbe = () => CudaAnswer;
export const cudaDevice: CudaProbe = () => cudaDeviceSync();

function parseCuda(text: string, parts: readonly string[], where: string, hostText: string | undefined, hostWhere: string, probe: CudaProbe = cudaDevice): Target {
  let arch: string | undefined;
  let registers: number | undefined;
  const overrides = gpuOptions(text, parts, where, {
    arch: (value) => {
      if (!/^sm_[1-9]\d{1,2}[af]?$/.test(value)) throw new UserError(`${where}: bad -arch '${value}' in "${text}"; expected sm_XX, the compute capability without its dot (e.g. sm_80 for 8.0, sm_90 for 9.0)`);
      arch = value;
    },
    max_registers_per_block: (value) => {
      const number = /^[1-9]\d*$/.test(value) ? Number(value) : NaN;
      if (!Number.isSafeInteger(number) || number < 256 || number > 1048576) throw new UserError(`${where}: bad -max_registers_per_block '${value}' in "${text}"; expected an integer from 256 to 1048576`);
      registers = number;
    },
  }, '-arch=sm_XX, -max_registers_per_block=N');
  if (arch === undefined) {
    // The local GPU's architecture, as TVM's cuda target takes it from the device.
    const found = probe();
    if (!('device' in found)) {
      throw new UserError(`${where}: "${text}" needs -arch=sm_XX (e.g. "cuda -arch=sm_80"): it defaults to this machine's GPU, and there is none (${found.error})`);
    }
    arch = found.device.arch;
  }
  const threads = overrides.maxThreadsPerBlock ?? CUDA_GPU_PARAMS.maxThreadsPerBlock;
  if (overrides.warpSize !== undefined && overrides.warpSize > threads) {
    throw new UserError(`${where}: -thread_warp_size=${overrides.warpSize} is more than the ${threads} threads per block of "${text}"`);
  }
  const host = parseGpuHost(hostText, hostWhere);
  const warpSize = overrides.warpSize ?? CUDA_GPU_PARAMS.warpSize;
  const gpu: GpuParams = { ...CUDA_GPU_PARAMS, maxVthreadExtent: Math.max(1, Math.floor(warpSize / 4)), ...overrides };
  const cuda: CudaParams = {
    arch,
    maxRegistersPerBlock: registers ?? CUDA_REGISTERS_PER_BLOCK[arch.replace(/[af]$/, '')] ?? 65536,
    maxRegistersPerThread: CUDA_REGISTERS_PER_THREAD,
  };
  const normalised = ['cuda', `-arch=${arch}`,
    ...gpuOptionsText(overrides),
    ...(registers !== undefined ? [`-max_registers_per_block=${registers}`] : [])].join(' ');
  return {
    text: normalised, kind: 'cuda', mattr: [], vectorLanes: gpu.vectorUnitBytes / 4,
    cflags: host.cflags, ccPrefix: host.ccPrefix, host, gpu, cuda,
  };
}

/**
 * `text` with the hardware parameters of a config's `hardwareParams` appended as target
 * options, normalised as parseTarget normalises (so `--target "opencl -max_threads_per_block=128"`
 * and `{ target: opencl, hardwareParams: { maxThreadsPerBlock: 128 } }` are one target). No
 * parameters: `text` unchanged. `where` names the parameters in messages.
 */
export function withHardwareParams(text: string, params: Partial<GpuParams> | undefined, where = 'hardwareParams'): string {
  const given = GPU_OPTIONS.filter((o) => params?.[o.key] !== undefined);
  if (given.length === 0) return text;
  const parsed = parseTarget(text, where.replace(/hardwareParams$/, 'target'), undefined);
  if (!isGpu(parsed)) throw new UserError(`${where}: hardware parameters apply to GPU targets (opencl, cuda); "${parsed.text}" is a CPU target`);
  const tokens = text.trim().split(/\s+/);
  for (const o of given) {
    const value = params![o.key]!;
    const problem = paramProblem(o, value);
    if (problem) throw new UserError(`${where}.${o.key}: ${problem}, got ${JSON.stringify(value)}`);
    if (tokens.some((t) => t.startsWith(`-${o.option}=`))) {
      throw new UserError(`${where}.${o.key}: the target string "${parsed.text}" gives -${o.option} already; give it once`);
    }
  }
  return parseTarget([...tokens, ...given.map((o) => `-${o.option}=${params![o.key]}`)].join(' '), where).text;
}

/**
 * Refuses a GPU target whose host is another architecture for a command that runs the
 * compiled model here (benchmark). Tune is not one: it measures on this machine's device
 * with candidates built for this machine, whatever host compile will use.
 */
export function checkRunsHere(target: Target, command: string, hostWhere = '--host'): void {
  if (target.host?.ccPrefix === undefined) return;
  throw new UserError(`${hostWhere}: ${command} runs on this machine and its ${target.kind === 'cuda' ? 'CUDA' : 'OpenCL'} device, so the host must be this machine; ` +
    `"${target.host.text}" is another architecture: a cross host is for compile (copy the compiled folder to such a machine)`);
}

function vectorLanes(mcpu: string | undefined, mattr: readonly string[], cross: boolean): number {
  if (mattr.some((a) => a.startsWith('+avx512'))) return 16;
  if (mattr.includes('+avx2') || mattr.includes('+avx')) return 8;
  if (cross) return 4;
  if (!mcpu || mcpu === 'native') {
    const flags = hostFlags();
    if (flags.has('avx512f')) return 16;
    if (flags.has('avx2')) return 8;
    return 4;
  }
  return /znver4|znver5|skylake-avx512|icelake|sapphirerapids|cascadelake|tigerlake/.test(mcpu) ? 16 : 8;
}

/** The CPU's model name ('AMD EPYC 7763 64-Core Processor'), or 'unknown'. */
export function cpuModel(): string {
  let model = 'unknown';
  try {
    model = readFileSync('/proc/cpuinfo', 'utf8').split('\n').find((l) => l.startsWith('model name'))?.split(':')[1]?.trim() ?? model;
  } catch { /* not Linux: fall back to os.cpus() */ }
  return model === 'unknown' ? cpus()[0]?.model ?? model : model;
}

/** What the fingerprint of an OpenCL target says about the device when there is none. */
export const NO_OPENCL_DEVICE = 'no-opencl-device';

/** What the fingerprint of a CUDA target says about the device when there is none. */
export const NO_CUDA_DEVICE = 'no-cuda-device';

/** The part of an OpenCL device that identifies it in a fingerprint (not its free-form limits). */
export const openclIdentity = (d: OpenclDevice): Pick<OpenclDevice, 'platform' | 'platformVersion' | 'device' | 'deviceVersion' | 'driverVersion'> => ({
  platform: d.platform, platformVersion: d.platformVersion, device: d.device, deviceVersion: d.deviceVersion, driverVersion: d.driverVersion,
});

/**
 * What makes measurements on this machine comparable. CPU targets: the CPU model, its vector
 * features, core count and the target string. OpenCL targets: the platform (name, version),
 * the device (name, version), the driver version, the target string and the CPU that drives
 * the device (its model and architecture), or NO_OPENCL_DEVICE where `probe` finds none;
 * not the host target string, so records tuned with the default host apply to a compile for a
 * cross host on the same machine. Records carry it; Nx caches by it.
 */
export function hardwareFingerprint(target: Target, probe: OpenclProbe = openclDevice, cudaProbe: CudaProbe = cudaDevice): string {
  let text: string;
  if (target.kind === 'cuda') {
    // The GPU (name, driver) where nvidia-smi finds one, else only the architecture the
    // target names: records measured on a GPU never apply to a machine that has none.
    const found = cudaProbe();
    const cuda = 'device' in found ? { name: found.device.name, driver: found.device.driverVersion, arch: found.device.arch } : { arch: target.cuda?.arch, device: NO_CUDA_DEVICE };
    text = JSON.stringify({ cuda, target: target.text, host: cpuModel(), arch: process.arch });
  } else if (target.kind === 'opencl') {
    const found = probe();
    const opencl = 'device' in found ? openclIdentity(found.device) : NO_OPENCL_DEVICE;
    text = JSON.stringify({ opencl, target: target.text, host: cpuModel(), arch: process.arch });
  } else {
    const model = cpuModel();
    const features = [...hostFlags()].filter((f) => /^(avx|fma|sse4|neon|asimd|sve)/.test(f)).sort();
    text = JSON.stringify({ model, features, cores: cpus().length, target: target.text, arch: process.arch });
  }
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}
