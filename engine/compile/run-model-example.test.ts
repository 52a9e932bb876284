// docs/examples/run-model.c, the C program docs/compiled-model.md shows an application
// loading a compiled model with, still builds against native/include/tensortune.h and
// computes what tt_bench computes on the same input.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { findCompiler, nativeIncludeDir } from '../native/build';
import { runBench } from '../native/bench';
import { readFloat32File, writeFloat32File } from '../runtime/rawfile';
import { uniform } from '../runtime/random';
import { compileNetwork } from '../app/compile';

const EXAMPLE = path.resolve(__dirname, '..', '..', 'docs', 'examples', 'run-model.c');
const dir = mkdtempSync(path.join(tmpdir(), 'tt-run-model-'));

test('run-model.c loads a compiled mobilenet and agrees with tt_bench on the largest output', async () => {
  const out = path.join(dir, 'model');
  const compiled = await compileNetwork({ model: 'mobilenet', imageSize: 32, target: 'llvm -mcpu=native', outDir: out, cacheDir: path.join(dir, 'cache') });
  const input = path.join(dir, 'input.bin');
  await writeFloat32File(input, uniform(32 * 32 * 3, 3, 0));
  const saved = path.join(dir, 'saved');
  await runBench({ model: compiled.library, params: compiled.params, repeat: 1, number: 1, threads: 1, inputs: { data: input }, saveOutputs: saved });
  const want = await readFloat32File(path.join(saved, 'output.bin'));
  const best = want.reduce((b, v, i) => (v > want[b] ? i : b), 0);

  const cc = await findCompiler();
  const exe = path.join(dir, 'run-model');
  execFileSync(cc.command, [...cc.args, '-O2', '-std=c11', '-Wall', '-Wextra', '-Werror', '-I', nativeIncludeDir(), EXAMPLE, '-o', exe, '-ldl']);
  const printed = execFileSync(exe, [out, input], { encoding: 'utf8' });
  const m = /^output output \[1, 1000\]: largest element (\d+) = (\S+)\n$/.exec(printed);
  assert.ok(m, printed);
  assert.is(Number(m![1]), best);
  assert.ok(Math.abs(Number(m![2]) - want[best]) <= 1e-5 * Math.max(1, Math.abs(want[best])), `${m![2]} vs ${want[best]}`);
});

test.after(() => rmSync(dir, { recursive: true, force: true }));

test.run();
