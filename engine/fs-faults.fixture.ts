// Test helpers for the errors users hit and for process hygiene, built inside the tests
// (nothing is shipped): a small tmpfs for a real ENOSPC, an immutable file for a real EPERM,
// an unprivileged user for a real EACCES while running as root, and the child processes of
// a pid from /proc. Each probe says in one line why it cannot be done here, so a test can
// skip cleanly (no root, no mount privilege, a filesystem without attributes, not Linux).

import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';

const run = (cmd: string, args: string[]): string | undefined => {
  try {
    execFileSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    return undefined;
  } catch (e) {
    const stderr = String((e as { stderr?: Buffer }).stderr ?? '').trim().split('\n')[0];
    return stderr || (e as Error).message.split('\n')[0];
  }
};

/** Mounts a tmpfs of `bytes` (whole pages) on the existing directory `dir`; returns why not, or undefined. */
export function mountTmpfs(dir: string, bytes: number): string | undefined {
  if (process.platform !== 'linux') return `no tmpfs on ${process.platform}`;
  const why = run('mount', ['-t', 'tmpfs', '-o', `size=${bytes},mode=0777`, 'tmpfs', dir]);
  return why === undefined ? undefined : `cannot mount a tmpfs (${why})`;
}

export function unmount(dir: string): void {
  if (run('umount', [dir]) !== undefined) run('umount', ['-l', dir]);
}

/** Sets or clears the immutable attribute (writes then fail with EPERM, even for root); returns why not. */
export function setImmutable(file: string, on: boolean): string | undefined {
  const why = run('chattr', [on ? '+i' : '-i', file]);
  return why === undefined ? undefined : `cannot set the immutable attribute (${why})`;
}

/** Spawn options under which permission bits apply: as root, the user nobody; else as is. */
export function unprivileged(): { uid?: number; gid?: number } {
  return process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
}

/** Whether a permission-denied case can be built here (not Windows). */
export function permissionsApply(): string | undefined {
  return process.platform === 'win32' ? 'no POSIX permissions on Windows' : undefined;
}

export interface ProcInfo { pid: number; comm: string; cmdline: string[] }

/** The live child processes of `ppid` (Linux /proc). */
export function childProcesses(ppid: number): ProcInfo[] {
  const out: ProcInfo[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // state ppid ...
      if (Number(fields[1]) !== ppid || fields[0] === 'Z') continue;
      out.push({
        pid: Number(name), comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
        cmdline: readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').filter((a) => a !== ''),
      });
    } catch { /* exited meanwhile */ }
  }
  return out;
}

/** Whether `pid` has exited (gone, or a zombie nobody reaped yet: containers' init often does not). */
export function processGone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return !existsSync(`/proc/${pid}`);
  }
}

/** Polls `cond` every 50 ms, at most `tries` times; whether it came true. */
export async function eventually(cond: () => boolean, tries = 600): Promise<boolean> {
  for (let i = 0; i < tries && !cond(); i++) await new Promise((r) => setTimeout(r, 50));
  return cond();
}
