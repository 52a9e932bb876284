// What the GPU kinds parse alike: the hardware-parameter options of their target strings
// (TVM's HardwareParams names), checked and normalised, and their CPU host.

import { UserError } from '../errors';
import type { ParseContext } from './kind';
import { parseCpuTarget } from './llvm';
import { GPU_OPTIONS, gpuOptionsList, paramProblem } from './gpu-params';
import type { GpuParams, Target } from './types';

/** The host of a GPU target: a CPU target, `llvm` (this machine) unless given. */
export function parseGpuHost(ctx: ParseContext): Target {
  const hostParts = (ctx.host ?? 'llvm').trim().split(/\s+/);
  if (hostParts[0] !== 'llvm' && hostParts[0] !== 'c') {
    throw new UserError(`${ctx.hostWhere}: the host of a GPU target is a CPU target ('llvm', e.g. "llvm -mtriple=aarch64-linux-gnu"), got "${hostParts.join(' ')}"`);
  }
  const text = hostParts.join(' ');
  return parseCpuTarget({ text, parts: hostParts, where: ctx.hostWhere, hostWhere: ctx.hostWhere });
}

/**
 * The options of GPU target `ctx.text`: the hardware parameters of GPU_OPTIONS, checked,
 * into the result; the kind's own options (`own`, by name) to their handler. Anything else,
 * or an option given twice, is a UserError naming `expected` (the own options) beside the
 * parameters.
 */
export function gpuOptions(ctx: ParseContext, own: Readonly<Record<string, (value: string) => void>>, expected: string): Partial<GpuParams> {
  const { text, parts, where } = ctx;
  const overrides: Partial<GpuParams> = {};
  const seen = new Set<string>();
  for (const opt of parts.slice(1)) {
    const m = /^-([a-z_]+)=(.*)$/.exec(opt);
    const name = m?.[1];
    const spec = GPU_OPTIONS.find((o) => o.option === name);
    const handler = name !== undefined && Object.hasOwn(own, name) ? own[name] : undefined;
    if (!m || (!handler && !spec)) {
      const cpu = m && ['mcpu', 'mattr', 'mtriple'].includes(m[1]) ? ` (-${m[1]} belongs to the host: --host or targets.<name>.host, e.g. "llvm -mtriple=aarch64-linux-gnu")` : '';
      throw new UserError(`${where}: unknown option '${opt}' in "${text}"${cpu}; expected ${expected} or ${gpuOptionsList()}`);
    }
    if (seen.has(m[1])) throw new UserError(`${where}: -${m[1]} is given twice in "${text}"; give it once`);
    seen.add(m[1]);
    const value = m[2];
    if (handler) {
      handler(value);
      continue;
    }
    const problem = paramProblem(spec!, /^[1-9]\d*$/.test(value) ? Number(value) : NaN);
    if (problem) throw new UserError(`${where}: bad -${spec!.option} '${value}' in "${text}"; ${problem}`);
    overrides[spec!.key] = Number(value);
  }
  return overrides;
}

/** The GPU_OPTIONS of `overrides` as target options, in a normalised target string. */
export const gpuOptionsText = (overrides: Partial<GpuParams>): string[] =>
  GPU_OPTIONS.filter((o) => overrides[o.key] !== undefined).map((o) => `-${o.option}=${overrides[o.key]}`);
