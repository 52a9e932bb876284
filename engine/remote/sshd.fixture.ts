// Test helper: a real OpenSSH server on 127.0.0.1 for this user, with its own sshd_config,
// host key and a throw-away client key in a temp folder, on a free unprivileged port. Its
// runner template is what a user writes for a board (`ssh ... {command}`), so tests and
// bench/remote.ts go through the ssh path users run. Nothing of the machine's own ssh
// setup is read or changed (-F none, a private known_hosts).

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';

export interface LoopbackSshd {
  /** `ssh ... 127.0.0.1 {command}` */
  runner: string;
  port: number;
  stop(): Promise<void>;
}

const SSHD_PATHS = ['/usr/sbin/sshd', '/usr/local/sbin/sshd'];

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Why a loopback sshd cannot run here, or undefined when it can. */
export function sshdMissing(): string | undefined {
  if (!SSHD_PATHS.some((p) => existsSync(p))) return 'no sshd (Debian: apt-get install openssh-server)';
  if (spawnSync('ssh', ['-V']).error) return 'no ssh client (Debian: apt-get install openssh-client)';
  if (spawnSync('ssh-keygen', ['-?']).error) return 'no ssh-keygen';
  return undefined;
}

/** Starts sshd; throws with its log when it does not accept a login within 10 s. */
export async function startLoopbackSshd(): Promise<LoopbackSshd> {
  const sshd = SSHD_PATHS.find((p) => existsSync(p))!;
  const dir = mkdtempSync(path.join(tmpdir(), 'tt-sshd-'));
  const key = (name: string): string => {
    const file = path.join(dir, name);
    const r = spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', file], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`ssh-keygen failed: ${r.stderr}`);
    return file;
  };
  const hostKey = key('host_key');
  const clientKey = key('client_key');
  const authorized = path.join(dir, 'authorized_keys');
  spawnSync('cp', [`${clientKey}.pub`, authorized]);
  const port = await freePort();
  const user = userInfo().username;
  // Root's sshd wants its privilege separation directory (Debian's init script makes it).
  if (process.getuid?.() === 0 && !existsSync('/run/sshd')) mkdirSync('/run/sshd', { mode: 0o755, recursive: true });
  const config = path.join(dir, 'sshd_config');
  writeFileSync(config, [
    `Port ${port}`, 'ListenAddress 127.0.0.1', `HostKey ${hostKey}`, `AuthorizedKeysFile ${authorized}`,
    `PidFile ${path.join(dir, 'sshd.pid')}`, 'PasswordAuthentication no', 'KbdInteractiveAuthentication no',
    'PubkeyAuthentication yes', 'UsePAM no', 'StrictModes no', `AllowUsers ${user}`,
    process.getuid?.() === 0 ? 'PermitRootLogin prohibit-password' : '', 'LogLevel ERROR', '',
  ].join('\n'));
  const log = path.join(dir, 'sshd.log');
  const child: ChildProcess = spawn(sshd, ['-D', '-e', '-f', config, '-E', log], { stdio: 'ignore' });
  const runner = `ssh -F none -i ${clientKey} -p ${port} -o BatchMode=yes -o StrictHostKeyChecking=no ` +
    `-o UserKnownHostsFile=${path.join(dir, 'known_hosts')} -o LogLevel=ERROR ${user}@127.0.0.1 {command}`;
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      const closed = new Promise<void>((r) => child.once('close', () => r()));
      child.kill('SIGTERM');
      await closed;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  for (let i = 0; i < 50; i++) {
    await new Promise((r) => setTimeout(r, 200));
    if (child.exitCode !== null) break;
    const probe = spawnSync('sh', ['-c', runner.replace('{command}', 'true')], { timeout: 10_000 });
    if (probe.status === 0) return { runner, port, stop };
  }
  const why = spawnSync('cat', [log], { encoding: 'utf8' }).stdout.trim();
  await stop();
  throw new Error(`the loopback sshd did not accept a login: ${why || 'no log'}`);
}
