// An OpenCL target through a real runner: the loopback sshd of ssh.test.ts (sshd.fixture.ts)
// as the runner of this machine, PoCL as the device's OpenCL driver. The device describes
// its OpenCL platform and device through tt_remote's info (the describe library), and the
// fingerprint names them; a small task is tuned through ssh with every candidate verified
// here; a candidate whose kernel fails clBuildProgram on the device comes back as a
// compile_error carrying the build log, as it does locally. Skipped (one line) without an
// OpenCL device here (PoCL) or without an sshd that can serve on loopback.

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnCli } from '../cli/spawn.fixture';
import { LocalMeasurer } from '../measure/measurer';
import { renderCandidate } from '../measure/builder';
import { openclAvailable, openclDeviceSync } from '../native/opencl';
import { defaultOptionsOf, defaultSchedule } from '../schedule/defaults';
import { mobilenetTask } from '../search/gpu-fixtures.fixture';
import { skip } from '../skip.fixture';
import { parseTarget } from '../target';
import type { RemoteMeasurer } from './measurer';
import { deviceFingerprint, openclOf, openRemoteDevices } from './open';
import { sshdMissing, startLoopbackSshd } from './sshd.fixture';

const WHAT = 'OpenCL through the loopback ssh runner (PoCL)';

test('opencl through ssh: the device names its OpenCL device, a dense task tuned verified, a build failure is a compile_error', async () => {
  const why = openclAvailable() ?? sshdMissing();
  if (why) return skip(WHAT, why);
  const sshd = await startLoopbackSshd().catch((e: Error) => e);
  if (sshd instanceof Error) return skip(WHAT, sshd.message.split('\n')[0]);
  const dir = mkdtempSync(path.join(tmpdir(), 'tt-opencl-ssh-test-'));
  const target = parseTarget('opencl');
  const local = openclDeviceSync();
  if (!('device' in local)) throw new Error(local.error);
  const opened = await openRemoteDevices([sshd.runner], target, '--runner');
  try {
    // The device (this machine, through ssh) lists the OpenCL device its candidates open: PoCL's.
    const cl = openclOf(opened.infos[0]);
    assert.ok('device' in cl, JSON.stringify(cl));
    if (!('device' in cl)) return;
    assert.is(cl.device.device, local.device.device);
    assert.is(cl.device.platform, local.device.platform);
    assert.match(cl.device.platformVersion, /PoCL/i);
    // The OpenCL identity is part of the fingerprint, not only the CPU's.
    assert.is.not(opened.fingerprint, deviceFingerprint(target, { ...opened.infos[0], described: undefined, describe_error: 'none' }));

    // A candidate whose kernel does not build: the device's clBuildProgram log, as locally.
    const task = mobilenetTask('dense', 32);
    const steps = defaultSchedule(task.dag, defaultOptionsOf(target));
    const good = renderCandidate(task.dag, steps, target);
    if (!good.ok) throw new Error(good.message);
    const broken = good.code.replace('__kernel', 'tt_not_an_opencl_type __kernel');
    assert.is.not(broken, good.code);
    const measure = { seed: 3, repeat: 1, number: 1, minRepeatMs: 0, timeoutMs: 60_000, buildJobs: 2 };
    const measurer = opened.measurer(target, measure) as RemoteMeasurer;
    const [remoteGood, remoteBroken] = await measurer.measureSources(task, [{ steps, code: good.code }, { steps, code: broken }]);
    assert.is(remoteGood.error, null, remoteGood.message);
    assert.is(remoteBroken.error, 'compile_error', remoteBroken.message);
    const here = new LocalMeasurer(target, measure);
    const [localBroken] = await here.measureSources(task, [{ steps, code: broken }]).finally(() => here.close());
    assert.is(localBroken.error, 'compile_error');
    const firstLine = (m: string | undefined): string => (m ?? '').split('\n')[0];
    assert.is(firstLine(remoteBroken.message), firstLine(localBroken.message));
    assert.match(firstLine(remoteBroken.message), /CL_BUILD_PROGRAM_FAILURE/);
    assert.match(remoteBroken.message ?? '', /tt_not_an_opencl_type/);
  } finally {
    await opened.close();
  }

  try {
    // tune through the runner: every candidate verified here, records keyed by the device.
    const records = path.join(dir, 'r.jsonl');
    const dense = mobilenetTask('dense', 32);
    const tune = await spawnCli(['tune', 'mobilenet', '--image-size', '32', '--target', 'opencl', '--runner', sshd.runner, '--records', records,
      '--workload', dense.key, '--trials-per-task', '4', '--repeat', '1', '--min-repeat-ms', '0', '--confirm', '0', '--json']).done;
    assert.is(tune.code, 0, tune.err);
    const recs = readFileSync(records, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { error: string | null; fingerprint: string });
    assert.is(recs.length, 4, 'one record per trial');
    assert.equal(recs.filter((r) => r.error !== null), [], 'every candidate verified');
    assert.ok(recs.every((r) => r.fingerprint === opened.fingerprint), 'keyed by the device fingerprint, which names its OpenCL device');
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await sshd.stop();
  }
});

test.run();
