// What compiling a model does the same way for every kind of target (model.ts: CPU targets,
// C kernels; model-gpu.ts: GPU targets, a C host library around the kind's kernels): the
// options and result, the start (graph, compiler, output folder check, the names of the
// model's tensors), the params blob (constants packed in the layouts the kernels chose), and
// the model folder written whole (model.c, the link, params.bin, the manifest).

import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { cString, utf8 } from '../codegen/c-string';
import { packBlocked, type BlockedLayout } from '../codegen/layout';
import { groupDag, partition, type FusedGroup } from '../graph/fuse';
import { Graph, type ConstantNode } from '../graph/graph';
import { optimize } from '../graph/passes';
import { batchShape } from '../graph/per-sample';
import { asFloatWords, numElements } from '../ir/tensor';
import { COMPILER_TIMEOUT_MS, compilerFailure, findCompiler, loadExeca, type Compiler } from '../native/build';
import { ABI_DTYPE_CODES, outputFileNames } from '../runtime/abi';
import { writeParams } from '../runtime/params';
import type { Step } from '../schedule/steps';
import { hardwareFingerprint, type Target } from '../target';
import { UserError } from '../errors';
import { ENGINE_VERSION } from '../version';
import { fileSha256, recordsUsed, sealManifest, type Manifest, type ManifestKernel } from './manifest';
import { checkModelMemory, type MemoryLimit } from './memory-plan';
import { checkOutDir, replaceOutDir } from './out-dir';

const MANIFEST_VERSION = 1;

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
  /**
   * CPU targets: the partitioned graph is one sample of a batch of this many, and the model
   * runs it once per sample (graph/per-sample.ts); its inputs and outputs are the batch's
   * (default 1: the graph is the model).
   */
  samples?: number;
  /** `hardwareFingerprint(target)`, when the caller already computed it. */
  fingerprint?: string;
  /** The thread count `schedules` were ranked at (compileNetwork's `threads`), for the manifest. */
  recordsThreads?: number;
  /** Time limit of each compiler call, kernel or link (default COMPILER_TIMEOUT_MS). */
  timeoutMs?: number;
  /** The most memory the model may need to run, and how to raise it (default DEFAULT_MAX_MEMORY_BYTES, the CLI's --max-memory). */
  memoryLimit?: MemoryLimit;
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
  /** Kernel objects compiled and reused from the object cache (CPU targets; 0 for OpenCL, whose driver builds the kernels in tt_init). */
  compiled: number;
  reused: number;
  /** OpenCL targets: the launches tt_run makes, and the source file written beside the library. */
  opencl?: { launches: number; source: string };
  /** CUDA targets: the launches tt_run makes, the source and cubin written beside the library, and the kernels ptxas reports spilling. */
  cuda?: { launches: number; source: string; cubin: string; spilling: number };
}

export const sha = (text: string): string => createHash('sha256').update(text).digest('hex');

const warnToStderr = (m: string): void => { process.stderr.write(`tensortune: warning: ${m}\n`); };

/** What every compile starts from: the options' defaults, the optimised graph and its
 *  groups, the target's compiler, the model's tensor names. */
export interface CompileStart {
  log: (line: string) => void;
  warn: (message: string) => void;
  graph: Graph;
  groups: readonly FusedGroup[];
  compiler: Compiler;
  names: TensorNames;
  timeoutMs: number;
  /** The model's runs of the graph per call (CompileOptions.samples). */
  samples: number;
}

export async function startCompile(opts: CompileOptions): Promise<CompileStart> {
  const optimized = opts.partitioned?.graph ?? optimize(opts.graph);
  const { graph, groups } = withOutputCopies(optimized, opts.partitioned?.groups ?? partition(optimized));
  const samples = opts.samples ?? 1;
  checkModelMemory(graph, groups, opts.modelFile ?? opts.name, opts.memoryLimit, samples); // before any file is written or kernel built
  const compiler = await findCompiler(opts.target.ccPrefix ? `${opts.target.ccPrefix}gcc` : undefined);
  await checkOutDir(opts.outDir); // before the work: a folder that is not compile's own is refused
  return {
    log: opts.log ?? (() => undefined), warn: opts.warn ?? warnToStderr, graph, groups, compiler,
    names: tensorNames(optimized, opts.outputNames), timeoutMs: opts.timeoutMs ?? COMPILER_TIMEOUT_MS, samples,
  };
}

