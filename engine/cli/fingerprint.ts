// `tensortune fingerprint [TARGET...]`: what makes a tuning result valid for this machine,
// printed for Nx's `{ runtime }` task input (and for humans). The output names the engine
// version, the C compiler, the optional $TENSORTUNE_DEVICE label (a board reached through
// a runner, say) and the hardware fingerprint of each target string. It never fails for a
// missing compiler: a failing runtime input would silently hash as a constant, so it
// prints "none" instead; a bad target string is a UserError as everywhere else.

import { ENGINE_VERSION } from '../compile/model';
import { UserError } from '../errors';
import { findCompiler } from '../native/build';
import { hardwareFingerprint, parseTarget } from '../target';
import { parseFlags, type CliIo, type Command } from './command';

const USAGE = `Usage: tensortune fingerprint [TARGET ...] [--json]

Print the engine version, the C compiler identity, $TENSORTUNE_DEVICE and the hardware
fingerprint of each target string (default "llvm -mcpu=native"). Records tuned under one
output are never reused under another: Nx hashes this output into tune and compile.

Options:
  --json      one JSON object instead of lines
  -h, --help  show this help
`;

export interface FingerprintReport {
  engine: string;
  compiler: string;
  device: string;
  targets: { target: string; fingerprint: string }[];
}

export async function fingerprintReport(targets: readonly string[]): Promise<FingerprintReport> {
  const parsed = targets.map((t, i) => parseTarget(t, `target ${i + 1}`));
  let compiler = 'none';
  try {
    // `--version`'s first line and `-dumpmachine` (the last line); not the licence text.
    const lines = (await findCompiler()).identity.split('\n').map((l) => l.trim()).filter(Boolean);
    compiler = [...new Set([lines[0], lines[lines.length - 1]])].join(' | ');
  } catch (e) {
    if (!(e instanceof UserError)) throw e;
  }
  return {
    engine: ENGINE_VERSION,
    compiler,
    device: process.env.TENSORTUNE_DEVICE?.trim() || '-',
    targets: parsed.map((t) => ({ target: t.text, fingerprint: hardwareFingerprint(t) })),
  };
}

export const fingerprintCommand: Command = {
  name: 'fingerprint',
  summary: 'print the engine version, compiler and hardware fingerprint per target (Nx cache input)',
  async run(argv: readonly string[], io: CliIo): Promise<number> {
    const { values, positionals } = parseFlags(argv, { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } });
    if (values.help) { io.out(USAGE); return 0; }
    const report = await fingerprintReport(positionals.length ? positionals : ['llvm -mcpu=native']);
    if (values.json) {
      io.out(`${JSON.stringify(report)}\n`);
      return 0;
    }
    io.out([
      `engine ${report.engine}`,
      `compiler ${report.compiler}`,
      `device ${report.device}`,
      ...report.targets.map((t) => `${t.fingerprint} ${t.target}`),
      '',
    ].join('\n'));
    return 0;
  },
};
