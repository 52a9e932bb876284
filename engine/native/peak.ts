// The machine's peak fp32 FLOP rate, measured rather than looked up: a C loop of
// independent fused multiply-adds on the widest vectors the target has (12 accumulator
// chains hide the FMA latency), compiled with the target's flags and run on N threads.
// Every "% of peak" tensortune prints (benchmark --profile, bench/) divides by this figure.

import { promises as fs } from 'node:fs';
import path from 'node:path';
import { cacheRoot, findCompiler, loadExeca } from './build';

const CHAINS = 12;

function source(lanes: number): string {
  const accs = Array.from({ length: CHAINS }, (_, i) => `a${i}`);
  return `#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <omp.h>
typedef float vf __attribute__((vector_size(${lanes * 4})));
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
volatile float sink;
static void burn(long iters) {
  vf b = {0}, c = {0};
  for (int l = 0; l < ${lanes}; ++l) { b[l] = 0.999999f; c[l] = 1e-7f * (float)l; }
  ${accs.map((a, i) => `vf ${a} = b * ${((i + 1) / 10).toFixed(1)}f;`).join(' ')}
  for (long i = 0; i < iters; ++i) {
    ${accs.map((a) => `${a} = ${a} * b + c;`).join(' ')}
    __asm__ volatile("" : ${accs.map((a) => `"+v"(${a})`).slice(0, 12).join(', ')});
  }
  vf s = ${accs.join(' + ')};
  float t = 0; for (int l = 0; l < ${lanes}; ++l) t += s[l];
  sink = t;
}
int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  long iters = 1000000;
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = now();
    #pragma omp parallel num_threads(threads)
    burn(iters);
    double dt = now() - t0;
    if (dt < 0.1) { iters *= 2; --rep; continue; }
    double gflops = (double)threads * iters * ${CHAINS} * ${lanes} * 2 / dt / 1e9;
    if (gflops > best) best = gflops;
  }
  printf("%.3f\\n", best);
  return 0;
}
`;
}

/** What the peak kernel is built for: a parsed CPU target's vector width and compiler flags (engine/target.ts). */
export interface PeakTarget {
  readonly vectorLanes: number;
  readonly cflags: readonly string[];
}

/** Peak fp32 GFLOP/s of `threads` threads with `target`'s vector width. */
export async function measurePeakGflops(threads: number, target: PeakTarget): Promise<number> {
  const dir = path.join(cacheRoot(), 'peak');
  await fs.mkdir(dir, { recursive: true });
  const src = path.join(dir, `peak${target.vectorLanes}.c`);
  const exe = path.join(dir, `peak${target.vectorLanes}-${target.cflags.join('').replace(/[^A-Za-z0-9]/g, '')}`);
  await fs.writeFile(src, source(target.vectorLanes));
  const cc = await findCompiler();
  const { execa } = await loadExeca();
  await execa(cc.command, [...cc.args, '-O2', '-fopenmp', ...target.cflags, src, '-o', exe]);
  const { stdout } = await execa(exe, [String(threads)]);
  return Number(stdout.trim());
}
