// Remote measurement with real parts: tt_remote built here and reached through runner
// commands that run it in this machine's shell (`sh -c {command}`), so every byte goes
// through the framed protocol. A verified candidate; a crash, a hang and a wrong answer
// with their classes and the device carrying on; a pool of two where one device dies
// mid-batch (nothing lost, its work done by the other); a runner that does not exist and
// a device that answers garbage (one error naming each device).

import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { UserError } from '../errors';
import { convKernels } from '../measure/conv-kernels.fixture';
import type { Step } from '../schedule/steps';
import { hardwareFingerprint, parseTarget } from '../target';
import { workerBuild } from './device';
import { RemoteMeasurer } from './measurer';
import { openRemoteDevices } from './open';
import { MAX_DEVICE_FAILURES_PER_ITEM, RemotePool } from './pool';
import { parseRunner } from './runner';
import { ABI_VERSION } from '../runtime/abi';
import { DeviceError } from './session';

const target = parseTarget('llvm');
const { conv, defaults, outSize, good, crashing, hanging, wrong } = convKernels(target);
const steps = (tag: string): Step[] => [{ s: 'compute_root', stage: tag }];
const LOCAL = 'sh -c {command}';
const measureOpts = { timeoutMs: 1500, repeat: 2, minRepeatMs: 1, buildJobs: 2, seed: 5 };

test('runner templates: {command} exactly once, qemu-user recognised, one message naming where', () => {
  assert.throws(() => parseRunner('ssh board', 'targets.board.runner'), (e: Error) => e instanceof UserError &&
    e.message.startsWith('targets.board.runner: expected a command template containing {command} exactly once'));
  assert.throws(() => parseRunner('', '--runner'), /--runner: expected a runner command template/);
  assert.ok(parseRunner('qemu-aarch64 -L /usr/aarch64-linux-gnu {command}', 'r').emulator);
  assert.ok(parseRunner('/usr/bin/qemu-aarch64-static {command}', 'r').emulator);
  assert.ok(parseRunner('env QEMU_LD_PREFIX=/usr/aarch64-linux-gnu qemu-aarch64 {command}', 'r').emulator);
  assert.not.ok(parseRunner('ssh board qemu-aarch64-runs-here {command}', 'r').emulator);
  assert.not.ok(parseRunner('ssh board {command}', 'r').emulator);
  assert.not.ok(parseRunner('qemu-system-aarch64 {command}', 'r').emulator);
});

