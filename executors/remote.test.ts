// The Nx executors with a config target measured through a runner (`runner: sh -c
// {command}`: the remote worker on this machine, spoken to through the runner's stdin and
// stdout): tune measures on the device and keys the store's records and its Nx output by
// the device's fingerprint; compile applies those records (it asks the device its
// fingerprint); benchmark runs the model on the device.

import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExecutorContext } from '@nx/devkit';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { remoteFingerprint } from '../engine/remote/open';
import { hardwareFingerprint, parseTarget } from '../engine/target';
import benchmarkExecutor from './benchmark/executor';
import compileExecutor from './compile/executor';
import tuneExecutor from './tune/executor';
import { captureConsole as capture, writeNetWorkspace } from './workspace.fixture';

const RUNNER = 'sh -c {command}';
const CONFIG = `records: records
outDir: out
targets:
  board:
    target: llvm
    runner: "${RUNNER}"
budgets:
  tiny: { trialsPerTask: 1, measure: { repeat: 1, minRepeatMs: 0 } }
networks:
  net:
    model: net.onnx
`;

test('nx tune, compile and benchmark of a target with a runner: measured, keyed and run on the device', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tt-remote-nx-'));
  try {
    writeNetWorkspace(dir, { config: CONFIG });
    const ctx = { root: dir, cwd: dir, isVerbose: false, projectName: 'net' } as unknown as ExecutorContext;
    const options = { config: 'tensortune.config.yaml', network: 'net' };
    const tuned = await capture(() => tuneExecutor(options, ctx));
    assert.equal(tuned.value, { success: true }, tuned.lines.join('\n'));
    const device = await remoteFingerprint([RUNNER], parseTarget('llvm'), 'test');
    assert.is.not(device, hardwareFingerprint(parseTarget('llvm')));
    const logs = readdirSync(path.join(dir, 'records')).filter((f) => f.endsWith('.jsonl'));
    const records = logs.flatMap((f) => readFileSync(path.join(dir, 'records', f), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { fingerprint: string; error: string | null }));
    assert.ok(records.length >= 2, `records: ${records.length}`);
    assert.ok(records.every((r) => r.fingerprint === device && r.error === null), JSON.stringify(records.map((r) => [r.fingerprint, r.error])));
    // Every task and Winograd alternative has its best record.
    const output = tuned.lines.map((l) => /^output .*: \d+ measurement\(s\) of this network's tasks, best records for (\d+) of its (\d+) tasks?(?: and (\d+) Winograd alternatives?)?$/.exec(l)).find((m) => m);
    assert.ok(output, tuned.lines.join('\n'));
    assert.is(Number(output[1]), Number(output[2]) + Number(output[3] ?? 0), output[0]);

    const compiled = await capture(async () => (await compileExecutor(options, ctx).next()).value);
    assert.equal(compiled.value, { success: true }, compiled.lines.join('\n'));
    const manifest = JSON.parse(readFileSync(path.join(dir, 'out', 'net', 'board', 'manifest.json'), 'utf8')) as { fingerprint: string; kernels: { schedule: string }[] };
    assert.is(manifest.fingerprint, device);
    assert.ok(manifest.kernels.some((k) => k.schedule === 'tuned'), JSON.stringify(manifest.kernels));

    const bench = await capture(() => benchmarkExecutor({ ...options, repeat: 2, minRepeatMs: 0 }, ctx));
    assert.equal(bench.value, { success: true }, bench.lines.join('\n'));
    assert.ok(bench.lines.some((l) => l.includes('on device 1 (targets.board.runner: sh -c {command})')), bench.lines.join('\n'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
