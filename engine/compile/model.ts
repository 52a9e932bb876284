// Compiling a network: graph passes -> fused groups -> one C kernel per distinct
// (group, schedule) -> object cache -> an ahead-of-time entry point (model.c: the call
// sequence and a static memory plan) -> model.so, params.bin, manifest.json.
//
// Nothing here trusts what it did not just make: a cached object is reused only while it
// matches its seal (native/file-cache.ts); every compiler call has a time limit, and a tuned
// kernel that fails or runs past it falls back to its task's default schedule with a
// warning; the output folder is replaced whole (out-dir.ts), and the manifest holds the
// sha256 of model.so and params.bin, which reading it checks (manifest.ts).

import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { C_PRELUDE, KERNEL_CFLAGS, renderKernel } from '../codegen/c';
import { cString, utf8 } from '../codegen/c-string';
import { packBlocked, type BlockedLayout } from '../codegen/layout';
import { lower } from '../codegen/lower';
import { constantPlaceholders, describeGroup } from '../graph/extract';
import { partition, type FusedGroup } from '../graph/fuse';
import type { ConstantNode, Graph } from '../graph/graph';
import { optimize } from '../graph/passes';
import { numElements } from '../ir/tensor';
import { COMPILER_TIMEOUT_MS, compilerFailure, findCompiler, loadExeca, nativeIncludeDir } from '../native/build';
import { cachedFileOk, sealIntoCache } from '../native/file-cache';
import { outputFileNames } from '../runtime/abi';
import { writeParams } from '../runtime/params';
import { defaultSchedule } from '../schedule/defaults';
import { State } from '../schedule/state';
import type { Step } from '../schedule/steps';
import { hardwareFingerprint, type Target } from '../target';
import { UserError } from '../errors';
import { fileSha256, recordsUsed, type Manifest, type ManifestKernel } from './manifest';
import { planMemory } from './memory-plan';
import { checkOutDir, replaceOutDir } from './out-dir';

const MANIFEST_VERSION = 1;
export const ENGINE_VERSION = '0.1.0';

export interface CompileOptions {
  /** Name recorded in the manifest (network name or model file's base name). */
  name: string;
  /** The model file compiled (absolute), recorded in the manifest relative to outDir, with its sha256. */
  modelFile?: string;
  graph: Graph;
  /** The model's output names, in graph.outputs order (default `output`, or `output0`, `output1`, ...). */
  outputNames?: readonly string[];
  target: Target;
  outDir: string;
  /** Object cache directory (kernels by source hash). */
  cacheDir: string;
  /** Tuned schedules by workload key; tasks without one get the default schedule. */
  schedules?: ReadonlyMap<string, TunedSchedule>;
  /** `optimize(graph)` and its partition, when the caller already made them (else compileModel does). */
  partitioned?: { graph: Graph; groups: readonly FusedGroup[] };
  /** `hardwareFingerprint(target)`, when the caller already computed it. */
  fingerprint?: string;
  /** Time limit of each compiler call, kernel or link (default COMPILER_TIMEOUT_MS). */
  timeoutMs?: number;
  log?: (line: string) => void;
  /** Warnings (a tuned kernel that did not compile and fell back to its default schedule); default stderr. */
  warn?: (message: string) => void;
}

