// nvcc: CUDA sources -> cubins for one architecture, with ptxas's resource usage read back.
//
// nvcc is found on PATH, else in $CUDA_HOME/bin; without it a cuda target says so in one
// line. Each call compiles one
// translation unit (`-cubin -arch=sm_XX -Xptxas -v`); a caller with many kernels puts them in
// one unit, since nvcc's start-up (front end, host compiler probe) dominates a small kernel's
// compile. ptxas's report (`-v`) gives per kernel its registers per thread, spill stores and
// loads, static shared memory and stack frame; checkUsage compares them with the device's
// limits, so that a candidate a GPU would refuse to launch is invalid before it is run.
//
// The report is parsed here (a handful of regular expressions): no library reads ptxas's
// text, and nvcc offers no machine-readable form of it (cuobjdump --dump-resource-usage
// prints the same text from the cubin).

import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { UserError } from '../errors';
import { compilerFailure, loadExeca } from './build';
import { cachedFileOk, sealIntoCache } from './file-cache';

export interface Nvcc {
  /** The nvcc executable. */
  command: string;
  /** `nvcc --version` output: part of every cache key. */
  identity: string;
  /** Architectures it compiles for (`sm_75`, `sm_80`, ...), from `--list-gpu-arch`. */
  archs: readonly string[];
}

/** Time limit of asking nvcc for its version. */
const PROBE_TIMEOUT_MS = 30_000;

const found = new Map<string, Nvcc | UserError>();

/** Where nvcc is looked for, in order: PATH, $CUDA_HOME/bin. */
function candidates(env: NodeJS.ProcessEnv): string[] {
  const out: string[] = [];
  for (const dir of (env.PATH ?? '').split(path.delimiter)) if (dir) out.push(path.join(dir, 'nvcc'));
  if (env.CUDA_HOME) out.push(path.join(env.CUDA_HOME, 'bin', 'nvcc'));
  return out;
}

/**
 * nvcc, or a one-line UserError saying it is missing. Asked once per process (per PATH and
 * CUDA_HOME); the answer, found or not, is memoised.
 */
export function findNvcc(env: NodeJS.ProcessEnv = process.env): Nvcc {
  const key = `${env.PATH ?? ''}\0${env.CUDA_HOME ?? ''}`;
  let known = found.get(key);
  if (!known) {
    known = probe(env);
    found.set(key, known);
  }
  if (known instanceof UserError) throw known;
  return known;
}

/** Why there is no nvcc (a one-line message), or undefined when there is one. */
export function nvccMissing(env: NodeJS.ProcessEnv = process.env): string | undefined {
  try {
    findNvcc(env);
    return undefined;
  } catch (e) {
    if (e instanceof UserError) return e.message;
    throw e;
  }
}

function probe(env: NodeJS.ProcessEnv): Nvcc | UserError {
  const command = candidates(env).find((c) => existsSync(c));
  if (!command) {
    return new UserError(`cuda targets need nvcc (the CUDA toolkit) to compile kernels: none on PATH${env.CUDA_HOME ? ` nor in $CUDA_HOME/bin (${env.CUDA_HOME}/bin)` : ' and $CUDA_HOME is not set'}; install the CUDA toolkit or set CUDA_HOME`);
  }
  const version = spawnSync(command, ['--version'], { encoding: 'utf8', timeout: PROBE_TIMEOUT_MS });
  if (version.error || version.status !== 0) {
    return new UserError(`nvcc (${command}) does not run: ${(version.stderr || version.error?.message || `exit ${version.status}`).trim().split('\n')[0]}`);
  }
  const list = spawnSync(command, ['--list-gpu-arch'], { encoding: 'utf8', timeout: PROBE_TIMEOUT_MS });
  const archs = (list.stdout ?? '').split(/\s+/).flatMap((a) => (/^compute_\d+$/.test(a) ? [a.replace('compute_', 'sm_')] : []));
  return { command, identity: version.stdout.trim(), archs };
}

/** Refuses an architecture this nvcc does not compile for, in one line. `where` names the target. */
export function checkArch(nvcc: Nvcc, arch: string, where = '--target'): void {
  const base = arch.replace(/[af]$/, '');
  if (nvcc.archs.length > 0 && !nvcc.archs.includes(base)) {
    throw new UserError(`${where}: -arch=${arch}: this nvcc (${nvcc.command}) does not compile for it; it knows ${nvcc.archs.join(', ')}`);
  }
}

