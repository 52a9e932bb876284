// manifest.json of a compiled model directory: its type, and reading it back with
// validation against schemas/manifest.schema.json (benchmark, compare and the Nx executors
// read it; a hand-edited or truncated manifest gets one clear message).

import Ajv, { type ValidateFunction } from 'ajv';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { UserError } from '../errors';
import { describeSchemaError, loadSchema } from '../schedule/validate-steps';

export interface ManifestTensor { name: string; shape: number[]; dtype: 'float32' }

export interface ManifestKernel {
  symbol: string;
  groups: number[];
  key: string;
  desc: string;
  schedule: 'default' | 'tuned';
  source: string;
  /** The budget of a tuned kernel's record (`nx tune -c <budget>`), absent for `tensortune tune`. */
  budget?: string;
  flops: number;
  objectHash: string;
}

export interface Manifest {
  format_version: 1;
  engine_version: string;
  name: string;
  target: string;
  fingerprint: string;
  library: string;
  params: string;
  params_count: number;
  workspace_bytes: number;
  inputs: ManifestTensor[];
  outputs: ManifestTensor[];
  /** Which tuning records the kernels use. */
  records?: RecordsUsed;
  kernels: ManifestKernel[];
}

export interface RecordsUsed {
  tuned: number;
  default: number;
  /** Tuned kernels per budget; `tensortune tune` for records measured outside Nx. */
  by_budget: Record<string, number>;
}

/** How summaries and manifests name the origin of records without a budget. */
export const CLI_ORIGIN = 'tensortune tune';

/** The records summary of a kernel list. */
export function recordsUsed(kernels: readonly Pick<ManifestKernel, 'schedule' | 'budget'>[]): RecordsUsed {
  const by: Record<string, number> = {};
  for (const k of kernels) if (k.schedule === 'tuned') by[k.budget ?? CLI_ORIGIN] = (by[k.budget ?? CLI_ORIGIN] ?? 0) + 1;
  const tuned = kernels.filter((k) => k.schedule === 'tuned').length;
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

/** Read and validate `<dir>/manifest.json`. */
export function readManifest(dir: string): Manifest {
  const file = path.join(dir, 'manifest.json');
  if (!existsSync(file)) throw new UserError(`${file}: not found (expected the output directory of 'tensortune compile')`);
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new UserError(`${file}: not valid JSON (${(e as Error).message})`);
  }
  return checkManifest(value, file);
}
