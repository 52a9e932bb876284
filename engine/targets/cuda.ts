// `cuda -arch=sm_XX`: NVIDIA GPUs, with a CPU host target (`llvm` by default: this machine).
// Kernels are rendered as CUDA C++ (codegen/cuda.ts) and compiled by nvcc to a cubin for
// the target's architecture, and ptxas's resource usage of every kernel is held to the
// device's limits; the host library is C embedding the cubin (codegen/cuda-host.ts, the
// runtime native/cuda/tt_cuda.c).

import { promises as fs } from 'node:fs';
import path from 'node:path';
import { CUDA_DIALECT, CUDA_PRELUDE, cudaLaunchTable, renderCuda, renderCudaKernels, threadsOf, type CudaLaunchTable } from '../codegen/cuda';
import { cudaCandidateSource, cudaModelSource } from '../codegen/cuda-host';
import { lowerGpu, type GpuProgram } from '../codegen/gpu';
import { UserError } from '../errors';
import { CUDA_HOST_CFLAGS, CUDA_RUNTIME_LIBS, cudaRuntimeObject } from '../native/build';
import { cudaDeviceSync } from '../native/cuda';
import { checkArch, compileCubin, cudaLimitsOf, findNvcc, usageProblem } from '../native/nvcc';
import { State } from '../schedule/state';
import { gpuOptions, gpuOptionsText, parseGpuHost } from './gpu-options';
import { INT32_MAX } from './gpu-params';
import { cpuModel } from './host';
import { gpuModel, type CudaProbe, type ParseContext, type TargetKind } from './kind';
import type { CudaParams, GpuParams, Target } from './types';

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
export const cudaDevice: CudaProbe = () => cudaDeviceSync();

/** What the fingerprint of a CUDA target says about the device when there is none. */
export const NO_CUDA_DEVICE = 'no-cuda-device';

