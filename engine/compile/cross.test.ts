// Cross compilation: `-mtriple=aarch64-linux-gnu` compiles every kernel and the entry
// point with aarch64-linux-gnu-gcc into an aarch64 shared library (NEON: 4 lanes).
// Running it needs an aarch64 machine (or a runner), so this checks what was built.
// Skipped, with skip() saying why, when the cross compiler is not installed
// (Debian: apt-get install gcc-aarch64-linux-gnu).

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { skip } from '../skip.fixture';
import { readManifest } from './manifest';
import { compileNetwork } from '../app/compile';

const CROSS_CC = 'aarch64-linux-gnu-gcc';
const EM_AARCH64 = 183;

function haveCrossCompiler(): boolean {
  try {
    execFileSync(CROSS_CC, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

test('mobilenet cross-compiled for aarch64 is an aarch64 shared library', async () => {
  if (!haveCrossCompiler()) {
    skip('aarch64 cross compilation', `${CROSS_CC} not installed (Debian: apt-get install gcc-aarch64-linux-gnu)`);
    return;
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'tt-cross-'));
  try {
    const target = 'llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72';
    const result = await compileNetwork({ model: 'mobilenet', imageSize: 32, target, outDir: path.join(dir, 'out'), cacheDir: path.join(dir, 'cache') });
    const elf = readFileSync(result.library);
    assert.equal([...elf.subarray(0, 4)], [0x7f, 0x45, 0x4c, 0x46], 'an ELF file');
    assert.is(elf.readUInt16LE(18), EM_AARCH64, 'machine: aarch64');
    assert.is(readManifest(path.join(dir, 'out')).target, target);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
