// `tensortune distill IN... [--out OUT]`: keep the best verified record per (workload key,
// target, hardware fingerprint) of one or more logs, as TVM's `measure_record --mode distill`.

import path from 'node:path';
import { UserError } from '../errors';
import { distillFiles } from '../records/distill';
import { parseFlags, type CliIo, type Command } from './command';

const USAGE = `Usage: tensortune distill IN.jsonl... [--out OUT.jsonl]

Keep only the fastest verified record of each task (workload key, target, hardware
fingerprint) of the record logs IN..., and write them to OUT (default: IN with the
extension replaced by .best.jsonl). Records already in OUT take part, so distilling
new logs into an existing file keeps the best of all. Broken lines are skipped with
one warning per file.

Options:
  --out FILE   the distilled log
  -h, --help   show this help
`;

/** `runs/mobilenet.jsonl` -> `runs/mobilenet.best.jsonl`. */
export function defaultDistillOutput(input: string): string {
  const ext = path.extname(input);
  return path.join(path.dirname(input), `${path.basename(input, ext)}.best${ext || '.jsonl'}`);
}

export const distillCommand: Command = {
  name: 'distill',
  summary: 'keep the best record per task of record logs',
  async run(argv: readonly string[], io: CliIo): Promise<number> {
    const { values, positionals } = parseFlags(argv, { out: { type: 'string' }, help: { type: 'boolean', short: 'h' } });
    if (values.help) { io.out(USAGE); return 0; }
    if (positionals.length === 0) throw new UserError('expected at least one record log to distill (tensortune distill IN.jsonl --out OUT.jsonl)');
    const out = values.out ?? defaultDistillOutput(positionals[0]);
    const result = await distillFiles(positionals, out, { warn: (m) => io.err(`tensortune distill: warning: ${m}\n`) });
    io.out(`kept ${result.kept} of ${result.read} record(s) (best per task, target and machine) in ${result.out}\n`);
    return 0;
  },
};
