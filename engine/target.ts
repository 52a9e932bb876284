// Target strings, as in TVM: `llvm -mcpu=native`, `llvm -mcpu=znver4`, `llvm -mattr=+avx2,+fma`,
// `llvm -mtriple=aarch64-linux-gnu`. CPU targets are rendered as C and compiled with the
// system C compiler; this module maps the string to compiler flags, the vector width the
// schedules use, and the hardware fingerprint records are keyed by.

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { UserError } from './errors';

export interface Target {
  /** The string as given, normalised (single spaces). */
  readonly text: string;
  readonly kind: 'llvm';
  readonly mcpu?: string;
  readonly mattr: readonly string[];
  readonly mtriple?: string;
  /** float32 lanes of the vector unit the schedules target. */
  readonly vectorLanes: number;
  readonly cflags: readonly string[];
  /** Cross compiler prefix from -mtriple (e.g. `aarch64-linux-gnu-`), if any. */
  readonly ccPrefix?: string;
}

const KNOWN_OPTIONS = ['-mcpu', '-mattr', '-mtriple', '-keys', '-device', '-model'];

function hostFlags(): Set<string> {
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    const line = info.split('\n').find((l) => l.startsWith('flags')) ?? '';
    return new Set(line.split(':')[1]?.trim().split(/\s+/) ?? []);
  } catch {
    return new Set();
  }
}

export function parseTarget(text: string, where = 'target'): Target {
  const parts = text.trim().split(/\s+/);
  const kind = parts[0];
  if (kind !== 'llvm' && kind !== 'c') {
    const hint = kind === 'cuda' || kind === 'opencl' ? ` ('${kind}' is planned but not built yet)` : '';
    throw new UserError(`${where}: unsupported target kind '${kind ?? ''}'${hint}; expected 'llvm' (e.g. "llvm -mcpu=native")`);
  }
  let mcpu: string | undefined, mtriple: string | undefined;
  const mattr: string[] = [];
  for (const opt of parts.slice(1)) {
    const m = /^(-[a-z]+)=(.+)$/.exec(opt);
    if (!m || !KNOWN_OPTIONS.includes(m[1])) {
      throw new UserError(`${where}: unknown option '${opt}' in "${text}"; expected -mcpu=<cpu>, -mattr=+feat,..., -mtriple=<triple>`);
    }
    const [, key, value] = m;
    if (key === '-mcpu') mcpu = value;
    if (key === '-mattr') {
      for (const a of value.split(',')) {
        if (!/^[+-][a-z0-9.]+$/.test(a)) throw new UserError(`${where}: bad -mattr entry '${a}' in "${text}"; expected +feature or -feature`);
        mattr.push(a);
      }
    }
    if (key === '-mtriple') {
      if (!/^[a-z0-9_]+(-[a-z0-9_]+)+$/.test(value)) throw new UserError(`${where}: bad -mtriple '${value}'`);
      mtriple = value;
    }
  }
  if (mcpu && !/^[a-z0-9_.-]+$/.test(mcpu)) throw new UserError(`${where}: bad -mcpu '${mcpu}'`);
  const cross = mtriple !== undefined && !mtriple.startsWith(process.arch === 'x64' ? 'x86_64' : process.arch);
  const cflags: string[] = [];
  if (mcpu === 'native' || (!mcpu && !cross)) cflags.push('-march=native');
  else if (mcpu) cflags.push(mtriple?.startsWith('aarch64') ? `-mcpu=${mcpu}` : `-march=${mcpu}`);
  for (const a of mattr) cflags.push(a.startsWith('+') ? `-m${a.slice(1)}` : `-mno-${a.slice(1)}`);
  return {
    text: parts.join(' '), kind: 'llvm', mcpu, mattr, mtriple, cflags,
    vectorLanes: vectorLanes(mcpu, mattr, cross),
    ccPrefix: cross ? `${mtriple}-` : undefined,
  };
}

function vectorLanes(mcpu: string | undefined, mattr: readonly string[], cross: boolean): number {
  if (mattr.some((a) => a.startsWith('+avx512'))) return 16;
  if (mattr.includes('+avx2') || mattr.includes('+avx')) return 8;
  if (cross) return 4;
  if (!mcpu || mcpu === 'native') {
    const flags = hostFlags();
    if (flags.has('avx512f')) return 16;
    if (flags.has('avx2')) return 8;
    return 4;
  }
  return /znver4|znver5|skylake-avx512|icelake|sapphirerapids|cascadelake|tigerlake/.test(mcpu) ? 16 : 8;
}

/** The CPU's model name ('AMD EPYC 7763 64-Core Processor'), or 'unknown'. */
export function cpuModel(): string {
  let model = 'unknown';
  try {
    model = readFileSync('/proc/cpuinfo', 'utf8').split('\n').find((l) => l.startsWith('model name'))?.split(':')[1]?.trim() ?? model;
  } catch { /* not Linux: fall back to os.cpus() */ }
  return model === 'unknown' ? cpus()[0]?.model ?? model : model;
}

/**
 * What makes measurements on this machine comparable: the CPU model, its vector
 * features, core count and the target string. Records carry it; Nx caches by it.
 */
export function hardwareFingerprint(target: Target): string {
  const model = cpuModel();
  const features = [...hostFlags()].filter((f) => /^(avx|fma|sse4|neon|asimd|sve)/.test(f)).sort();
  const text = JSON.stringify({ model, features, cores: cpus().length, target: target.text, arch: process.arch });
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}
