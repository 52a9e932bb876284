// A compiled CPU model runs its kernels with subnormal floats flushed to zero, on the
// calling thread and on the pool's (native/pool/tt_pool.c, tt_fp_flush_begin), and gives
// the caller its own floating-point mode back: subnormal results come out 0, normal
// values are untouched, and a program that calls tt_run finds its mode as it left it.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Graph } from '../graph/graph';
import { runBench } from '../native/bench';
import { findCompiler, nativeIncludeDir } from '../native/build';
import { readFloat32File, writeFloat32File } from '../runtime/rawfile';
import { parseTarget } from '../target';
import { compileModel } from './model';

const work = mkdtempSync(path.join(tmpdir(), 'tt-subnormals-test-'));
test.after(() => rmSync(work, { recursive: true, force: true }));

const N = 4096;
const SMALLEST_NORMAL = 2 ** -126;

/** y = x * 1e-30: a parallel elementwise kernel (4096 elements) whose products of x = 1e-10 are subnormal. */
function scaleGraph(): Graph {
  const g = new Graph();
  const x = g.input('x', [N]);
  const k = g.constant('k', [1], Float32Array.of(1e-30));
  g.outputs = [g.op('multiply', [x, k])];
  return g;
}

/** The model both tests run, compiled once. */
let compiling: Promise<{ library: string; params: string }> | undefined;
function compiled(): Promise<{ library: string; params: string }> {
  compiling ??= compileModel({ name: 'scale', graph: scaleGraph(), target: parseTarget('llvm'), outDir: path.join(work, 'scale'), cacheDir: path.join(work, 'cache') })
    .then((r) => ({ library: r.library, params: r.params }));
  return compiling;
}

test('subnormal products come out 0 at 1 and 2 threads; normal products are exact', async () => {
  const model = await compiled();
  // In turn: 1e-10 (product 1e-40, subnormal), 1 (product 1e-30, normal), 1e20 (1e-10),
  // -1e-10 (-1e-40).
  const x = Float32Array.from({ length: N }, (_, i) => [1e-10, 1, 1e20, -1e-10][i % 4]);
  const input = path.join(work, 'x.bin');
  await writeFloat32File(input, x);
  for (const threads of [1, 2]) {
    const saved = path.join(work, `out-${threads}`);
    await runBench({ model: model.library, params: model.params, repeat: 1, number: 1, minRepeatMs: 0, threads, inputs: { x: input }, saveOutputs: saved });
    const y = await readFloat32File(path.join(saved, 'output.bin'));
    for (let i = 0; i < N; i++) {
      const exact = Math.fround(Math.fround(x[i]) * Math.fround(1e-30));
      if (Math.abs(exact) < SMALLEST_NORMAL) assert.is(y[i], 0, `${threads} thread(s): ${x[i]} * 1e-30 = ${exact} (subnormal) came out ${y[i]}`);
      else assert.is(y[i], exact, `${threads} thread(s): ${x[i]} * 1e-30`);
    }
  }
});

test('a program calling tt_run keeps its own floating-point mode: subnormals survive in its own arithmetic after the call', async () => {
  const model = await compiled();
  const cc = await findCompiler();
  const source = path.join(work, 'mode.c');
  // Computes a subnormal before and after tt_run (volatile: at run time, not folded) and
  // prints whether each is still subnormal, and the model's first output.
  writeFileSync(source, `
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include "tensortune.h"
int main(int argc, char** argv) {
  void* lib = dlopen(argv[1], RTLD_NOW);
  if (!lib) { fprintf(stderr, "%s\\n", dlerror()); return 2; }
  int (*init)(const float*) = (int (*)(const float*))dlsym(lib, "tt_init");
  int (*run)(const float* const*, float* const*) = (int (*)(const float* const*, float* const*))dlsym(lib, "tt_run");
  long long (*size)(void) = (long long (*)(void))dlsym(lib, "tt_params_size");
  long long count = size();
  float* params = aligned_alloc(64, 64 * (count / 16 + 1));
  FILE* f = fopen(argv[2], "rb");
  if (!f || fseek(f, TT_PARAMS_HEADER_BYTES, SEEK_SET) != 0 || fread(params, 4, (size_t)count, f) != (size_t)count) return 5;
  fclose(f);
  if (init(params) != 0) return 3;
  static float x[${N}], y[${N}];
  for (int i = 0; i < ${N}; i++) x[i] = 1e-10f;
  volatile float tiny = 1e-38f, half = 0.5f;
  float before = tiny * half;
  const float* in[1] = { x }; float* out[1] = { y };
  if (run(in, out) != 0) return 4;
  float after = tiny * half;
  printf("%d %d %g\\n", before > 0.0f, after > 0.0f, (double)y[0]);
  return 0;
}
`);
  const exe = path.join(work, 'mode');
  execFileSync(cc.command, [...cc.args, '-O2', '-std=c11', '-I', nativeIncludeDir(), source, '-o', exe, '-ldl']);
  assert.is(execFileSync(exe, [model.library, model.params], { encoding: 'utf8', env: { ...process.env, OMP_NUM_THREADS: '2' } }), '1 1 0\n');
});

test.run();
