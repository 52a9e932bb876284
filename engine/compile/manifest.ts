// manifest.json of a compiled model directory: its type, and reading it back with
// validation against schemas/manifest.schema.json (benchmark, compare and the Nx executors
// read it; a hand-edited or truncated manifest gets one clear message). The manifest holds
// the sha256 of the library and the params it was written with, and reading it checks them,
// so a folder that mixes two builds is refused instead of run.
//
// The manifest is sealed too: its `seal` holds a digest of every other field, and reading it
// refuses a manifest whose fields changed after compile (an application sizes its buffers
// from the input and output shapes; an edited shape, workspace_bytes or params_count would
// make it read or write past them), naming the field.

import Ajv, { type ValidateFunction } from 'ajv';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, fstatSync, openSync, readSync } from 'node:fs';
import path from 'node:path';
import { UserError } from '../errors';
import { kernelThreads } from '../graph/per-sample';
import { kindOf, MiB, NotRegularFileError, READ_FLAGS, readRegularFileSync } from '../regular-file';
import { describeSchemaError, loadSchema } from '../schedule/validate-steps';

/** A model input or output: float32, or int32 / bool (0/1) in 4-byte words (native/include/tensortune.h). */
export interface ManifestTensor { name: string; shape: number[]; dtype: 'float32' | 'int32' | 'bool' }

/** An output, with the file `tt_bench --save-outputs` writes it to (outputFileName + `.bin`). */
export interface ManifestOutput extends ManifestTensor { file?: string }

export interface ManifestKernel {
  symbol: string;
  groups: number[];
  key: string;
  desc: string;
  schedule: 'default' | 'tuned';
  /** `default schedule`, or the base name and line of the record log the tuned schedule came from. */
  source: string;
  /** For a tuned kernel: the id of its record (recordId, engine/records/store.ts). */
  record?: string;
  /** The budget of a tuned kernel's record (`nx tune -c <budget>`), absent for `tensortune tune`. */
  budget?: string;
  flops: number;
  objectHash: string;
  /** OpenCL models: the kernel's launches, in the order tt_run makes them for one of its groups. */
  launches?: ManifestLaunch[];
}

/** One OpenCL launch: the __kernel, and its global and local work sizes (work-items per dimension). */
export interface ManifestLaunch { kernel: string; global: [number, number, number]; local: [number, number, number] }

export interface Manifest {
  format_version: 1;
  engine_version: string;
  /** The builtin network's name, or the model file's base name. */
  name: string;
  /** For a model file: its path relative to the model directory ('/'-separated), and its sha256. */
  model_file?: string;
  model_sha256?: string;
  target: string;
  /** GPU targets: the host's target string (the CPU side, which model.so is built for). */
  host?: string;
  /** OpenCL models: the file beside model.so holding the OpenCL C source model.so embeds (for reading). */
  opencl_source?: string;
  /** CUDA models: the file beside model.so holding the CUDA source of every kernel (for reading), and the cubin model.so embeds (a copy). */
  cuda_source?: string;
  cubin?: string;
  fingerprint: string;
  /** CPU models compiled with records ranked at a thread count (compile --threads, a config target's threads): that count. */
  records_threads?: number;
  library: string;
  params: string;
  /** sha256 (hex) of the library and of the params file. */
  library_sha256: string;
  params_sha256: string;
  params_count: number;
  workspace_bytes: number;
  /** CPU models that run their batch one sample at a time: the samples per run (the kernels, their FLOPs and the workspace are one sample's). */
  samples?: number;
  inputs: ManifestTensor[];
  outputs: ManifestOutput[];
  /** Which tuning records the kernels use. */
  records?: RecordsUsed;
  kernels: ManifestKernel[];
  /** Per field, the first 16 hex digits of its digest (sealManifest); written last, checked by readManifest. */
  seal?: Record<string, string>;
}

export interface RecordsUsed {
  tuned: number;
  default: number;
  /** Tuned kernels per budget; `tensortune tune` for records measured outside Nx. */
  by_budget: Record<string, number>;
}

/** How summaries and manifests name the origin of records without a budget. */
const CLI_ORIGIN = 'tensortune tune';

/** The records summary of a kernel list. */
export function recordsUsed(kernels: readonly Pick<ManifestKernel, 'schedule' | 'budget'>[]): RecordsUsed {
  const by: Record<string, number> = {};
  let tuned = 0;
  for (const k of kernels) {
    if (k.schedule !== 'tuned') continue;
    tuned++;
    const budget = k.budget ?? CLI_ORIGIN;
    by[budget] = (by[budget] ?? 0) + 1;
  }
  return { tuned, default: kernels.length - tuned, by_budget: by };
}

