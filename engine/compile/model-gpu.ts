// Compiling a network for a GPU target, whatever its kind: graph passes -> fused groups (as
// on CPU) -> one GPU program per distinct (group, schedule), lowered for the device's limits
// and rendered in the kind's language (its record's model backend: OpenCL C, CUDA C++) ->
// one source for the whole model (one prelude, every program's kernels, named
// tt_k_<hash>_k<i>) -> compiled for the device where the kind has a device compiler (CUDA:
// nvcc to a cubin, each kernel's resources held to the device's limits) -> a host library in
// C: model.c holds the source or the device image, the buffer and launch tables of the
// kind's runtime header and the tensortune ABI (tt_init / tt_run / ...), and is compiled
// with the kind's runtime object by the host's compiler (the cross compiler for `--host
// "llvm -mtriple=aarch64-linux-gnu"`) into model.so. The folder also gets params.bin (packed
// as on CPU), manifest.json (the target, its host, and each kernel's launches) and the
// source for reading (kernels.cl, kernels.cu).
//
// At run time tt_init opens the device, builds or loads its code and uploads the params,
// each constant into a read-only buffer of its own; tt_run uploads the inputs, makes every
// launch in order and reads the outputs back. Intermediate tensors live in device buffers
// that are reused once their last reader has run (the CPU memory plan's rule, with whole
// buffers instead of offsets in one arena: OpenCL 1.2 kernels take buffers, not pointers).
//
// A tuned schedule that does not replay or lower for the device (too many threads, too much
// shared memory, ...), or whose kernel the device compiler finds over the device's limits,
// gives way to the task's default schedule with a warning, as a tuned kernel that does not
// compile does on CPU.

import path from 'node:path';
import { lowerGpu, threadsOf, type GpuProgram } from '../codegen/gpu';
import { constantPlaceholders, describeGroup } from '../graph/extract';
import type { FusedGroup } from '../graph/fuse';
import type { Graph } from '../graph/graph';
import { numElements } from '../ir/tensor';
import { nativeIncludeDir } from '../native/build';
import { describeUsage, type KernelUsage } from '../native/nvcc';
import { defaultSchedule } from '../schedule/defaults';
import { State } from '../schedule/state';
import { checkRunsHere, isGpu, kindOf, parseTarget, type Target } from '../target';
import type { DeviceCode, DeviceLaunch, DeviceTable, GpuModelBackend, ManifestLaunchShape } from '../targets/kind';
import { UserError } from '../errors';
import type { Manifest } from './manifest';
import {
  kernelFields, modelInfoSource, packParams, sha, startCompile, writeModel,
  type CompileOptions, type CompileResult, type KernelInfo, type TunedSchedule,
} from './model-common';

/** Bytes of tt_last_error's buffer: room for the first lines of a build log. */
const ERROR_BYTES = 4096;

/** A program of the model: a kernel as the manifest lists it, its GPU program and its kernels in the kind's language. */
interface PlannedProgram<L extends DeviceLaunch> extends KernelInfo {
  program: GpuProgram;
  table: DeviceTable<L>;
  code: string;
}

/** Compiles a model for a GPU target with its kind's model backend. */
export function compileGpuModel(opts: CompileOptions): Promise<CompileResult> {
  const target = opts.target;
  const model = kindOf(target).model.gpu;
  if (!isGpu(target) || !model) throw new Error(`compileGpuModel: "${target.text}" is not a GPU target`);
  return model.use((backend) => compileWith(opts, target, backend));
}

