// cString: every byte 1..255, followed by what a hex or octal escape could swallow, comes
// out of gcc's string literal exactly as it went in, with no warning at -Wall -Wextra.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { findCompiler, loadExeca } from '../native/build';
import { cString, utf8 } from './c-string';

test('cString: plain names stay readable, the rest is three-digit octal', () => {
  assert.is(cString(utf8('data')), '"data"');
  assert.is(cString(utf8('x:0')), '"x\\0720"');
  assert.is(cString(utf8('a/b:0')), '"a/b\\0720"');
  assert.is(cString(utf8('"\\?')), '"\\042\\134\\077"');
  assert.is(cString(utf8('é')), '"\\303\\251"');
  assert.throws(() => cString(Uint8Array.of(0x61, 0)), /NUL/);
});

test('cString: every byte 1..255 round-trips through gcc (followed by digits, hex letters, ? and quotes)', async () => {
  const tail = utf8('0789afAF??/"\\');
  const parts: number[] = [];
  for (let b = 1; b < 256; b++) parts.push(b, ...tail);
  parts.push(...utf8('??=??(??)??<??>??!??-??\'x:0'));
  const bytes = Uint8Array.from(parts);
  const dir = mkdtempSync(path.join(tmpdir(), 'tt-cstring-'));
  try {
    const src = path.join(dir, 's.c');
    writeFileSync(src, [
      '#include <stdio.h>',
      `static const char s[] = ${cString(bytes)};`,
      `_Static_assert(sizeof s == ${bytes.length + 1}, "length");`,
      'int main(void) { return fwrite(s, 1, sizeof s - 1, stdout) == sizeof s - 1 ? 0 : 1; }',
      '',
    ].join('\n'));
    const cc = await findCompiler();
    const { execa } = await loadExeca();
    const exe = path.join(dir, 's');
    const built = await execa(cc.command, [...cc.args, '-std=c11', '-Wall', '-Wextra', '-Werror', '-pedantic', src, '-o', exe], { reject: false });
    assert.is(built.exitCode, 0, built.stderr);
    assert.is(built.stderr, '', 'no compiler warning');
    const run = await execa(exe, [], { encoding: 'buffer', reject: false });
    assert.is(run.exitCode, 0);
    assert.equal(new Uint8Array(run.stdout as Uint8Array), bytes);
    assert.ok(readFileSync(src, 'utf8').split('\n').every((l) => /^[\x20-\x7e]*$/.test(l)), 'the source is printable ASCII');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
