// Test helper: a C program built from the kernels' prelude (C_PRELUDE) with the kernels'
// flags runs loops over a float32 array and returns what each wrote, so that the prelude's
// scalar and vector helpers can be checked against the reference evaluator or a
// TypeScript rule.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nativeIncludeDir } from '../native/build';
import { C_PRELUDE } from './c';
import { DEFAULT_CFLAGS } from './run-c';

/**
 * Runs each of `loops` over `xs` (a multiple of the widest vector long): every loop is a C
 * statement reading `in[i]` and writing `out[i]` for i < n. One array per loop, in order.
 */
export function runPreludeLoops(xs: Float32Array, loops: readonly string[]): Float32Array[] {
  const main = [
    '#include <stdio.h>',
    'int main(int argc, char** argv) {',
    '  FILE* f = fopen(argv[1], "rb"); fseek(f, 0, SEEK_END); long n = ftell(f) / 4; rewind(f);',
    '  float* in = malloc(n * 4); float* out = malloc(n * 4);',
    '  if (fread(in, 4, n, f) != (size_t)n) return 5;',
    '  FILE* o = fopen(argv[2], "wb");',
    ...loops.map((loop) => `  ${loop} fwrite(out, 4, n, o);`),
    '  fclose(o); return 0;',
    '}',
  ].join('\n');
  const dir = mkdtempSync(join(tmpdir(), 'tt-prelude-'));
  try {
    writeFileSync(join(dir, 'm.c'), `${C_PRELUDE}\n${main}\n`);
    execFileSync(process.env.CC ?? 'cc', [...DEFAULT_CFLAGS, '-Wno-psabi', `-I${nativeIncludeDir()}`, '-o', join(dir, 'm'), join(dir, 'm.c'), '-lm'], { stdio: 'pipe' });
    writeFileSync(join(dir, 'in.bin'), Buffer.from(xs.buffer, xs.byteOffset, xs.byteLength));
    execFileSync(join(dir, 'm'), [join(dir, 'in.bin'), join(dir, 'out.bin')], { stdio: 'pipe' });
    const raw = readFileSync(join(dir, 'out.bin'));
    const all = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
    return loops.map((_, k) => all.subarray(xs.length * k, xs.length * (k + 1)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
