// `tensortune best-digest RECORDS... --target T [--keys-from PATH...]`: one line per target
// naming the best record of each workload that the given logs hold for that target on this
// machine, as a digest. The Nx compile target hashes it as a `{ runtime }` input, so its
// cache key changes when a better record arrives and only then. RECORDS and --keys-from are
// files or directories (a directory stands for its *.jsonl); --keys-from restricts the
// workloads to those its records mention (the network's own tune outputs). Missing paths
// read as empty: before the first tune there is nothing to digest.
// `--files` prints instead the names of the record files RECORDS hold, one line: the Nx
// compile target hashes that too, because what compile prints depends on which budgets
// have tuned the network (its note on the budgets never tuned), not only on the best
// records: a `-c full` tune that measured nothing new must still not replay a compile
// saying 'full' never ran.

import path from 'node:path';
import { UserError } from '../errors';
import { readRecords, type LogEntry } from '../records/log';
import { bestDigest, recordFilesOf } from '../records/store';
import { hardwareFingerprint, parseTarget } from '../target';
import { parseFlags, type CliIo, type Command } from './command';

const USAGE = `Usage: tensortune best-digest RECORDS... --target TARGET [--target ...] [--keys-from PATH ...]
       tensortune best-digest RECORDS... --files

Print, per target, this machine's hardware fingerprint, the number of workloads with a valid
record and a digest of the best record of each, as compile picks it without a thread count
and at each count the records were measured at (compile ranks at either). RECORDS and --keys-from are record logs
or directories of them; --keys-from restricts the workloads to those its records mention.

Options:
  --target T      a target string (repeatable)
  --keys-from P   only workloads that P's records mention (repeatable)
  --files         print the base names of the record files of RECORDS instead, on one line
  -h, --help      show this help
`;

export const bestDigestCommand: Command = {
  name: 'best-digest',
  summary: 'digest of the best record per workload of record logs (Nx cache input of compile)',
  async run(argv: readonly string[], io: CliIo): Promise<number> {
    const { values, positionals } = parseFlags(argv, {
      target: { type: 'string', multiple: true },
      'keys-from': { type: 'string', multiple: true },
      files: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    });
    if (values.help) { io.out(USAGE); return 0; }
    if (values.files) {
      io.out(`${(await recordFilesOf(positionals)).map((f) => path.basename(f)).sort().join(' ')}\n`);
      return 0;
    }
    if (!values.target?.length) throw new UserError('expected at least one --target');
    const warn = (m: string): void => io.err(`tensortune best-digest: warning: ${m}\n`);
    // Each file is read once, though --keys-from names files of RECORDS (the tune outputs).
    const read = new Map<string, LogEntry[]>();
    const entriesOf = async (paths: readonly string[]): Promise<LogEntry[]> => {
      const out: LogEntry[] = [];
      for (const file of await recordFilesOf(paths)) {
        const id = path.resolve(file);
        if (!read.has(id)) read.set(id, (await readRecords(file, { warn })).entries);
        out.push(...read.get(id)!);
      }
      return out;
    };
    const entries = await entriesOf(positionals);
    const keys = values['keys-from'] ? new Set((await entriesOf(values['keys-from'])).map((e) => e.record.key)) : undefined;
    for (const [i, text] of values.target.entries()) {
      const target = parseTarget(text, `--target ${i + 1}`);
      const fingerprint = hardwareFingerprint(target);
      const { workloads, digest } = bestDigest(entries, { target: target.text, fingerprint }, keys);
      io.out(`${fingerprint} ${workloads} ${digest} ${target.text}\n`);
    }
    return 0;
  },
};
