// `tensortune report <network|model.onnx> --records PATH... [--target T] [--fingerprint F]
// [--compare FILE] [--out FILE] [--json]`: the tuning report of a network from record logs,
// without Nx: the task scheduler's table and estimate as text, the page of the Nx
// benchmark report's tuning section with --out, the figures as JSON with --json.

import { existsSync, writeFileSync } from 'node:fs';
import { UserError, asUserError } from '../errors';
import { NETWORK_NAMES } from '../frontend/networks';
import { readComparison } from '../report/comparison-file';
import { networkTuningFigures } from '../report/network-figures';
import { tuningLine, type TuningFigures } from '../report/tuning-data';
import { tuningPage } from '../report/tuning-html';
import { formatTaskTable } from '../search/progress';
import { hardwareFingerprint, parseTarget } from '../target';
import { MODEL_FLAGS, modelFlags, modelFlagsUsage, optionalInt, parseFlags, type CliIo, type Command } from './command';

const USAGE = `Usage: tensortune report <network|model.onnx> --records PATH [--records PATH ...] [options]

The tuning report of a network from its records: every measurement of its tasks for one
target string and machine, in the order they were measured. Prints the task scheduler's
table (best latency, speed, trials, weight per task) and the estimated total latency
(the sum of weight x best latency); --out writes the HTML page the Nx benchmark report
embeds (estimated latency against trials, each task's curve and share, default schedule
against tuned, the ONNX Runtime comparison when given).

Options:
  --records PATH      a record log, or a folder whose *.jsonl are logs (a store); repeatable
  --target T          the target string the records were measured for (default
                      "llvm -mcpu=native")
  --fingerprint F     the machine's hardware fingerprint (default: this machine's for the
                      target; 'tensortune fingerprint' prints it)
  --threads N         only the records measured at N threads (and those that do not say;
                      default: the count of the newest record, with a warning where the
                      records have several: timings at different counts do not compare)
${modelFlagsUsage('NHWC')}  --compare FILE      an ONNX Runtime comparison to show: what 'tensortune benchmark DIR
                      --compare onnxruntime --json' prints on stdout (or a file whose last
                      line is that JSON)
  --out FILE          write the HTML page (self-contained: inline SVG, no script)
  --json              print the figures as one JSON object instead of the table
  -h, --help          show this help

Networks: ${NETWORK_NAMES.join(', ')}, or a model.onnx file
`;

/** The task table and the estimate line, as text. */
export function formatTuningFigures(f: TuningFigures): string {
  const rows = f.tasks.map((t) => ({ desc: t.desc, weight: t.weight, flops: t.flops, trials: t.trials, best_ms: t.best_ms }));
  return [...formatTaskTable(rows), tuningLine(f), ''].join('\n');
}

export const reportCommand: Command = {
  name: 'report',
  summary: 'the tuning report of a network from record logs (text, JSON, or an HTML page)',
  async run(argv: readonly string[], io: CliIo): Promise<number> {
    const { values, positionals } = parseFlags(argv, {
      records: { type: 'string', multiple: true }, target: { type: 'string' }, fingerprint: { type: 'string' }, threads: { type: 'string' },
      compare: { type: 'string' }, out: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
      ...MODEL_FLAGS,
    });
    if (values.help) { io.out(USAGE); return 0; }
    if (positionals.length !== 1) throw new UserError(`expected one <network> or model file, got ${positionals.length} (networks: ${NETWORK_NAMES.join(', ')})`);
    const records = values.records ?? [];
    if (records.length === 0) throw new UserError('--records PATH is required (a record log or a store folder; repeatable)');
    for (const p of records) if (!existsSync(p)) throw new UserError(`--records ${p}: no such file or folder`);
    const target = parseTarget(values.target ?? 'llvm -mcpu=native', '--target');
    const fingerprint = values.fingerprint ?? hardwareFingerprint(target);
    if (!/^[0-9a-f]{8,64}$/.test(fingerprint)) throw new UserError(`--fingerprint ${fingerprint}: expected 8 to 64 lowercase hex digits, as 'tensortune fingerprint' prints`);
    const comparison = values.compare === undefined ? undefined : readComparison(values.compare);
    const spec = { model: positionals[0], ...modelFlags(values, positionals) };
    const figures = await networkTuningFigures({
      network: positionals[0], spec, records, match: { target: target.text, fingerprint, threads: optionalInt('--threads', values.threads) }, warn: (m) => io.err(`tensortune report: warning: ${m}\n`),
    });
    io.out(values.json ? `${JSON.stringify(figures)}\n` : formatTuningFigures(figures));
    if (values.out !== undefined) {
      try {
        writeFileSync(values.out, tuningPage(figures, {
          comparison, comparisonHint: 'pass --compare FILE with the output of `tensortune benchmark DIR --compare onnxruntime --json`',
        }));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new UserError(`--out ${values.out}: its folder does not exist`);
        throw asUserError(e, `cannot write ${values.out}`) ?? e;
      }
      if (!values.json) io.out(`wrote ${values.out}\n`);
    }
    return 0;
  },
};
