// A real OpenSSH server on 127.0.0.1 (sshd.fixture.ts) as the runner of this machine, as a
// user reaches a board: the worker is installed through ssh on first use, checked by hash
// and installed again when the file on the device changed; tune through it verifies every
// candidate and keys the records by the device's fingerprint.

import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnCli } from '../cli/spawn.fixture';
import { skip } from '../skip.fixture';
import { parseTarget } from '../target';
import { workerBuild } from './device';
import { openRemoteDevices } from './open';
import { installedName } from './runner';
import { sshdMissing, startLoopbackSshd } from './sshd.fixture';

test('ssh on loopback as the runner: install by hash, reinstall when changed, tune verified and keyed by the device', async () => {
  const why = sshdMissing();
  if (why) return skip('ssh on loopback as the runner', why);
  // An sshd that is installed but cannot serve here (no privilege separation directory, a
  // sandbox without sockets) is this machine's limit, not the runner's: said, and skipped.
  const sshd = await startLoopbackSshd().catch((e: Error) => e);
  if (sshd instanceof Error) return skip('ssh on loopback as the runner', sshd.message.split('\n')[0]);
  const dir = mkdtempSync(path.join(tmpdir(), 'tt-ssh-test-'));
  try {
    const target = parseTarget('llvm');
    const build = await workerBuild(target);
    // ssh logs in as this user, whose home is this machine's.
    const installed = path.join(homedir(), '.cache', 'tensortune', installedName(build.sha));
    const lines: string[] = [];
    let opened = await openRemoteDevices([sshd.runner], target, '--runner', { log: (l) => lines.push(l) });
    await opened.close();
    assert.ok(existsSync(installed), `installed at ${installed}`);
    assert.ok(readFileSync(installed).equals(build.bytes), 'the installed worker is the build, byte for byte');

    appendFileSync(installed, 'changed'); // still runs, but its hash differs: installed again
    lines.length = 0;
    opened = await openRemoteDevices([sshd.runner], target, '--runner', { log: (l) => lines.push(l) });
    await opened.close();
    assert.ok(lines.some((l) => l.includes('installing the measurement worker')), lines.join('\n'));
    assert.ok(readFileSync(installed).equals(build.bytes), 'reinstalled');

    const records = path.join(dir, 'r.jsonl');
    const tune = await spawnCli(['tune', 'mobilenet', '--image-size', '32', '--target', 'llvm', '--runner', sshd.runner, '--records', records,
      '--trials-per-task', '1', '--repeat', '1', '--min-repeat-ms', '0', '--json']).done;
    assert.is(tune.code, 0, tune.err);
    const recs = readFileSync(records, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { error: string | null; fingerprint: string });
    assert.is(recs.length, 22);
    assert.equal(recs.filter((r) => r.error !== null), [], 'every candidate verified');
    assert.ok(recs.every((r) => r.fingerprint === opened.fingerprint), 'keyed by the device fingerprint');
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await sshd.stop();
  }
});

test.run();
