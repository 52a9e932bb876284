// Compiling a network for a CUDA target: graph passes -> fused groups -> one GPU program per
// distinct (group, schedule), lowered for the device's limits and rendered as CUDA C++
// (codegen/cuda.ts) -> one .cu for the whole model (one prelude, every program's kernels,
// named tt_k_<hash>_k<i>) -> nvcc compiles it once to a cubin for the target's -arch, and
// ptxas's resource usage of every kernel is held to the device's limits -> a host library in
// C: model.c holds the cubin as a byte array, the buffer and launch tables of
// native/include/tt_cuda.h and the tensortune ABI, and is compiled with the runtime
// native/cuda/tt_cuda.c by the host's compiler into model.so. The buffer plan is the OpenCL
// model's (model-opencl.ts, planBuffers): whole device buffers, intermediates reused once
// their last reader has run. The folder also gets params.bin, manifest.json, kernels.cu (the
// source, for reading) and kernels.<arch>.cubin (a copy of what model.so embeds).
//
// No GPU is needed to compile: nvcc and the host compiler are. At run time tt_init opens the
// device (TT_CUDA_DEVICE), loads the cubin and uploads the params; tt_run uploads the
// inputs, makes every launch in order and reads the outputs back.
//
// A tuned schedule that does not lower for the device, or whose kernel ptxas finds over the
// device's limits, gives way to the task's default schedule with a warning, as a tuned
// kernel that does not compile does on CPU.

import { promises as fs } from 'node:fs';
import path from 'node:path';
import { cudaLaunchTable, CUDA_PRELUDE, renderCudaKernels, threadsOf, type CudaLaunchTable } from '../codegen/cuda';
import { cudaModelSource } from '../codegen/cuda-host';
import { lowerGpu, type GpuProgram } from '../codegen/gpu';
import { constantPlaceholders, describeGroup } from '../graph/extract';
import type { FusedGroup } from '../graph/fuse';
import { CUDA_HOST_CFLAGS, CUDA_RUNTIME_LIBS, cudaRuntimeObject, nativeIncludeDir } from '../native/build';
import { checkArch, compileCubin, cudaLimitsOf, describeUsage, findNvcc, usageProblem, type KernelUsage } from '../native/nvcc';
import { defaultOptionsOf, defaultSchedule } from '../schedule/defaults';
import { State } from '../schedule/state';
import { isGpu } from '../target';
import { UserError } from '../errors';
import type { ManifestLaunch } from './manifest';
import {
  kernelFields, modelInfoSource, packParams, sha, startCompile, writeModel,
  type CompileOptions, type CompileResult, type KernelInfo, type TunedSchedule,
} from './model-common';
import { modelTable, placeGpuGroups, planBuffers } from './model-opencl';

/** The files beside model.so holding the CUDA source and (a copy of) the cubin. */
export const CUDA_SOURCE_FILE = 'kernels.cu';
export const cubinFile = (arch: string): string => `kernels.${arch}.cubin`;

/** Bytes of tt_last_error's buffer. */
const ERROR_BYTES = 4096;

interface PlannedProgram extends KernelInfo {
  program: GpuProgram;
  table: CudaLaunchTable;
  /** Its kernels in CUDA C++. */
  code: string;
}

