// Compiling a network: graph passes -> fused groups -> one C kernel per distinct
// (group, schedule) -> object cache -> an ahead-of-time entry point (model.c: the call
// sequence and a static memory plan) -> model.so, params.bin, manifest.json.
//
// Nothing here trusts what it did not just make: a cached object is reused only while it
// matches its seal (native/file-cache.ts); every compiler call has a time limit, and a tuned
// kernel that fails or runs past it falls back to its task's default schedule with a
// warning; the output folder is replaced whole (out-dir.ts), and the manifest holds the
// sha256 of model.so and params.bin, which reading it checks (manifest.ts).

import { promises as fs } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { argElemType, C_PRELUDE, renderKernel } from '../codegen/c';
import type { BlockedLayout } from '../codegen/layout';
import { lower } from '../codegen/lower';
import { constantPlaceholders, describeGroup } from '../graph/extract';
import type { FusedGroup } from '../graph/fuse';
import type { Graph } from '../graph/graph';
import { compilerFailure, loadExeca, nativeIncludeDir } from '../native/build';
import { cachedFileOk, sealIntoCache } from '../native/file-cache';
import { defaultSchedule } from '../schedule/defaults';
import { State } from '../schedule/state';
import type { Step } from '../schedule/steps';
import { numElements } from '../ir/tensor';
import { kindOf } from '../target';
import { UserError } from '../errors';
import { inContext, REPORT_HINT } from './internal-error';
import { planMemory } from './memory-plan';
import {
  kernelFields, modelInfoSource, packParams, sha, startCompile, writeModel,
  type CompileOptions, type CompileResult, type KernelInfo, type TensorNames, type TunedSchedule,
} from './model-common';
import { compileGpuModel } from './model-gpu';

export type { CompileOptions, CompileResult, KernelInfo, TunedSchedule } from './model-common';