/**
 * Every model output written by a kernel of its own. An output that no group computes (a
 * graph input, as after Identity or Dropout; a constant, as after Shape or a folded
 * subgraph) or that is listed again (the same value twice) gets a copy node: an identity
 * transpose appended to the graph, and a group of its own appended to `groups` (ids go on
 * from the last). The copy of a constant reads it from params; of a listed-again output, the
 * output buffer its group wrote. Without this such outputs had no writer and came back as
 * the NaN the runner fills them with. The existing nodes keep their ids (the groups stay valid).
 */
export function withOutputCopies(graph: Graph, groups: readonly FusedGroup[]): { graph: Graph; groups: readonly FusedGroup[] } {
  const written = new Set(groups.map((grp) => grp.output));
  const seen = new Set<number>();
  const copies = graph.outputs.map((id) => {
    const copy = !written.has(id) || seen.has(id);
    seen.add(id);
    return copy;
  });
  if (!copies.includes(true)) return { graph, groups };
  const g = new Graph();
  g.nodes.push(...graph.nodes);
  const added: FusedGroup[] = [];
  const firstId = groups.reduce((m, grp) => Math.max(m, grp.id + 1), 0);
  g.outputs = graph.outputs.map((id, i) => {
    if (!copies[i]) return id;
    const src = graph.node(id);
    const copy = g.op('transpose', [id], { axes: src.shape.map((_, k) => k) }, `copy_output${i}_of_${src.name}`);
    const { dag, inputs } = groupDag(g, [copy], copy);
    added.push({ id: firstId + added.length, nodes: [copy], inputs, output: copy, dag, hasReduction: false });
    return copy;
  });
  return { graph: g, groups: [...groups, ...added] };
}

/** What goes into the model folder besides what every target writes. */
export interface ModelFiles {
  /** model.c. */
  source: string;
  /** Other files written beside it before the link (name -> content). */
  extraFiles?: Record<string, string | Uint8Array>;
  /** The compiler arguments that build model.so from model.c (both paths in the new folder). */
  linkArgs: (modelSrc: string, library: string) => string[];
  /** The start of the error when the link fails (the compiler's reason follows). */
  linkFailure: string;
  params: Float32Array;
  /** The manifest's fields that the target decides (modelManifest). */
  built: { paramsCount: number; workspaceBytes: number; kernels: readonly ManifestKernel[] };
  manifestExtra?: Pick<Manifest, 'host' | 'opencl_source' | 'cuda_source' | 'cubin'>;
}

/**
 * Writes the model folder whole (out-dir.ts): model.c and the extra files, model.so linked
 * from them, params.bin and manifest.json. Returns the paths of the three files the model is.
 */
export async function writeModel(opts: CompileOptions, start: CompileStart, files: ModelFiles): Promise<Pick<CompileResult, 'library' | 'params' | 'manifest'>> {
  const { compiler, timeoutMs } = start;
  const { execa } = await loadExeca();
  await replaceOutDir(opts.outDir, async (dir) => {
    const modelSrc = path.join(dir, 'model.c');
    await fs.writeFile(modelSrc, files.source);
    for (const [name, content] of Object.entries(files.extraFiles ?? {})) await fs.writeFile(path.join(dir, name), content);
    const link = await execa(compiler.command, [...compiler.args, ...files.linkArgs(modelSrc, path.join(dir, 'model.so'))], { reject: false, timeout: timeoutMs });
    if (link.failed) throw new UserError(`${files.linkFailure}:\n${compilerFailure(link, timeoutMs, 20)}`);
    await writeParams(path.join(dir, 'params.bin'), files.params);
    const manifest = modelManifest(opts, dir, start, files.built, files.manifestExtra);
    await fs.writeFile(path.join(dir, 'manifest.json'), JSON.stringify(sealManifest(manifest), null, 2) + '\n');
  });
  return { library: path.join(opts.outDir, 'model.so'), params: path.join(opts.outDir, 'params.bin'), manifest: path.join(opts.outDir, 'manifest.json') };
}

