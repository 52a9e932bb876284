// npm test's summary (scripts/test.js): the failure details it prints again at the end, read
// from uvu's output as uvu writes it (colours, a test's own lines between the dots).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

// scripts/test.js is plain CommonJS run by node (no build step), so it is required.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { failures, tally, filesOf, skippedLines } = require('./test.js') as {
  failures: (r: { text: string }) => string[];
  tally: (r: { text: string }) => { passed: number; failed: number; skips: string[] };
  filesOf: (script: string) => Promise<{ dir: string; files: string[] } | undefined>;
  skippedLines: (skips: string[]) => string[];
};

const bold = (s: string): string => `\x1b[1m\x1b[4m\x1b[37m${s}\x1b[22m\x1b[24m\x1b[39m`;
const dot = '\x1b[90m• \x1b[39m', cross = '\x1b[31m✘ \x1b[39m';
const output = [
  bold('engine/a.test.ts'),
  `${dot}${dot}\x1b[32m  (2 / 2)`,
  '\x1b[39m',
  bold('engine/b.test.ts'),
  '',
  'skip: a GPU test: no CUDA driver',
  `${dot}${cross}\x1b[31m  (1 / 2)`,
  '\x1b[39m',
  '   \x1b[41m FAIL \x1b[49m  "b fails"',
  '    one is not two  (is)',
  '    at Object.handler (engine/b.test.ts:4:32)',
  '',
  bold('engine/c.test.ts'),
  `${dot}\x1b[32m  (1 / 1)`,
  '',
  '  Total:     5',
  '  Passed:    4',
  '  Skipped:   0',
].join('\n');

test('a failing file is named with its count and uvu\'s details, past a test\'s own output; passing files are not', () => {
  assert.equal(failures({ text: output }), [
    'failed: engine/b.test.ts (1 of 2 passed)',
    '    FAIL   "b fails"',
    '    one is not two  (is)',
    '    at Object.handler (engine/b.test.ts:4:32)',
  ]);
  assert.equal(failures({ text: output.replace('(1 / 2)', '(2 / 2)') }), []);
});

test('the tally moves skipped tests out of passed', () => {
  const t = tally({ text: output });
  assert.equal([t.passed, t.failed, t.skips], [3, 1, ['a GPU test: no CUDA driver']]);
});

test('the files a test script selects, as uvu selects them: the unit pattern and its ignores, the e2e folder; another script shape runs as it is', async () => {
  const scripts = (JSON.parse(readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  const unit = await filesOf(scripts['test:unit']);
  assert.ok(unit && unit.dir === '.');
  assert.ok(unit.files.includes('scripts/test.test.ts'));
  assert.ok(unit.files.includes('engine/cli.test.ts'));
  assert.ok(unit.files.every((f) => /^(engine|plugin|executors|generators|bench|scripts)\/.*\.test\.ts$/.test(f)), 'only the unit pattern');
  assert.ok(!unit.files.some((f) => f.startsWith('e2e/') || f.includes('node_modules')));
  const e2e = await filesOf(scripts['test:e2e']);
  assert.ok(e2e && e2e.dir === 'e2e' && e2e.files.includes('new-workspace.e2e.ts'));
  assert.is(await filesOf('node scripts/other.js'), undefined);
});

test('skips are listed by what is missing: one line per cause, whatever context a reason starts with, its tests under it', () => {
  const opencl = 'no OpenCL platform: the ICD loader found no driver (install one)';
  assert.equal(skippedLines([
    `OpenCL candidates: ${opencl}`,
    'aarch64 cross compilation: aarch64-linux-gnu-gcc not installed (Debian: apt-get install gcc-aarch64-linux-gnu)',
    `mobilenet on opencl: running the compiled model: ${opencl}`,
    "resnet-18 on CUDA: tt_bench: MODEL.so '/tmp/a/model.so': tt_init failed: no CUDA driver: libcuda.so.1: cannot open shared object file",
    "mobilenet on CUDA: tt_bench: MODEL.so '/tmp/b/model.so': tt_init failed: no CUDA driver: libcuda.so.1: cannot open shared object file",
    'report page in Chromium: no Chromium (apt-get install chromium)',
  ]), [
    `skipped: ${opencl} (2 tests)`, '  OpenCL candidates', '  mobilenet on opencl',
    'skipped: aarch64-linux-gnu-gcc not installed (Debian: apt-get install gcc-aarch64-linux-gnu)', '  aarch64 cross compilation',
    'skipped: no CUDA driver: libcuda.so.1: cannot open shared object file (2 tests)', '  resnet-18 on CUDA', '  mobilenet on CUDA',
    'skipped: no Chromium (apt-get install chromium)', '  report page in Chromium',
  ]);
});

test.run();
