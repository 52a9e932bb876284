// Compiling a network for an OpenCL target: graph passes -> fused groups (as on CPU) -> one
// GPU program per distinct (group, schedule), lowered for the device's limits and rendered
// as OpenCL C -> one OpenCL source for the whole model (one prelude, every program's
// kernels, named tt_k_<hash>_k<i>) -> a host library in C: model.c holds that source as a
// string, the buffer and launch tables of native/include/tt_opencl.h and the tensortune ABI
// (tt_init / tt_run / ...), and is compiled with the runtime native/opencl/tt_opencl.c by
// the host's compiler (the cross compiler for `--host "llvm -mtriple=aarch64-linux-gnu"`)
// into model.so. The folder also gets params.bin (packed as on CPU), manifest.json (the
// target, its host, and each kernel's launches) and kernels.cl, a copy of the source for
// reading: the copy that runs is the one embedded in model.so.
//
// At run time: tt_init opens the OpenCL device (TT_OPENCL_PLATFORM / TT_OPENCL_DEVICE),
// builds the source and uploads the params once, each constant into a read-only buffer of
// its own; tt_run uploads the inputs, makes every launch in order on one in-order queue and
// reads the outputs back. Intermediate tensors live in device buffers that are reused once
// their last reader has run (the CPU memory plan's rule, with whole buffers instead of
// offsets in one arena: OpenCL 1.2 kernels take buffers, not pointers into them).
//
// A tuned schedule that does not replay or lower for the device (too many threads, too
// much shared memory, ...) gives way to the task's default schedule with a warning, as a
// tuned kernel that does not compile does on CPU.

import path from 'node:path';
import type { GpuProgram } from '../codegen/gpu';
import { lowerGpu } from '../codegen/gpu';
import { openclModelSource } from '../codegen/opencl-host';
import { launchTable, OPENCL_PRELUDE, renderOpenclKernels, type BufferRole, type OpenclLaunchTable } from '../codegen/opencl';
import { constantPlaceholders, describeGroup } from '../graph/extract';
import type { FusedGroup } from '../graph/fuse';
import type { Graph } from '../graph/graph';
import { numElements } from '../ir/tensor';
import { nativeIncludeDir, OPENCL_HOST_CFLAGS, OPENCL_RUNTIME_LIBS, openclRuntimeObject } from '../native/build';
import { defaultOptionsOf, defaultSchedule } from '../schedule/defaults';
import { State } from '../schedule/state';
import { checkRunsHere, isGpu, parseTarget } from '../target';
import { UserError } from '../errors';
import type { Manifest, ManifestLaunch } from './manifest';
import {
  kernelFields, modelInfoSource, packParams, sha, startCompile, writeModel,
  type CompileOptions, type CompileResult, type KernelInfo, type TunedSchedule,
} from './model-common';

/** The file beside model.so holding the OpenCL source, for reading. */
export const OPENCL_SOURCE_FILE = 'kernels.cl';

/** Bytes of tt_last_error's buffer: room for the first lines of a build log. */
const ERROR_BYTES = 4096;

/** A program of the model: a kernel as the manifest lists it, its GPU program and OpenCL kernels. */
interface PlannedProgram extends KernelInfo {
  program: GpuProgram;
  table: OpenclLaunchTable;
  /** Its kernels in OpenCL C. */
  code: string;
}

/**
 * The model's device buffers: one per input, output and stored constant; intermediates
 * (group outputs that are not model outputs, and each program's own temporaries) share
 * buffers once the tensor a buffer held is dead. Roles as tt_opencl.h's.
 */
export interface BufferPlan {
  buffers: { name: string; size: number; role: 'in' | 'out' | 'temp' | 'param' }[];
  /** Buffer of each model input, output (graph.outputs order) and params entry. */
  inputs: number[];
  outputs: number[];
  params: { buffer: number; offset: number }[];
  /** Per group, the model buffer of each of its program's buffers. */
  groupBuffers: Map<number, number[]>;
  /** Floats in buffers for intermediates. */
  intermediateFloats: number;
}

