// Temporary folders of tensortune processes (tt-bench, tt-measure, tt-compare, tt-network-pass), named after
// their owner: `<tmpdir>/<prefix>-<pid>-XXXXXX`. A process killed with SIGKILL cannot remove
// its folder, so the first one a later process creates sweeps the folders of owners that
// are gone. A live owner's folder is never touched (a reused pid only keeps a stale folder
// a while longer).

import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { asUserError } from './errors';

const PREFIXES = ['tt-bench', 'tt-measure', 'tt-compare', 'tt-network-pass'] as const;
export type TempPrefix = (typeof PREFIXES)[number];
const OWNED = new RegExp(`^(${PREFIXES.join('|')})-(\\d+)-[A-Za-z0-9]{6}$`);

/** Whether a process with this pid exists (EPERM: it does, under another user). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const swept = new Set<string>();

/** Removes the owned folders in `dir` whose owner process is gone (once per process and dir). */
function sweepStaleTempDirs(dir: string): void {
  if (swept.has(dir)) return;
  swept.add(dir);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const m = OWNED.exec(name);
    if (!m) continue;
    const pid = Number(m[2]);
    if (pid === process.pid || pidAlive(pid)) continue;
    try {
      rmSync(path.join(dir, name), { recursive: true, force: true });
    } catch { /* another process's, or being removed by another sweep */ }
  }
}

/** A fresh `<tmpdir>/<prefix>-<pid>-XXXXXX`, after sweeping stale ones; the caller removes it. */
export function ownedTempDir(prefix: TempPrefix): string {
  const dir = tmpdir();
  sweepStaleTempDirs(dir);
  try {
    return mkdtempSync(path.join(dir, `${prefix}-${process.pid}-`));
  } catch (e) {
    throw asUserError(e, `cannot create a temporary folder in ${dir} (set TMPDIR to a writable one)`) ?? e;
  }
}
