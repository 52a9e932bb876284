// runBench: times a compiled model with native/bench/tt_bench and returns its summary.
// tt_bench dies with this process (TT_PARENT_PID, native/README.md) and its result goes
// through a tt-bench-<pid>-* temp folder, which the next run sweeps if this one is killed.

import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { ABI_VERSION } from '../runtime/abi';
import { ModelRunError, UserError } from '../runtime/errors';
import { ownedTempDir } from '../temp-dirs';
import { loadExeca, memoAsync, nativeBinary } from './build';

export interface BenchOptions {
  /** The compiled model library (model.so). */
  model: string;
  /** Its params file (engine/runtime/params.ts). */
  params: string;
  /** Timed measurements (default 5). */
  repeat?: number;
  /** Runs per measurement, grown until one lasts minRepeatMs (default 5). */
  number?: number;
  minRepeatMs?: number;
  /** Untimed runs first (default 1). */
  warmup?: number;
  /** OpenMP threads (default: the number of online CPUs). */
  threads?: number;
  /** Seed of the random inputs (uint32, default 0); see engine/runtime/random.ts. */
  seed?: number;
  /** Input name -> raw float32 file, instead of random data. */
  inputs?: Record<string, string>;
  /** Write each output to DIR/<outputFileName(name)>.bin. */
  saveOutputs?: string;
  /** The tt_bench binary; default nativeBinary('tt_bench'). */
  binary?: string;
}

export interface BenchResult {
  mean_ms: number;
  median_ms: number;
  max_ms: number;
  min_ms: number;
  std_ms: number;
  threads: number;
  repeat: number;
  number: number;
  warmup: number;
  min_repeat_ms: number;
  seed: number;
  runs_ms: number[];
  abi_version: number;
  /** The three lines tt_bench printed ("Execution time summary:" and the table). */
  summary: string;
}

const handshakes = memoAsync<void>();

/** Runs `tt_bench --version` once per binary and process; throws if its ABI differs. */
export function checkBenchVersion(binary: string): Promise<void> {
  return handshakes(binary, async () => {
    const { execa } = await loadExeca();
    const r = await execa(binary, ['--version'], { reject: false });
    const version = Number(r.stdout.trim());
    if (r.failed || !Number.isInteger(version))
      throw new Error(`${binary} --version did not answer with an ABI version: ${r.stderr || r.stdout || r.message}`);
    if (version !== ABI_VERSION)
      throw new Error(
        `${binary} speaks native ABI version ${version}, this tensortune expects ${ABI_VERSION}; ` +
          `delete it (or the tensortune cache directory) so that it is rebuilt`,
      );
  });
}

function flagArgs(opts: BenchOptions): string[] {
  const args: string[] = [];
  const int = (flag: string, v: number | undefined, min: number): void => {
    if (v === undefined) return;
    if (!Number.isInteger(v) || v < min) throw new UserError(`${flag}: expected an integer >= ${min}, got ${v}`);
    args.push(flag, String(v));
  };
  int('--repeat', opts.repeat, 1);
  int('--number', opts.number, 1);
  int('--warmup', opts.warmup, 0);
  int('--threads', opts.threads, 1);
  int('--seed', opts.seed, 0);
  if (opts.minRepeatMs !== undefined) {
    if (!(opts.minRepeatMs >= 0)) throw new UserError(`--min-repeat-ms: expected a number >= 0, got ${opts.minRepeatMs}`);
    args.push('--min-repeat-ms', String(opts.minRepeatMs));
  }
  for (const [name, file] of Object.entries(opts.inputs ?? {})) args.push('--input', `${name}=${file}`);
  if (opts.saveOutputs !== undefined) args.push('--save-outputs', opts.saveOutputs);
  return args;
}

/** What a signal that killed tt_bench most likely means. */
const CRASH_HINTS: Partial<Record<string, string>> = {
  SIGBUS: ': the library file is truncated or was changed while loaded; compile the model again',
};

/** The first non-empty line of a tool's message (the CLI prints one line). */
const oneLine = (text: string): string => text.trim().split('\n')[0]?.trim() ?? '';

/** Runs tt_bench on a compiled model and returns its timings. Bad input (files, flags,
 *  an ABI mismatch) is a UserError (exit code 2); a failing model a ModelRunError. */
export async function runBench(opts: BenchOptions): Promise<BenchResult> {
  const binary = opts.binary ?? (await nativeBinary('tt_bench'));
  await checkBenchVersion(binary);
  const args = [opts.model, opts.params, ...flagArgs(opts)];
  const dir = ownedTempDir('tt-bench');
  try {
    const jsonFile = path.join(dir, 'result.json');
    const { execa } = await loadExeca();
    const r = await execa(binary, [...args, '--json', jsonFile], { reject: false, env: { TT_PARENT_PID: String(process.pid) } });
    if (r.failed) {
      const stderr = oneLine(r.stderr);
      const message = stderr || oneLine(r.message ?? '') || 'tt_bench failed';
      if (r.exitCode === 2) throw new UserError(message);
      if (r.signal) throw new ModelRunError(`tt_bench: ${opts.model}: the model crashed (${r.signal}${CRASH_HINTS[r.signal] ?? ''})${stderr ? `: ${stderr}` : ''}`);
      throw new ModelRunError(message);
    }
    const result = JSON.parse(await fs.readFile(jsonFile, 'utf8')) as Omit<BenchResult, 'summary'>;
    return { ...result, summary: r.stdout.trim() };
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}
