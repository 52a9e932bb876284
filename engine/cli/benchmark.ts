// `tensortune benchmark DIR`: time a compiled model with the native runner and print the
// seeds' execution time summary (mean / median / max / min / std in ms).

import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { UserError } from '../errors';
import { runBench } from '../native/bench';
import { parseFlags, positiveInt, type CliIo, type Command } from './command';

const USAGE = `Usage: tensortune benchmark DIR [--repeat N] [--number N] [--min-repeat-ms MS] [--threads N] [--seed S]
                            [--input NAME=FILE ...] [--save-outputs DIR] [--json]

Run a compiled model (DIR from 'tensortune compile') on seeded random input or raw
float32 files and print the execution time summary. With --json the last line is one
JSON object with mean_ms, median_ms, max_ms, min_ms, std_ms, threads, ...
`;

function nonNegativeInt(flag: string, value: string | undefined, dflt: number): number {
  if (value === undefined) return dflt;
  if (!/^\d+$/.test(value)) throw new UserError(`bad ${flag} '${value}' (expected a non-negative integer)`);
  return Number(value);
}

export const benchmarkCommand: Command = {
  name: 'benchmark',
  summary: 'time a compiled model (mean / median / max / min / std)',
  usage: USAGE,
  async run(argv: readonly string[], io: CliIo): Promise<number> {
    const { values, positionals } = parseFlags(argv, {
      repeat: { type: 'string' }, number: { type: 'string' }, 'min-repeat-ms': { type: 'string' },
      threads: { type: 'string' }, seed: { type: 'string' }, input: { type: 'string', multiple: true },
      'save-outputs': { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
    });
    if (values.help) { io.out(USAGE); return 0; }
    if (positionals.length !== 1) throw new UserError('expected one directory made by tensortune compile');
    const dir = path.resolve(positionals[0]);
    const manifestFile = path.join(dir, 'manifest.json');
    if (!existsSync(manifestFile)) throw new UserError(`${manifestFile}: not found (expected the output directory of 'tensortune compile')`);
    let manifest: { library?: unknown; params?: unknown };
    try {
      manifest = JSON.parse(readFileSync(manifestFile, 'utf8'));
    } catch (e) {
      throw new UserError(`${manifestFile}: not valid JSON (${(e as Error).message})`);
    }
    if (typeof manifest.library !== 'string' || typeof manifest.params !== 'string' || /[/\\]/.test(manifest.library + manifest.params)) {
      throw new UserError(`${manifestFile}: fields 'library' and 'params' must name files in ${dir}`);
    }
    const inputs: Record<string, string> = {};
    for (const spec of values.input ?? []) {
      const m = /^([^=]+)=(.+)$/.exec(spec);
      if (!m) throw new UserError(`bad --input '${spec}' (expected NAME=FILE)`);
      inputs[m[1]] = path.resolve(m[2]);
    }
    const result = await runBench({
      model: path.join(dir, manifest.library), params: path.join(dir, manifest.params),
      repeat: positiveInt('--repeat', values.repeat, 10), number: values.number === undefined ? undefined : positiveInt('--number', values.number, 1),
      minRepeatMs: nonNegativeInt('--min-repeat-ms', values['min-repeat-ms'], 100),
      threads: values.threads === undefined ? undefined : positiveInt('--threads', values.threads, 1),
      seed: nonNegativeInt('--seed', values.seed, 0), inputs,
      saveOutputs: values['save-outputs'] ? path.resolve(values['save-outputs']) : undefined,
    });
    io.out(`${result.summary}\n`);
    if (values.json) {
      const { summary: _summary, ...rest } = result;
      io.out(`${JSON.stringify(rest)}\n`);
    }
    return 0;
  },
};
