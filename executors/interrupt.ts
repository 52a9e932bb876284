// Where an executor's lines go once a Ctrl-C stopped it. Without its terminal UI, Nx
// answers a SIGINT by turning its own stdout and stderr writes into no-ops (so nothing lands
// after the prompt of a wrapper such as pnpm that exits first), and a task forked with piped
// output reaches the user through those writes only: what the task prints from then on is
// lost. The lines that say how an interrupted tune ended (what the store kept, the summary)
// are written to the Nx process's own stdout as well, which on Linux its task reaches as
// /proc/<nx pid>/fd/1. Where that file is the task's own stdout (output not piped, a
// terminal of its own) or cannot be opened, the task's stdout alone carries them.
// Where Nx runs in a terminal, its task runs in a pseudo-terminal of its own that Nx copies
// to the user's terminal, and Nx exits on Ctrl-C before the task has finished: what the task
// prints then reaches no one. The task opens the user's terminal (nxTerminal) when it
// starts, since once Nx has exited no process it can name holds that terminal any more.

import { closeSync, constants, fstatSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import { isatty } from 'node:tty';

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

/** The terminal the user sees Nx print to, held open from the task's start (see above). */
export interface NxTerminal {
  /** The Nx process whose stdout it is. */
  readonly pid: number;
  readonly fd: number;
}

const parentOf = (pid: number): number | undefined => {
  // /proc/<pid>/stat: `pid (comm) state ppid …`; comm may hold spaces and parentheses.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  return Number.isInteger(ppid) && ppid > 1 ? ppid : undefined;
};

/**
 * Where this process is an Nx task on Linux whose stdout is a pseudo-terminal of Nx's: the
 * nearest ancestor whose stdout is a terminal other than ours (Nx's own, between them only
 * Nx's fork helpers), opened for writing; else undefined. Only written to once Nx has
 * exited (writeAfterNx): while it runs, Nx copies what the task prints there itself.
 */
export function nxTerminal(env: NodeJS.ProcessEnv = process.env): NxTerminal | undefined {
  if (process.platform !== 'linux' || env.NX_FORKED_TASK_EXECUTOR !== 'true' || !isatty(1)) return undefined;
  try {
    const ours = fstatSync(1);
    let pid = parentOf(process.pid);
    for (let depth = 0; pid !== undefined && depth < 6; depth++, pid = parentOf(pid)) {
      const theirs = statSync(`/proc/${pid}/fd/1`);
      if (theirs.rdev === ours.rdev) continue;
      if (!theirs.isCharacterDevice()) return undefined;
      // O_NOCTTY: the user's terminal must not become this process's controlling terminal.
      const fd = openSync(`/proc/${pid}/fd/1`, constants.O_WRONLY | constants.O_NOCTTY);
      if (isatty(fd)) return { pid, fd };
      closeSync(fd);
      return undefined;
    }
  } catch {
    // A process gone or not ours to read: the task's stdout alone carries its lines.
  }
  return undefined;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * Writes `lines` to the user's terminal once the Nx process has exited (it restored the
 * screen its terminal UI took, and copies nothing more), waiting up to `waitMs`; where Nx
 * still runs after that, it copies the task's own output, and nothing is written here.
 */
export async function writeAfterNx(terminal: NxTerminal | undefined, lines: string, waitMs = 1000): Promise<void> {
  if (!terminal) return;
  for (let waited = 0; alive(terminal.pid); waited += 50) {
    if (waited >= waitMs) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  // Its own line: the shell has printed its prompt when Nx exited.
  writeLines(terminal.fd, `\n${lines}`);
}
