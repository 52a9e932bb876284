// A bench script's result as data: one small JSON file per run (the machine, its CPU and
// measured peak, the date, tensortune's version, the command, the figures), validated
// against schemas/bench-result.schema.json. The committed files live in bench/results/;
// scripts/performance-page.ts writes docs/performance.md from them, so a figure in the docs
// always names the run, machine and command it came from.
//
// A script takes `--record DIR` and, when given, writes its record there (bench/results to
// publish it): `npx tsx bench/compare-ort.ts --networks mobilenet --record bench/results`.

import Ajv, { type ValidateFunction } from 'ajv';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import path from 'node:path';
import { UserError } from '../engine/errors';
import { measurePeakGflops } from '../engine/native/peak';
import { packageRoot, packageVersion } from '../engine/package-root';
import { hostFlags } from '../engine/targets/host';
import { describeSchemaError, loadSchema } from '../engine/schedule/validate-steps';
import type { Target } from '../engine/target';

/** The folder of the committed records. */
export const RESULTS_DIR = path.resolve(__dirname, 'results');

/** A record file is small; anything larger is not one (and is not read whole). */
const MAX_RECORD_BYTES = 1 << 20;

export type Schedules = 'default' | 'tuned';

export interface PeakReading { threads: number; gflops: number; when?: 'before' | 'after' | 'during' }

export interface Machine {
  /** Groups the records of one kind of machine (a slug: lower case, digits, dashes). */
  id: string;
  cpu: string;
  cores: number;
  gpu?: string;
  peak?: PeakReading[];
}

/** Ours against a reference engine; ratio = our time / the reference's (below 1: faster). */
export interface VsReferenceRow {
  network: string;
  schedules: Schedules;
  tuning?: string;
  threads?: number;
  batch?: number;
  oursMs?: number;
  referenceMs?: number;
  ratio: number;
  paired?: number;
  fastest?: number;
  maxAbsErr?: number;
  top1?: boolean;
}

/** N-thread speed-ups: 1-thread time / N-thread time, ours, the reference's and the peak loop's. */
export interface SpeedupRow {
  network: string;
  schedules: Schedules;
  threads: number;
  ours: number;
  oursRange?: [number, number];
  reference?: number;
  referenceRange?: [number, number];
  machine?: number;
  rounds?: number;
}

export interface PeakRow { threads: number; gflops: number }

interface RecordBase {
  format: 1;
  source: 'measured' | 'transcribed';
  transcribed?: { from: string; commit: string; order?: number };
  date: string;
  version: string;
  commit?: string;
  command: string;
  machine: Machine;
  target: string;
  reference?: { name: string; version?: string };
  notes?: string;
}

export type ResultRecord =
  | (RecordBase & { kind: 'vs-reference'; reference: { name: string; version?: string }; results: VsReferenceRow[] })
  | (RecordBase & { kind: 'speedup'; results: SpeedupRow[] })
  | (RecordBase & { kind: 'peak'; results: PeakRow[] });

let validate: ValidateFunction | undefined;

/** `value` as a record, or a UserError naming `file`, the field and what was expected. */
export function checkRecord(value: unknown, file: string): ResultRecord {
  validate ??= new Ajv({ allErrors: false, strict: true, strictRequired: false }).compile(loadSchema('bench-result.schema.json'));
  if (!validate(value)) throw new UserError(`${file}: ${describeSchemaError(validate.errors)} (schemas/bench-result.schema.json)`);
  return value as ResultRecord;
}

/** Reads and checks one record file: a regular file of at most 1 MiB holding one JSON object. */
export function readRecord(file: string): ResultRecord {
  const st = lstatSync(file);
  if (!st.isFile()) throw new UserError(`${file}: not a regular file (a benchmark record is a .json file)`);
  if (st.size > MAX_RECORD_BYTES) throw new UserError(`${file}: ${st.size} bytes; a benchmark record is at most ${MAX_RECORD_BYTES}`);
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new UserError(`${file}: not JSON (${(e as Error).message})`);
  }
  return checkRecord(value, file);
}

/** Every record of `dir` (its .json files, by name), each checked. */
export function readRecords(dir: string = RESULTS_DIR): { file: string; record: ResultRecord }[] {
  return readdirSync(dir).filter((f) => f.endsWith('.json')).sort()
    .map((f) => ({ file: path.join(dir, f), record: readRecord(path.join(dir, f)) }));
}

/** The file name a record gets: its date, kind, machine and a digest of its content. */
export function recordFileName(r: ResultRecord): string {
  const digest = createHash('sha256').update(JSON.stringify(r)).digest('hex').slice(0, 8);
  return `${r.date.slice(0, 10)}-${r.kind}-${r.machine.id}-${digest}.json`;
}

/** Checks `r` and writes it into `dir` (created if missing), atomically; returns its path. */
export function writeRecord(r: ResultRecord, dir: string): string {
  checkRecord(r, '(the record being written)');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, recordFileName(r));
  const tmp = `${file}.${process.pid}.tmp`;
  const { format, kind, ...rest } = r;
  writeFileSync(tmp, `${JSON.stringify({ format, kind, ...rest }, null, 2)}\n`);
  renameSync(tmp, file);
  return file;
}

