// A runner is a command template that runs a command on a device: `ssh board {command}`,
// `adb shell {command}`, `docker exec -i box sh -c {command}`, `qemu-aarch64 -L <sysroot>
// {command}`. The line is run by this machine's `sh -c`, with {command} replaced by ONE
// shell-quoted word:
//
//   - a device with a shell (anything but qemu-user): a command line for the device's
//     shell, which ssh and adb hand to it as they are (`docker exec` needs `sh -c {command}`);
//   - qemu-user (`qemu-<arch>[-static]`): the path of the worker binary, which qemu runs
//     under emulation. Such a "device" shares this machine's files and has no shell of its
//     architecture, so its worker is the cross-built binary in the native cache and needs
//     no install (an emulator, not a board: its timings are not performance figures).
//
// The worker (tt_remote, cross-built for the target) is installed on a shell device on
// first use through the runner itself: its bytes go to `cat` on the device's stdin, into
// ~/.cache/tensortune/tt_remote-<sha256 prefix>, checked by size on the device, then by the
// FNV-1a-64 the worker computes of its own file and says in its hello. A changed worker
// has another name, so it is installed beside the old one.

import { randomBytes } from 'node:crypto';
import { UserError } from '../errors';
import { shellQuote } from './session';

export const COMMAND_PLACEHOLDER = '{command}';

/** The line the start script prints when the worker is not installed on the device. */
export const NOT_INSTALLED = 'tt-remote-not-installed';
/** The line the install script prints once the worker is in place. */
export const INSTALLED_LINE = 'tt-remote-installed';

export interface Runner {
  /** The template as given. */
  template: string;
  /** Where it came from, for messages (`--runner`, `targets.board.runners[1]`). */
  where: string;
  /** qemu-user: runs the worker's path, shares this machine's files. */
  emulator: boolean;
}

/** Checks a runner template; one message naming `where` and what was expected. */
export function parseRunner(template: unknown, where: string): Runner {
  if (typeof template !== 'string' || template.trim() === '') {
    throw new UserError(`${where}: expected a runner command template containing ${COMMAND_PLACEHOLDER}, e.g. "ssh board ${COMMAND_PLACEHOLDER}"`);
  }
  const count = template.split(COMMAND_PLACEHOLDER).length - 1;
  if (count !== 1) {
    throw new UserError(`${where}: expected a command template containing ${COMMAND_PLACEHOLDER} exactly once, e.g. "ssh board ${COMMAND_PLACEHOLDER}", got ${JSON.stringify(template)}`);
  }
  // qemu-user anywhere before {command} (`env QEMU_LD_PREFIX=... qemu-aarch64 {command}` too).
  const before = template.slice(0, template.indexOf(COMMAND_PLACEHOLDER)).trim().split(/\s+/);
  const emulator = before.some((w) => /^qemu-(?!system-)[a-z0-9_]+(-static)?$/.test(w.split('/').pop() ?? ''));
  return { template, where, emulator };
}

/** Several templates (a pool), each checked; duplicates are allowed (two workers on one board). */
export function parseRunners(templates: readonly unknown[], where: string): Runner[] {
  if (templates.length === 0) throw new UserError(`${where}: expected at least one runner command template`);
  return templates.map((t, i) => parseRunner(t, templates.length > 1 ? `${where}[${i}]` : where));
}

/** The line `sh -c` runs: the template with {command} replaced by `command` as one quoted word. */
export function runnerLine(runner: Runner, command: string): string {
  // Split and join, not String.replace: in a replacement string `$$`, `$&`, `` $` `` and `$'`
  // are patterns, and a quoted command is full of `$`.
  return runner.template.split(COMMAND_PLACEHOLDER).join(shellQuote(command));
}

/** A command line for the device's shell, as one word a remote shell receives intact. */
const shellCommand = (script: string): string => `sh -c ${shellQuote(script)}`;

const DIR = '"${HOME:-/tmp}/.cache/tensortune"';

/** The device-side name of a worker build. */
export const installedName = (sha: string): string => `tt_remote-${sha.slice(0, 16)}`;

/** Starts the installed worker, or prints NOT_INSTALLED. */
export function startCommand(runner: Runner, localBinary: string, sha: string): string {
  if (runner.emulator) return runnerLine(runner, localBinary);
  const script = `f=${DIR}/${installedName(sha)}; if [ -x "$f" ]; then exec "$f"; fi; echo ${NOT_INSTALLED}`;
  return runnerLine(runner, shellCommand(script));
}

/** Writes the worker's bytes (stdin) into place on the device; prints INSTALLED on success. */
export function installCommand(runner: Runner, sha: string, bytes: number): string {
  const name = installedName(sha);
  // The temporary file is this process's alone: a random part from this side, and the device
  // shell's pid (`$$`) there, so two installs at once never write into one file.
  const script = `set -e; d=${DIR}; mkdir -p "$d"; t="$d/.${name}.${randomBytes(6).toString('hex')}.$$"; cat > "$t"; ` +
    `n=$(wc -c < "$t"); if [ "$n" -ne ${bytes} ]; then rm -f "$t"; echo "tt_remote install: received $n bytes, expected ${bytes}" >&2; exit 3; fi; ` +
    `chmod 755 "$t"; mv -f "$t" "$d/${name}"; echo ${INSTALLED_LINE}`;
  return runnerLine(runner, shellCommand(script));
}
