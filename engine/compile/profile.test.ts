// The per-kernel profile: a compiled model reports one time per kernel call, in call order,
// naming kernels its manifest lists (tt_bench --profile over model.c's tt_run_profiled);
// the rows sum the calls per kernel and set them against FLOPs and a peak. No assertion
// here is on how long anything takes: only on what is counted and how.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { getNetwork } from '../frontend/networks';
import { runBench } from '../native/bench';
import { parseTarget } from '../target';
import type { Manifest, ManifestKernel } from './manifest';
import { readManifest } from './manifest';
import { compileModel } from './model';
import { formatKernelProfile, kernelProfile } from './profile';
import { benchmarkCommand } from '../cli/benchmark';
import type { CliIo } from '../cli/command';
import { UserError } from '../errors';

const kernel = (symbol: string, flops: number, desc = symbol): ManifestKernel =>
  ({ symbol, groups: [], key: symbol, desc, schedule: 'default', source: `${symbol}.c`, objectHash: symbol, flops });

test('rows sum the calls of each kernel, slowest first, with share, GFLOP/s and share of the peak', () => {
  const manifest = { kernels: [kernel('a', 2e6), kernel('b', 1e6, 'conv <b>')] } as unknown as Manifest;
  const rows = kernelProfile([{ symbol: 'a', ms: 1 }, { symbol: 'b', ms: 0.5 }, { symbol: 'a', ms: 1 }, { symbol: 'b', ms: 2 }], manifest, 10);
  assert.equal(rows.map((r) => [r.symbol, r.calls, r.ms]), [['b', 2, 2.5], ['a', 2, 2]]);
  assert.is(rows[0].share, 2.5 / 4.5);
  // b: 2 calls of 1 MFLOP in 2.5 ms = 0.8 GFLOP/s, 8% of a 10 GFLOP/s peak.
  assert.ok(Math.abs(rows[0].gflops - 0.8) < 1e-12 && Math.abs(rows[0].peak! - 0.08) < 1e-12);
  const table = formatKernelProfile(rows, 10, 2);
  assert.match(table[0], /peak 10.0 GFLOP\/s at 2 thread\(s\)/);
  assert.match(table[2], /2\.5000 +55\.6% +0\.8 +8\.0% +2 +default +conv <b>/);
  assert.match(table[table.length - 1], /4\.5000 +total/);
  assert.match(table[1], /^ +ms +share/);
  // A model that runs under 1 ms: the column in µs.
  const small = formatKernelProfile(kernelProfile([{ symbol: 'a', ms: 0.0031 }, { symbol: 'b', ms: 0.0009 }], manifest, 10), 10, 1);
  assert.match(small[1], /^ +µs +share/);
  assert.match(small[2], /^ +3\.10 +77\.5%/);
  assert.match(small[small.length - 1], /^ +4\.00 +total/);
  try {
    kernelProfile([{ symbol: 'c', ms: 1 }], manifest, undefined, 'out/m/manifest.json');
    assert.unreachable('a kernel the manifest does not list');
  } catch (e) {
    assert.instance(e, UserError);
    assert.is((e as Error).message, "out/m/manifest.json: the model calls kernel 'c', which the manifest does not list: recompile the model");
  }
});

test('a compiled model times every kernel call: one entry per fused group, in call order, each a manifest kernel', async () => {
  const work = mkdtempSync(path.join(tmpdir(), 'tt-profile-test-'));
  try {
    const net = getNetwork('mobilenet', { imageSize: 32 });
    const outDir = path.join(work, 'm');
    const built = await compileModel({ name: 'mobilenet', graph: net.graph, target: parseTarget('llvm'), outDir, cacheDir: path.join(work, 'cache') });
    const r = await runBench({ model: built.library, params: built.params, repeat: 2, number: 1, minRepeatMs: 0, threads: 1, profile: true });
    const manifest = readManifest(outDir);
    const groups = manifest.kernels.reduce((a, k) => a + k.groups.length, 0);
    assert.is(r.profile!.length, groups);
    assert.ok(r.profile!.every((c) => c.ms >= 0 && manifest.kernels.some((k) => k.symbol === c.symbol)));
    // Each kernel is called once per group it serves.
    for (const k of manifest.kernels) assert.is(r.profile!.filter((c) => c.symbol === k.symbol).length, k.groups.length, k.symbol);
    const rows = kernelProfile(r.profile!, manifest);
    assert.is(rows.reduce((a, row) => a + row.calls, 0), groups);
    // Without --profile there is none.
    assert.is((await runBench({ model: built.library, params: built.params, repeat: 1, number: 1, minRepeatMs: 0, threads: 1 })).profile, undefined);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

test('benchmark --profile refuses what it cannot profile, in one line', async () => {
  const io = { out: () => undefined, err: () => undefined };
  for (const extra of [['--compare', 'onnxruntime'], ['--runner', 'ssh board {command}']]) {
    try {
      await benchmarkCommand.run(['some-dir', '--profile', ...extra], io as unknown as CliIo);
      assert.unreachable(extra.join(' '));
    } catch (e) {
      assert.instance(e, UserError);
      assert.is((e as Error).message, '--profile times the kernels of a local run: drop --runner and --compare');
    }
  }
});

test.run();