async function compileWith<L extends DeviceLaunch>(opts: CompileOptions, target: Target & { host: Target }, backend: GpuModelBackend<L>): Promise<CompileResult> {
  backend.check?.(target);
  const start = await startCompile(opts);
  if (start.samples !== 1) throw new Error('compileModel: GPU models run the whole batch at once (samples must be 1)');
  const { log, warn, graph, groups, compiler, names, timeoutMs } = start;
  const vectorLanes = target.vectorLanes;
  const defaults = kindOf(target).defaultOptions(target);

  // One program per distinct (DAG, schedule); identical layers share it.
  const programs = new Map<string, PlannedProgram<L>>();
  const groupProgram = new Map<number, PlannedProgram<L>>();
  const place = (group: FusedGroup, tuned: TunedSchedule | undefined): void => {
    const steps = tuned?.steps ?? defaultSchedule(group.dag, defaults);
    const lowered = lowerGpu(State.replay(group.dag, steps), 'tt_k', target.gpu!, { packable: new Set(constantPlaceholders(graph, group)) });
    const symbol = `tt_k_${sha(backend.render(lowered, vectorLanes).code).slice(0, 16)}`;
    let planned = programs.get(symbol);
    if (!planned) {
      const program: GpuProgram = { ...lowered, name: symbol, kernels: lowered.kernels.map((k, i) => ({ ...k, name: `${symbol}_k${i}` })) };
      const { code, table, manifest } = backend.render(program, vectorLanes);
      planned = {
        symbol, groups: [], ...kernelFields(group, describeGroup(graph, group), tuned),
        objectHash: sha(code).slice(0, 24), compiled: false,
        launches: manifest.map((l: ManifestLaunchShape) => ({ kernel: l.kernel, global: l.global, local: l.local })),
        program, table, code,
      };
      programs.set(symbol, planned);
    }
    planned.groups.push(group.id);
    groupProgram.set(group.id, planned);
  };
  /** Tasks whose tuned schedule was refused (one warning each). */
  const refused = new Set<string>();

  // The device compiler once for the whole model; a tuned kernel it finds over the limits
  // falls back to its default schedule and the model is compiled again (at most once more:
  // defaults only change where a tuned schedule was refused).
  let device: DeviceCode | undefined;
  let usage: readonly KernelUsage[] = [];
  for (let attempt = 0; attempt < 2 && !device; attempt++) {
    programs.clear();
    groupProgram.clear();
    placeGpuGroups(graph, groups, opts.schedules, refused, target.text, warn, place);
    const source = `${backend.prelude}\n${[...programs.values()].map((p) => p.code).join('\n')}`;
    if (!backend.compileDevice) { device = { source }; break; }
    const r = await backend.compileDevice(source, target, { cacheDir: path.join(opts.cacheDir, 'cubin'), timeoutMs, name: opts.name });
    if (!r.ok) throw new UserError(r.message);
    const kernelProgram = new Map([...programs.values()].flatMap((p) => p.program.kernels.map((k) => [k.name, { p, threads: threadsOf(k) }] as const)));
    const over = r.usage.flatMap((u) => {
      const owner = kernelProgram.get(u.kernel);
      const problem = owner && backend.overLimits?.(u, owner.threads, target);
      return problem ? [{ owner: owner.p, problem }] : [];
    });
    if (over.length === 0) { device = { source, image: r.image }; usage = r.usage; break; }
    const tunedOver = over.filter((o) => o.owner.schedule === 'tuned');
    if (tunedOver.length < over.length || attempt === 1) {
      throw new UserError(`a default ${backend.label} kernel of ${opts.name} is over ${target.text}'s limits: ${over.find((o) => o.owner.schedule !== 'tuned')?.problem ?? over[0].problem}`);
    }
    for (const o of tunedOver) {
      if (refused.has(o.owner.key)) continue;
      refused.add(o.owner.key);
      warn(`the tuned schedule of ${o.owner.desc} from ${o.owner.source} is over "${target.text}"'s limits once compiled (${o.problem}); its task uses the default schedule`);
    }
  }
  const code = device!;
  const spilling = usage.filter((u) => u.spillStores > 0 || u.spillLoads > 0);
  for (const u of spilling) log(`ptxas: ${u.kernel} spills (${describeUsage(u)})`);

  const packed = packParams(graph, groups, (group) => groupProgram.get(group.id)!.program.layouts);
  const plan = planBuffers(graph, groups, (group) => groupProgram.get(group.id)!, packed.offsets, packed.entries);
  const { table, roles } = modelTable(plan, groups, (group) => groupProgram.get(group.id)!.table.launches);
  const inputIds = graph.nodes.filter((n) => n.op === 'input').map((n) => n.id);
  const modelC = backend.hostSource(modelInfoSource(graph, inputIds, names, packed.values.length, ERROR_BYTES), code, table, roles, plan);
  log(`${backend.label}: ${programs.size} kernel program(s), ${table.launches.length} launches, ${plan.buffers.length} device buffers${backend.imageNote?.(target, code) ?? ''}`);

  const kernelList = [...programs.values()].map(({ program: _p, table: _t, code: _c, ...k }) => k);
  const runtime = await backend.runtimeObject(compiler);
  const files = await writeModel(opts, start, {
    source: modelC,
    extraFiles: { [backend.sourceFile]: code.source, ...backend.extraFiles?.(target, code) },
    linkArgs: (modelSrc, library) => [
      ...backend.hostCflags, ...target.cflags, '-shared', '-fvisibility=hidden', `-I${nativeIncludeDir()}`,
      modelSrc, runtime, '-o', library, ...backend.libs,
    ],
    linkFailure: `building model.so for ${opts.outDir} (host "${target.host.text}") failed`,
    params: packed.values,
    built: { paramsCount: packed.values.length, workspaceBytes: plan.intermediateFloats * 4, kernels: kernelList },
    manifestExtra: backend.manifestExtra(target),
  });
  return {
    ...files, kernels: kernelList, compiled: 0, reused: 0,
    ...backend.summary({ target, outDir: opts.outDir, launches: table.launches.length, spilling: spilling.length }),
  };
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
  graph: Graph, groups: readonly FusedGroup[], programOf: (group: FusedGroup) => { symbol: string; program: GpuProgram; table: Pick<DeviceTable<DeviceLaunch>, 'buffers'> },
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
): { table: { buffers: { name: string; size: number; role: 'in' | 'out' | 'temp' }[]; launches: L[] }; roles: Map<number, 'param'> } {
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

/**
 * Refuses a compiled model that cannot run here: a GPU model whose host library was
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
 * is a UserError. Every GPU kind's model places its groups so.
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
