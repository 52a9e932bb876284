// The kernels' thread pool (native/pool/tt_pool.c), checked from C by
// native/test/fixtures/pool_check.c: every iteration once, loop after loop and at several
// thread counts; nested loops on the caller; both threads taking part; a library holding
// a pool loaded and unloaded repeatedly. Once as it runs by default, once with the threads
// sleeping between loops (TT_POOL_SPIN_US=1), so that the wake-up path runs every loop.

import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { poolSource } from '../native/build';
import { packageRoot } from '../package-root';

const native = path.join(packageRoot(), 'native');
const source = path.join(native, 'test', 'fixtures', 'pool_check.c');
const pool = poolSource();
const flags = ['-O2', '-std=gnu11', '-pthread', '-Wall', '-Wextra', '-Werror', `-I${path.join(native, 'include')}`];

test('the thread pool runs every iteration once, nested loops on the caller, and unloads cleanly', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tt-pool-'));
  try {
    const cc = process.env.CC ?? 'cc';
    const lib = path.join(dir, 'libpool.so');
    const exe = path.join(dir, 'pool_check');
    execFileSync(cc, [...flags, '-fPIC', '-shared', '-DPOOL_LIB', source, pool, '-o', lib], { stdio: 'pipe' });
    execFileSync(cc, [...flags, source, pool, '-o', exe, '-ldl'], { stdio: 'pipe' });
    for (const env of [{}, { TT_POOL_SPIN_US: '1' }]) {
      const r = spawnSync(exe, [lib], { env: { ...process.env, OMP_NUM_THREADS: '', ...env }, encoding: 'utf8', timeout: 120_000 });
      assert.is(r.stderr, '', `${JSON.stringify(env)}: ${r.stderr}`);
      assert.is(r.status, 0, `${JSON.stringify(env)}: exit ${r.status} ${r.signal ?? ''}`);
      assert.is(r.stdout.trim(), 'ok');
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
