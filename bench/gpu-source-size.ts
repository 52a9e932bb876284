// What bounded unrolling (expansionBudget in engine/codegen/c.ts) does to GPU kernel source,
// measured in one run: every GPU sketch of the networks' tasks (one random fill each, fixed
// seed, as engine/codegen/cuda.test.ts draws them) plus each task's default schedule,
// rendered for CUDA and for OpenCL twice: `bounded` (what the renderers write now) and
// `unbounded` (every unrolled loop expanded textually, the renderers' option
// unboundedUnroll, as before the budget existed). It prints
//  - source bytes per kernel: totals, and the largest kernels, per network and language;
//  - nvcc: the whole CUDA set as one .cu per architecture (as cuda.test.ts compiles it),
//    each variant compiled by `nvcc -cubin` (engine/native/nvcc.ts flags) one after the
//    other, wall time per variant and architecture (with --nvcc; skipped without nvcc);
//  - PoCL (with --pocl N): for the N programs with the largest unbounded OpenCL source, the
//    time of tt_cl_create (clBuildProgram and clCreateKernel) and the extra time of the first
//    run over the second (the device compiler's work-group code is made at first launch),
//    each program's two variants one after the other, PoCL's kernel cache off.
// Ratios are unbounded / bounded. Times are one run each on whatever else the machine does.
//
//   npx tsx bench/gpu-source-size.ts [--nets resnet-18,mobilenet] [--seed 11] [--top 8]
//                                    [--nvcc] [--pocl 6] [--pocl-timeout 300]

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { CUDA_PRELUDE, renderCudaKernels } from '../engine/codegen/cuda';
import { lowerGpu, type GpuProgram } from '../engine/codegen/gpu';
import { launchTable, OPENCL_PRELUDE, renderOpenclKernels } from '../engine/codegen/opencl';
import { getNetwork } from '../engine/frontend/networks';
import { extractTasks } from '../engine/graph/extract';
import { findCompiler, loadExeca, nativeIncludeDir, OPENCL_RUNTIME_LIBS, openclRuntimeObject } from '../engine/native/build';
import { findNvcc, nvccFlags, nvccMissing } from '../engine/native/nvcc';
import { openclAvailable } from '../engine/native/opencl';
import { defaultOptionsOf, defaultSchedule } from '../engine/schedule/defaults';
import { State } from '../engine/schedule/state';
import type { Step } from '../engine/schedule/steps';
import { buildState, RandomSource } from '../engine/search/annotate';
import { Rng } from '../engine/search/rng';
import { generateGpuSketches } from '../engine/search/sketch-gpu';
import { parseTarget, type Target } from '../engine/target';
import { benchArgs } from './args';

const USAGE = 'npx tsx bench/gpu-source-size.ts [--nets resnet-18,mobilenet] [--seed 11] [--top 8] [--nvcc] [--pocl N] [--pocl-timeout 300]';
const VARIANTS = ['unbounded', 'bounded'] as const;
type Variant = typeof VARIANTS[number];
const unbounded = (v: Variant): boolean => v === 'unbounded';

/** Each task's default schedule and one valid random fill of each GPU sketch (50 draws at most), lowered for `target`. */
function programs(net: string, target: Target, seed: number): GpuProgram[] {
  const tasks = extractTasks(getNetwork(net, { weights: 'zeros' }).graph);
  const rng = new Rng(seed);
  const out: GpuProgram[] = [];
  tasks.forEach((task, t) => {
    const packable = new Set(task.constInputs ?? []);
    const lowerAs = (steps: Step[], name: string): GpuProgram => lowerGpu(State.replay(task.dag, steps), name, target.gpu!, { packable });
    out.push(lowerAs(defaultSchedule(task.dag, defaultOptionsOf(target)), `t${t}_default`));
    const sketches = generateGpuSketches(task.dag, { gpu: target.gpu!, mali: false });
    sketches.forEach((_, i) => {
      for (let attempt = 0; attempt < 50; attempt++) {
        try {
          out.push(lowerAs(buildState(task.dag, sketches, i, new RandomSource(rng)).steps, `t${t}_s${i}`));
          return;
        } catch {
          // an invalid fill: draw again
        }
      }
    });
  });
  return out;
}

const kb = (n: number): string => `${(n / 1024).toFixed(1)} KiB`;
const ratio = (a: number, b: number): string => `${(a / b).toFixed(2)}x`;

/** Per-kernel source bytes of one program (each kernel rendered alone). */
function kernelSizes(p: GpuProgram, render: (p: GpuProgram) => string): { name: string; bytes: number }[] {
  return p.kernels.map((k) => ({ name: k.name, bytes: render({ ...p, kernels: [k] }).length }));
}

