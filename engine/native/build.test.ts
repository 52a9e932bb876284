import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ABI_VERSION } from '../runtime/abi';
import { UserError } from '../runtime/errors';
import { buildNative, cacheRoot, loadExeca, nativeBinary } from './build';

let scratch = '';

test.before(async () => {
  scratch = await fs.mkdtemp(path.join(tmpdir(), 'tt-build-'));
});

test.after(async () => {
  await fs.rm(scratch, { recursive: true, force: true });
});

test('nativeBinary builds tt_bench and tt_measure, which report the ABI version', async () => {
  const { execa } = await loadExeca();
  for (const name of ['tt_bench', 'tt_measure'] as const) {
    const binary = await nativeBinary(name);
    assert.is(path.basename(binary), name);
    assert.ok(binary.startsWith(path.join(cacheRoot(), 'native')));
    assert.is((await execa(binary, ['--version'])).stdout.trim(), String(ABI_VERSION));
    assert.is(await nativeBinary(name), binary); // memoised
  }
});

test('buildNative reuses the cached binary', async () => {
  const first = await buildNative('tt_bench', { cacheDir: scratch });
  assert.ok(first.startsWith(path.join(scratch, 'native') + path.sep));
  const stat = await fs.stat(first);
  const again = await buildNative('tt_bench', { cacheDir: scratch });
  assert.is(again, first);
  assert.is((await fs.stat(again)).mtimeMs, stat.mtimeMs);
  const entries = await fs.readdir(path.dirname(first));
  assert.equal(entries.sort(), ['tt_bench', 'tt_bench.seal']); // no temporary files left behind
});

test('buildNative rebuilds a cached binary that no longer matches its seal (emptied)', async () => {
  const first = await buildNative('tt_bench', { cacheDir: scratch });
  await fs.truncate(first, 0);
  assert.is(await buildNative('tt_bench', { cacheDir: scratch }), first);
  const { execa } = await loadExeca();
  assert.is((await execa(first, ['--version'])).stdout.trim(), String(ABI_VERSION));
});

test('TENSORTUNE_CACHE_DIR overrides the cache root', () => {
  const saved = process.env.TENSORTUNE_CACHE_DIR;
  try {
    process.env.TENSORTUNE_CACHE_DIR = scratch;
    assert.is(cacheRoot(), scratch);
    delete process.env.TENSORTUNE_CACHE_DIR;
    assert.ok(cacheRoot().endsWith(path.join('node_modules', '.cache', 'tensortune')));
  } finally {
    if (saved === undefined) delete process.env.TENSORTUNE_CACHE_DIR;
    else process.env.TENSORTUNE_CACHE_DIR = saved;
  }
});

test('a missing compiler is a UserError', async () => {
  try {
    await buildNative('tt_measure', { cc: path.join(scratch, 'no-such-cc'), cacheDir: scratch });
    assert.unreachable('expected a UserError');
  } catch (e) {
    assert.instance(e, UserError);
    assert.match((e as Error).message, /^no C compiler: set \$CC or install gcc \(tried '.*no-such-cc': not found\)$/);
  }
});

test.run();
