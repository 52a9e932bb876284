// qemu-user as a measurement device, through the real CLI: mobilenet tuned for
// `llvm -mtriple=aarch64-linux-gnu` (kernels built by the cross compiler, run by an aarch64
// tt_remote under qemu-aarch64), every candidate verified on the host, records keyed by the
// emulated device's fingerprint; then compiled with those records (compile asks the device
// its fingerprint) and benchmarked through the same runner.
// One trial per task: 22 trials that cover every task kind of the network (conv2d,
// depthwise, pooling, dense, softmax); more would only repeat them, slowly, under emulation.
// Timings under emulation are not performance figures: nothing here looks at their size.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnCli } from '../cli/spawn.fixture';
import { skip } from '../skip.fixture';

const SYSROOT = '/usr/aarch64-linux-gnu';
const QEMU = `qemu-aarch64 -L ${SYSROOT} {command}`;
const TARGET = 'llvm -mtriple=aarch64-linux-gnu';

function missing(): string | undefined {
  if (spawnSync('qemu-aarch64', ['--version']).error) return 'no qemu-aarch64 (Debian: apt-get install qemu-user)';
  if (spawnSync('aarch64-linux-gnu-gcc', ['--version']).error) return 'no aarch64-linux-gnu-gcc (Debian: apt-get install gcc-aarch64-linux-gnu)';
  if (!existsSync(path.join(SYSROOT, 'lib'))) return `no aarch64 sysroot at ${SYSROOT}`;
  return undefined;
}

test('qemu-aarch64 as a device: mobilenet tuned with every record verified and keyed by the aarch64 device, then benchmarked through it', async () => {
  const why = missing();
  if (why) return skip('qemu-aarch64 as a device', why);
  const dir = mkdtempSync(path.join(tmpdir(), 'tt-qemu-test-'));
  try {
    const records = path.join(dir, 'mobilenet.jsonl');
    const tune = await spawnCli(['tune', 'mobilenet', '--target', TARGET, '--runner', QEMU, '--records', records,
      '--trials-per-task', '1', '--repeat', '1', '--min-repeat-ms', '0', '--json']).done;
    assert.is(tune.code, 0, tune.err);
    const lines = readFileSync(records, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { desc: string; error: string | null; fingerprint: string; target: string; costs_ms: number[] });
    assert.is(lines.length, 22, 'one record per task');
    assert.equal(lines.filter((r) => r.error !== null).map((r) => `${r.desc}: ${r.error}`), [], 'every candidate verified');
    assert.ok(lines.every((r) => r.costs_ms.length === 1 && r.costs_ms[0] > 0));
    for (const kind of ['conv2d_nhwc', 'depthwise_conv2d_nhwc', 'global_avg_pool2d', 'dense', 'softmax'])
      assert.ok(lines.some((r) => r.desc.startsWith(kind)), `a ${kind} task was measured`);

    const fp = await spawnCli(['fingerprint', '--runner', QEMU, TARGET]).done;
    assert.is(fp.code, 0, fp.err);
    assert.match(fp.out, /^device aarch64, /m, 'the device is aarch64');
    const fingerprint = /^([0-9a-f]{16}) llvm -mtriple=aarch64-linux-gnu$/m.exec(fp.out)?.[1];
    assert.ok(fingerprint, fp.out);
    assert.ok(lines.every((r) => r.fingerprint === fingerprint && r.target === TARGET), 'records carry the device fingerprint');
    const local = await spawnCli(['fingerprint', TARGET]).done;
    assert.not.ok(local.out.includes(fingerprint!), 'not this machine\'s fingerprint');

    const out = path.join(dir, 'build');
    const compile = await spawnCli(['compile', 'mobilenet', '--target', TARGET, '--runner', QEMU, '--records', records, '--out', out]).done;
    assert.is(compile.code, 0, compile.err);
    // compile asks the device its fingerprint, so the records tuned there apply.
    const manifest = JSON.parse(readFileSync(path.join(out, 'manifest.json'), 'utf8')) as { fingerprint: string; kernels: { key: string; schedule: string }[] };
    assert.is(manifest.fingerprint, fingerprint);
    const tunedKeys = new Set(lines.map((r) => (r as unknown as { key: string }).key));
    const withRecord = manifest.kernels.filter((k) => tunedKeys.has(k.key));
    assert.ok(withRecord.length >= 22 && withRecord.every((k) => k.schedule === 'tuned'), JSON.stringify(manifest.kernels.map((k) => k.schedule)));
    const bench = await spawnCli(['benchmark', out, '--runner', QEMU, '--repeat', '1', '--number', '1', '--min-repeat-ms', '0', '--threads', '1', '--json']).done;
    assert.is(bench.code, 0, bench.err);
    assert.match(bench.err, /^Execution time summary:\n mean \(ms\)/); // with --json, the text is on stderr
    assert.match(bench.err, /warning: measured under an emulator \(qemu-aarch64\): these timings are not performance figures/);
    const json = JSON.parse(bench.out) as { runs_ms: number[]; device: string };
    assert.is(json.runs_ms.length, 1);
    assert.match(json.device, /aarch64/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