export function planBuffers(
  graph: Graph, groups: readonly FusedGroup[], programOf: (group: FusedGroup) => Pick<PlannedProgram, 'symbol' | 'program'> & { table: Pick<OpenclLaunchTable, 'buffers'> },
  paramOffsets: ReadonlyMap<string, number>, paramEntries: readonly { offset: number; count: number }[],
): BufferPlan {
  const buffers: BufferPlan['buffers'] = [];
  const add = (name: string, size: number, role: BufferPlan['buffers'][number]['role']): number => buffers.push({ name, size: Math.max(1, size), role }) - 1;
  const inputIds = graph.nodes.filter((n) => n.op === 'input').map((n) => n.id);
  const inputs = inputIds.map((id, i) => add(`input${i}`, numElements(graph.node(id).shape), 'in'));
  const outputs = graph.outputs.map((id, i) => add(`output${i}`, numElements(graph.node(id).shape), 'out'));
  const paramBuffer = new Map<number, number>();
  const params = paramEntries.map((e, i) => {
    const buffer = add(`param${i}`, e.count, 'param');
    paramBuffer.set(e.offset, buffer);
    return { buffer, offset: e.offset };
  });

  // Intermediates: slots (whole buffers) reused once free, best fit, grown when none fits.
  const lastUse = new Map<number, number>();
  groups.forEach((grp, i) => grp.inputs.forEach((id) => lastUse.set(id, i)));
  const slots: { buffer: number; busyUntil: number }[] = [];
  const held = new Map<number, number>(); // node id -> buffer
  const take = (size: number, at: number, until: number): number => {
    const free = slots.filter((s) => s.busyUntil < at);
    const fits = free.filter((s) => buffers[s.buffer].size >= size).sort((a, b) => buffers[a.buffer].size - buffers[b.buffer].size);
    const slot = fits[0] ?? free.sort((a, b) => buffers[b.buffer].size - buffers[a.buffer].size)[0];
    if (slot) {
      buffers[slot.buffer].size = Math.max(buffers[slot.buffer].size, size);
      slot.busyUntil = until;
      return slot.buffer;
    }
    const buffer = add(`work${slots.length}`, size, 'temp');
    slots.push({ buffer, busyUntil: until });
    return buffer;
  };
  const groupBuffers = new Map<number, number[]>();
  groups.forEach((group, i) => {
    const p = programOf(group);
    const nIn = group.dag.inputs.length;
    if (p.program.args.length - p.program.outputs !== nIn) throw new Error(`buffer plan: ${p.symbol} takes ${p.program.args.length - p.program.outputs} inputs, its group has ${nIn}`);
    const bufferOf = (id: number, input?: number): number => {
      const out = graph.outputs.indexOf(id);
      if (out >= 0) return outputs[out];
      const inp = inputIds.indexOf(id);
      if (inp >= 0) return inputs[inp];
      const offset = input === undefined ? undefined : paramOffsets.get(`${group.id}:${input}`);
      if (offset !== undefined) return paramBuffer.get(offset)!;
      const b = held.get(id);
      if (b === undefined) throw new Error(`buffer plan: node ${id} is read before it is computed`);
      return b;
    };
    if (!graph.outputs.includes(group.output)) {
      held.set(group.output, take(numElements(graph.node(group.output).shape), i, Math.max(i, lastUse.get(group.output) ?? i)));
    }
    groupBuffers.set(group.id, p.table.buffers.map((b, j) => {
      if (j < nIn) return bufferOf(group.inputs[j], j);
      if (b.role === 'out') return bufferOf(group.output);
      return take(b.size, i, i); // the program's own temporaries: free for the next group
    }));
  });
  const intermediateFloats = slots.reduce((n, s) => n + buffers[s.buffer].size, 0);
  return { buffers, inputs, outputs, params, groupBuffers, intermediateFloats };
}

/**
 * The model's tables over its buffer plan: every group's launches in order, their arguments
 * the model's buffers; and the buffers that hold params (their role in the host's tables).
 */
export function modelTable<L extends { args: readonly number[] }>(
  plan: BufferPlan, groups: readonly FusedGroup[], launchesOf: (group: FusedGroup) => readonly L[],
): { table: { buffers: { name: string; size: number; role: BufferRole }[]; launches: L[] }; roles: Map<number, 'param'> } {
  return {
    table: {
      buffers: plan.buffers.map((b) => ({ name: b.name, size: b.size, role: b.role === 'param' ? 'in' : b.role })),
      launches: groups.flatMap((group) => {
        const map = plan.groupBuffers.get(group.id)!;
        return launchesOf(group).map((l) => ({ ...l, args: l.args.map((a) => map[a]) }));
      }),
    },
    roles: new Map(plan.buffers.flatMap((b, i) => (b.role === 'param' ? [[i, 'param' as const]] : []))),
  };
}