/** What ptxas says one kernel uses. */
export interface KernelUsage {
  kernel: string;
  /** 32-bit registers per thread. */
  registers: number;
  /** Bytes per thread stored to / loaded from local memory because registers ran out. */
  spillStores: number;
  spillLoads: number;
  /** Static shared memory (`__shared__` arrays), bytes per block. */
  sharedBytes: number;
  /** Stack frame, bytes per thread (local arrays that stay in local memory, and spills). */
  stackBytes: number;
}

/**
 * ptxas's `-v` report, per kernel (entry function):
 *   ptxas info    : Compiling entry function 'k' for 'sm_80'
 *   ptxas info    : Function properties for k
 *       304 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
 *   ptxas info    : Used 32 registers, used 1 barriers, 1024 bytes smem, 368 bytes cmem[0]
 * (the smem entry only when the kernel has shared memory). Device functions that are not
 * inlined get "Function properties" without "Compiling entry function": ignored.
 */
export function parsePtxas(text: string): KernelUsage[] {
  const out: KernelUsage[] = [];
  let current: KernelUsage | undefined;
  let props: string | undefined;
  for (const line of text.split('\n')) {
    const entry = /Compiling entry function '([^']+)'/.exec(line);
    if (entry) {
      current = { kernel: entry[1], registers: 0, spillStores: 0, spillLoads: 0, sharedBytes: 0, stackBytes: 0 };
      out.push(current);
      props = undefined;
      continue;
    }
    const fp = /Function properties for (\S+)/.exec(line);
    if (fp) { props = fp[1]; continue; }
    if (!current) continue;
    const frame = /(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads/.exec(line);
    if (frame && props === current.kernel) {
      current.stackBytes = Number(frame[1]);
      current.spillStores = Number(frame[2]);
      current.spillLoads = Number(frame[3]);
      continue;
    }
    const used = /Used (\d+) registers/.exec(line);
    if (used) {
      current.registers = Number(used[1]);
      const smem = /(\d+) bytes smem/.exec(line);
      current.sharedBytes = smem ? Number(smem[1]) : 0;
    }
  }
  return out;
}

/** The device limits ptxas's numbers are held to (a cuda Target's gpu and cuda parameters, engine/target.ts). */
export interface CudaLimits {
  maxRegistersPerBlock: number;
  maxRegistersPerThread: number;
  maxSharedMemoryPerBlock: number;
}

/** What cudaLimitsOf reads of a target (a cuda Target has it). */
export interface CudaLimitsSource {
  readonly text: string;
  readonly cuda?: { readonly maxRegistersPerBlock: number; readonly maxRegistersPerThread: number };
  readonly gpu?: { readonly maxSharedMemoryPerBlock: number };
}

export const cudaLimitsOf = (t: CudaLimitsSource): CudaLimits => {
  if (!t.cuda || !t.gpu) throw new Error(`cudaLimitsOf: "${t.text}" is not a cuda target`);
  return { ...t.cuda, maxSharedMemoryPerBlock: t.gpu.maxSharedMemoryPerBlock };
};

/**
 * Why a kernel that uses `u` cannot be launched with `threads` threads per block on a device
 * with `limits`, with ptxas's numbers; undefined when it can.
 */
export function usageProblem(u: KernelUsage, threads: number, limits: CudaLimits): string | undefined {
  const problems: string[] = [];
  if (u.registers > limits.maxRegistersPerThread) problems.push(`${u.registers} registers per thread, more than ${limits.maxRegistersPerThread}`);
  if (u.registers * threads > limits.maxRegistersPerBlock) {
    problems.push(`${u.registers} registers × ${threads} threads = ${u.registers * threads} registers per block, more than the device's ${limits.maxRegistersPerBlock}`);
  }
  if (u.sharedBytes > limits.maxSharedMemoryPerBlock) problems.push(`${u.sharedBytes} bytes of shared memory per block, more than the device's ${limits.maxSharedMemoryPerBlock}`);
  return problems.length ? `${u.kernel}: ${problems.join('; ')} (ptxas: ${describeUsage(u)})` : undefined;
}

