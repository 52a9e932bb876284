// `llvm` (also `c`): CPU targets, as in TVM: `llvm -mcpu=native`, `llvm -mcpu=znver4`,
// `llvm -mattr=+avx2,+fma`, `llvm -mtriple=aarch64-linux-gnu`. Kernels are rendered as C
// (codegen/c.ts) and compiled with the system C compiler (the -mtriple cross compiler for
// another architecture); this record maps the string to compiler flags and the vector width
// the schedules use, and identifies the CPU for records.

import { cpus } from 'node:os';
import { C_DIALECT, C_PRELUDE, KERNEL_CFLAGS, renderKernel } from '../codegen/c';
import { lower } from '../codegen/lower';
import { UserError } from '../errors';
import type { DType } from '../ir/expr';
import { poolObject } from '../native/build';
import { State } from '../schedule/state';
import { GPU_OPTIONS } from './gpu-params';
import { cpuModel, hostFlags } from './host';
import type { ParseContext, RenderResult, TargetKind } from './kind';
import type { Target } from './types';

const KNOWN_OPTIONS = ['-mcpu', '-mattr', '-mtriple', '-keys', '-device', '-model'];

/** A CPU target string (no host: a CPU target is its own). */
export function parseCpuTarget(ctx: ParseContext): Target {
  const { text, parts, where } = ctx;
  if (ctx.host !== undefined) {
    throw new UserError(`${ctx.hostWhere}: a host applies to GPU targets (opencl, cuda) only; the CPU target "${parts.join(' ')}" is its own host (drop it; -mtriple in the target cross-compiles)`);
  }
  let mcpu: string | undefined, mtriple: string | undefined, device: string | undefined;
  const mattr: string[] = [];
  for (const opt of parts.slice(1)) {
    const m = /^(-[a-z]+)=(.+)$/.exec(opt);
    if (!m || !KNOWN_OPTIONS.includes(m[1])) {
      const gpu = GPU_OPTIONS.find((o) => opt.startsWith(`-${o.option}=`));
      if (gpu) throw new UserError(`${where}: '-${gpu.option}' in "${text}" is a hardware parameter of GPU targets (opencl, cuda); a CPU target has none`);
      throw new UserError(`${where}: unknown option '${opt}' in "${text}"; expected -mcpu=<cpu>, -mattr=+feat,..., -mtriple=<triple>`);
    }
    const [, key, value] = m;
    if (key === '-mcpu') mcpu = value;
    if (key === '-device') device = value;
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
    ...(device !== undefined ? { device } : {}),
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

/**
 * A rendered kernel `int32_t tt_candidate_kernel(float*, ...)` as a tt_kernel_fn library
 * exporting `symbol`. The kernel keeps external linkage, as in the compiled model (compile/
 * model.ts builds each kernel as an object of its own), so a candidate is timed as the
 * kernel that ships.
 */
export function cpuCandidateSource(kernelSource: string, nargs: number, dtypes: readonly DType[], symbol: string): string {
  // The worker's buffers are float words; an int32/bool argument is passed as an int32_t*.
  const args = Array.from({ length: nargs }, (_, i) => ((dtypes[i] ?? 'float32') === 'float32' ? `args[${i}]` : `(int32_t*)args[${i}]`)).join(', ');
  return [
    C_PRELUDE,
    '#include "tensortune.h"',
    kernelSource.trimEnd(),
    `TT_EXPORT int ${symbol}(float* const* args) { return tt_candidate_kernel(${args}); }`,
    '',
  ].join('\n');
}

/** A CPU candidate: the C kernel of `steps` in a tt_kernel_fn library (the kernel named tt_candidate_kernel). */
export function renderCpuCandidate(
  dag: Parameters<TargetKind['candidate']['render']>[0], steps: Parameters<TargetKind['candidate']['render']>[1],
  target: Pick<Target, 'vectorLanes'>, packable: ReadonlySet<string>, symbol: string,
): RenderResult {
  try {
    const kernel = lower(State.replay(dag, steps), 'tt_candidate_kernel', { packable });
    const body = renderKernel(kernel, { vectorLanes: target.vectorLanes });
    return { ok: true, code: cpuCandidateSource(body, dag.tensors.length, dag.tensors.map((t) => t.dtype), symbol), layouts: kernel.layouts };
  } catch (e) {
    return { ok: false, message: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
  }
}

/** What identifies a CPU for records: its model, vector features, core count, the target string and the architecture. */
export function cpuIdentity(target: Target): string {
  const model = cpuModel();
  const features = [...hostFlags()].filter((f) => /^(avx|fma|sse4|neon|asimd|sve)/.test(f)).sort();
  return JSON.stringify({ model, features, cores: cpus().length, target: target.text, arch: process.arch });
}

export const LLVM_KIND: TargetKind = {
  name: 'llvm',
  aliases: ['c'],
  family: 'cpu',
  dialect: C_DIALECT,
  label: 'CPU',
  example: 'llvm -mcpu=native',
  parse: parseCpuTarget,
  identity: cpuIdentity,
  defaultOptions: (target) => ({ vectorLanes: target.vectorLanes }),
  candidate: {
    render: renderCpuCandidate,
    cflags: KERNEL_CFLAGS,
    // The thread pool's object, compiled once rather than with each candidate.
    link: async (compiler) => ({ objects: [await poolObject(compiler)], libs: [] }),
  },
  model: { cpu: { cflags: KERNEL_CFLAGS, runtimeObject: (compiler) => poolObject(compiler) } },
  runner: { tune: true, benchmark: true },
};