function sizeReport(label: string, progs: GpuProgram[], render: (p: GpuProgram, v: Variant) => string, top: number): void {
  const sizes = Object.fromEntries(VARIANTS.map((v) => [v, progs.flatMap((p) => kernelSizes(p, (q) => render(q, v)))])) as Record<Variant, { name: string; bytes: number }[]>;
  const total = (v: Variant): number => sizes[v].reduce((a, k) => a + k.bytes, 0);
  console.log(`\n${label}: ${progs.length} programs, ${sizes.bounded.length} kernels`);
  console.log(`  total   unbounded ${kb(total('unbounded'))}, bounded ${kb(total('bounded'))}: ${ratio(total('unbounded'), total('bounded'))}`);
  const after = new Map(sizes.bounded.map((k) => [k.name, k.bytes]));
  const largest = [...sizes.unbounded].sort((a, b) => b.bytes - a.bytes).slice(0, top);
  console.log(`  largest kernels (unbounded -> bounded):`);
  for (const k of largest) console.log(`    ${k.name.padEnd(16)} ${kb(k.bytes).padStart(12)} -> ${kb(after.get(k.name)!).padStart(10)}  ${ratio(k.bytes, after.get(k.name)!)}`);
  const maxBounded = Math.max(...sizes.bounded.map((k) => k.bytes));
  console.log(`  largest bounded kernel: ${kb(maxBounded)}`);
}