/** `22 tuned (full: 20, tensortune tune: 2), 0 default`. */
export function formatRecordsUsed(r: RecordsUsed): string {
  const by = Object.entries(r.by_budget).sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k}: ${n}`).join(', ');
  return `${r.tuned} tuned${by ? ` (${by})` : ''}, ${r.default} default`;
}

let validate: ValidateFunction | undefined;

/** Check a parsed manifest; throws UserError naming `file` and the first offending field. */
export function checkManifest(value: unknown, file: string): Manifest {
  validate ??= new Ajv({ strict: true }).compile(loadSchema('manifest.schema.json'));
  if (!validate(value)) throw new UserError(`${file}: not a tensortune manifest: ${describeSchemaError(validate.errors)}`);
  return value as Manifest;
}

/** Absolute paths of the library and parameter file of the compiled model in `dir`. */
export function manifestFiles(dir: string, m: Manifest): { library: string; params: string } {
  return { library: path.join(dir, m.library), params: path.join(dir, m.params) };
}

/** sha256 (hex) of a file, read in chunks. */
export function fileSha256(file: string): string {
  const hash = createHash('sha256');
  const fd = openSync(file, READ_FLAGS); // non-blocking: a FIFO in the folder is refused below instead of blocking the open
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new NotRegularFileError(file, `${file} is ${kindOf(stat)}, expected a regular file`);
    const chunk = Buffer.alloc(1 << 20);
    for (let n = readSync(fd, chunk); n > 0; n = readSync(fd, chunk)) hash.update(chunk.subarray(0, n));
  } finally {
    closeSync(fd);
  }
  return hash.digest('hex');
}

/** Checks that the library and params in `dir` are the files manifest `file` was written with. */
function checkModelFiles(dir: string, m: Manifest, file: string): void {
  const wanted: [string, string][] = [[m.library, m.library_sha256], [m.params, m.params_sha256]];
  for (const [name, want] of wanted) {
    const at = path.join(dir, name);
    let got: string;
    try {
      got = fileSha256(at);
    } catch (e) {
      if (e instanceof UserError) throw e;
      throw new UserError(`${at}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}), yet ${file} lists it; compile the model again`);
    }
    if (got !== want) {
      throw new UserError(`${at}: does not match ${file} (sha256 ${got.slice(0, 16)}, the manifest says ${want.slice(0, 16)}): the folder mixes two builds; compile the model again`);
    }
  }
}

/** JSON with every object's keys sorted: the same value whatever the key order or spacing of the file. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const fieldDigest = (name: string, value: unknown): string =>
  createHash('sha256').update(`${name}\0${canonicalJson(value)}`).digest('hex').slice(0, 16);

/** The manifest with its seal: a digest of each of its other fields (compile writes this). */
export function sealManifest(m: Manifest): Manifest {
  const { seal: _old, ...fields } = m;
  const seal = Object.fromEntries(Object.keys(fields).sort().map((k) => [k, fieldDigest(k, (fields as Record<string, unknown>)[k])]));
  return { ...fields, seal };
}

/** Refuses a manifest whose fields are not the ones compile sealed, naming the first that changed. */
function checkSeal(m: Manifest, file: string): void {
  const again = 'compile the model again';
  if (!m.seal) throw new UserError(`${file}: has no seal (written by an older tensortune, or edited): ${again}`);
  const { seal, ...fields } = m;
  for (const name of Object.keys(fields)) {
    const want = seal[name];
    if (want === undefined) throw new UserError(`${file}: field '${name}' was added after compile (the manifest's seal does not cover it): ${again}`);
    if (fieldDigest(name, (fields as Record<string, unknown>)[name]) !== want) {
      throw new UserError(`${file}: field '${name}' was changed after compile (it does not match the manifest's seal; an application sizing buffers from it would be wrong): ${again}`);
    }
  }
  const removed = Object.keys(seal).find((name) => !(name in fields));
  if (removed) throw new UserError(`${file}: field '${removed}' was removed after compile (the manifest's seal covers it): ${again}`);
}

/** Read and validate `<dir>/manifest.json`, check its seal, and that the library and params are the ones it lists. */
export function readManifest(dir: string): Manifest {
  const file = path.join(dir, 'manifest.json');
  if (!existsSync(file)) throw new UserError(`${file}: not found (expected the output directory of 'tensortune compile')`);
  let value: unknown;
  try {
    value = JSON.parse(readRegularFileSync(file, { what: 'the manifest', maxBytes: 16 * MiB }).toString('utf8'));
  } catch (e) {
    if (e instanceof UserError) throw e;
    throw new UserError(`${file}: not valid JSON (${(e as Error).message})`);
  }
  const m = checkManifest(value, file);
  checkSeal(m, file);
  checkModelFiles(dir, m, file);
  return m;
}

/**
 * Compile ranked the records for a run at `records_threads` (`tensortune compile --threads N`);
 * a run whose kernels run on another count times schedules ranked for a count they do not run at. One warning
 * ending in `fix` (how to rank them for `threads`), or none (default schedules, or the
 * same count).
 */
export function recordsThreadsWarning(manifest: Manifest, threads: number, fix: string): string[] {
  const at = manifest.records_threads;
  // Compared as the threads its kernels run on: 16 samples at 2 threads or at 4 both run one-thread kernels.
  const samples = manifest.samples ?? 1;
  if (at === undefined || kernelThreads(samples, at) === kernelThreads(samples, threads)) return [];
  return [`the model's records were ranked at ${at} thread(s) (manifest records_threads) and it ran at ${threads}: ${fix}`];
}
