// Test support: compile one kernel with a small generated `main` that reads its inputs
// from a raw float32 file and writes its outputs, run it, and return the outputs. The
// tuner measures through the native worker instead; this path exists so that codegen is
// checked against the reference evaluator with nothing but a C compiler.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { numElements } from '../ir/tensor';
import { nativeIncludeDir, poolSource } from '../native/build';
import { C_PRELUDE, KERNEL_CFLAGS, renderKernel, type RenderOptions } from './c';
import type { Kernel } from './lower';

/** The shipped kernels' flags, for this machine. */
export const DEFAULT_CFLAGS = [...KERNEL_CFLAGS, '-march=native'];

/**
 * `opts.inPlace`: the index of an input whose buffer the kernel's (single) output is
 * written into, as a model's memory plan does (ir/in-place.ts); the output is read back
 * from that buffer.
 */
export function runKernel(
  k: Kernel, inputs: readonly Float32Array[], cflags: readonly string[] = DEFAULT_CFLAGS, render: RenderOptions = {},
  opts: { inPlace?: number } = {},
): Float32Array[] {
  const nIn = inputs.length;
  if (opts.inPlace !== undefined && (k.args.length !== nIn + 1 || !(opts.inPlace >= 0 && opts.inPlace < nIn))) {
    throw new Error(`runKernel: inPlace ${opts.inPlace} needs one output and an input index below ${nIn}`);
  }
  const sizes = k.args.map((a) => numElements(a.tensor.shape));
  const main = [
    '#include <stdio.h>',
    'int main(int argc, char** argv) {',
    '  if (argc < 3) return 2;',
    `  static const long sizes[] = {${sizes.join(', ')}};`,
    `  float* bufs[${k.args.length}];`,
    `  for (int i = 0; i < ${k.args.length}; ++i) { bufs[i] = (float*)calloc(sizes[i], sizeof(float)); if (!bufs[i]) return 3; }`,
    '  FILE* f = fopen(argv[1], "rb"); if (!f) return 4;',
    `  for (int i = 0; i < ${nIn}; ++i) if (fread(bufs[i], sizeof(float), sizes[i], f) != (size_t)sizes[i]) return 5;`,
    '  fclose(f);',
    ...(opts.inPlace !== undefined ? [`  bufs[${nIn}] = bufs[${opts.inPlace}];`] : []),
    `  if (${k.name}(${k.args.map((_, i) => `bufs[${i}]`).join(', ')}) != 0) return 6;`,
    '  FILE* o = fopen(argv[2], "wb"); if (!o) return 7;',
    `  for (int i = ${nIn}; i < ${k.args.length}; ++i) fwrite(bufs[i], sizeof(float), sizes[i], o);`,
    '  fclose(o); return 0;',
    '}',
  ].join('\n');
  const dir = mkdtempSync(join(tmpdir(), 'tt-kernel-'));
  try {
    writeFileSync(join(dir, 'k.c'), `${C_PRELUDE}\n${renderKernel(k, render)}\n${main}\n`);
    const cc = process.env.CC ?? 'cc';
    execFileSync(cc, [...cflags, '-std=gnu11', '-pthread', `-I${nativeIncludeDir()}`, '-o', join(dir, 'k'), join(dir, 'k.c'), poolSource(), '-lm'], { stdio: 'pipe' });
    const blob = Buffer.concat(inputs.map((x) => Buffer.from(x.buffer, x.byteOffset, x.byteLength)));
    writeFileSync(join(dir, 'in.bin'), blob);
    execFileSync(join(dir, 'k'), [join(dir, 'in.bin'), join(dir, 'out.bin')], { stdio: 'pipe' });
    const raw = readFileSync(join(dir, 'out.bin'));
    const all = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
    const outs: Float32Array[] = [];
    let off = 0;
    for (let i = nIn; i < k.args.length; i++) { outs.push(all.slice(off, off + sizes[i])); off += sizes[i]; }
    return outs;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