export async function compileCudaModel(opts: CompileOptions): Promise<CompileResult> {
  const target = opts.target;
  if (!isGpu(target) || target.kind !== 'cuda' || !target.cuda) throw new Error(`compileCudaModel: "${target.text}" is not a CUDA target`);
  const arch = target.cuda.arch;
  const nvcc = findNvcc();
  checkArch(nvcc, arch);
  const start = await startCompile(opts);
  const { log, warn, graph, groups, compiler, names, timeoutMs } = start;
  const vectorLanes = target.vectorLanes;

  const programs = new Map<string, PlannedProgram>();
  const groupProgram = new Map<number, PlannedProgram>();
  const place = (group: FusedGroup, tuned: TunedSchedule | undefined): PlannedProgram => {
    const steps = tuned?.steps ?? defaultSchedule(group.dag, defaultOptionsOf(target));
    const lowered = lowerGpu(State.replay(group.dag, steps), 'tt_k', target.gpu, { packable: new Set(constantPlaceholders(graph, group)) });
    const symbol = `tt_k_${sha(renderCudaKernels(lowered, { vectorLanes })).slice(0, 16)}`;
    let planned = programs.get(symbol);
    if (!planned) {
      const program: GpuProgram = { ...lowered, name: symbol, kernels: lowered.kernels.map((k, i) => ({ ...k, name: `${symbol}_k${i}` })) };
      const code = renderCudaKernels(program, { vectorLanes });
      const table = cudaLaunchTable(program);
      planned = {
        symbol, groups: [], ...kernelFields(group, describeGroup(graph, group), tuned),
        objectHash: sha(code).slice(0, 24), compiled: false,
        launches: table.launches.map((l): ManifestLaunch => ({
          kernel: l.kernel, global: l.grid.map((g, d) => g * l.block[d]) as ManifestLaunch['global'], local: [...l.block],
        })),
        program, table, code,
      };
      programs.set(symbol, planned);
    }
    planned.groups.push(group.id);
    groupProgram.set(group.id, planned);
    return planned;
  };
  /** Tasks whose tuned schedule was refused (one warning each). */
  const refused = new Set<string>();
  const placeAll = (): void => {
    programs.clear();
    groupProgram.clear();
    placeGpuGroups(graph, groups, opts.schedules, refused, target.text, warn, place);
  };

  // nvcc once for the whole model; a tuned kernel ptxas finds over the limits falls back to
  // its default schedule and the model is compiled again (at most once more: defaults only
  // change where a tuned schedule was refused).
  const limits = cudaLimitsOf(target);
  const cacheDir = path.join(opts.cacheDir, 'cubin');
  let source = '';
  let cubin: { path: string; usage: KernelUsage[] } | undefined;
  for (let attempt = 0; attempt < 2 && !cubin; attempt++) {
    placeAll();
    source = `${CUDA_PRELUDE}\n${[...programs.values()].map((p) => p.code).join('\n')}`;
    const r = await compileCubin(nvcc, source, arch, { cacheDir, timeoutMs, messageLines: 20 });
    if (!r.ok) throw new UserError(`compiling the CUDA kernels of ${opts.name} for ${arch} with nvcc failed:\n${r.message}`);
    const kernelProgram = new Map([...programs.values()].flatMap((p) => p.program.kernels.map((k) => [k.name, { p, threads: threadsOf(k) }] as const)));
    const over = r.usage.flatMap((u) => {
      const owner = kernelProgram.get(u.kernel);
      const problem = owner && usageProblem(u, owner.threads, limits);
      return problem ? [{ owner: owner.p, problem }] : [];
    });
    if (over.length === 0) { cubin = { path: r.cubin, usage: r.usage }; break; }
    const tunedOver = over.filter((o) => o.owner.schedule === 'tuned');
    if (tunedOver.length < over.length || attempt === 1) {
      throw new UserError(`a default CUDA kernel of ${opts.name} is over ${target.text}'s limits: ${over.find((o) => o.owner.schedule !== 'tuned')?.problem ?? over[0].problem}`);
    }
    for (const o of tunedOver) {
      if (refused.has(o.owner.key)) continue;
      refused.add(o.owner.key);
      warn(`the tuned schedule of ${o.owner.desc} from ${o.owner.source} is over "${target.text}"'s limits once compiled (${o.problem}); its task uses the default schedule`);
    }
  }
  const image = await fs.readFile(cubin!.path);
  const spilling = cubin!.usage.filter((u) => u.spillStores > 0 || u.spillLoads > 0);
  for (const u of spilling) log(`ptxas: ${u.kernel} spills (${describeUsage(u)})`);

  const packed = packParams(graph, groups, (group) => groupProgram.get(group.id)!.program.layouts);
  const plan = planBuffers(graph, groups, (group) => groupProgram.get(group.id)!, packed.offsets, packed.entries);
  const { table, roles } = modelTable(plan, groups, (group) => groupProgram.get(group.id)!.table.launches);
  const inputIds = graph.nodes.filter((n) => n.op === 'input').map((n) => n.id);
  const modelC = cudaModelSource(modelInfoSource(graph, inputIds, names, packed.values.length, ERROR_BYTES), image, table, roles, plan);
  log(`CUDA: ${programs.size} kernel program(s), ${table.launches.length} launches, ${plan.buffers.length} device buffers, one cubin for ${arch} (${image.length} bytes)`);

  const kernelList = [...programs.values()].map(({ program: _p, table: _t, code: _c, ...k }) => k);
  const runtime = await cudaRuntimeObject(compiler);
  const files = await writeModel(opts, start, {
    source: modelC,
    extraFiles: { [CUDA_SOURCE_FILE]: source, [cubinFile(arch)]: image },
    linkArgs: (modelSrc, library) => [
      ...CUDA_HOST_CFLAGS, ...target.cflags, '-shared', '-fvisibility=hidden', `-I${nativeIncludeDir()}`,
      modelSrc, runtime, '-o', library, ...CUDA_RUNTIME_LIBS,
    ],
    linkFailure: `building model.so for ${opts.outDir} (host "${target.host.text}") failed`,
    params: packed.values,
    built: { paramsCount: packed.values.length, workspaceBytes: plan.intermediateFloats * 4, kernels: kernelList },
    manifestExtra: { host: target.host.text, cuda_source: CUDA_SOURCE_FILE, cubin: cubinFile(arch) },
  });
  return {
    ...files, kernels: kernelList, compiled: 0, reused: 0,
    cuda: {
      launches: table.launches.length, source: path.join(opts.outDir, CUDA_SOURCE_FILE),
      cubin: path.join(opts.outDir, cubinFile(arch)), spilling: spilling.length,
    },
  };
}
