// runBench: times a compiled model with native/bench/tt_bench and returns its summary.
// tt_bench dies with this process (TT_PARENT_PID, native/README.md) and its result goes
// through a tt-bench-<pid>-* temp folder, which the next run sweeps if this one is killed.
// Around the run it samples the load average and the busy time of the cores, so that the
// result says whether its figures can be trusted (timing-trust.ts).

import { promises as fs } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { ABI_VERSION } from '../runtime/abi';
import { ModelRunError, UserError } from '../runtime/errors';
import { ownedTempDir } from '../temp-dirs';
import { loadExeca, memoAsync, nativeBinary } from './build';
import { median, timingWarnings } from './timing-trust';

/** What `tensortune benchmark` and `nx benchmark` use unless told otherwise: measurements
 *  of at least 100 ms each (a few runs of a 3 ms model are at the mercy of one scheduler
 *  tick), and 10 of them, enough for a median and for the outlier check. */
export const BENCH_DEFAULTS = { repeat: 10, minRepeatMs: 100 } as const;

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
  /** The model's threads (default: OMP_NUM_THREADS, else the CPUs the process may run on). */
  threads?: number;
  /** Also time at this many threads, each measurement right after one at `threads` (or
   *  right before: the order alternates): BenchResult.alternate, for pairedSpeedup. */
  alternateThreads?: number;
  /** Seed of the random inputs (uint32, default 0); see engine/runtime/random.ts. */
  seed?: number;
  /** Input name -> raw float32 file, instead of random data. */
  inputs?: Record<string, string>;
  /** Write each output to DIR/<outputFileName(name)>.bin. */
  saveOutputs?: string;
  /** Also time each kernel call (tt_bench --profile; CPU models): BenchResult.profile. */
  profile?: boolean;
  /** The tt_bench binary; default nativeBinary('tt_bench'). */
  binary?: string;
}

/** One kernel call of a run, in call order: the kernel function and its mean ms per run (tt_bench --profile). */
export interface CallProfile { symbol: string; ms: number }

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
  /** CPU time tt_bench used (ms, all threads; -1 if unknown). */
  cpu_ms: number;
  /** Online cores, and the 1-minute load average before and after the run. */
  cores: number;
  load_before: number;
  load_after: number;
  /** Wall time of the run (s). */
  seconds: number;
  /** Cores' worth of CPU time other processes used during the run (null if unknown). */
  others_cores: number | null;
  /** Why the figures may not be trusted (timing-trust.ts); empty when nothing is wrong. */
  warnings: string[];
  /** With `profile`: each kernel call's mean ms per run, in call order. */
  profile?: CallProfile[];
  /** With `alternateThreads`: the measurements at that count, runs_ms[r] paired with the main runs_ms[r]. */
  alternate?: { threads: number; number: number; runs_ms: number[] };
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
  int('--alternate-threads', opts.alternateThreads, 1);
  int('--seed', opts.seed, 0);
  if (opts.minRepeatMs !== undefined) {
    if (!(opts.minRepeatMs >= 0)) throw new UserError(`--min-repeat-ms: expected a number >= 0, got ${opts.minRepeatMs}`);
    args.push('--min-repeat-ms', String(opts.minRepeatMs));
  }
  for (const [name, file] of Object.entries(opts.inputs ?? {})) args.push('--input', `${name}=${file}`);
  if (opts.saveOutputs !== undefined) args.push('--save-outputs', opts.saveOutputs);
  if (opts.profile) args.push('--profile');
  return args;
}

/**
 * How much faster the alternate thread count ran than the main one: the median over pairs of
 * (main measurement / alternate measurement), each pair taken back to back (runBench's
 * alternateThreads). With threads 1 and alternateThreads 2, the 2-thread speed-up.
 */
export function pairedSpeedup(r: Pick<BenchResult, 'runs_ms' | 'alternate'>): number {
  const alt = r.alternate;
  if (!alt || alt.runs_ms.length !== r.runs_ms.length || r.runs_ms.length === 0)
    throw new Error('pairedSpeedup: the result has no alternate measurements paired with its own (runBench alternateThreads)');
  return median(r.runs_ms.map((ms, i) => ms / alt.runs_ms[i]));
}

/** What a signal that killed tt_bench most likely means. */
const CRASH_HINTS: Partial<Record<string, string>> = {
  SIGBUS: ': the library file is truncated or was changed while loaded; compile the model again',
};

/** The first non-empty line of a tool's message (the CLI prints one line). */
const oneLine = (text: string): string => text.trim().split('\n')[0]?.trim() ?? '';

/** The busy time of all cores so far (ms), or undefined where os.cpus() knows nothing. */
function busyMs(): number | undefined {
  const all = cpus();
  return all.length > 0 ? all.reduce((sum, c) => sum + c.times.user + c.times.nice + c.times.sys + c.times.irq, 0) : undefined;
}

/** '2 thread(s) of 2 core(s), 10 measurement(s) of 31 run(s) (>= 100 ms each); load average 0.12 before, 0.35 after' */
export function benchSetupLine(r: Omit<BenchResult, 'summary'>): string {
  return `${r.threads} thread(s) of ${r.cores} core(s), ${r.repeat} measurement(s) of ${r.number} run(s)` +
    `${r.min_repeat_ms > 0 ? ` (>= ${r.min_repeat_ms} ms each)` : ''}; load average ${r.load_before.toFixed(2)} before, ${r.load_after.toFixed(2)} after`;
}

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
    const before = { load: loadavg()[0], busy: busyMs(), own: process.cpuUsage(), at: performance.now() };
    const r = await execa(binary, [...args, '--json', jsonFile], { reject: false, env: { TT_PARENT_PID: String(process.pid) } });
    const after = { load: loadavg()[0], busy: busyMs(), own: process.cpuUsage(before.own), at: performance.now() };
    if (r.failed) {
      const stderr = oneLine(r.stderr);
      const message = stderr || oneLine(r.message ?? '') || 'tt_bench failed';
      if (r.exitCode === 2) throw new UserError(message);
      if (r.signal) throw new ModelRunError(`tt_bench: ${opts.model}: the model crashed (${r.signal}${CRASH_HINTS[r.signal] ?? ''})${stderr ? `: ${stderr}` : ''}`);
      throw new ModelRunError(message);
    }
    const result = JSON.parse(await fs.readFile(jsonFile, 'utf8')) as Omit<BenchResult, 'summary' | 'cores' | 'load_before' | 'load_after' | 'seconds' | 'others_cores' | 'warnings'>;
    const seconds = (after.at - before.at) / 1000;
    // What the cores did besides tt_bench and this process (spawning it, reading its result).
    const own = (result.cpu_ms ?? -1) >= 0 ? result.cpu_ms + (after.own.user + after.own.system) / 1000 : undefined;
    const others = before.busy !== undefined && after.busy !== undefined && own !== undefined && seconds > 0
      ? Math.max(0, (after.busy - before.busy - own) / 1000 / seconds) : undefined;
    const machine = { cores: cpus().length || 1, load_before: before.load, load_after: after.load, seconds, others_cores: others ?? null };
    const warnings = timingWarnings({ runs_ms: result.runs_ms, threads: result.threads, ...machine, others_cores: others });
    return { ...result, ...machine, warnings, summary: r.stdout.trim() };
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}
