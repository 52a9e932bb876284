// `opencl` and `opencl -device=mali`: OpenCL devices, with a CPU host target (`llvm` by
// default: this machine). Kernels are rendered as OpenCL C (codegen/opencl.ts) and built by
// the device's driver when the host library opens it; the host library is C, compiled for
// the host (codegen/opencl-host.ts, the runtime native/opencl/tt_opencl.c).

import path from 'node:path';
import { lowerGpu } from '../codegen/gpu';
import { launchTable, OPENCL_DIALECT, OPENCL_PRELUDE, renderOpencl, renderOpenclKernels, type OpenclLaunchTable } from '../codegen/opencl';
import { openclCandidateSource, openclModelSource } from '../codegen/opencl-host';
import { UserError } from '../errors';
import { promises as fs } from 'node:fs';
import { findCompiler, memoAsync, OPENCL_HOST_CFLAGS, OPENCL_RUNTIME_LIBS, openclDescribeLibraryFile, openclRuntimeObject } from '../native/build';
import { openclDeviceSync, selectedOpenclDevice, type Description, type OpenclAnswer, type OpenclDevice } from '../native/opencl';
import { State } from '../schedule/state';
import { gpuOptions, gpuOptionsText, parseGpuHost } from './gpu-options';
import { gpuOptionsList, INT32_MAX } from './gpu-params';
import { cpuModel } from './host';
import { gpuModel, type OpenclProbe, type ParseContext, type TargetKind } from './kind';
import type { GpuParams, GpuTarget, Target } from './types';

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

/** The OpenCL device this process measures on (engine/native/opencl.ts, which asks once per device selection). */
export const openclDevice: OpenclProbe = () => openclDeviceSync();

/** What the fingerprint of an OpenCL target says about the device when there is none. */
export const NO_OPENCL_DEVICE = 'no-opencl-device';

/** The part of an OpenCL device that identifies it in a fingerprint (not its free-form limits). */
export const openclIdentity = (d: OpenclDevice): Pick<OpenclDevice, 'platform' | 'platformVersion' | 'device' | 'deviceVersion' | 'driverVersion'> => ({
  platform: d.platform, platformVersion: d.platformVersion, device: d.device, deviceVersion: d.deviceVersion, driverVersion: d.driverVersion,
});

function parseOpencl(ctx: ParseContext): Target {
  const { text, where } = ctx;
  let device: string | undefined;
  const overrides = gpuOptions(ctx, {
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
  const host = parseGpuHost(ctx);
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

/** The exported function of the describe library (tt_remote's info `symbol`). */
export const OPENCL_DESCRIBE_SYMBOL = 'tt_opencl_describe';

const describeBuilds = memoAsync<Buffer>();

/**
 * The describe library for the target's host (its -mtriple cross compiler, else this
 * machine's), as bytes: native/opencl/tt_opencl_describe.c, the OpenCL runtime's own
 * listing, linked with the runtime object OpenCL candidates link, so a device behind a
 * runner lists its platforms and devices as `tensortune fingerprint --target opencl` lists
 * this machine's.
 */
export function openclDescribeLibrary(target: Target): Promise<Buffer> {
  const cc = target.ccPrefix ? `${target.ccPrefix}gcc` : undefined;
  return describeBuilds(cc ?? '', async () => fs.readFile(await openclDescribeLibraryFile(await findCompiler(cc))));
}

/** The OpenCL device the device's runtime selects (what its candidates open), or why there is none. */
export function describedOpenclDevice(described: unknown, describeError: string | undefined): OpenclAnswer {
  if (described === undefined) return { error: describeError || 'the device did not describe its OpenCL platforms' };
  const d = described as Description;
  if (!d || !Array.isArray(d.platforms)) return { error: `the device's OpenCL description is not tt_cl_describe's: ${JSON.stringify(described).slice(0, 200)}` };
  return selectedOpenclDevice(d, "the device's OpenCL runtime");
}

/** The file beside model.so holding the OpenCL source, for reading. */
export const OPENCL_SOURCE_FILE = 'kernels.cl';

const gpuOf = (target: Target): GpuTarget['gpu'] => {
  if (!target.gpu) throw new Error(`"${target.text}" has no GPU parameters`);
  return target.gpu;
};

export const OPENCL_KIND: TargetKind = {
  name: 'opencl',
  family: 'gpu',
  dialect: OPENCL_DIALECT,
  label: 'OpenCL',
  example: 'opencl -device=mali',
  parse: parseOpencl,
  // The platform (name, version), the device (name, version), the driver version, the target
  // string and the CPU that drives the device, or NO_OPENCL_DEVICE where the probe finds
  // none; not the host target string, so records tuned with the default host apply to a
  // compile for a cross host on the same machine.
  identity: (target, probes) => {
    const found = (probes.opencl ?? openclDevice)();
    const opencl = 'device' in found ? openclIdentity(found.device) : NO_OPENCL_DEVICE;
    return JSON.stringify({ opencl, target: target.text, host: cpuModel(), arch: process.arch });
  },
  defaultOptions: (target) => ({ vectorLanes: target.vectorLanes, gpu: gpuOf(target) }),
  gpuSpace: (target) => ({ params: gpuOf(target), mali: target.device === 'mali' }),
  candidate: {
    // The program's host side in C (the OpenCL source embedded), with the device hooks
    // tt_measure calls around the timed runs. A schedule that does not fit the device's
    // limits is refused here, before anything is built.
    render: (dag, steps, target, packable, symbol) => {
      try {
        const program = lowerGpu(State.replay(dag, steps), 'tt_candidate_kernel', gpuOf(target), { packable });
        const { source, table } = renderOpencl(program, { vectorLanes: target.vectorLanes });
        return { ok: true, code: openclCandidateSource(symbol, source, table), layouts: program.layouts };
      } catch (e) {
        return { ok: false, message: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
      }
    },
    cflags: OPENCL_HOST_CFLAGS,
    link: async (compiler) => ({ objects: [await openclRuntimeObject(compiler)], libs: OPENCL_RUNTIME_LIBS }),
  },
  model: {
    gpu: gpuModel<OpenclLaunchTable['launches'][number]>({
      label: 'OpenCL',
      prelude: OPENCL_PRELUDE,
      sourceFile: OPENCL_SOURCE_FILE,
      render: (program, vectorLanes) => {
        const table = launchTable(program);
        return {
          code: renderOpenclKernels(program, { vectorLanes }), table,
          manifest: table.launches.map((l) => ({ kernel: l.kernel, global: [...l.global], local: [...l.local] })),
        };
      },
      hostSource: (info, device, table, roles, buffers) => openclModelSource(info, device.source, table, roles, buffers),
      hostCflags: OPENCL_HOST_CFLAGS,
      runtimeObject: (compiler) => openclRuntimeObject(compiler),
      libs: OPENCL_RUNTIME_LIBS,
      manifestExtra: (target) => ({ host: target.host!.text, opencl_source: OPENCL_SOURCE_FILE }),
      summary: ({ outDir, launches }) => ({ opencl: { launches, source: path.join(outDir, OPENCL_SOURCE_FILE) } }),
    }),
  },
  // The candidate library carries the OpenCL runtime, which opens the device's libOpenCL.
  runner: {
    tune: true,
    benchmark: false,
    describe: {
      symbol: OPENCL_DESCRIBE_SYMBOL,
      library: openclDescribeLibrary,
      device: describedOpenclDevice,
      identity: (answer) => ({ opencl: 'device' in answer ? openclIdentity(answer.device) : NO_OPENCL_DEVICE }),
    },
  },
};