export const describeUsage = (u: KernelUsage): string =>
  `${u.registers} registers, ${u.sharedBytes} bytes smem, ${u.stackBytes} bytes stack, ${u.spillStores}/${u.spillLoads} bytes spill stores/loads`;

/** The flags of every kernel compile. No --use_fast_math: its approximate exp/div would fail the reference check's tolerance. */
export function nvccFlags(arch: string): string[] {
  // 177/550: variables declared or set and never used (the renderer declares every loop
  // variable of an expanded loop; the kernels are correct without them).
  return ['-cubin', `-arch=${arch}`, '-O3', '-std=c++17', '-Xptxas', '-v', '-diag-suppress', '177,550'];
}

/** ptxas's message when static shared memory is over what any launch allows. */
const TOO_MUCH_SHARED = /uses too much shared data \((0x[0-9a-f]+) bytes, (0x[0-9a-f]+) max\)/i;

export type CubinResult =
  | { ok: true; cubin: string; usage: KernelUsage[]; cached: boolean }
  /** `invalid`: the source compiles but ptxas refuses what it asks for (over the device's limits). */
  | { ok: false; kind: 'compile_error' | 'invalid'; message: string };

export interface CubinOptions {
  /** Where cubins and their usage files are kept (by hash of source, flags and nvcc). */
  cacheDir: string;
  timeoutMs?: number;
  /** Lines of nvcc's output kept in a failure's message (default 12). */
  messageLines?: number;
}

/**
 * Compiles one CUDA translation unit to a cubin for `arch`, or reads it from the cache
 * (`<hash>.cubin` sealed, `<hash>.ptxas.json` beside it). Errors are results: a source
 * nvcc rejects is a compile_error with the first lines of its message; static shared
 * memory over the architecture's limit (a ptxas error) is `invalid`.
 */
export async function compileCubin(nvcc: Nvcc, source: string, arch: string, opts: CubinOptions): Promise<CubinResult> {
  const flags = nvccFlags(arch);
  const hash = createHash('sha256').update(JSON.stringify([source, flags, nvcc.identity])).digest('hex').slice(0, 24);
  const cubin = path.join(opts.cacheDir, `${hash}.cubin`);
  const usageFile = path.join(opts.cacheDir, `${hash}.ptxas.json`);
  if (await cachedFileOk(cubin)) {
    try {
      return { ok: true, cubin, usage: JSON.parse(await fs.readFile(usageFile, 'utf8')) as KernelUsage[], cached: true };
    } catch { /* no usage beside it: compile again */ }
  }
  await fs.mkdir(opts.cacheDir, { recursive: true });
  const unique = `${process.pid}-${randomBytes(4).toString('hex')}`;
  const src = path.join(opts.cacheDir, `${hash}-${unique}.cu`);
  const tmp = `${cubin}.tmp-${unique}`;
  await fs.writeFile(src, source);
  const { execa } = await loadExeca();
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const r = await execa(nvcc.command, [...flags, src, '-o', tmp], { reject: false, timeout: timeoutMs, all: true });
  await fs.rm(src, { force: true });
  const text = typeof r.all === 'string' ? r.all : `${r.stdout ?? ''}\n${r.stderr ?? ''}`;
  if (r.failed) {
    await fs.rm(tmp, { force: true });
    const shared = TOO_MUCH_SHARED.exec(text);
    if (shared) {
      const kernel = /Entry function '([^']+)'/.exec(text)?.[1] ?? 'a kernel';
      return { ok: false, kind: 'invalid', message: `${kernel}: ${parseInt(shared[1], 16)} bytes of static shared memory, more than ${arch}'s ${parseInt(shared[2], 16)} (ptxas)` };
    }
    return { ok: false, kind: 'compile_error', message: compilerFailure({ ...r, stderr: text.replaceAll(src, 'kernel.cu') }, timeoutMs, opts.messageLines ?? 12) };
  }
  const usage = parsePtxas(text);
  await fs.writeFile(`${usageFile}.tmp-${unique}`, JSON.stringify(usage));
  await fs.rename(`${usageFile}.tmp-${unique}`, usageFile);
  if (!(await sealIntoCache(tmp, cubin))) return { ok: false, kind: 'compile_error', message: 'nvcc wrote an empty cubin' };
  return { ok: true, cubin, usage, cached: false };
}