export async function compileOpenclModel(opts: CompileOptions): Promise<CompileResult> {
  const target = opts.target;
  if (!isGpu(target)) throw new Error(`compileOpenclModel: "${target.text}" is not an OpenCL target`);
  const start = await startCompile(opts);
  const { log, warn, graph, groups, compiler, names } = start;

  // One program per distinct (DAG, schedule); identical layers share it.
  const programs = new Map<string, PlannedProgram>();
  const groupProgram = new Map<number, PlannedProgram>();
  const place = (group: FusedGroup, tuned: TunedSchedule | undefined): void => {
    const steps = tuned?.steps ?? defaultSchedule(group.dag, defaultOptionsOf(target));
    const lowered = lowerGpu(State.replay(group.dag, steps), 'tt_k', target.gpu, { packable: new Set(constantPlaceholders(graph, group)) });
    const symbol = `tt_k_${sha(renderOpenclKernels(lowered, { vectorLanes: target.vectorLanes })).slice(0, 16)}`;
    let planned = programs.get(symbol);
    if (!planned) {
      const program: GpuProgram = { ...lowered, name: symbol, kernels: lowered.kernels.map((k, i) => ({ ...k, name: `${symbol}_k${i}` })) };
      const code = renderOpenclKernels(program, { vectorLanes: target.vectorLanes });
      const table = launchTable(program);
      planned = {
        symbol, groups: [], ...kernelFields(group, describeGroup(graph, group), tuned),
        objectHash: sha(code).slice(0, 24), compiled: false,
        launches: table.launches.map((l): ManifestLaunch => ({ kernel: l.kernel, global: [...l.global], local: [...l.local] })),
        program, table, code,
      };
      programs.set(symbol, planned);
    }
    planned.groups.push(group.id);
    groupProgram.set(group.id, planned);
  };
  placeGpuGroups(graph, groups, opts.schedules, new Set<string>(), target.text, warn, place);

  const packed = packParams(graph, groups, (group) => groupProgram.get(group.id)!.program.layouts);
  const plan = planBuffers(graph, groups, (group) => groupProgram.get(group.id)!, packed.offsets, packed.entries);
  const source = `${OPENCL_PRELUDE}\n${[...programs.values()].map((p) => p.code).join('\n')}`;
  const { table, roles } = modelTable(plan, groups, (group) => groupProgram.get(group.id)!.table.launches);
  const inputIds = graph.nodes.filter((n) => n.op === 'input').map((n) => n.id);
  const modelC = openclModelSource(modelInfoSource(graph, inputIds, names, packed.values.length, ERROR_BYTES), source, table, roles, plan);
  log(`OpenCL: ${programs.size} kernel program(s), ${table.launches.length} launches, ${plan.buffers.length} device buffers`);

  const kernelList = [...programs.values()].map(({ program: _p, table: _t, code: _c, ...k }) => k);
  const runtime = await openclRuntimeObject(compiler);
  const files = await writeModel(opts, start, {
    source: modelC,
    extraFiles: { [OPENCL_SOURCE_FILE]: source },
    linkArgs: (modelSrc, library) => [
      ...OPENCL_HOST_CFLAGS, ...target.cflags, '-shared', '-fvisibility=hidden', `-I${nativeIncludeDir()}`,
      modelSrc, runtime, '-o', library, ...OPENCL_RUNTIME_LIBS,
    ],
    linkFailure: `building model.so for ${opts.outDir} (host "${target.host.text}") failed`,
    params: packed.values,
    built: { paramsCount: packed.values.length, workspaceBytes: plan.intermediateFloats * 4, kernels: kernelList },
    manifestExtra: { host: target.host.text, opencl_source: OPENCL_SOURCE_FILE },
  });
  return {
    ...files, kernels: kernelList, compiled: 0, reused: 0,
    opencl: { launches: table.launches.length, source: path.join(opts.outDir, OPENCL_SOURCE_FILE) },
  };
}

/**
 * Refuses a compiled model that cannot run here: an OpenCL model whose host library was
 * built for another architecture (its manifest's host). `where`: the manifest, for the message.
 */
export function checkModelRunsHere(m: Pick<Manifest, 'target' | 'host'>, command: string, where: string): void {
  if (m.host === undefined) return;
  const target = parseTarget(m.target, `${where} target`, m.host, `${where} host`);
  checkRunsHere(target, command, `${where} host`);
}

/**
 * Places every group of a GPU model: with its task's tuned schedule, else the default
 * GPU schedule. A tuned schedule that does not lower is refused (added to `refused`, one
 * warning per task) and its task falls back to the default; a default that does not lower
 * is a UserError. Shared by the OpenCL and CUDA models.
 */
export function placeGpuGroups(
  graph: Graph, groups: readonly FusedGroup[], schedules: ReadonlyMap<string, TunedSchedule> | undefined, refused: Set<string>,
  target: string, warn: (message: string) => void, place: (group: FusedGroup, tuned: TunedSchedule | undefined) => void,
): void {
  for (const group of groups) {
    const key = group.dag.workloadKey;
    const tuned = schedules?.get(key);
    if (tuned && !refused.has(key)) {
      try {
        place(group, tuned);
        continue;
      } catch (e) {
        refused.add(key);
        warn(`the tuned schedule of ${describeGroup(graph, group)} from ${tuned.source} does not lower for "${target}" (${(e as Error).message}); its task uses the default schedule`);
      }
    }
    try {
      place(group, undefined);
    } catch (e) {
      throw new UserError(`the default GPU schedule of ${describeGroup(graph, group)} does not lower for "${target}": ${(e as Error).message}`);
    }
  }
}
