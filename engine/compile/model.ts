// Compiling a network: graph passes -> fused groups -> one C kernel per distinct
// (group, schedule) -> object cache -> an ahead-of-time entry point (model.c: the call
// sequence and a static memory plan) -> model.so, params.bin, manifest.json.

import { createHash } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { C_PRELUDE, KERNEL_CFLAGS, renderKernel } from '../codegen/c';
import { packBlocked, type BlockedLayout } from '../codegen/layout';
import { lower } from '../codegen/lower';
import { constantPlaceholders, describeGroup } from '../graph/extract';
import { partition, type FusedGroup } from '../graph/fuse';
import type { ConstantNode, Graph } from '../graph/graph';
import { optimize } from '../graph/passes';
import { numElements } from '../ir/tensor';
import { findCompiler, loadExeca, nativeIncludeDir } from '../native/build';
import { writeParams } from '../runtime/params';
import { defaultSchedule } from '../schedule/defaults';
import { State } from '../schedule/state';
import type { Step } from '../schedule/steps';
import { hardwareFingerprint, type Target } from '../target';
import { UserError } from '../errors';
import { recordsUsed, type Manifest, type ManifestKernel } from './manifest';
import { planMemory } from './memory-plan';

const MANIFEST_VERSION = 1;
export const ENGINE_VERSION = '0.1.0';

export interface CompileOptions {
  /** Name recorded in the manifest (network name or model file). */
  name: string;
  graph: Graph;
  /** Names of the graph's inputs, in order (the model's input names). */
  target: Target;
  outDir: string;
  /** Object cache directory (kernels by source hash). */
  cacheDir: string;
  /** Tuned schedules by workload key; tasks without one get the default schedule. */
  schedules?: ReadonlyMap<string, { steps: Step[]; source: string; budget?: string }>;
  /** `optimize(graph)` and its partition, when the caller already made them (else compileModel does). */
  partitioned?: { graph: Graph; groups: readonly FusedGroup[] };
  /** `hardwareFingerprint(target)`, when the caller already computed it. */
  fingerprint?: string;
  log?: (line: string) => void;
}

/** A kernel as the manifest lists it, plus whether this compile built its object. */
export interface KernelInfo extends ManifestKernel {
  compiled: boolean;
}

export interface CompileResult {
  library: string;
  params: string;
  manifest: string;
  kernels: KernelInfo[];
  compiled: number;
  reused: number;
}

const sha = (text: string): string => createHash('sha256').update(text).digest('hex');