function parseCuda(ctx: ParseContext, probe: CudaProbe = cudaDevice): Target {
  const { text, where } = ctx;
  let arch: string | undefined;
  let registers: number | undefined;
  const overrides = gpuOptions(ctx, {
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
  const host = parseGpuHost(ctx);
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

/** The files beside model.so holding the CUDA source and (a copy of) the cubin. */
export const CUDA_SOURCE_FILE = 'kernels.cu';
export const cubinFile = (arch: string): string => `kernels.${arch}.cubin`;

const archOf = (target: Target): string => {
  if (!target.cuda) throw new Error(`"${target.text}" is not a CUDA target`);
  return target.cuda.arch;
};
const gpuOf = (target: Target): GpuParams => {
  if (!target.gpu) throw new Error(`"${target.text}" has no GPU parameters`);
  return target.gpu;
};

export const CUDA_KIND: TargetKind = {
  name: 'cuda',
  family: 'gpu',
  dialect: CUDA_DIALECT,
  label: 'CUDA',
  example: 'cuda -arch=sm_80',
  parse: (ctx) => parseCuda(ctx),
  // The GPU (name, driver) where nvidia-smi finds one, else only the architecture the
  // target names: records measured on a GPU never apply to a machine that has none.
  identity: (target, probes) => {
    const found = (probes.cuda ?? cudaDevice)();
    const cuda = 'device' in found ? { name: found.device.name, driver: found.device.driverVersion, arch: found.device.arch } : { arch: target.cuda?.arch, device: NO_CUDA_DEVICE };
    return JSON.stringify({ cuda, target: target.text, host: cpuModel(), arch: process.arch });
  },
  defaultOptions: (target) => ({ vectorLanes: target.vectorLanes, gpu: gpuOf(target) }),
  gpuSpace: (target) => ({ params: gpuOf(target), mali: false }),
  candidate: {
    // The device code (CUDA C++), compiled to a cubin by nvcc when the candidate is built. A
    // schedule over the device's limits is refused here, as for OpenCL; one whose registers
    // or shared memory ptxas finds over them is refused once compiled.
    render: (dag, steps, target, packable) => {
      let program: GpuProgram, rendered: { source: string; table: CudaLaunchTable };
      try {
        program = lowerGpu(State.replay(dag, steps), 'tt_candidate_kernel', gpuOf(target), { packable });
        rendered = renderCuda(program, { vectorLanes: target.vectorLanes });
      } catch (e) {
        return { ok: false, message: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
      }
      const threads = new Map(program.kernels.map((k) => [k.name, threadsOf(k)]));
      return {
        ok: true, code: rendered.source, layouts: program.layouts,
        device: async ({ cacheDir, timeoutMs, messageLines, symbol }) => {
          const arch = archOf(target);
          const nvcc = findNvcc();
          checkArch(nvcc, arch);
          const cubin = await compileCubin(nvcc, rendered.source, arch, { cacheDir, timeoutMs, messageLines });
          if (!cubin.ok) return { ok: false, error: cubin.kind === 'invalid' ? 'invalid_schedule' : 'compile_error', message: cubin.message };
          const limits = cudaLimitsOf(target);
          const problem = cubin.usage.map((u) => usageProblem(u, threads.get(u.kernel) ?? 1, limits)).find((p) => p !== undefined);
          if (problem) return { ok: false, error: 'invalid_schedule', message: `over the device's limits: ${problem}` };
          return { ok: true, host: cudaCandidateSource(symbol, await fs.readFile(cubin.cubin), rendered.table), usage: cubin.usage };
        },
      };
    },
    cflags: CUDA_HOST_CFLAGS,
    link: async (compiler) => ({ objects: [await cudaRuntimeObject(compiler)], libs: CUDA_RUNTIME_LIBS }),
  },
  model: {
    gpu: gpuModel<CudaLaunchTable['launches'][number]>({
      label: 'CUDA',
      prelude: CUDA_PRELUDE,
      sourceFile: CUDA_SOURCE_FILE,
      render: (program, vectorLanes) => {
        const table = cudaLaunchTable(program);
        return {
          code: renderCudaKernels(program, { vectorLanes }), table,
          manifest: table.launches.map((l) => ({ kernel: l.kernel, global: l.grid.map((g, d) => g * l.block[d]) as [number, number, number], local: [...l.block] })),
        };
      },
      check: (target) => checkArch(findNvcc(), archOf(target)),
      compileDevice: async (source, target, { cacheDir, timeoutMs, name }) => {
        const arch = archOf(target);
        const r = await compileCubin(findNvcc(), source, arch, { cacheDir, timeoutMs, messageLines: 20 });
        if (!r.ok) return { ok: false, message: `compiling the CUDA kernels of ${name} for ${arch} with nvcc failed:\n${r.message}` };
        return { ok: true, image: await fs.readFile(r.cubin), usage: r.usage };
      },
      overLimits: (usage, threads, target) => usageProblem(usage, threads, cudaLimitsOf(target)),
      hostSource: (info, device, table, roles, buffers) => cudaModelSource(info, device.image!, table, roles, buffers),
      hostCflags: CUDA_HOST_CFLAGS,
      runtimeObject: (compiler) => cudaRuntimeObject(compiler),
      libs: CUDA_RUNTIME_LIBS,
      extraFiles: (target, device) => ({ [cubinFile(archOf(target))]: device.image! }),
      imageNote: (target, device) => `, one cubin for ${archOf(target)} (${device.image!.length} bytes)`,
      manifestExtra: (target) => ({ host: target.host!.text, cuda_source: CUDA_SOURCE_FILE, cubin: cubinFile(archOf(target)) }),
      summary: ({ target, outDir, launches, spilling }) => ({
        cuda: { launches, source: path.join(outDir, CUDA_SOURCE_FILE), cubin: path.join(outDir, cubinFile(archOf(target))), spilling },
      }),
    }),
  },
  // CUDA's worker would need its driver on the device behind a runner, and nothing CUDA has run there yet.
  runner: { tune: false, benchmark: false },
};

