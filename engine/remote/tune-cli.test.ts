// `tensortune tune --runner` when devices go away, through the real CLI: a runner that does
// not exist, and a device that answers garbage, stop tune before anything is measured (one
// error, exit 2, the log untouched); the only device dying in the middle of the run stops
// it with one error naming the device, exit 2, and the log holds every batch measured
// before, each line whole.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnCli } from '../cli/spawn.fixture';

const TUNE = ['tune', 'mobilenet', '--image-size', '32', '--target', 'llvm', '--trials-per-task', '2', '--repeat', '1', '--min-repeat-ms', '0'];

test('a runner that does not exist, a device that answers garbage: one error, exit 2, the log untouched', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tt-remote-cli-'));
  try {
    const log = path.join(dir, 'r.jsonl');
    const before = '{"an":"earlier line the run must keep"}\n';
    writeFileSync(log, before);
    const missing = await spawnCli([...TUNE, '--records', log, '--runner', '/nonexistent/ssh board {command}']).done;
    assert.is(missing.code, 2, missing.err);
    assert.match(missing.err, /^tensortune tune: no measurement device is left \(1 runner\(s\)\):\n {2}device 1 \(--runner: \/nonexistent\/ssh board \{command\}\): the runner ended before the worker said hello: it exited with code 127/);
    assert.is(missing.err.trim().split('\n').length, 2, missing.err);
    const garbage = await spawnCli([...TUNE, '--records', log, '--runner', `sh -c 'echo HTTP/1.1 400 Bad Request; cat >/dev/null' x {command}`]).done;
    assert.is(garbage.code, 2, garbage.err);
    assert.match(garbage.err, /the device answered 'HTTP\/1\.1 400 Bad Request' instead of the tt_remote hello/);
    assert.is(readFileSync(log, 'utf8'), before);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the only device dies in the middle of the run: one error naming it, exit 2, every earlier batch in the log', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tt-remote-cli-'));
  try {
    const log = path.join(dir, 'r.jsonl');
    const dead = path.join(dir, 'dead');
    const flaky = path.join(dir, 'flaky.sh');
    writeFileSync(flaky, `if [ -e ${dead} ]; then echo "ssh: connect to host board port 22: Connection refused" >&2; exit 255; fi\n` +
      // Its process group (the runner's): killing it is the board dropping off the network.
      `cut -d' ' -f5 /proc/$$/stat > ${dir}/pgid\nexec sh -c "$1"\n`);
    const run = spawnCli([...TUNE, '--records', log, '--runner', `sh ${flaky} {command}`]);
    // Once a few batches are in the log, the board goes away: its worker is killed, the runner refuses.
    const lines = (): number => { try { return readFileSync(log, 'utf8').split('\n').length - 1; } catch { return 0; } };
    for (let i = 0; i < 600 && lines() < 3 && run.child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 50));
    writeFileSync(dead, '');
    const pgid = Number(readFileSync(path.join(dir, 'pgid'), 'utf8'));
    assert.ok(pgid > 1 && pgid !== process.pid, `the runner's process group (${pgid})`);
    process.kill(-pgid, 'SIGKILL');
    const r = await run.done;
    assert.is(r.code, 2, r.err);
    assert.match(r.err, /tensortune tune: no measurement device is left \(1 runner\(s\)\):\n {2}device 1 \(--runner: sh .*flaky\.sh \{command\}\): .*Connection refused/);
    const text = readFileSync(log, 'utf8');
    assert.ok(text.endsWith('\n'));
    const recs = text.trim().split('\n').map((l) => JSON.parse(l) as { error: string | null });
    assert.ok(recs.length >= 3, `the batches measured before are kept (${recs.length})`);
    assert.ok(recs.length < 44, 'the run stopped');
    assert.equal(recs.filter((x) => x.error !== null).map((x) => x.error), [], 'no device failure is recorded as a candidate\'s');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