export async function compileModel(opts: CompileOptions): Promise<CompileResult> {
  const log = opts.log ?? (() => undefined);
  const graph = opts.partitioned?.graph ?? optimize(opts.graph);
  const groups = opts.partitioned?.groups ?? partition(graph);
  const compiler = await findCompiler(opts.target.ccPrefix ? `${opts.target.ccPrefix}gcc` : undefined);
  const cflags = [...KERNEL_CFLAGS, ...opts.target.cflags];

  // One kernel per distinct (DAG, schedule); identical layers share it.
  const kernels = new Map<string, KernelInfo & { code: string }>();
  const groupSymbol = new Map<number, string>();
  const groupLayouts = new Map<number, readonly BlockedLayout[]>();
  for (const group of groups) {
    const tuned = opts.schedules?.get(group.dag.workloadKey);
    const steps = tuned?.steps ?? defaultSchedule(group.dag, { vectorLanes: opts.target.vectorLanes });
    const kernel = lower(State.replay(group.dag, steps), 'KERNEL', { packable: new Set(constantPlaceholders(graph, group)) });
    groupLayouts.set(group.id, kernel.layouts);
    const body = renderKernel(kernel, { vectorLanes: opts.target.vectorLanes });
    const symbol = `tt_k_${sha(body).slice(0, 16)}`;
    groupSymbol.set(group.id, symbol);
    const existing = kernels.get(symbol);
    if (existing) { existing.groups.push(group.id); continue; }
    const code = `${C_PRELUDE}\n${body.replace('int32_t KERNEL(', `int32_t ${symbol}(`)}`;
    kernels.set(symbol, {
      symbol, groups: [group.id], key: group.dag.workloadKey, desc: describeGroup(graph, group),
      schedule: tuned ? 'tuned' : 'default', source: tuned?.source ?? 'default schedule',
      ...(tuned?.budget !== undefined ? { budget: tuned.budget } : {}),
      flops: group.dag.flops, objectHash: sha(JSON.stringify([code, cflags, compiler.identity])).slice(0, 24),
      compiled: false, code,
    });
  }

  // Object cache: compile what is missing, two at a time (one per core on a laptop CI box).
  const objDir = path.join(opts.cacheDir, 'objects');
  await fs.mkdir(objDir, { recursive: true });
  const todo = [...kernels.values()].filter((k) => !existsSync(path.join(objDir, `${k.objectHash}.o`)));
  const { execa } = await loadExeca();
  const compileOne = async (k: KernelInfo & { code: string }): Promise<void> => {
    const src = path.join(objDir, `${k.objectHash}.c`);
    const tmp = path.join(objDir, `${k.objectHash}.o.tmp-${process.pid}`);
    await fs.writeFile(src, k.code);
    const r = await execa(compiler.command, [...compiler.args, ...cflags, '-c', src, '-o', tmp], { reject: false });
    if (r.failed) throw new UserError(`compiling kernel ${k.symbol} (${k.desc}) failed:\n${r.stderr.split('\n').slice(0, 20).join('\n')}`);
    await fs.rename(tmp, path.join(objDir, `${k.objectHash}.o`));
    k.compiled = true;
  };
  const queue = [...todo];
  const workers = Array.from({ length: Math.min(2, queue.length) }, async () => {
    for (let k = queue.shift(); k; k = queue.shift()) await compileOne(k);
  });
  await Promise.all(workers);
  log(`kernels: ${todo.length} compiled, ${kernels.size - todo.length} reused from ${objDir}`);

  // Params: every constant a group reads, in the layout its kernel reads (blocked weights
  // are packed here, once), each at a 64-byte aligned offset. `${group}:${input}` -> offset.
  const paramOffset = new Map<string, number>();
  const stored = new Map<string, { offset: number; data: Float32Array }>();
  let paramsSize = 0;
  for (const group of groups) {
    group.inputs.forEach((id, input) => {
      const n = graph.node(id);
      if (n.op !== 'constant') return;
      const layout = groupLayouts.get(group.id)!.find((l) => l.input === input);
      const key = layout ? `${id}/${layout.axis}/${layout.block}` : `${id}`;
      let entry = stored.get(key);
      if (!entry) {
        const data = layout ? packBlocked((n as ConstantNode).data, n.shape, layout.axis, layout.block) : (n as ConstantNode).data;
        entry = { offset: paramsSize, data };
        stored.set(key, entry);
        paramsSize += Math.ceil(numElements(n.shape) / 16) * 16;
      }
      paramOffset.set(`${group.id}:${input}`, entry.offset);
    });
  }
  const params = new Float32Array(paramsSize);
  for (const { offset, data } of stored.values()) params.set(data, offset);

  const plan = planMemory(graph, groups);
  const inputs = graph.nodes.filter((n) => n.op === 'input');
  const modelC = renderEntryPoint(graph, groups, groupSymbol, paramOffset, paramsSize, plan, inputs.map((n) => n.id));

  await fs.mkdir(opts.outDir, { recursive: true });
  const modelSrc = path.join(opts.outDir, 'model.c');
  await fs.writeFile(modelSrc, modelC);
  const library = path.join(opts.outDir, 'model.so');
  const objects = [...kernels.values()].map((k) => path.join(objDir, `${k.objectHash}.o`));
  const link = await execa(compiler.command, [
    ...compiler.args, ...cflags, '-shared', '-fvisibility=hidden', `-I${nativeIncludeDir()}`, modelSrc, ...objects, '-o', `${library}.tmp`, '-lm',
  ], { reject: false });
  if (link.failed) throw new UserError(`linking ${library} failed:\n${link.stderr.split('\n').slice(0, 20).join('\n')}`);
  await fs.rename(`${library}.tmp`, library);
  const paramsFile = path.join(opts.outDir, 'params.bin');
  await writeParams(paramsFile, params);

  const kernelList = [...kernels.values()].map(({ code: _code, ...k }) => k);
  // Whether a kernel came from the object cache is not part of the model: keep the
  // manifest identical between builds of the same model (Nx caches it).
  const manifest: Manifest = {
    format_version: MANIFEST_VERSION,
    engine_version: ENGINE_VERSION,
    name: opts.name,
    target: opts.target.text,
    fingerprint: opts.fingerprint ?? hardwareFingerprint(opts.target),
    library: 'model.so',
    params: 'params.bin',
    params_count: paramsSize,
    workspace_bytes: plan.size * 4,
    inputs: inputs.map((n) => ({ name: n.name, shape: [...n.shape], dtype: 'float32' })),
    outputs: graph.outputs.map((id, i) => ({ name: outputName(graph, id, i), shape: [...graph.node(id).shape], dtype: 'float32' })),
    records: recordsUsed(kernelList),
    kernels: kernelList.map(({ compiled: _compiled, ...k }) => k),
  };
  const manifestFile = path.join(opts.outDir, 'manifest.json');
  await fs.writeFile(manifestFile, JSON.stringify(manifest, null, 2) + '\n');
  return { library, params: paramsFile, manifest: manifestFile, kernels: kernelList, compiled: todo.length, reused: kernels.size - todo.length };
}

function outputName(g: Graph, _id: number, i: number): string {
  return g.outputs.length === 1 ? 'output' : `output${i}`;
}

/** C string literal of one of our identifiers (names are [A-Za-z0-9_.-]; anything else is escaped). */
function cString(s: string): string {
  return `"${s.replace(/[^A-Za-z0-9_.\- ]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)}"`;
}

function renderEntryPoint(
  g: Graph, groups: readonly FusedGroup[], symbols: ReadonlyMap<number, string>, paramOffset: ReadonlyMap<string, number>,
  paramsSize: number, plan: ReturnType<typeof planMemory>, inputIds: readonly number[],
): string {
  const out: string[] = [
    '/* Generated by tensortune: the model\'s entry points, call sequence and memory plan. */',
    '#include "tensortune.h"',
    '#include <stdint.h>',
    '#include <stdlib.h>',
    '#include <stdio.h>',
    '#ifdef _OPENMP',
    '#include <omp.h>',
    '#endif',
  ];
  const protos = new Set<string>();
  for (const group of groups) {
    const sym = symbols.get(group.id)!;
    if (protos.has(sym)) continue;
    protos.add(sym);
    const nargs = group.dag.inputs.length + group.dag.outputs.length;
    out.push(`int32_t ${sym}(${Array.from({ length: nargs }, () => 'float*').join(', ')});`);
  }
  const infos = (kind: string, ids: readonly number[], names: (id: number, i: number) => string): void => {
    ids.forEach((id, i) => out.push(`static const int64_t ${kind}_shape${i}[] = {${g.node(id).shape.join(', ')}};`));
    out.push(`static const tt_tensor_info ${kind}_info[] = {`);
    ids.forEach((id, i) => out.push(`  {${cString(names(id, i))}, ${g.node(id).shape.length}, ${kind}_shape${i}},`));
    out.push('};');
  };
  infos('input', inputIds, (id) => g.node(id).name);
  infos('output', g.outputs, (id, i) => outputName(g, id, i));
  out.push(
    'static const float* tt_params = 0;',
    'static float* tt_arena = 0;',
    'static char tt_error[256] = "";',
    'TT_EXPORT int tt_abi_version(void) { return TT_ABI_VERSION; }',
    `TT_EXPORT int tt_num_inputs(void) { return ${inputIds.length}; }`,
    `TT_EXPORT const tt_tensor_info* tt_input_info(int i) { return i >= 0 && i < ${inputIds.length} ? &input_info[i] : 0; }`,
    `TT_EXPORT int tt_num_outputs(void) { return ${g.outputs.length}; }`,
    `TT_EXPORT const tt_tensor_info* tt_output_info(int i) { return i >= 0 && i < ${g.outputs.length} ? &output_info[i] : 0; }`,
    `TT_EXPORT int64_t tt_params_size(void) { return ${paramsSize}; }`,
    'TT_EXPORT const char* tt_last_error(void) { return tt_error; }',
    'TT_EXPORT void tt_set_num_threads(int n) {',
    '#ifdef _OPENMP',
    '  if (n > 0) omp_set_num_threads(n);',
    '#else',
    '  (void)n;',
    '#endif',
    '}',
    'TT_EXPORT int tt_init(const float* params) {',
    '  if (!params) { snprintf(tt_error, sizeof tt_error, "tt_init: params is NULL"); return 1; }',
    '  tt_params = params;',
    `  if (!tt_arena && ${plan.size} > 0) {`,
    `    tt_arena = (float*)aligned_alloc(64, ${Math.ceil(plan.size / 16) * 64});`,
    '    if (!tt_arena) { snprintf(tt_error, sizeof tt_error, "tt_init: cannot allocate the workspace"); return 2; }',
    '  }',
    '  return 0;',
    '}',
    'TT_EXPORT int tt_run(const float* const* inputs, float* const* outputs) {',
    '  if (!tt_params) { snprintf(tt_error, sizeof tt_error, "tt_run: call tt_init first"); return 1; }',
  );
  const pointer = (id: number, param?: number): string => {
    const outIdx = g.outputs.indexOf(id);
    if (outIdx >= 0) return `outputs[${outIdx}]`;
    const inIdx = inputIds.indexOf(id);
    if (inIdx >= 0) return `(float*)inputs[${inIdx}]`;
    if (param !== undefined) return `(float*)(tt_params + ${param})`;
    const off = plan.offsets.get(id);
    if (off === undefined) throw new Error(`memory plan has no buffer for node ${id}`);
    return `tt_arena + ${off}`;
  };
  groups.forEach((group, i) => {
    const args = [...group.inputs.map((id, input) => pointer(id, paramOffset.get(`${group.id}:${input}`))), pointer(group.output)].join(', ');
    out.push(`  if (${symbols.get(group.id)}(${args}) != 0) { snprintf(tt_error, sizeof tt_error, "kernel %d failed", ${i}); return 2; }`);
  });
  out.push('  return 0;', '}');
  return out.join('\n') + '\n';
}
