// Builds the native tools in native/ (tt_bench, tt_measure, tt_opencl_info) with the
// system C compiler ($CC or cc), into a cache directory keyed by a hash of their sources,
// the flags and the compiler, so that they are compiled once per change and never shipped
// prebuilt. A cached tool counts only while it matches its seal (file-cache.ts), and every
// compiler call has a time limit (COMPILER_TIMEOUT_MS). The OpenCL runtime
// (native/opencl/tt_opencl.c), the CUDA runtime and the CPU kernels' thread pool
// (native/pool/tt_pool.c) are compiled the same way into object files that candidates and
// models link (openclRuntimeObject, cudaRuntimeObject, poolObject).

import { spawnSync } from 'node:child_process';
import { createHash, randomBytes, type Hash } from 'node:crypto';
import { existsSync, promises as fs, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { packageRoot } from '../package-root';
import { ABI_VERSION } from '../runtime/abi';
import { UserError } from '../runtime/errors';
import { cachedFileOk, cachedFileOkSync, sealIntoCache, sealIntoCacheSync } from './file-cache';

type Execa = typeof import('execa');

/** The OpenCL runtime and its header, relative to native/. */
const OPENCL_RUNTIME = 'opencl/tt_opencl.c';
const OPENCL_HEADER = 'include/tt_opencl.h';
let execaModule: Promise<Execa> | undefined;

/** execa 9 is ESM-only. A static `import` compiles to require(), which Node 20.19+ accepts,
 *  but under tsx the require hook resolves execa's own import-only dependency
 *  (unicorn-magic) with CommonJS conditions and fails. A dynamic import() is kept as-is
 *  by tsc (module nodenext) and works under node, tsx and uvu -r tsx alike. */
export function loadExeca(): Promise<Execa> {
  return (execaModule ??= import('execa'));
}

/**
 * Memoises a promise-returning function by key; a promise that rejects is forgotten, so
 * the next call tries again.
 */
export function memoAsync<T>(): (key: string, make: () => Promise<T>) => Promise<T> {
  const cache = new Map<string, Promise<T>>();
  return (key, make) => {
    let p = cache.get(key);
    if (!p) {
      p = make();
      cache.set(key, p);
      p.catch(() => cache.delete(key));
    }
    return p;
  };
}

/** The first `n` lines of a tool's output (trimmed), and how many more there were. */
export function firstLines(text: string, n: number): string {
  const lines = text.trim().split('\n');
  return lines.slice(0, n).join('\n') + (lines.length > n ? `\n... (${lines.length - n} more lines)` : '');
}

/** Time limit of one compiler call (a kernel, a link, a native tool), unless the caller sets one. */
export const COMPILER_TIMEOUT_MS = 120_000;
/** Time limit of asking a compiler for its version. */
const PROBE_TIMEOUT_MS = 30_000;

/** Why a compiler call failed: its time limit, else the first lines of its message. */
export function compilerFailure(r: { timedOut?: boolean; stderr?: unknown; message?: string }, timeoutMs: number, lines: number): string {
  if (r.timedOut) return `the compiler did not finish within ${timeoutMs} ms`;
  return firstLines((typeof r.stderr === 'string' && r.stderr) || r.message || 'the compiler failed', lines);
}

export type NativeBinaryName = 'tt_bench' | 'tt_measure' | 'tt_opencl_info' | 'tt_remote';

interface BinarySpec {
  sources: string[]; // relative to native/
  openmp: boolean;
  /** Headers besides HEADERS that the sources include (part of the cache key). */
  headers?: string[];
}

const BINARIES: Record<NativeBinaryName, BinarySpec> = {
  tt_bench: { sources: ['bench/tt_bench.c', 'common/tt_common.c'], openmp: false },
  // Linked with OpenMP for omp_get_max_threads: the threads it reports are OMP_NUM_THREADS,
  // which the kernels' own pool (native/pool/tt_pool.c) follows; a build without OpenMP
  // reports 1.
  tt_measure: { sources: ['measure/tt_measure.c', 'common/tt_common.c'], openmp: true },
  // Needs CL/cl.h to build, never libOpenCL (the runtime opens it with dlopen).
  tt_opencl_info: { sources: ['opencl/tt_opencl_info.c', OPENCL_RUNTIME], openmp: false, headers: [OPENCL_HEADER] },
  // The device-side worker of remote measurement (engine/remote/), built per device
  // architecture with the target's cross compiler (buildNative's `cc`).
  tt_remote: { sources: ['remote/tt_remote.c', 'common/tt_common.c'], openmp: true },
};
const HEADERS = ['include/tensortune.h', 'common/tt_common.h', 'common/tt_fpmode.h'];

export const CFLAGS: readonly string[] = ['-O2', '-std=c11', '-Wall', '-Wextra'];
const LIBS = ['-ldl', '-lm'];

/** The package's native/ directory. */
export function nativeDir(): string {
  return path.join(packageRoot(), 'native');
}

/** Where generated C includes tensortune.h from. */
export function nativeIncludeDir(): string {
  return path.join(nativeDir(), 'include');
}

/** The root of tensortune's caches: $TENSORTUNE_CACHE_DIR, else node_modules/.cache/tensortune
 *  next to the nearest package.json above the working directory, else the temp directory. */
export function cacheRoot(): string {
  const env = process.env.TENSORTUNE_CACHE_DIR;
  if (env) return path.resolve(env);
  for (let dir = process.cwd(); ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return path.join(dir, 'node_modules', '.cache', 'tensortune');
    if (path.dirname(dir) === dir) return path.join(tmpdir(), 'tensortune-cache');
  }
}

export interface Compiler {
  /** The program and its leading arguments ($CC may be e.g. "ccache gcc"). */
  command: string;
  args: string[];
  /** `--version` and `-dumpmachine` output, part of every cache key. */
  identity: string;
}

const compilers = new Map<string, Compiler>();

/** Resolves $CC (or `cc`) and asks for its version; a missing compiler is a UserError. */
export async function findCompiler(cc: string = process.env.CC?.trim() || 'cc'): Promise<Compiler> {
  return findCompilerSync(cc);
}

/** findCompiler for synchronous callers (the target's hardware fingerprint), and its
 *  implementation: two short compiler calls, once per process and compiler. */
export function findCompilerSync(cc: string = process.env.CC?.trim() || 'cc'): Compiler {
  const known = compilers.get(cc);
  if (known) return known;
  const [command, ...args] = cc.split(/\s+/);
  // A target's cross compiler (`<triple>-gcc`) gets its own advice: $CC does not apply to it.
  const cross = /^([a-z0-9_]+(-[a-z0-9_]+)+)-gcc$/.exec(cc);
  const noCompiler = (why: string): UserError => new UserError(cross
    ? `no cross compiler for -mtriple=${cross[1]}: install ${cc} (Debian: apt-get install gcc-${cross[1]}) (tried '${cc}': ${why})`
    : `no C compiler: set $CC or install gcc (tried '${cc}': ${why})`);
  if (!command) throw noCompiler('empty');
  const run = (flag: string) => spawnSync(command, [...args, flag], { encoding: 'utf8', timeout: PROBE_TIMEOUT_MS });
  const version = run('--version');
  if (version.error || version.status !== 0) {
    const code = (version.error as NodeJS.ErrnoException | undefined)?.code;
    throw noCompiler(code === 'ENOENT' ? 'not found'
      : code === 'ETIMEDOUT' ? `it did not answer --version within ${PROBE_TIMEOUT_MS / 1000} s`
        : (version.stderr ?? '').trim().split('\n')[0] || 'it does not run');
  }
  // The identity is part of every cache key: one final newline stripped, as execa did.
  const strip = (text: string | null): string => (text ?? '').replace(/\r?\n$/, '');
  const compiler = { command, args, identity: `${strip(version.stdout)}\n${strip(run('-dumpmachine').stdout)}` };
  compilers.set(cc, compiler);
  return compiler;
}

function compilerError(what: string, compiler: Compiler, why: string): UserError {
  return new UserError(`${what} with '${[compiler.command, ...compiler.args].join(' ')}' failed:\n${why}`);
}

export interface BuildOptions {
  /** The compiler command; default $CC or cc. */
  cc?: string;
  /** The cache root; default cacheRoot(). */
  cacheDir?: string;
}

/** The hash of what a build depends on: sources and headers (relative to native/), flags,
 *  libraries, the ABI and the compiler. */
function buildHash(what: string, compiler: Compiler, flags: readonly string[], libs: readonly string[], files: readonly string[]): string {
  const root = nativeDir();
  const hash: Hash = createHash('sha256');
  hash.update(`tensortune-native abi=${ABI_VERSION} ${what}\0${compiler.command} ${compiler.args.join(' ')}\0`);
  hash.update(`${compiler.identity}\0${flags.join(' ')}\0${libs.join(' ')}\0`);
  for (const file of [...files].sort()) {
    hash.update(`${file}\0`);
    hash.update(readFileSync(path.join(root, file)));
    hash.update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

/** A file that the native cache holds, built on demand: what it is (for messages), and the
 *  compiler arguments that write it to `out`, one list per attempt (the next is tried when
 *  the compiler fails without running past its time limit). */
interface CacheBuild {
  compiler: Compiler;
  file: string;
  what: string;
  attempts: ((out: string) => string[])[];
}

/** How a native tool is built into the cache. */
function binaryBuild(name: NativeBinaryName, compiler: Compiler, cacheDir: string | undefined): CacheBuild {
  const spec = BINARIES[name];
  const root = nativeDir();
  const flags = [...CFLAGS, ...(spec.openmp ? ['-fopenmp'] : [])];
  const files = [...spec.sources, ...HEADERS, ...(spec.headers ?? [])];
  const dir = path.join(cacheDir ?? cacheRoot(), 'native', buildHash(name, compiler, flags, LIBS, files));
  const args = (extra: string[]) => (out: string): string[] => [
    ...compiler.args,
    ...CFLAGS,
    ...extra,
    `-I${path.join(root, 'include')}`,
    `-I${path.join(root, 'common')}`,
    ...spec.sources.map((s) => path.join(root, s)),
    '-o',
    out,
    ...LIBS,
  ];
  // A compiler without OpenMP gets a second try without it.
  const attempts = spec.openmp ? [args(['-fopenmp']), args([])] : [args([])];
  return { compiler, file: path.join(dir, name), what: `building the native tool ${name}`, attempts };
}

const tmpName = (file: string): string => `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;

/** The error of a build whose compiler failed, with advice when it missed the OpenCL headers. */
function buildFailed(b: CacheBuild, r: { timedOut?: boolean; stderr?: unknown; message?: string }): UserError {
  const hint = typeof r.stderr === 'string' && r.stderr.includes('CL/cl.h')
    ? '\n(the OpenCL headers are missing: install them, e.g. Debian\'s opencl-headers)'
    : '';
  return compilerError(b.what, b.compiler, compilerFailure(r, COMPILER_TIMEOUT_MS, 20) + hint);
}

const emptyFile = (b: CacheBuild): UserError => compilerError(b.what, b.compiler, 'the compiler wrote an empty file');

/** Builds `b.file` unless the cache holds it, matching its seal. It is written to a temp
 *  file, then renamed into place and sealed: concurrent builders race harmlessly. */
async function buildIntoCache(b: CacheBuild): Promise<string> {
  if (await cachedFileOk(b.file)) return b.file;
  await fs.mkdir(path.dirname(b.file), { recursive: true });
  const tmp = tmpName(b.file);
  const { execa } = await loadExeca();
  let result;
  for (const args of b.attempts) {
    result = await execa(b.compiler.command, args(tmp), { reject: false, timeout: COMPILER_TIMEOUT_MS });
    if (!result.failed || result.timedOut) break;
  }
  if (result?.failed) {
    await fs.rm(tmp, { force: true });
    throw buildFailed(b, result);
  }
  if (!(await sealIntoCache(tmp, b.file))) throw emptyFile(b);
  return b.file;
}

/** buildIntoCache with spawnSync: the same cache entry, for synchronous callers. */
function buildIntoCacheSync(b: CacheBuild): string {
  if (cachedFileOkSync(b.file)) return b.file;
  mkdirSync(path.dirname(b.file), { recursive: true });
  const tmp = tmpName(b.file);
  let failure: { timedOut: boolean; stderr: string; message?: string } | undefined;
  for (const args of b.attempts) {
    const r = spawnSync(b.compiler.command, args(tmp), { encoding: 'utf8', timeout: COMPILER_TIMEOUT_MS });
    const code = (r.error as NodeJS.ErrnoException | undefined)?.code;
    failure = r.error || r.status !== 0 ? { timedOut: code === 'ETIMEDOUT', stderr: r.stderr, message: r.error?.message } : undefined;
    if (!failure || failure.timedOut) break;
  }
  if (failure) {
    rmSync(tmp, { force: true });
    throw buildFailed(b, failure);
  }
  if (!sealIntoCacheSync(tmp, b.file)) throw emptyFile(b);
  return b.file;
}

/** Builds one native tool unless the cache already holds it; returns the binary's path. */
export async function buildNative(name: NativeBinaryName, opts: BuildOptions = {}): Promise<string> {
  return buildIntoCache(binaryBuild(name, await findCompiler(opts.cc), opts.cacheDir));
}

/** buildNative for synchronous callers (opencl.ts answers the target's synchronous hardware
 *  fingerprint): the same cache entry, built with spawnSync when missing. */
export function buildNativeSync(name: NativeBinaryName, opts: BuildOptions = {}): string {
  return buildIntoCacheSync(binaryBuild(name, findCompilerSync(opts.cc), opts.cacheDir));
}

const binaries = memoAsync<string>();

/** The path of a native tool, built on first use (once per process and per source change). */
export function nativeBinary(name: NativeBinaryName): Promise<string> {
  return binaries(`${name}\0${cacheRoot()}\0${process.env.CC ?? ''}`, () => buildNative(name));
}

export interface SharedLibraryOptions {
  cc?: string;
  /** Added after the defaults (CFLAGS, -shared -fPIC, -I native/include). */
  flags?: string[];
  /** Time limit of the compiler (default COMPILER_TIMEOUT_MS). */
  timeoutMs?: number;
}

/** Compiles C sources into a shared library at `output` (written atomically). */
export async function compileSharedLibrary(
  sources: string[],
  output: string,
  opts: SharedLibraryOptions = {},
): Promise<void> {
  const compiler = await findCompiler(opts.cc);
  const { execa } = await loadExeca();
  const tmp = tmpName(output);
  const result = await execa(
    compiler.command,
    [
      ...compiler.args,
      ...CFLAGS,
      '-shared',
      '-fPIC',
      `-I${nativeIncludeDir()}`,
      ...(opts.flags ?? []),
      ...sources,
      '-o',
      tmp,
    ],
    { reject: false, timeout: opts.timeoutMs ?? COMPILER_TIMEOUT_MS },
  );
  if (result.failed) {
    await fs.rm(tmp, { force: true });
    const what = `compiling ${sources.map((s) => path.basename(s)).join(', ')}`;
    throw compilerError(what, compiler, compilerFailure(result, opts.timeoutMs ?? COMPILER_TIMEOUT_MS, 20));
  }
  await fs.rename(tmp, output);
}

/** Absolute path of the OpenCL runtime's source (native/opencl/tt_opencl.c). */
export function openclRuntimeSource(): string {
  return path.join(nativeDir(), OPENCL_RUNTIME);
}

/** What a library that contains the OpenCL runtime links besides it (dlopen, dlsym). */
export const OPENCL_RUNTIME_LIBS: readonly string[] = ['-ldl'];

/** The flags of the host code of an OpenCL candidate or model (the kernels are built by the
 *  OpenCL driver at run time). */
export const OPENCL_HOST_CFLAGS: readonly string[] = ['-O1', '-std=gnu11', '-fPIC'];

/** The flags of the runtime's object file: position-independent, and hidden, so that each
 *  library keeps its own copy's tt_cl_* symbols out of its exports. */
const OPENCL_OBJECT_FLAGS: readonly string[] = [...CFLAGS, '-fPIC', '-fvisibility=hidden', '-c'];

const runtimeObjects = memoAsync<string>();

/** One source of native/ (with the headers it includes) compiled by `compiler` into the
 *  object file `name` in the native cache, once per source, flag and compiler change;
 *  memoised per process, cache and compiler (its sources are hashed once). */
function cachedObject(
  name: string, source: string, headers: readonly string[], flags: readonly string[], what: string, compiler: Compiler, cacheDir: string,
): Promise<string> {
  return runtimeObjects(`${name}\0${cacheDir}\0${compiler.command} ${compiler.args.join(' ')}\0${compiler.identity}`, () => {
    const hash = buildHash(name, compiler, flags, [], [source, ...headers]);
    return buildIntoCache({
      compiler,
      file: path.join(cacheDir, 'native', hash, name),
      what: `building ${what} (native/${source})`,
      attempts: [(out) => [...compiler.args, ...flags, `-I${nativeIncludeDir()}`, path.join(nativeDir(), source), '-o', out]],
    });
  });
}

/**
 * The OpenCL runtime compiled by `compiler` (the host's, or a target's cross compiler) into
 * an object file, once per source, flag and compiler change, in the native cache. An OpenCL
 * candidate or model links it: `cc -shared -fPIC lib.c <object> -ldl -I<nativeIncludeDir()>`.
 * Needs the OpenCL headers (CL/cl.h), never an OpenCL library. Memoised per process, cache
 * and compiler (its sources are hashed once).
 */
export function openclRuntimeObject(compiler: Compiler, opts: { cacheDir?: string } = {}): Promise<string> {
  return cachedObject('tt_opencl.o', OPENCL_RUNTIME, [OPENCL_HEADER], OPENCL_OBJECT_FLAGS, 'the OpenCL runtime', compiler, opts.cacheDir ?? cacheRoot());
}

/** tt_cl_describe as a library of its own (native/opencl/tt_opencl_describe.c), relative to native/. */
const OPENCL_DESCRIBE = 'opencl/tt_opencl_describe.c';

/**
 * The OpenCL describe library built by `compiler` (a device's cross compiler, or this
 * machine's) and linked with openclRuntimeObject: what a remote device loads to list its
 * OpenCL platforms and devices (engine/remote/opencl.ts). In the native cache, like the rest.
 */
export async function openclDescribeLibraryFile(compiler: Compiler, opts: { cacheDir?: string } = {}): Promise<string> {
  const cacheDir = opts.cacheDir ?? cacheRoot();
  const runtime = await openclRuntimeObject(compiler, opts);
  const flags = [...OPENCL_HOST_CFLAGS, '-shared'];
  const hash = buildHash('tt_opencl_describe.so', compiler, flags, OPENCL_RUNTIME_LIBS, [OPENCL_DESCRIBE, OPENCL_RUNTIME, OPENCL_HEADER]);
  return buildIntoCache({
    compiler,
    file: path.join(cacheDir, 'native', hash, 'tt_opencl_describe.so'),
    what: `building the OpenCL describe library (native/${OPENCL_DESCRIBE})`,
    attempts: [(out) => [...compiler.args, ...flags, `-I${nativeIncludeDir()}`, path.join(nativeDir(), OPENCL_DESCRIBE), runtime, '-o', out, ...OPENCL_RUNTIME_LIBS]],
  });
}

/** The kernels' thread pool and the declarations kernels see, relative to native/. */
const POOL_SOURCE = 'pool/tt_pool.c';
const POOL_HEADERS = ['include/tt_pool.h', 'common/tt_fpmode.h'];

/** Absolute path of the kernels' thread pool (native/pool/tt_pool.c), for test programs that
 *  compile it with a kernel in one command. */
export function poolSource(): string {
  return path.join(nativeDir(), POOL_SOURCE);
}

/** The pool object's flags: position-independent and thread-aware; its symbols are hidden
 *  (tt_pool.h says so too), so each library that links it keeps its own pool. */
const POOL_OBJECT_FLAGS: readonly string[] = [...CFLAGS, '-fPIC', '-pthread', '-fvisibility=hidden', '-c'];

/**
 * The kernels' thread pool compiled by `compiler` (the host's, or a target's cross compiler)
 * into an object file, once per source, flag and compiler change, in the native cache.
 * Every CPU candidate library and model.so links it: the kernels hold only its declarations
 * (the renderer's prelude), so a candidate's compile no longer compiles the pool too (that
 * cost 60 ms of a 0.24 s compile on an AVX-512 Xeon, 30 to 40 ms of 0.07 s on a Zen 5).
 */
export function poolObject(compiler: Compiler, opts: { cacheDir?: string } = {}): Promise<string> {
  return cachedObject('tt_pool.o', POOL_SOURCE, POOL_HEADERS, POOL_OBJECT_FLAGS, 'the kernels\' thread pool', compiler, opts.cacheDir ?? cacheRoot());
}

/** The CUDA runtime and its header, relative to native/. */
const CUDA_RUNTIME = 'cuda/tt_cuda.c';
const CUDA_HEADER = 'include/tt_cuda.h';

/** What a library that contains the CUDA runtime links besides it (dlopen, dlsym). */
export const CUDA_RUNTIME_LIBS: readonly string[] = ['-ldl'];

/** The flags of the host code of a CUDA candidate or model (the kernels are cubins nvcc built). */
export const CUDA_HOST_CFLAGS: readonly string[] = OPENCL_HOST_CFLAGS;

/**
 * The CUDA runtime (native/cuda/tt_cuda.c) compiled by `compiler` into an object file, as
 * openclRuntimeObject does for OpenCL's, with the same flags. Needs no CUDA header or
 * library: the runtime declares the driver API it uses and opens libcuda with dlopen.
 */
export function cudaRuntimeObject(compiler: Compiler, opts: { cacheDir?: string } = {}): Promise<string> {
  return cachedObject('tt_cuda.o', CUDA_RUNTIME, [CUDA_HEADER], OPENCL_OBJECT_FLAGS, 'the CUDA runtime', compiler, opts.cacheDir ?? cacheRoot());
}
