// `tensortune fingerprint [TARGET...]`: what makes a tuning result valid for this machine,
// printed for Nx's `{ runtime }` task input (and for humans). The output names the engine
// version, the C compiler, the optional $TENSORTUNE_DEVICE label (a board reached through
// a runner, say) and the hardware fingerprint of each target string. It never fails for a
// missing compiler: a failing runtime input would silently hash as a constant, so it
// prints "none" instead; a bad target string is a UserError as everywhere else. For an
// OpenCL target it also names the OpenCL platform and device it measures on (or why there
// is none), which its fingerprint hashes.

import { ENGINE_VERSION } from '../version';
import { UserError } from '../errors';
import { findCompiler } from '../native/build';
import { describeDevice, openRemoteDevices } from '../remote/open';
import { hardwareFingerprint, NO_OPENCL_DEVICE, openclDevice, openclIdentity, parseTarget, type OpenclProbe } from '../target';
import { parseFlags, type CliIo, type Command } from './command';

const USAGE = `Usage: tensortune fingerprint [TARGET ...] [--target TARGET ...] [--json]

Print the engine version, the C compiler identity, $TENSORTUNE_DEVICE and the hardware
fingerprint of each target string (default "llvm -mcpu=native"); for an OpenCL target
also the platform and device it measures on (chosen by TT_OPENCL_PLATFORM and
TT_OPENCL_DEVICE), or why there is none. Records tuned under one output are never reused
under another: Nx hashes this output into tune and compile.

Options:
  --target T  a target string (as a positional argument; repeatable)
  --runner R  the device is the one this runner command reaches ("ssh board {command}";
              repeatable: a pool of one kind): the fingerprints are the device's, and the
              device line describes it ("unreachable: why" when no runner answers)
  --json      one JSON object instead of lines
  -h, --help  show this help
`;

export interface FingerprintReport {
  engine: string;
  compiler: string;
  device: string;
  targets: {
    target: string;
    fingerprint: string;
    /** OpenCL targets: the device the fingerprint names, or why there is none. */
    opencl?: ReturnType<typeof openclIdentity> | { error: string };
  }[];
}

export async function fingerprintReport(targets: readonly string[], probe: OpenclProbe = openclDevice): Promise<FingerprintReport> {
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
    targets: parsed.map((t) => {
      if (t.kind !== 'opencl') return { target: t.text, fingerprint: hardwareFingerprint(t, probe) };
      const found = probe();
      return { target: t.text, fingerprint: hardwareFingerprint(t, () => found), opencl: 'device' in found ? openclIdentity(found.device) : { error: found.error } };
    }),
  };
}

/** The line that names an OpenCL target's device. */
function deviceLine(opencl: NonNullable<FingerprintReport['targets'][number]['opencl']>): string {
  if ('error' in opencl) return `  opencl ${NO_OPENCL_DEVICE}: ${opencl.error}`;
  return `  opencl platform ${opencl.platform} (${opencl.platformVersion}), device ${opencl.device} (${opencl.deviceVersion}, driver ${opencl.driverVersion})`;
}

/** The report for devices behind runners: the device line and fingerprints come from them. */
export async function remoteFingerprintReport(targets: readonly string[], runners: readonly string[]): Promise<FingerprintReport> {
  const local = await fingerprintReport([]);
  const parsed = targets.map((t, i) => parseTarget(t, `target ${i + 1}`));
  const out: FingerprintReport = { ...local, device: '-', targets: [] };
  for (const t of parsed) {
    try {
      const opened = await openRemoteDevices(runners, t, '--runner');
      await opened.close();
      out.device = describeDevice(opened.infos[0]);
      out.targets.push({ target: t.text, fingerprint: opened.fingerprint });
    } catch (e) {
      if (!(e instanceof UserError)) throw e;
      // Like a missing compiler: a runtime input that failed would hash as a constant.
      out.device = `unreachable: ${e.message.split('\n').slice(1).join(' ').trim() || e.message}`;
      out.targets.push({ target: t.text, fingerprint: 'none' });
    }
  }
  return out;
}

export const fingerprintCommand: Command = {
  name: 'fingerprint',
  summary: 'print the engine version, compiler and hardware fingerprint per target (Nx cache input)',
  async run(argv: readonly string[], io: CliIo): Promise<number> {
    const { values, positionals } = parseFlags(argv, {
      target: { type: 'string', multiple: true }, runner: { type: 'string', multiple: true }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
    });
    if (values.help) { io.out(USAGE); return 0; }
    const targets = [...positionals, ...values.target ?? []];
    const report = values.runner?.length
      ? await remoteFingerprintReport(targets.length ? targets : ['llvm'], values.runner)
      : await fingerprintReport(targets.length ? targets : ['llvm -mcpu=native']);
    if (values.json) {
      io.out(`${JSON.stringify(report)}\n`);
      return 0;
    }
    io.out([
      `engine ${report.engine}`,
      `compiler ${report.compiler}`,
      `device ${report.device}`,
      ...report.targets.flatMap((t) => [`${t.fingerprint} ${t.target}`, ...(t.opencl ? [deviceLine(t.opencl)] : [])]),
      '',
    ].join('\n'));
    return 0;
  },
};
