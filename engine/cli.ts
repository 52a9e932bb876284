// The `tensortune` command line: a small dispatcher over one module per subcommand in
// engine/cli/. A UserError (bad flag, unknown name), or a system error about the user's
// files (EACCES, EPERM, EEXIST, ENOSPC, ...: asUserError), prints one line and exits 2; a
// ModelRunError (the compiled model failed or crashed) one line and exits 3; any other
// error is a bug and keeps its stack trace.

import { asUserError } from './errors';
import { ENGINE_VERSION } from './version';
import { didYouMean } from './suggest';
import { ModelRunError } from './runtime/errors';
import type { CliIo, Command } from './cli/command';
import { tasksCommand } from './cli/tasks';
import { tuneCommand } from './cli/tune';
import { compileCommand } from './cli/compile';
import { benchmarkCommand } from './cli/benchmark';
import { distillCommand } from './cli/distill';
import { exportCommand } from './cli/export';
import { fingerprintCommand } from './cli/fingerprint';
import { bestDigestCommand } from './cli/best-digest';
import { reportCommand } from './cli/report';

const COMMANDS: readonly Command[] = [tasksCommand, tuneCommand, compileCommand, benchmarkCommand, exportCommand, distillCommand, fingerprintCommand, bestDigestCommand, reportCommand];

function usage(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    'Usage: tensortune <command> [options]',
    '',
    'Options:',
    '  -h, --help     show this help',
    '  -v, --version  print the version of tensortune',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    "Run 'tensortune <command> --help' for a command's options.",
    '',
  ].join('\n');
}

const processIo: CliIo = {
  out: (text) => { process.stdout.write(text); },
  err: (text) => { process.stderr.write(text); },
};

/** Run the CLI on `argv` (without node and script); resolves to the exit code. */
export async function main(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    (name === undefined ? io.err : io.out)(usage());
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === '-v' || name === 'version') {
    io.out(`tensortune ${ENGINE_VERSION}\n`);
    return 0;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    const names = COMMANDS.map((c) => c.name);
    const hint = didYouMean(name, names);
    io.err(`tensortune: unknown command '${name}' (expected one of: ${names.join(', ')})${hint ? `; ${hint}` : ''}\n`);
    return 2;
  }
  try {
    return await command.run(rest, io);
  } catch (e) {
    if (e instanceof ModelRunError) {
      io.err(`tensortune ${command.name}: ${e.message}\n`);
      return e.exitCode;
    }
    const user = asUserError(e);
    if (!user) throw e;
    io.err(`tensortune ${command.name}: ${user.message}\n`);
    return 2;
  }
}

/** Entry point of bin/tensortune.js: sets the process exit code. */
export function run(argv: readonly string[] = process.argv.slice(2)): void {
  main(argv).then((code) => { process.exitCode = code; }, (e: unknown) => {
    console.error(e);
    process.exitCode = 1;
  });
}

if (require.main === module) run();
