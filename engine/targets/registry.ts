// The one place target kinds are registered: the built-in records (llvm.ts, opencl.ts,
// cuda.ts) and any added with registerTargetKind. Everything that depends on the kind of a
// target asks its record here: parseTarget finds the record by the string's first word,
// kindOf(target) by the parsed target's `kind`.

import { createHash } from 'node:crypto';
import { UserError } from '../errors';
import { CUDA_KIND } from './cuda';
import { GPU_OPTIONS, paramProblem } from './gpu-params';
import type { CudaProbe, OpenclProbe, TargetKind } from './kind';
import { LLVM_KIND } from './llvm';
import { OPENCL_KIND } from './opencl';
import type { GpuParams, GpuTarget, Target } from './types';

/** The records in registration order; `byName` finds them by name and alias. */
const kinds: TargetKind[] = [];
const byName = new Map<string, TargetKind>();

/**
 * Adds a target kind: its name and aliases must be new (an Error otherwise: two records for
 * one word would make parsing depend on the order of registration). Returns the function
 * that removes it again.
 */
export function registerTargetKind(kind: TargetKind): () => void {
  const names = [kind.name, ...(kind.aliases ?? [])];
  const taken = names.find((n) => byName.has(n));
  if (taken !== undefined) throw new Error(`registerTargetKind: the target kind '${taken}' is registered already`);
  if (kind.dialect.family !== kind.family) throw new Error(`registerTargetKind: '${kind.name}' is a ${kind.family} kind with a ${kind.dialect.family} dialect`);
  kinds.push(kind);
  for (const n of names) byName.set(n, kind);
  return () => {
    const at = kinds.indexOf(kind);
    if (at >= 0) kinds.splice(at, 1);
    for (const n of names) if (byName.get(n) === kind) byName.delete(n);
  };
}

for (const kind of [LLVM_KIND, OPENCL_KIND, CUDA_KIND]) registerTargetKind(kind);

/** The registered kinds, in registration order. */
export const targetKinds = (): readonly TargetKind[] => [...kinds];

/** The record of a parsed target (an Error for a kind that is not registered: a target not made by parseTarget). */
export function kindOf(target: Pick<Target, 'kind' | 'text'>): TargetKind {
  const kind = byName.get(target.kind);
  if (!kind) throw new Error(`kindOf: "${target.text}" is of no registered target kind ('${target.kind}')`);
  return kind;
}

/** How messages name the host of a target named `where`: `--target` -> `--host`, `targets.x.target` -> `targets.x.host`. */
function hostWhereOf(where: string): string {
  if (where === '--target') return '--host';
  if (where === 'target') return 'host';
  return where.endsWith('.target') ? `${where.slice(0, -'.target'.length)}.host` : `${where} (host)`;
}

const kindList = (): string => {
  const named = kinds.map((k) => `'${k.name}' (e.g. "${k.example}")`);
  return named.length > 1 ? `${named.slice(0, -1).join(', ')} or ${named[named.length - 1]}` : named.join('');
};

/**
 * Parse a target string, by the record its first word names. `host` is the CPU side of a
 * GPU target (TVM's target_host, an `llvm` string; default `llvm`, this machine); a CPU
 * target is its own host and refuses one. `where` and `hostWhere` name the two in messages.
 */
export function parseTarget(text: string, where = 'target', host?: string, hostWhere = hostWhereOf(where)): Target {
  const parts = text.trim().split(/\s+/);
  const kind = byName.get(parts[0] ?? '');
  if (!kind) throw new UserError(`${where}: unsupported target kind '${parts[0] ?? ''}'; expected ${kindList()}`);
  return kind.parse({ text, parts, where, host, hostWhere });
}

/**
 * What makes measurements on this machine comparable, as a short hash of the record's
 * identity text (CPU kinds: the CPU model, its vector features, core count and the target
 * string; GPU kinds: the device as its probe names it, the target string and the CPU that
 * drives it). Records carry it; Nx caches by it. `probe`/`cudaProbe` replace the device
 * probes (tests).
 */
export function hardwareFingerprint(target: Target, probe?: OpenclProbe, cudaProbe?: CudaProbe): string {
  const text = kindOf(target).identity(target, { opencl: probe, cuda: cudaProbe });
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

/** A GPU target: its kind's family is 'gpu' (it has hardware parameters and a host). */
export const isGpu = (target: Target): target is GpuTarget => kindOf(target).family === 'gpu';

/** The GPU hardware parameters of a target; a CPU target has none (an Error: a caller's bug). */
export function gpuParams(target: Target): GpuParams {
  if (!isGpu(target)) throw new Error(`gpuParams: "${target.text}" is not a GPU target`);
  return target.gpu;
}

const gpuKindNames = (): string => kinds.filter((k) => k.family === 'gpu').map((k) => k.name).join(', ');

/**
 * `text` with the hardware parameters of a config's `hardwareParams` appended as target
 * options, normalised as parseTarget normalises (so `--target "opencl -max_threads_per_block=128"`
 * and `{ target: opencl, hardwareParams: { maxThreadsPerBlock: 128 } }` are one target). No
 * parameters: `text` unchanged. `where` names the parameters in messages.
 */
export function withHardwareParams(text: string, params: Partial<GpuParams> | undefined, where = 'hardwareParams'): string {
  const given = GPU_OPTIONS.filter((o) => params?.[o.key] !== undefined);
  if (given.length === 0) return text;
  const parsed = parseTarget(text, where.replace(/hardwareParams$/, 'target'), undefined);
  if (!isGpu(parsed)) throw new UserError(`${where}: hardware parameters apply to GPU targets (${gpuKindNames()}); "${parsed.text}" is a CPU target`);
  const tokens = text.trim().split(/\s+/);
  for (const o of given) {
    const value = params![o.key]!;
    const problem = paramProblem(o, value);
    if (problem) throw new UserError(`${where}.${o.key}: ${problem}, got ${JSON.stringify(value)}`);
    if (tokens.some((t) => t.startsWith(`-${o.option}=`))) {
      throw new UserError(`${where}.${o.key}: the target string "${parsed.text}" gives -${o.option} already; give it once`);
    }
  }
  return parseTarget([...tokens, ...given.map((o) => `-${o.option}=${params![o.key]}`)].join(' '), where).text;
}

/**
 * Refuses a GPU target whose host is another architecture for a command that runs the
 * compiled model here (benchmark). Tune is not one: it measures on this machine's device
 * with candidates built for this machine, whatever host compile will use.
 */
export function checkRunsHere(target: Target, command: string, hostWhere = '--host'): void {
  if (target.host?.ccPrefix === undefined) return;
  throw new UserError(`${hostWhere}: ${command} runs on this machine and its ${kindOf(target).label} device, so the host must be this machine; ` +
    `"${target.host.text}" is another architecture: a cross host is for compile (copy the compiled folder to such a machine)`);
}