/** The manifest fields of a kernel from its group and schedule (all but symbol, groups and objectHash). */
export function kernelFields(group: FusedGroup, desc: string, tuned: TunedSchedule | undefined): Omit<ManifestKernel, 'symbol' | 'groups' | 'objectHash'> {
  return {
    key: group.dag.workloadKey, desc,
    schedule: tuned ? 'tuned' : 'default', source: tuned?.source ?? 'default schedule',
    ...(tuned?.record !== undefined ? { record: tuned.record } : {}),
    ...(tuned?.budget !== undefined ? { budget: tuned.budget } : {}),
    flops: group.dag.flops,
  };
}

/** The input and output names of the compiled model, and the files its outputs are saved to. */
export interface TensorNames { inputs: string[]; outputs: string[]; files: string[] }

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
    // One value listed twice under its one name (ONNX allows it) is saved to one file.
    const distinct = outputs.filter((name, i) => {
      const j = outputs.indexOf(name);
      return j === i || g.outputs[j] !== g.outputs[i];
    });
    const fileOf = new Map(outputFileNames(distinct).map((f, i) => [distinct[i], f]));
    files = outputs.map((name) => fileOf.get(name)!);
  } catch (e) {
    throw new UserError(`cannot compile this model: ${(e as Error).message} by --save-outputs`);
  }
  return { inputs, outputs, files };
}

/** The params blob: every constant a group reads, in the layout its kernel reads. */
export interface PackedParams {
  /** `${group.id}:${input}` -> offset (floats) of the constant that input of that group reads. */
  offsets: Map<string, number>;
  /** Each stored constant (a node in one layout), in params order: its offset and element count. */
  entries: { offset: number; count: number }[];
  /** The blob: each entry at a 64-byte aligned offset. */
  values: Float32Array;
}

/**
 * Packs the constants the groups read (blocked weights are packed here, once; a constant
 * read in one layout by several groups is stored once). `layoutsOf(group)`: the layouts
 * the group's kernel chose for its constant inputs.
 */
export function packParams(graph: Graph, groups: readonly FusedGroup[], layoutsOf: (group: FusedGroup) => readonly BlockedLayout[]): PackedParams {
  const offsets = new Map<string, number>();
  const stored = new Map<string, { offset: number; count: number; data: Float32Array }>();
  let size = 0;
  for (const group of groups) {
    group.inputs.forEach((id, input) => {
      const n = graph.node(id);
      if (n.op !== 'constant') return;
      const layout = layoutsOf(group).find((l) => l.input === input);
      const key = layout ? `${id}/${layout.axis}/${layout.block}` : `${id}`;
      let entry = stored.get(key);
      if (!entry) {
        // int32/bool constants go in as their 4-byte words (the kernels read them through int32_t pointers).
        const words = asFloatWords((n as ConstantNode).data);
        const data = layout ? packBlocked(words, n.shape, layout.axis, layout.block) : words;
        entry = { offset: size, count: numElements(n.shape), data };
        stored.set(key, entry);
        size += Math.ceil(entry.count / 16) * 16;
      }
      offsets.set(`${group.id}:${input}`, entry.offset);
    });
  }
  const values = new Float32Array(size);
  for (const { offset, data } of stored.values()) values.set(data, offset);
  return { offsets, entries: [...stored.values()].map(({ offset, count }) => ({ offset, count })), values };
}

/** The manifest's model_file (relative to the model directory, no machine path) and model_sha256. */
function modelFileFields(file: string, outDir: string): { model_file: string; model_sha256: string } {
  return { model_file: path.relative(path.resolve(outDir), path.resolve(file)).split(path.sep).join('/'), model_sha256: fileSha256(file) };
}

/**
 * The manifest of the model written into `dir` (the folder that becomes opts.outDir):
 * model.so and params.bin must be there already (their sha256 go in). `extra`: what only
 * some targets have (an OpenCL model's host and kernel source file).
 */
