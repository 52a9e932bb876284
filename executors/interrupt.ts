// Where an executor's lines go once a Ctrl-C stopped it. Without its terminal UI, Nx
// answers a SIGINT by turning its own stdout and stderr writes into no-ops (so nothing lands
// after the prompt of a wrapper such as pnpm that exits first), and a task forked with piped
// output reaches the user through those writes only: what the task prints from then on is
// lost. The lines that say how an interrupted tune ended (what the store kept, the summary)
// are written to the Nx process's own stdout as well, which on Linux its task reaches as
// /proc/<nx pid>/fd/1. Where that file is the task's own stdout (output not piped, a
// terminal of its own) or cannot be opened, the task's stdout alone carries them.

import { closeSync, fstatSync, openSync, statSync, writeSync } from 'node:fs';

/** Whether this process is an Nx task whose parent discards what it prints after `signal`. */
export function nxDiscardsOutput(signal: NodeJS.Signals, env: NodeJS.ProcessEnv = process.env): boolean {
  // Nx silences itself on SIGINT only, and not when its terminal UI shows the tasks' output.
  return signal === 'SIGINT' && env.NX_FORKED_TASK_EXECUTOR === 'true' && env.NX_TUI !== 'true' && process.platform === 'linux';
}

/**
 * A file descriptor on the parent process's stdout, or undefined where the parent's stdout
 * is this process's own (writing to ours reaches it) or is not there to open.
 */
export function parentStdout(parent = process.ppid): number | undefined {
  const theirs = `/proc/${parent}/fd/1`;
  try {
    const a = statSync(theirs), b = fstatSync(1);
    if (a.dev === b.dev && a.ino === b.ino) return undefined;
    // Append: where Nx's output was redirected to a file, it is written after what is there.
    return openSync(theirs, 'a');
  } catch {
    return undefined;
  }
}

/** Writes lines to `fd` (best effort: a closed reader loses them, as it would anyway). */
export function writeLines(fd: number, lines: string): void {
  try {
    writeSync(fd, lines);
  } catch {
    // EPIPE: the reader is gone.
  }
}

export function closeQuietly(fd: number | undefined): void {
  if (fd === undefined) return;
  try { closeSync(fd); } catch { /* closed already */ }
}