export async function compileModel(opts: CompileOptions): Promise<CompileResult> {
  // GPU kinds: kernels in the kind's language, a C host library around them (model-gpu.ts).
  // CPU kinds: C kernels built with the kind's flags, below.
  const backend = kindOf(opts.target).model.cpu;
  if (!backend) return compileGpuModel(opts);
  const start = await startCompile(opts);
  const { log, warn, graph, groups, compiler, names, timeoutMs } = start;
  const cflags = [...backend.cflags, ...opts.target.cflags];

  // One kernel per distinct (DAG, schedule); identical layers share it.
  type PlannedKernel = KernelInfo & { code: string };
  const kernels = new Map<string, PlannedKernel>();
  const groupSymbol = new Map<number, string>();
  const groupLayouts = new Map<number, readonly BlockedLayout[]>();
  const build = (group: FusedGroup, steps: Step[]) => {
    const kernel = lower(State.replay(group.dag, steps), 'KERNEL', { packable: new Set(constantPlaceholders(graph, group)) });
    return { kernel, body: renderKernel(kernel, { vectorLanes: opts.target.vectorLanes }) };
  };
  const refused = new Set<string>(), plain = new Set<string>();
  const place = (group: FusedGroup, tuned: TunedSchedule | undefined): void => {
    const desc = (): string => describeGroup(graph, group);
    let built: ReturnType<typeof build> | undefined;
    // A tuned schedule that does not replay or lower (a record of another tensortune) gives
    // way to the default; a default that does not gives way to the plain schedule (every
    // stage at root: slow, correct) with a warning; an error past that names the kernel.
    // Said once per task, however many layers share it.
    const key = group.dag.workloadKey;
    if (tuned && refused.has(key)) tuned = undefined;
    if (tuned) {
      try {
        built = build(group, tuned.steps);
      } catch (e) {
        if (e instanceof UserError) throw e;
        warn(`the tuned schedule of ${desc()} from ${tuned.source} does not lower (${(e as Error).message}); its task uses the default schedule`);
        refused.add(key);
        tuned = undefined;
      }
    }
    if (!built) {
      // Why the default gave way to the plain schedule: said once per task.
      const plainInstead = (why: string): void => {
        if (!plain.has(key)) warn(`the default schedule of ${desc()} ${why}: compiled with every stage at root instead (correct, slower); ${REPORT_HINT}`);
        plain.add(key);
      };
      try {
        built = build(group, defaultSchedule(group.dag, kindOf(opts.target).defaultOptions(opts.target), (e) => plainInstead(`does not apply (${e.message})`)));
      } catch (e) {
        if (e instanceof UserError) throw e;
        built = inContext(() => `compiling the kernel of ${desc()}`, () => build(group, []));
        plainInstead(`does not lower (${(e as Error).message})`);
      }
    }
    const { kernel, body } = built;
    groupLayouts.set(group.id, kernel.layouts);
    const symbol = `tt_k_${sha(body).slice(0, 16)}`;
    groupSymbol.set(group.id, symbol);
    const existing = kernels.get(symbol);
    if (existing) { existing.groups.push(group.id); return; }
    const code = `${C_PRELUDE}\n${body.replace('int32_t KERNEL(', `int32_t ${symbol}(`)}`;
    kernels.set(symbol, {
      symbol, groups: [group.id], ...kernelFields(group, describeGroup(graph, group), tuned),
      objectHash: sha(JSON.stringify([code, cflags, compiler.identity])).slice(0, 24),
      compiled: false, code,
    });
  };
  const placeNamed = (group: FusedGroup, tuned: TunedSchedule | undefined): void =>
    inContext(() => `compiling the kernel of ${describeGroup(graph, group)}`, () => place(group, tuned));
  for (const group of groups) placeNamed(group, opts.schedules?.get(group.dag.workloadKey));

  // Object cache: compile what is missing or does not match its seal, two at a time (one
  // per core on a laptop CI box). Failures are returned with the compiler's reason.
  const objDir = path.join(opts.cacheDir, 'objects');
  await fs.mkdir(objDir, { recursive: true });
  const objectOf = (k: PlannedKernel): string => path.join(objDir, `${k.objectHash}.o`);
  const { execa } = await loadExeca();
  const compileOne = async (k: PlannedKernel): Promise<string | undefined> => {
    // Two compiles (in one process, or two) may build the same kernel at once: the source is
    // written under a name of this call's own and renamed to <hash>.c (same content, an atomic
    // replace: the compiler never reads a half-written file; the object records that name, so
    // a rebuild is byte-identical), and the object goes to a temporary name of its own before
    // it is sealed into the cache.
    const unique = `${process.pid}-${randomBytes(4).toString('hex')}`;
    const src = path.join(objDir, `${k.objectHash}.c`);
    const tmp = `${objectOf(k)}.tmp-${unique}`;
    await fs.writeFile(`${src}.tmp-${unique}`, k.code);
    await fs.rename(`${src}.tmp-${unique}`, src);
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
    const fresh = [...kernels.values()].filter((k) => !seen.has(k));
    fresh.forEach((k) => seen.add(k));
    const cached = await Promise.all(fresh.map((k) => cachedFileOk(objectOf(k))));
    const queue = fresh.filter((_, i) => !cached[i]);
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
    for (const { kernel } of fallbacks) for (const id of kernel.groups) placeNamed(groups.find((g) => g.id === id)!, undefined);
    failed = [...failed.filter((f) => f.kernel.schedule === 'default'), ...(await compileMissing())];
  }
  if (failed.length > 0) {
    const { kernel, why } = failed[0];
    throw new UserError(`compiling kernel ${kernel.symbol} (${kernel.desc}, ${kernel.source}) failed:\n${why}`);
  }
  const compiledCount = [...kernels.values()].filter((k) => k.compiled).length;
  log(`kernels: ${compiledCount} compiled, ${kernels.size - compiledCount} reused from ${objDir}`);

  // Params: every constant a group reads, in the layout its kernel reads, each at a 64-byte
  // aligned offset.
  const packed = packParams(graph, groups, (group) => groupLayouts.get(group.id)!);
  const paramsSize = packed.values.length;

  const plan = planMemory(graph, groups, { inPlace: true });
  const inputs = graph.nodes.filter((n) => n.op === 'input');
  const modelC = renderEntryPoint(graph, groups, groupSymbol, packed.offsets, paramsSize, plan, inputs.map((n) => n.id), names, start.samples);

  const kernelList = [...kernels.values()].map(({ code: _code, ...k }) => k);
  // The kernels' thread pool links once, beside them (its object is in the native cache).
  const objects = [...[...kernels.values()].map(objectOf), await backend.runtimeObject(compiler)];
  const files = await writeModel(opts, start, {
    source: modelC,
    linkArgs: (modelSrc, library) => [...cflags, '-shared', '-fvisibility=hidden', `-I${nativeIncludeDir()}`, modelSrc, ...objects, '-o', library, '-lm'],
    linkFailure: `linking model.so for ${opts.outDir} failed (its kernel objects come from the cache ${objDir}; delete that folder to rebuild them)`,
    params: packed.values,
    built: { paramsCount: paramsSize, workspaceBytes: plan.size * 4, kernels: kernelList },
  });
  return { ...files, kernels: kernelList, compiled: compiledCount, reused: kernels.size - compiledCount };
}

function renderEntryPoint(
  g: Graph, groups: readonly FusedGroup[], symbols: ReadonlyMap<number, string>, paramOffset: ReadonlyMap<string, number>,
  paramsSize: number, plan: ReturnType<typeof planMemory>, inputIds: readonly number[], names: TensorNames, samples: number,
): string {
  const out: string[] = [
    '/* Generated by tensortune: the model\'s entry points, call sequence and memory plan. */',
    '#include "tensortune.h"',
    '#include <stdint.h>',
    '#include <stdlib.h>',
    '#include <stdio.h>',
    '#include <time.h>',
    '#ifdef __GLIBC__',
    '#include <malloc.h>',
    '#endif',
  ];
  const protos = new Set<string>();
  for (const group of groups) {
    const sym = symbols.get(group.id)!;
    if (protos.has(sym)) continue;
    protos.add(sym);
    out.push(`int32_t ${sym}(${group.dag.tensors.map((t) => `${argElemType(t.dtype)}*`).join(', ')});`);
  }
  out.push(
    ...modelInfoSource(g, inputIds, names, paramsSize, 256, samples),
    'static const float* tt_params = 0;',
    'static float* tt_arena = 0;',
    // The kernels' thread pool (native/pool/tt_pool.c, linked into model.so).
    'void tt_pool_set_threads(int n) __attribute__((visibility("hidden")));',
    'TT_EXPORT void tt_set_num_threads(int n) {',
    '  if (n > 0) tt_pool_set_threads(n);',
    '}',
    'TT_EXPORT int tt_init(const float* params) {',
    '  if (!params) { snprintf(tt_error, sizeof tt_error, "tt_init: params is NULL"); return 1; }',
    '  tt_params = params;',
    // Kernels that hold an intermediate buffer (a conv's padded input, Winograd's
    // transforms) allocate it per call. With glibc's defaults, buffers of a few MB are
    // mmapped or trimmed back to the system on free, so every call page-faults them in
    // again: resnet-18 with a tuned Winograd layer ran 18.0 ms instead of 16.0.
    // Keeping such buffers on the heap makes each call reuse the last one's pages.
    '#ifdef __GLIBC__',
    '  mallopt(M_MMAP_THRESHOLD, 32 << 20);',
    '  mallopt(M_TRIM_THRESHOLD, 256 << 20);',
    '#endif',
    `  if (!tt_arena && ${plan.size} > 0) {`,
    `    tt_arena = (float*)aligned_alloc(64, ${Math.ceil(plan.size / 16) * 64});`,
    '    if (!tt_arena) { snprintf(tt_error, sizeof tt_error, "tt_init: cannot allocate the workspace"); return 2; }',
    '  }',
    '  return 0;',
    '}',
    // The per-kernel profile (tensortune.h): call i's symbol; tt_run_profiled (below) is
    // tt_run's call sequence with each call timed, so tt_run itself carries no timing.
    `static const char* const tt_call_symbols[${Math.max(1, groups.length)}] = { ${groups.length ? groups.map((gr) => `"${symbols.get(gr.id)!}"`).join(', ') : '0'} };`,
    `TT_EXPORT int tt_num_calls(void) { return ${groups.length}; }`,
    `TT_EXPORT const char* tt_call_symbol(int i) { return i >= 0 && i < ${groups.length} ? tt_call_symbols[i] : 0; }`,
    'static double tt_now_ms(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e3 + t.tv_nsec * 1e-6; }',
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
  const calls = groups.map((group, i) => {
    const ptrs = [...group.inputs.map((id, input) => pointer(id, paramOffset.get(`${group.id}:${input}`))), pointer(group.output)];
    // Buffers are float words; an int32/bool tensor's kernel argument is an int32_t*.
    const args = ptrs.map((p, a) => (group.dag.tensors[a].dtype === 'float32' ? p : `(int32_t*)(${p})`)).join(', ');
    return `  if (${symbols.get(group.id)}(${args}) != 0) { snprintf(tt_error, sizeof tt_error, "kernel %d failed", ${i}); return 2; }`;
  });
  const started = '  if (!tt_params) { snprintf(tt_error, sizeof tt_error, "tt_run: call tt_init first"); return 1; }';
  const profiled = calls.flatMap((call, i) => [call, `  tt_t1 = tt_now_ms(); ms[${i}] += tt_t1 - tt_t0; tt_t0 = tt_t1;`]);
  // The entry points run the kernels with subnormal floats flushed to zero and give the
  // caller's thread its own floating-point mode back (native/pool/tt_pool.c,
  // tt_fp_flush_begin: why); the pool's threads take the mode from the caller, loop by loop.
  const entryPoints = (run: string, runProfiled: string): string[] => [
    'unsigned tt_fp_flush_begin(void) __attribute__((visibility("hidden")));',
    'void tt_fp_flush_end(unsigned mode) __attribute__((visibility("hidden")));',
    'TT_EXPORT int tt_run(const float* const* inputs, float* const* outputs) {',
    `  unsigned tt_fp = tt_fp_flush_begin(); int rc = ${run}; tt_fp_flush_end(tt_fp); return rc;`,
    '}',
    'TT_EXPORT int tt_run_profiled(const float* const* inputs, float* const* outputs, double* ms) {',
    `  unsigned tt_fp = tt_fp_flush_begin(); int rc = ${runProfiled}; tt_fp_flush_end(tt_fp); return rc;`,
    '}',
  ];
  if (samples === 1) {
    out.push(
      'static int tt_run_kernels(const float* const* inputs, float* const* outputs) {', started, ...calls, '  return 0;', '}',
      'static int tt_run_kernels_profiled(const float* const* inputs, float* const* outputs, double* ms) {', started,
      '  double tt_t0 = tt_now_ms(), tt_t1 = tt_t0;', ...profiled, '  (void)tt_t0; (void)tt_t1;', '  return 0;', '}',
      ...entryPoints('tt_run_kernels(inputs, outputs)', 'tt_run_kernels_profiled(inputs, outputs, ms)'),
    );
    return out.join('\n') + '\n';
  }
  // The graph is one sample's (graph/per-sample.ts): each entry point runs it once per sample,
  // on that sample's rows of every input and output. With at least as many samples as
  // threads, the samples are shared out among the pool's threads, each sample on one thread
  // (a kernel's parallel loops inside it run on that thread); each running sample has a
  // workspace of its own, a slot taken for the samples of one chunk. With fewer samples they
  // run one after another, each with all threads in its kernels' parallel loops. A profiled
  // run adds each call's time divided by the threads running samples at once: the call's
  // share of the run's wall time.
  const words = (id: number): number => numElements(g.node(id).shape);
  const slotBytes = Math.ceil(plan.size / 16) * 64;
  out.push(
    'static int tt_run_sample(const float* const* inputs, float* const* outputs, float* tt_arena) {', ...calls, '  return 0;', '}',
    'static int tt_run_profiled_sample(const float* const* inputs, float* const* outputs, float* tt_arena, double* ms) {',
    '  double tt_t0 = tt_now_ms(), tt_t1 = tt_t0;', ...profiled, '  (void)tt_t0; (void)tt_t1;', '  return 0;', '}',
    'int tt_pool_threads(void) __attribute__((visibility("hidden")));',
    'void tt_parallel_for(int32_t begin, int32_t end, void (*body)(void*, int32_t, int32_t), void* ctx) __attribute__((visibility("hidden")));',
    '#define TT_SLOTS 256',
    'static float* tt_slot_arena[TT_SLOTS];',
    'static int tt_slot_busy[TT_SLOTS];',
    'static int tt_ms_lock;',
    'typedef struct { const float* const* inputs; float* const* outputs; double* ms; double share; int rc; } tt_samples;',
    'static void tt_run_samples(void* vctx, int32_t begin, int32_t end) {',
    '  tt_samples* c = (tt_samples*)vctx;',
    '  int slot = 0;',
    '  for (;; slot = (slot + 1) % TT_SLOTS) { int idle = 0; if (__atomic_compare_exchange_n(&tt_slot_busy[slot], &idle, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) break; }',
    '  float* arena = slot == 0 ? tt_arena : tt_slot_arena[slot];',
    ...(plan.size > 0 ? [
      `  if (!arena) arena = tt_slot_arena[slot] = (float*)aligned_alloc(64, ${slotBytes});`,
      '  if (!arena) {',
      '    snprintf(tt_error, sizeof tt_error, "tt_run: cannot allocate the workspace of a sample");',
      '    __atomic_store_n(&c->rc, 2, __ATOMIC_RELAXED);',
      '    __atomic_store_n(&tt_slot_busy[slot], 0, __ATOMIC_RELEASE);',
      '    return;',
      '  }',
    ] : []),
    `  double ms[${Math.max(1, groups.length)}] = {0};`,
    `  const float* in[${inputIds.length}]; float* out[${g.outputs.length}];`,
    '  for (int64_t s = begin; s < end && !__atomic_load_n(&c->rc, __ATOMIC_RELAXED); s++) {',
    ...inputIds.map((id, i) => `    in[${i}] = c->inputs[${i}] + s * ${words(id)};`),
    ...g.outputs.map((id, i) => `    out[${i}] = c->outputs[${i}] + s * ${words(id)};`),
    '    int rc = c->ms ? tt_run_profiled_sample(in, out, arena, ms) : tt_run_sample(in, out, arena);',
    '    if (rc != 0) __atomic_store_n(&c->rc, rc, __ATOMIC_RELAXED);',
    '  }',
    '  if (c->ms) {',
    '    while (__atomic_test_and_set(&tt_ms_lock, __ATOMIC_ACQUIRE)) {}',
    `    for (int i = 0; i < ${groups.length}; i++) c->ms[i] += ms[i] * c->share;`,
    '    __atomic_clear(&tt_ms_lock, __ATOMIC_RELEASE);',
    '  }',
    '  __atomic_store_n(&tt_slot_busy[slot], 0, __ATOMIC_RELEASE);',
    '}',
    'static int tt_run_batch(const float* const* inputs, float* const* outputs, double* ms) {',
    started,
    // The rule of graph/per-sample.ts kernelThreads, which tune and compile rank records by.
    '  int threads = tt_pool_threads();',
    '  tt_samples c = { inputs, outputs, ms, 1.0, 0 };',
    `  if (threads > 1 && ${samples} >= threads) {`,
    '    c.share = 1.0 / threads;',
    `    tt_parallel_for(0, ${samples}, tt_run_samples, &c);`,
    '  } else {',
    `    tt_run_samples(&c, 0, ${samples});`,
    '  }',
    '  return c.rc;',
    '}',
    ...entryPoints('tt_run_batch(inputs, outputs, 0)', 'tt_run_batch(inputs, outputs, ms)'),
  );
  return out.join('\n') + '\n';
}
