// Test helpers for paths that are not regular files (FIFOs, links to /dev/zero), built
// inside the tests: a FIFO made with mkfifo, and the real `tensortune` command in a child
// process that is killed past a time limit, so that a read that blocks fails its test
// instead of hanging it, with the child's peak resident size where /usr/bin/time can say.

import { execFileSync, spawn } from 'node:child_process';
import { closeSync, constants, existsSync, openSync } from 'node:fs';
import path from 'node:path';

export const BIN = path.resolve(__dirname, '..', 'bin', 'tensortune.js');
const TIME = '/usr/bin/time';

/** Makes a FIFO at `file`; returns why not (no mkfifo, not POSIX), or undefined. */
export function makeFifo(file: string): string | undefined {
  if (process.platform === 'win32') return 'no FIFOs on Windows';
  try {
    execFileSync('mkfifo', [file], { stdio: ['ignore', 'ignore', 'pipe'] });
    return undefined;
  } catch (e) {
    return `mkfifo failed (${String((e as { stderr?: Buffer }).stderr ?? (e as Error).message).trim().split('\n')[0]})`;
  }
}

/**
 * Opens `fifo` for writing and closes it at once: a reader blocked in open() on it (a
 * regression of the code under test) is released, so the test process can still exit.
 */
export function releaseFifo(fifo: string): void {
  try {
    closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
  } catch { /* no reader waiting: nothing to release */ }
}

export interface BoundedRun {
  code: number | null;
  out: string;
  err: string;
  /** Killed at the time limit: it hung. */
  timedOut: boolean;
  /** Peak resident size in KiB (GNU time's %M); undefined without /usr/bin/time. */
  maxRssKiB?: number;
}

/** Whether the child's peak resident size can be measured here (GNU time). */
export const canMeasureRss = (): boolean => process.platform === 'linux' && existsSync(TIME);

const RSS_MARK = 'tt-max-rss-kib=';

export interface BoundedOptions { cwd: string; limitMs?: number; env?: NodeJS.ProcessEnv; measureRss?: boolean }

/** `tensortune <args...>` in `cwd`, killed after `limitMs`; under GNU time when `measureRss` (and it exists). */
export const runCliWithin = (args: readonly string[], opts: BoundedOptions): Promise<BoundedRun> => runNodeWithin([BIN, ...args], opts);

/** A TypeScript file run by node through tsx, with `args`, as runCliWithin runs the CLI. */
export const runScriptWithin = (script: string, args: readonly string[], opts: BoundedOptions): Promise<BoundedRun> =>
  runNodeWithin(['--require', require.resolve('tsx/cjs'), script, ...args], opts);

/** `node <nodeArgs...>` in `cwd`, killed after `limitMs`; under GNU time when `measureRss` (and it exists). */
export function runNodeWithin(nodeArgs: readonly string[], opts: BoundedOptions): Promise<BoundedRun> {
  const timed = opts.measureRss === true && canMeasureRss();
  const [cmd, argv] = timed ? [TIME, ['-f', `${RSS_MARK}%M`, process.execPath, ...nodeArgs]] : [process.execPath, [...nodeArgs]];
  // A process group of its own: a kill at the limit takes GNU time's child too.
  const child = spawn(cmd, argv, { cwd: opts.cwd, env: { ...process.env, CI: '', ...opts.env }, detached: true });
  let out = '', err = '', timedOut = false;
  child.stdout.setEncoding('utf8').on('data', (d: string) => { out += d; });
  child.stderr.setEncoding('utf8').on('data', (d: string) => { err += d; });
  const timer = setTimeout(() => {
    timedOut = true;
    try { process.kill(-child.pid!, 'SIGKILL'); } catch { child.kill('SIGKILL'); }
  }, opts.limitMs ?? 60_000);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      let maxRssKiB: number | undefined;
      if (timed) {
        const lines = err.split('\n');
        const at = lines.findIndex((l) => l.startsWith(RSS_MARK));
        if (at >= 0) {
          maxRssKiB = Number(lines[at].slice(RSS_MARK.length));
          // GNU time also reports a non-zero exit on its own line; neither is the CLI's.
          err = lines.filter((l, i) => i !== at && !/^Command exited with non-zero status \d+$/.test(l)).join('\n');
        }
      }
      resolve({ code, out, err, timedOut, maxRssKiB });
    });
  });
}
