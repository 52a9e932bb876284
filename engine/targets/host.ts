// What this machine's CPU is, as target parsing and fingerprints read it (/proc/cpuinfo).

import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';

/** The CPU's feature flags (`avx2`, `fma`, ...), empty where /proc/cpuinfo is not there. */
export function hostFlags(): Set<string> {
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    const line = info.split('\n').find((l) => l.startsWith('flags')) ?? '';
    return new Set(line.split(':')[1]?.trim().split(/\s+/) ?? []);
  } catch {
    return new Set();
  }
}

/** The CPU's model name ('AMD EPYC 7763 64-Core Processor'), or 'unknown'. */
export function cpuModel(): string {
  let model = 'unknown';
  try {
    model = readFileSync('/proc/cpuinfo', 'utf8').split('\n').find((l) => l.startsWith('model name'))?.split(':')[1]?.trim() ?? model;
  } catch { /* not Linux: fall back to os.cpus() */ }
  return model === 'unknown' ? cpus()[0]?.model ?? model : model;
}