test('a device through a runner: verified time, fingerprint from the device; crash, hang, wrong answer classed, device carries on', async () => {
  const opened = await openRemoteDevices([LOCAL], target, '--runner');
  try {
    assert.is(opened.infos[0].machine, process.arch === 'x64' ? 'x86_64' : opened.infos[0].machine);
    assert.match(opened.fingerprint, /^[0-9a-f]{16}$/);
    assert.is.not(opened.fingerprint, hardwareFingerprint(target), 'a device fingerprint is not the local one');
    const measurer = opened.measurer(target, measureOpts) as RemoteMeasurer;
    const [valid] = await measurer.measure(conv, [defaults]);
    assert.is(valid.error, null, valid.message);
    assert.is(valid.costs_ms.length, 2);
    assert.ok(valid.costs_ms.every((c) => c > 0 && Number.isFinite(c)));
    const outcomes = await measurer.measureSources(conv, [
      { steps: steps('crash'), code: crashing },
      { steps: steps('hang'), code: hanging },
      { steps: steps('wrong'), code: wrong },
      { steps: steps('good'), code: good.code },
    ]);
    assert.equal(outcomes.map((o) => o.error), ['runtime_error', 'timeout', 'wrong_answer', null], JSON.stringify(outcomes.map((o) => o.message)));
    assert.match(outcomes[0].message!, /SIGSEGV/);
    assert.match(outcomes[1].message!, /ran past the request's timeout/);
    assert.match(outcomes[2].message!, new RegExp(`1 of ${outSize} elements differ; worst at index ${outSize >> 1}`));
    assert.ok(opened.pool.devices[0].alive, 'a bad candidate does not take the device out');
  } finally {
    await opened.close();
  }
});

test('a pool of two where one device dies mid-batch: nothing lost, its work done by the other', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tt-remote-test-'));
  try {
    // The second runner answers like an ssh whose board went away once `dead` exists.
    const flaky = path.join(dir, 'flaky.sh');
    writeFileSync(flaky, `if [ -e ${dir}/dead ]; then echo "ssh: connect to host board: Connection refused" >&2; exit 255; fi\nexec sh -c "$1"\n`);
    let killed = false;
    const pool = new RemotePool([LOCAL, `sh ${flaky} {command}`], target, 'runners', {
      onAnswer(device) {
        // After its second answer, the second device dies: its worker is killed, the runner refuses.
        if (device.index === 1 && device.answered === 2 && !killed) {
          killed = true;
          writeFileSync(path.join(dir, 'dead'), '');
          process.kill(device.workerPid!, 'SIGKILL');
        }
      },
    });
    await pool.open();
    const measurer = new RemoteMeasurer(target, pool, measureOpts);
    try {
      const batch = Array.from({ length: 8 }, (_, i) => ({ steps: steps(`good${i}`), code: good.code }));
      const outcomes = await measurer.measureSources(conv, batch);
      assert.ok(killed, 'the second device was killed mid-batch');
      assert.is(outcomes.length, 8);
      assert.equal(outcomes.map((o) => o.error), Array(8).fill(null), JSON.stringify(outcomes.map((o) => o.message)));
      assert.equal(outcomes.map((o) => o.steps[0]), batch.map((b) => b.steps[0]));
      assert.not.ok(pool.devices[1].alive);
      assert.match(pool.devices[1].deadReason!, /Connection refused/);
      assert.ok(pool.devices[0].alive);
      assert.ok(pool.devices[0].answered >= 6 - 2, `the first device did the rest (${pool.devices[0].answered})`);
    } finally {
      await measurer.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an item the device fails on twice is given up as lost, once; every other item is recorded once', async () => {
  const lines: string[] = [];
  const pool = new RemotePool([LOCAL], target, '--runner', { log: (l) => lines.push(l) });
  try {
    await pool.open();
    const calls = [0, 0, 0];
    const results = await pool.run([0, 1, 2], async (device, item) => {
      calls[item]++;
      if (item === 1) throw new DeviceError(`${device.label}: the connection ended`);
      return item * 10;
    });
    assert.equal(results[0], { ok: 0 });
    assert.equal(results[2], { ok: 20 });
    assert.ok('lost' in results[1] && /^2 device failures running it: /.test(results[1].lost), JSON.stringify(results[1]));
    assert.equal(calls, [1, MAX_DEVICE_FAILURES_PER_ITEM, 1], 'no item run again once it has a result');
    assert.match(lines[0], /the connection ended; the device answers again, the candidate is measured again$/);
    assert.match(lines[1], /the connection ended; the device answers again, the candidate is recorded as a device_error$/);
    assert.ok(pool.devices[0].alive, 'the device came back each time');
  } finally {
    await pool.close();
  }
});

test('a runner that does not exist and a device that answers garbage: one error naming each device', async () => {
  const err = await openRemoteDevices(['/nonexistent/ssh board {command}', `sh -c 'echo GARBAGE; cat >/dev/null' x {command}`], target, 'targets.board.runners')
    .then(() => undefined, (e: Error) => e);
  assert.ok(err instanceof UserError, String(err));
  assert.match(err.message, /^no measurement device is left \(2 runner\(s\)\):\n/);
  assert.match(err.message, /device 1 \(targets\.board\.runners\[0\]: \/nonexistent\/ssh board \{command\}\): the runner ended before the worker said hello: it exited with code 127 \(stderr: .*not found\)/);
  assert.match(err.message, /device 2 \(targets\.board\.runners\[1\]: .*\): the device answered 'GARBAGE' instead of the tt_remote hello/);
  assert.not.ok(existsSync('/nonexistent'), 'nothing was created');
  // A worker of another protocol version is refused by name, not misread.
  const newer = `sh -c 'echo "{\\"tt_remote\\":2,\\"abi_version\\":1}"; cat >/dev/null' x {command}`;
  const version = await openRemoteDevices([newer], target, '--runner').then(() => undefined, (e: Error) => e);
  assert.match(String(version), /its tt_remote speaks protocol 2, this tensortune 1/);
});

test('a device that says hello, then answers garbage: one error quoting it', async () => {
  const { fnv } = await workerBuild(target);
  const hello = JSON.stringify({ tt_remote: 1, abi_version: ABI_VERSION, pid: 1, machine: 'x86_64', threads: 1, self_fnv: fnv });
  const dir = mkdtempSync(path.join(tmpdir(), 'tt-remote-test-'));
  try {
    const fake = path.join(dir, 'fake.sh');
    writeFileSync(fake, `echo '${hello}'\nread request\necho 'Segmentation fault (core dumped)'\ncat > /dev/null\n`);
    const err = await openRemoteDevices([`sh ${fake} {command}`], target, '--runner').then(() => undefined, (e: Error) => e);
    assert.ok(err instanceof UserError, String(err));
    assert.match(err.message, /: expected the reply to info i1, got 'Segmentation fault \(core dumped\)'$/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('CUDA targets are refused through a runner, in one message naming where', async () => {
  const err = await openRemoteDevices([LOCAL], parseTarget('cuda -arch=sm_80'), 'targets.gpu.runner').then(() => undefined, (e: Error) => e);
  assert.ok(err instanceof UserError);
  assert.match(err.message, /^targets\.gpu\.runner: measuring through a runner supports CPU targets \("llvm -mtriple=\.\.\."\) and OpenCL targets, not "cuda -arch=sm_80"/);
});

test.run();
