// Target strings: what each maps to (compiler flags, vector width, cross prefix), and one
// clear UserError naming the offending part for everything else.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { UserError } from './errors';
import { hardwareFingerprint, parseTarget } from './target';

test('llvm targets map to compiler flags and a vector width', () => {
  const native = parseTarget('  llvm   -mcpu=native ');
  assert.is(native.text, 'llvm -mcpu=native', 'normalised spacing');
  assert.equal(native.cflags, ['-march=native']);
  assert.ok([4, 8, 16].includes(native.vectorLanes));
  assert.equal(parseTarget('llvm').cflags, ['-march=native'], 'no -mcpu means this machine');

  const zen4 = parseTarget('llvm -mcpu=znver4');
  assert.equal(zen4.cflags, ['-march=znver4']);
  assert.is(zen4.vectorLanes, 16);
  const avx2 = parseTarget('llvm -mcpu=native -mattr=+avx2,+fma,-avx512f');
  assert.equal(avx2.cflags, ['-march=native', '-mavx2', '-mfma', '-mno-avx512f']);
  assert.is(avx2.vectorLanes, 8);
  assert.is(parseTarget('llvm -mcpu=haswell').vectorLanes, 8);
});

test('-mtriple for another architecture selects a cross compiler prefix and portable defaults', () => {
  const arm = parseTarget('llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72');
  assert.is(arm.ccPrefix, 'aarch64-linux-gnu-');
  assert.equal(arm.cflags, ['-mcpu=cortex-a72'], 'aarch64 gcc spells the CPU -mcpu');
  assert.is(arm.vectorLanes, 4, 'NEON: 4 float lanes');
  const host = parseTarget(`llvm -mtriple=${process.arch === 'x64' ? 'x86_64' : process.arch}-linux-gnu`);
  assert.is(host.ccPrefix, undefined, 'a triple of this machine is not a cross target');
});

test('bad target strings: one UserError naming the field and what was expected', () => {
  const cases: [string, RegExp][] = [
    ['', /--target: unsupported target kind ''.*expected 'llvm'/],
    ['cuda', /'cuda' is planned but not built yet/],
    ['llvm -mcpu', /unknown option '-mcpu' in "llvm -mcpu"; expected -mcpu=<cpu>/],
    ['llvm -O3=1', /unknown option '-O3=1'/],
    ['llvm --mcpu=native', /unknown option '--mcpu=native'/],
    ['llvm -mattr=avx2', /bad -mattr entry 'avx2'.*expected \+feature or -feature/],
    ['llvm -mcpu=native;rm', /bad -mcpu 'native;rm'/],
    ['llvm -mtriple=aarch64', /bad -mtriple 'aarch64'/],
    ['llvm -mtriple=$(x)-linux', /bad -mtriple/],
  ];
  for (const [text, want] of cases) {
    try {
      parseTarget(text, '--target');
      assert.unreachable(`accepted "${text}"`);
    } catch (e) {
      assert.instance(e, UserError, text);
      assert.match((e as Error).message, want, text);
      assert.not.match((e as Error).message, /\n/, `one line for "${text}"`);
    }
  }
});

test('the hardware fingerprint depends on the target string and is stable', () => {
  const a = hardwareFingerprint(parseTarget('llvm -mcpu=native'));
  assert.match(a, /^[0-9a-f]{16}$/);
  assert.is(hardwareFingerprint(parseTarget('llvm  -mcpu=native')), a);
  assert.is.not(hardwareFingerprint(parseTarget('llvm -mcpu=native -mattr=+avx2')), a);
});

test.run();