async function nvccTimes(label: string, progs: GpuProgram[], lanes: number): Promise<void> {
  const why = nvccMissing();
  if (why) { console.log(`\nnvcc: skipped (${why})`); return; }
  const { execa } = await loadExeca();
  const nvcc = findNvcc();
  const dir = mkdtempSync(path.join(tmpdir(), 'tt-gpu-size-'));
  try {
    console.log(`\nnvcc, ${label}: the whole set as one .cu, one compile at a time`);
    for (const arch of ['sm_80', 'sm_90']) {
      const secs: Record<string, number> = {};
      for (const v of VARIANTS) {
        const src = path.join(dir, `${v}.cu`);
        writeFileSync(src, `${CUDA_PRELUDE}\n${progs.map((p) => renderCudaKernels(p, { vectorLanes: lanes, unboundedUnroll: unbounded(v) })).join('\n')}`);
        const t0 = performance.now();
        const r = await execa(nvcc.command, [...nvccFlags(arch), src, '-o', path.join(dir, `${v}.cubin`)], { reject: false, all: true, timeout: 1_200_000 });
        secs[v] = (performance.now() - t0) / 1000;
        if (r.failed) console.log(`  ${arch} ${v}: FAILED: ${String(r.all).split('\n').slice(0, 5).join(' | ')}`);
      }
      console.log(`  ${arch}: unbounded ${secs.unbounded.toFixed(1)} s, bounded ${secs.bounded.toFixed(1)} s: ${ratio(secs.unbounded, secs.bounded)}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A small C program that builds one OpenCL program (spec file + source) and runs it twice, printing the three times. */
const POCL_PROBE = String.raw`
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "tt_opencl.h"
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static char* slurp(const char* f) { FILE* h = fopen(f, "rb"); if (!h) exit(2); fseek(h, 0, SEEK_END); long n = ftell(h); rewind(h);
  char* s = malloc(n + 1); if (fread(s, 1, n, h) != (size_t)n) exit(2); s[n] = 0; fclose(h); return s; }
int main(int argc, char** argv) {
  if (argc != 3) return 2;
  char* src = slurp(argv[1]);
  FILE* spec = fopen(argv[2], "r");
  int nb, nl;
  if (!spec || fscanf(spec, "%d", &nb) != 1) return 2;
  tt_cl_buffer_spec* b = calloc(nb, sizeof *b);
  for (int i = 0; i < nb; i++) if (fscanf(spec, "%zu %d", &b[i].count, &b[i].role) != 2) return 2;
  if (fscanf(spec, "%d", &nl) != 1) return 2;
  tt_cl_launch* l = calloc(nl, sizeof *l);
  for (int i = 0; i < nl; i++) {
    char* name = malloc(256);
    if (fscanf(spec, "%255s %d", name, &l[i].nargs) != 2) return 2;
    int* a = calloc(l[i].nargs, sizeof *a);
    for (int j = 0; j < l[i].nargs; j++) if (fscanf(spec, "%d", &a[j]) != 1) return 2;
    for (int d = 0; d < 3; d++) if (fscanf(spec, "%zu", &l[i].global[d]) != 1) return 2;
    for (int d = 0; d < 3; d++) if (fscanf(spec, "%zu", &l[i].local[d]) != 1) return 2;
    l[i].kernel = name; l[i].args = a;
  }
  int kind; char err[4096];
  double t0 = now();
  tt_cl_program* p = tt_cl_create(src, NULL, b, nb, l, nl, &kind, err, sizeof err);
  double t1 = now();
  if (!p) { fprintf(stderr, "%s\n", err); return 3; }
  if (tt_cl_run(p)) { fprintf(stderr, "%s\n", tt_cl_error(p)); return 3; }
  double t2 = now();
  if (tt_cl_run(p)) { fprintf(stderr, "%s\n", tt_cl_error(p)); return 3; }
  double t3 = now();
  printf("%f %f %f\n", t1 - t0, t2 - t1, t3 - t2);
  tt_cl_destroy(p);
  return 0;
}
`;

async function poclTimes(label: string, progs: GpuProgram[], lanes: number, count: number, timeoutS: number): Promise<void> {
  const why = openclAvailable();
  if (why) { console.log(`\nPoCL: skipped (${why})`); return; }
  const { execa } = await loadExeca();
  const cc = await findCompiler();
  const dir = mkdtempSync(path.join(tmpdir(), 'tt-gpu-size-cl-'));
  try {
    const probe = path.join(dir, 'probe');
    writeFileSync(path.join(dir, 'probe.c'), POCL_PROBE);
    await execa(cc.command, [...cc.args, '-O1', '-std=gnu11', `-I${nativeIncludeDir()}`, path.join(dir, 'probe.c'), await openclRuntimeObject(cc), ...OPENCL_RUNTIME_LIBS, '-o', probe]);
    const render = (p: GpuProgram, v: Variant): string => `${OPENCL_PRELUDE}\n${renderOpenclKernels(p, { vectorLanes: lanes, unboundedUnroll: unbounded(v) })}`;
    const chosen = progs.map((p) => ({ p, bytes: render(p, 'unbounded').length })).sort((a, b) => b.bytes - a.bytes).slice(0, count);
    console.log(`\nPoCL, ${label}: the ${chosen.length} programs with the largest unbounded source; build = tt_cl_create, first launch = first run - second run`);
    const sums: Record<Variant, { build: number; first: number }> = { unbounded: { build: 0, first: 0 }, bounded: { build: 0, first: 0 } };
    let complete = 0;
    for (const { p } of chosen) {
      const t = launchTable(p);
      const spec = [
        String(t.buffers.length), ...t.buffers.map((b) => `${b.size} ${b.role === 'in' ? 0 : b.role === 'out' ? 1 : 2}`),
        String(t.launches.length), ...t.launches.map((l) => `${l.kernel} ${l.args.length} ${l.args.join(' ')} ${l.global.join(' ')} ${l.local.join(' ')}`),
      ].join('\n');
      writeFileSync(path.join(dir, 'spec.txt'), spec);
      const row: string[] = [];
      const got: Partial<Record<Variant, number[]>> = {};
      for (const v of VARIANTS) {
        writeFileSync(path.join(dir, 'k.cl'), render(p, v));
        const r = await execa(probe, [path.join(dir, 'k.cl'), path.join(dir, 'spec.txt')], { reject: false, all: true, timeout: timeoutS * 1000, env: { POCL_KERNEL_CACHE: '0' } });
        if (r.failed) { row.push(`${v} ${r.timedOut ? `timed out (${timeoutS} s)` : `failed: ${String(r.all).split('\n')[0]}`}`); continue; }
        const [build, first, second] = String(r.stdout).trim().split(' ').map(Number);
        got[v] = [build, first - second];
        row.push(`${v} build ${build.toFixed(2)} s + first launch ${(first - second).toFixed(2)} s`);
      }
      if (got.unbounded && got.bounded) {
        complete++;
        for (const v of VARIANTS) { sums[v].build += got[v]![0]; sums[v].first += got[v]![1]; }
      }
      console.log(`  ${p.name.padEnd(12)} ${row.join('; ')}`);
    }
    const all = (v: Variant): number => sums[v].build + sums[v].first;
    if (complete > 0) {
      console.log(`  sum over the ${complete} programs both variants finished: build ${ratio(sums.unbounded.build, sums.bounded.build)}, build + first launch unbounded ${all('unbounded').toFixed(1)} s, bounded ${all('bounded').toFixed(1)} s: ${ratio(all('unbounded'), all('bounded'))}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const args = benchArgs('bench/gpu-source-size.ts', USAGE, { nets: 'resnet-18,mobilenet', seed: '11', top: '8', pocl: '0', 'pocl-timeout': '300' }, { switches: ['nvcc'] });
  const nets = args.list('nets');
  const seed = args.num('seed');
  const top = args.int('top');
  const pocl = args.num('pocl');
  const cuda = parseTarget('cuda -arch=sm_80');
  const opencl = parseTarget('opencl');
  for (const net of nets) {
    const cudaProgs = programs(net, cuda, seed);
    sizeReport(`${net}, CUDA (${cuda.text})`, cudaProgs, (p, v) => renderCudaKernels(p, { vectorLanes: cuda.vectorLanes, unboundedUnroll: unbounded(v) }), top);
    const clProgs = programs(net, opencl, seed);
    sizeReport(`${net}, OpenCL (${opencl.text})`, clProgs, (p, v) => renderOpenclKernels(p, { vectorLanes: opencl.vectorLanes, unboundedUnroll: unbounded(v) }), top);
    if (args.on('nvcc')) await nvccTimes(net, cudaProgs, cuda.vectorLanes);
    if (pocl > 0) await poclTimes(net, clProgs, opencl.vectorLanes, pocl, args.num('pocl-timeout'));
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.stack : e);
  process.exit(1);
});