function modelManifest(
  opts: CompileOptions, dir: string, { graph, names, samples }: Pick<CompileStart, 'graph' | 'names' | 'samples'>,
  built: { paramsCount: number; workspaceBytes: number; kernels: readonly ManifestKernel[] },
  extra: Pick<Manifest, 'host' | 'opencl_source' | 'cuda_source' | 'cubin'> = {},
): Manifest {
  const inputs = graph.nodes.filter((n) => n.op === 'input');
  // Whether a kernel came from the object cache is not part of the model: keep the
  // manifest identical between builds of the same model (Nx caches it).
  const kernels = built.kernels.map((k) => {
    const { compiled: _compiled, ...rest } = k as KernelInfo;
    return rest;
  });
  return {
    format_version: MANIFEST_VERSION,
    engine_version: ENGINE_VERSION,
    name: opts.name,
    ...(opts.modelFile !== undefined ? modelFileFields(opts.modelFile, opts.outDir) : {}),
    target: opts.target.text,
    ...extra,
    fingerprint: opts.fingerprint ?? hardwareFingerprint(opts.target),
    ...(opts.recordsThreads !== undefined ? { records_threads: opts.recordsThreads } : {}),
    library: 'model.so',
    params: 'params.bin',
    library_sha256: fileSha256(path.join(dir, 'model.so')),
    params_sha256: fileSha256(path.join(dir, 'params.bin')),
    params_count: built.paramsCount,
    workspace_bytes: built.workspaceBytes,
    ...(samples > 1 ? { samples } : {}),
    inputs: inputs.map((n, i) => ({ name: names.inputs[i], shape: batchShape(n.shape, samples), dtype: n.dtype })),
    outputs: graph.outputs.map((id, i) => ({ name: names.outputs[i], shape: batchShape(graph.node(id).shape, samples), dtype: graph.node(id).dtype, file: `${names.files[i]}.bin` })),
    records: recordsUsed(kernels),
    kernels,
  };
}

/**
 * The part of model.c every target shares: the inputs' and outputs' tt_tensor_info, the
 * error buffer `tt_error` (`errorSize` bytes) and the ABI functions that only describe the
 * model (tt_abi_version, tt_num_inputs, tt_input_info, ..., tt_params_size, tt_last_error).
 */
export function modelInfoSource(g: Graph, inputIds: readonly number[], names: TensorNames, paramsSize: number, errorSize: number, samples = 1): string[] {
  const out: string[] = [];
  const infos = (kind: string, ids: readonly number[], tensorName: (i: number) => string): void => {
    ids.forEach((id, i) => out.push(`static const int64_t ${kind}_shape${i}[] = {${batchShape(g.node(id).shape, samples).join(', ')}};`));
    out.push(`static const tt_tensor_info ${kind}_info[] = {`);
    ids.forEach((id, i) => out.push(`  {${cString(utf8(tensorName(i)))}, ${g.node(id).shape.length}, ${kind}_shape${i}, ${ABI_DTYPE_CODES[g.node(id).dtype]}},`));
    out.push('};');
  };
  infos('input', inputIds, (i) => names.inputs[i]);
  infos('output', g.outputs, (i) => names.outputs[i]);
  out.push(
    `static char tt_error[${errorSize}] = "";`,
    'TT_EXPORT int tt_abi_version(void) { return TT_ABI_VERSION; }',
    `TT_EXPORT int tt_num_inputs(void) { return ${inputIds.length}; }`,
    `TT_EXPORT const tt_tensor_info* tt_input_info(int i) { return i >= 0 && i < ${inputIds.length} ? &input_info[i] : 0; }`,
    `TT_EXPORT int tt_num_outputs(void) { return ${g.outputs.length}; }`,
    `TT_EXPORT const tt_tensor_info* tt_output_info(int i) { return i >= 0 && i < ${g.outputs.length} ? &output_info[i] : 0; }`,
    `TT_EXPORT int64_t tt_params_size(void) { return ${paramsSize}; }`,
    'TT_EXPORT const char* tt_last_error(void) { return tt_error; }',
  );
  return out;
}