/** A slug for a machine: its CPU model, vector ISA when known, and core count (`amd-epyc-9r14-avx512-2c`). */
export function machineId(cpu: string, cores: number, isa?: string): string {
  const slug = cpu.toLowerCase().replace(/\((r|tm)\)|processor|cpu|@.*$/g, ' ').replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 48);
  return `${slug || 'cpu'}${isa ? `-${isa}` : ''}-${cores}c`;
}

/**
 * The widest vector ISA of this CPU as /proc/cpuinfo lists it: a VM often hides the model
 * ("AMD EPYC"), and an AVX2 box and an AVX-512 box of that one name run different kernels,
 * so their records must not be grouped as one machine.
 */
export function hostIsa(flags: ReadonlySet<string> = hostFlags()): { id: string; text: string } | undefined {
  if (flags.has('avx512f')) return { id: 'avx512', text: 'AVX-512' };
  if (flags.has('avx2')) return { id: 'avx2', text: 'AVX2 only (no AVX-512)' };
  if (flags.has('asimd')) return { id: 'neon', text: 'NEON' };
  return undefined;
}

/** This machine: CPU model (and its vector ISA) and core count. */
export function thisMachine(): Machine {
  const list = cpus();
  const model = list[0]?.model?.trim() || 'unknown CPU';
  const cores = list.length || 1;
  const isa = hostIsa();
  return { id: machineId(model, cores, isa?.id), cpu: isa ? `${model}, ${isa.text}` : model, cores };
}

/** The peak fp32 rate at each of `threads`, tagged `when` (bench/peak.ts's measurement). */
export async function measurePeaks(threads: readonly number[], target: Target, when: PeakReading['when']): Promise<PeakReading[]> {
  const out: PeakReading[] = [];
  for (const t of [...new Set(threads)].sort((a, b) => a - b)) out.push({ threads: t, gflops: Number((await measurePeakGflops(t, target)).toFixed(1)), when });
  return out;
}

/** The git commit of the checkout, where this runs in one. */
export function gitCommit(): string | undefined {
  try {
    return execFileSync('git', ['rev-parse', '--short=10', 'HEAD'], { cwd: packageRoot(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** The command line that ran `script`, its arguments quoted where the shell needs it. */
export function commandLine(script: string, argv: readonly string[] = process.argv.slice(2)): string {
  const quote = (a: string): string => (/^[\w@%+=:,./-]+$/.test(a) ? a : `"${a.replace(/(["\\$`])/g, '\\$1')}"`);
  return ['npx tsx', script, ...argv.map(quote)].join(' ');
}

/** The fields every measured record shares: now, this version and commit, the command. */
export function measuredBase(script: string, target: string, machine: Machine): Omit<RecordBase, 'reference'> {
  const commit = gitCommit();
  return {
    format: 1,
    source: 'measured',
    date: `${new Date().toISOString().slice(0, 16)}Z`,
    version: packageVersion(),
    ...(commit ? { commit } : {}),
    command: commandLine(script),
    machine,
    target,
  };
}

/** The installed onnxruntime-node's version, if any. */
export function onnxRuntimeVersion(): string | undefined {
  try {
    return (JSON.parse(readFileSync(require.resolve('onnxruntime-node/package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return undefined;
  }
}

/** Writes a run of `script` against ONNX Runtime (its installed version named) as a record into `dir`; returns its path. */
export function writeVsOnnxRuntime(script: string, target: string, machine: Machine, results: VsReferenceRow[], notes: string, dir: string): string {
  const ort = onnxRuntimeVersion();
  return writeRecord({ ...measuredBase(script, target, machine), kind: 'vs-reference', reference: { name: 'ONNX Runtime', ...(ort ? { version: ort } : {}) }, results, notes }, dir);
}

/** `x` to `digits` decimals, as a number (the records' precision). */
export const roundTo = (x: number, digits = 2): number => Number(x.toFixed(digits));

/**
 * `npx tsx bench/result-record.ts write FILE DIR`: the record in FILE, completed with this
 * machine, version and commit where it leaves them out, checked and written into DIR (how
 * bench/onnx-zoo.py records). `check FILE...`: checks record files.
 */
function main(argv: readonly string[]): void {
  const [command, ...rest] = argv;
  if (command === 'write' && rest.length === 2) {
    const partial = JSON.parse(readFileSync(rest[0], 'utf8')) as Partial<ResultRecord>;
    const commit = gitCommit();
    const full = checkRecord({ ...(commit ? { commit } : {}), version: packageVersion(), machine: thisMachine(), ...partial }, rest[0]);
    console.log(`record: ${writeRecord(full, rest[1])}`);
  } else if (command === 'check' && rest.length > 0) {
    for (const f of rest) readRecord(f);
    console.log(`${rest.length} record(s) valid`);
  } else {
    throw new UserError('usage: npx tsx bench/result-record.ts write FILE DIR | check FILE...');
  }
}

if (require.main === module) {
  try {
    main(process.argv.slice(2));
  } catch (e) {
    console.error(e instanceof UserError ? e.message : e);
    process.exitCode = e instanceof UserError ? 2 : 1;
  }
}