/** A tuned schedule: its steps, where it came from (`<log base name>:<line>`), its record's id and budget. */
export interface TunedSchedule { steps: Step[]; source: string; record?: string; budget?: string }

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

  await checkOutDir(opts.outDir); // before the work: a folder that is not compile's own is refused
  const names = tensorNames(graph, opts.outputNames);
  const timeoutMs = opts.timeoutMs ?? COMPILER_TIMEOUT_MS;
  const warn = opts.warn ?? ((m: string) => { process.stderr.write(`tensortune: warning: ${m}\n`); });

  // One kernel per distinct (DAG, schedule); identical layers share it.
  type PlannedKernel = KernelInfo & { code: string };
  const kernels = new Map<string, PlannedKernel>();
  const groupSymbol = new Map<number, string>();
  const groupLayouts = new Map<number, readonly BlockedLayout[]>();
  const place = (group: FusedGroup, tuned: TunedSchedule | undefined): void => {
    const steps = tuned?.steps ?? defaultSchedule(group.dag, { vectorLanes: opts.target.vectorLanes });
    const kernel = lower(State.replay(group.dag, steps), 'KERNEL', { packable: new Set(constantPlaceholders(graph, group)) });
    groupLayouts.set(group.id, kernel.layouts);
    const body = renderKernel(kernel, { vectorLanes: opts.target.vectorLanes });
    const symbol = `tt_k_${sha(body).slice(0, 16)}`;
    groupSymbol.set(group.id, symbol);
    const existing = kernels.get(symbol);
    if (existing) { existing.groups.push(group.id); return; }
    const code = `${C_PRELUDE}\n${body.replace('int32_t KERNEL(', `int32_t ${symbol}(`)}`;
    kernels.set(symbol, {
      symbol, groups: [group.id], key: group.dag.workloadKey, desc: describeGroup(graph, group),
      schedule: tuned ? 'tuned' : 'default', source: tuned?.source ?? 'default schedule',
      ...(tuned?.record !== undefined ? { record: tuned.record } : {}),
      ...(tuned?.budget !== undefined ? { budget: tuned.budget } : {}),
      flops: group.dag.flops, objectHash: sha(JSON.stringify([code, cflags, compiler.identity])).slice(0, 24),
      compiled: false, code,
    });
  };
  for (const group of groups) place(group, opts.schedules?.get(group.dag.workloadKey));

  // Object cache: compile what is missing or does not match its seal, two at a time (one
  // per core on a laptop CI box). Failures are returned with the compiler's reason.
  const objDir = path.join(opts.cacheDir, 'objects');
  await fs.mkdir(objDir, { recursive: true });
  const objectOf = (k: PlannedKernel): string => path.join(objDir, `${k.objectHash}.o`);
  const { execa } = await loadExeca();
  const compileOne = async (k: PlannedKernel): Promise<string | undefined> => {
    const src = path.join(objDir, `${k.objectHash}.c`);
    const tmp = `${objectOf(k)}.tmp-${process.pid}`;
    await fs.writeFile(src, k.code);
    const r = await execa(compiler.command, [...compiler.args, ...cflags, '-c', src, '-o', tmp], { reject: false, timeout: timeoutMs });
    if (r.failed) {
      await fs.rm(tmp, { force: true });
      return compilerFailure(r, timeoutMs, 20);
    }
    if (!(await sealIntoCache(tmp, objectOf(k)))) return 'the compiler wrote an empty object';
    k.compiled = true;
    return undefined;
  };
  // Kernels an earlier round already checked against the cache or tried to compile: the
  // fallback round only looks at the default kernels it placed.
  const seen = new Set<PlannedKernel>();
  const compileMissing = async (): Promise<{ kernel: PlannedKernel; why: string }[]> => {
    const queue: PlannedKernel[] = [];
    for (const k of kernels.values()) {
      if (seen.has(k)) continue;
      seen.add(k);
      if (!(await cachedFileOk(objectOf(k)))) queue.push(k);
    }
    const failed: { kernel: PlannedKernel; why: string }[] = [];
    const workers = Array.from({ length: Math.min(2, queue.length) }, async () => {
      for (let k = queue.shift(); k; k = queue.shift()) {
        const why = await compileOne(k);
        if (why !== undefined) failed.push({ kernel: k, why });
      }
    });
    await Promise.all(workers);
    return failed;
  };
  let failed = await compileMissing();
  // A tuned kernel that does not compile (an error, or past the time limit) gives way to its
  // task's default schedule; a default kernel that does not compile is an error.
  const fallbacks = failed.filter((f) => f.kernel.schedule === 'tuned');
  if (fallbacks.length > 0) {
    for (const { kernel, why } of fallbacks) {
      const headline = why.split('\n').find((l) => /error|did not finish|empty/.test(l)) ?? why.split('\n')[0];
      warn(`kernel ${kernel.symbol} (${kernel.desc}) from ${kernel.source} did not compile (${headline.trim()}); its task uses the default schedule`);
      kernels.delete(kernel.symbol);
    }
    for (const { kernel } of fallbacks) for (const id of kernel.groups) place(groups.find((g) => g.id === id)!, undefined);
    failed = [...failed.filter((f) => f.kernel.schedule === 'default'), ...(await compileMissing())];
  }
  if (failed.length > 0) {
    const { kernel, why } = failed[0];
    throw new UserError(`compiling kernel ${kernel.symbol} (${kernel.desc}, ${kernel.source}) failed:\n${why}`);
  }
  const compiledCount = [...kernels.values()].filter((k) => k.compiled).length;
  log(`kernels: ${compiledCount} compiled, ${kernels.size - compiledCount} reused from ${objDir}`);

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
  const modelC = renderEntryPoint(graph, groups, groupSymbol, paramOffset, paramsSize, plan, inputs.map((n) => n.id), names);

  const kernelList = [...kernels.values()].map(({ code: _code, ...k }) => k);
  const objects = [...kernels.values()].map(objectOf);
  await replaceOutDir(opts.outDir, async (dir) => {
    const modelSrc = path.join(dir, 'model.c');
    await fs.writeFile(modelSrc, modelC);
    const link = await execa(compiler.command, [
      ...compiler.args, ...cflags, '-shared', '-fvisibility=hidden', `-I${nativeIncludeDir()}`, modelSrc, ...objects, '-o', path.join(dir, 'model.so'), '-lm',
    ], { reject: false, timeout: timeoutMs });
    if (link.failed) {
      throw new UserError(`linking model.so for ${opts.outDir} failed (its kernel objects come from the cache ${objDir}; delete that folder to rebuild them):\n${compilerFailure(link, timeoutMs, 20)}`);
    }
    await writeParams(path.join(dir, 'params.bin'), params);
    // Whether a kernel came from the object cache is not part of the model: keep the
    // manifest identical between builds of the same model (Nx caches it).
    const manifest: Manifest = {
      format_version: MANIFEST_VERSION,
      engine_version: ENGINE_VERSION,
      name: opts.name,
      ...(opts.modelFile !== undefined ? modelFileFields(opts.modelFile, opts.outDir) : {}),
      target: opts.target.text,
      fingerprint: opts.fingerprint ?? hardwareFingerprint(opts.target),
      library: 'model.so',
      params: 'params.bin',
      library_sha256: fileSha256(path.join(dir, 'model.so')),
      params_sha256: fileSha256(path.join(dir, 'params.bin')),
      params_count: paramsSize,
      workspace_bytes: plan.size * 4,
      inputs: inputs.map((n, i) => ({ name: names.inputs[i], shape: [...n.shape], dtype: 'float32' })),
      outputs: graph.outputs.map((id, i) => ({ name: names.outputs[i], shape: [...graph.node(id).shape], dtype: 'float32', file: `${names.files[i]}.bin` })),
      records: recordsUsed(kernelList),
      kernels: kernelList.map(({ compiled: _compiled, ...k }) => k),
    };
    await fs.writeFile(path.join(dir, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
  });
  return {
    library: path.join(opts.outDir, 'model.so'), params: path.join(opts.outDir, 'params.bin'), manifest: path.join(opts.outDir, 'manifest.json'),
    kernels: kernelList, compiled: compiledCount, reused: kernels.size - compiledCount,
  };
}

/** The input and output names of the compiled model, and the files its outputs are saved to. */
interface TensorNames { inputs: string[]; outputs: string[]; files: string[] }

/** Any byte but NUL survives into model.c (cString); two outputs must not share a saved file. */
function tensorNames(g: Graph, outputNames: readonly string[] | undefined): TensorNames {
  const inputs = g.nodes.filter((n) => n.op === 'input').map((n) => n.name);
  const outputs = outputNames ? [...outputNames] : g.outputs.map((_, i) => (g.outputs.length === 1 ? 'output' : `output${i}`));
  if (outputs.length !== g.outputs.length) throw new Error(`compileModel: ${outputs.length} output names for ${g.outputs.length} outputs`);
  for (const [kind, list] of [['input', inputs], ['output', outputs]] as const) {
    for (const name of list) {
      if (name === '') throw new UserError(`the model has an ${kind} without a name`);
      if (name.includes('\0')) throw new UserError(`${kind} ${JSON.stringify(name)}: a tensor name cannot hold a NUL byte (the model ABI's names are C strings)`);
    }
  }
  let files: string[];
  try {
    files = outputFileNames(outputs);
  } catch (e) {
    throw new UserError(`cannot compile this model: ${(e as Error).message} by --save-outputs`);
  }
  return { inputs, outputs, files };
}

/** The manifest's model_file (relative to the model directory, no machine path) and model_sha256. */
function modelFileFields(file: string, outDir: string): { model_file: string; model_sha256: string } {
  return { model_file: path.relative(path.resolve(outDir), path.resolve(file)).split(path.sep).join('/'), model_sha256: fileSha256(file) };
}

function renderEntryPoint(
  g: Graph, groups: readonly FusedGroup[], symbols: ReadonlyMap<number, string>, paramOffset: ReadonlyMap<string, number>,
  paramsSize: number, plan: ReturnType<typeof planMemory>, inputIds: readonly number[], names: TensorNames,
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
  const infos = (kind: string, ids: readonly number[], tensorName: (i: number) => string): void => {
    ids.forEach((id, i) => out.push(`static const int64_t ${kind}_shape${i}[] = {${g.node(id).shape.join(', ')}};`));
    out.push(`static const tt_tensor_info ${kind}_info[] = {`);
    ids.forEach((id, i) => out.push(`  {${cString(utf8(tensorName(i)))}, ${g.node(id).shape.length}, ${kind}_shape${i}},`));
    out.push('};');
  };
  infos('input', inputIds, (i) => names.inputs[i]);
  infos('output', g.outputs, (i) => names.outputs[i]);
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
