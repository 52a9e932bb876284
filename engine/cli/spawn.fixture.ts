// Test helper: the real `tensortune` command in a child process (bin/tensortune.js), its
// output collected, so a test can kill it midway or wait for its exit code and signal.

import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export const BIN = path.resolve(__dirname, '..', '..', 'bin', 'tensortune.js');

export interface CliRun {
  child: ChildProcess;
  done: Promise<{ code: number | null; signal: string | null; out: string; err: string }>;
  /** Standard output so far. */
  out(): string;
}

/** `tensortune <args...>` with `env` added to this process's environment. */
export function spawnCli(args: readonly string[], env: NodeJS.ProcessEnv = {}): CliRun {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env } });
  let out = '', err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => { out += d; });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => { err += d; });
  const done = new Promise<{ code: number | null; signal: string | null; out: string; err: string }>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, out, err }));
  });
  return { child, done, out: () => out };
}
