// Builds the native tools in native/ (tt_bench, tt_measure, tt_opencl_info) with the
// system C compiler ($CC or cc), into a cache directory keyed by a hash of their sources,
// the flags and the compiler, so that they are compiled once per change and never shipped
// prebuilt. A cached tool counts only while it matches its seal (file-cache.ts), and every
// compiler call has a time limit (COMPILER_TIMEOUT_MS). The OpenCL runtime
// (native/opencl/tt_opencl.c) is compiled the same way into an object file that OpenCL
// candidates and models link (openclRuntimeObject).

import { spawnSync } from 'node:child_process';
import { createHash, randomBytes, type Hash } from 'node:crypto';
import { existsSync, promises as fs, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { packageRoot } from '../package-root';
import { ABI_VERSION } from '../runtime/abi';
import { UserError } from '../runtime/errors';
import { cachedFileOk, sealIntoCache } from './file-cache';

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

export type NativeBinaryName = 'tt_bench' | 'tt_measure' | 'tt_opencl_info';

interface BinarySpec {
  sources: string[]; // relative to native/
  openmp: boolean;
  /** Headers besides HEADERS that the sources include (part of the cache key). */
  headers?: string[];
}

const BINARIES: Record<NativeBinaryName, BinarySpec> = {
  tt_bench: { sources: ['bench/tt_bench.c', 'common/tt_common.c'], openmp: false },
  // Linked with OpenMP so that libgomp and its thread pool stay loaded while kernel
  // libraries come and go; the worker falls back to a build without it.
  tt_measure: { sources: ['measure/tt_measure.c', 'common/tt_common.c'], openmp: true },
  // Needs CL/cl.h to build, never libOpenCL (the runtime opens it with dlopen).
  tt_opencl_info: { sources: ['opencl/tt_opencl_info.c', OPENCL_RUNTIME], openmp: false, headers: [OPENCL_HEADER] },
};
const HEADERS = ['include/tensortune.h', 'common/tt_common.h'];

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

const compilers = memoAsync<Compiler>();

/** Resolves $CC (or `cc`) and asks for its version; a missing compiler is a UserError. */
export function findCompiler(cc: string = process.env.CC?.trim() || 'cc'): Promise<Compiler> {
  return compilers(cc, () => probeCompiler(cc));
}

/** A compiler's command line split, and the error for one that does not run. */
function compilerCommand(cc: string): { command: string | undefined; args: string[]; noCompiler: (why: string) => UserError } {
  const [command, ...args] = cc.split(/\s+/);
  // A target's cross compiler (`<triple>-gcc`) gets its own advice: $CC does not apply to it.
  const cross = /^([a-z0-9_]+(-[a-z0-9_]+)+)-gcc$/.exec(cc);
  const noCompiler = (why: string): UserError => new UserError(cross
    ? `no cross compiler for -mtriple=${cross[1]}: install ${cc} (Debian: apt-get install gcc-${cross[1]}) (tried '${cc}': ${why})`
    : `no C compiler: set $CC or install gcc (tried '${cc}': ${why})`);
  return { command, args, noCompiler };
}

async function probeCompiler(cc: string): Promise<Compiler> {
  const { execa } = await loadExeca();
  const { command, args, noCompiler } = compilerCommand(cc);
  if (!command) throw noCompiler('empty');
  const version = await execa(command, [...args, '--version'], { reject: false, timeout: PROBE_TIMEOUT_MS });
  if (version.failed) {
    const code = (version as { code?: string }).code;
    throw noCompiler(code === 'ENOENT' ? 'not found'
      : version.timedOut ? `it did not answer --version within ${PROBE_TIMEOUT_MS / 1000} s`
        : version.stderr.trim().split('\n')[0] || 'it does not run');
  }
  const machine = await execa(command, [...args, '-dumpmachine'], { reject: false, timeout: PROBE_TIMEOUT_MS });
  return { command, args, identity: `${version.stdout}\n${machine.stdout}` };
}

const syncCompilers = new Map<string, Compiler>();

/** findCompiler for synchronous callers (the target's hardware fingerprint): the same
 *  probe with spawnSync, and the same identity (execa strips one final newline, as here). */
export function findCompilerSync(cc: string = process.env.CC?.trim() || 'cc'): Compiler {
  const known = syncCompilers.get(cc);
  if (known) return known;
  const { command, args, noCompiler } = compilerCommand(cc);
  if (!command) throw noCompiler('empty');
  const run = (flag: string) => spawnSync(command, [...args, flag], { encoding: 'utf8', timeout: PROBE_TIMEOUT_MS });
  const version = run('--version');
  if (version.error || version.status !== 0) {
    const code = (version.error as NodeJS.ErrnoException | undefined)?.code;
    throw noCompiler(code === 'ENOENT' ? 'not found'
      : code === 'ETIMEDOUT' ? `it did not answer --version within ${PROBE_TIMEOUT_MS / 1000} s`
        : (version.stderr ?? '').trim().split('\n')[0] || 'it does not run');
  }
  const strip = (text: string | null): string => (text ?? '').replace(/\r?\n$/, '');
  const compiler = { command, args, identity: `${strip(version.stdout)}\n${strip(run('-dumpmachine').stdout)}` };
  syncCompilers.set(cc, compiler);
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

/** Where a native tool is cached, and the compiler arguments that build it into `out`. */
function binaryPlan(name: NativeBinaryName, compiler: Compiler, cacheDir: string | undefined) {
  const spec = BINARIES[name];
  const root = nativeDir();
  const flags = [...CFLAGS, ...(spec.openmp ? ['-fopenmp'] : [])];
  const files = [...spec.sources, ...HEADERS, ...(spec.headers ?? [])];
  const dir = path.join(cacheDir ?? cacheRoot(), 'native', buildHash(name, compiler, flags, LIBS, files));
  const args = (extra: string[], out: string): string[] => [
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
  return { spec, binary: path.join(dir, name), dir, args };
}

const tmpName = (file: string): string => `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;

/** Builds one native tool unless the cache already holds it; returns the binary's path. */
export async function buildNative(name: NativeBinaryName, opts: BuildOptions = {}): Promise<string> {
  const compiler = await findCompiler(opts.cc);
  const { spec, binary, dir, args } = binaryPlan(name, compiler, opts.cacheDir);
  if (await cachedFileOk(binary)) return binary;

  await fs.mkdir(dir, { recursive: true });
  const tmp = tmpName(binary);
  const { execa } = await loadExeca();
  const compile = (extra: string[]) => execa(compiler.command, args(extra, tmp), { reject: false, timeout: COMPILER_TIMEOUT_MS });
  let result = await compile(spec.openmp ? ['-fopenmp'] : []);
  if (result.failed && spec.openmp && !result.timedOut) result = await compile([]); // a compiler without OpenMP
  const what = `building the native tool ${name}`;
  if (result.failed) {
    await fs.rm(tmp, { force: true });
    throw compilerError(what, compiler, compilerFailure(result, COMPILER_TIMEOUT_MS, 20) + missingHeaderHint(result.stderr));
  }
  // Renamed into place, then sealed: concurrent builders race harmlessly.
  if (!(await sealIntoCache(tmp, binary))) throw compilerError(what, compiler, 'the compiler wrote an empty file');
  return binary;
}

/** Advice when the compiler misses the OpenCL headers. */
function missingHeaderHint(stderr: unknown): string {
  return typeof stderr === 'string' && stderr.includes('CL/cl.h')
    ? '\n(the OpenCL headers are missing: install them, e.g. Debian\'s opencl-headers)'
    : '';
}

// Synchronous twins of file-cache.ts's cachedFileOk / sealIntoCache (same seal format:
// `<file>.seal` holds `<size> <sha256>`), for buildNativeSync.
function fingerprintSync(file: string): string | undefined {
  try {
    const bytes = readFileSync(file);
    return bytes.length > 0 ? `${bytes.length} ${createHash('sha256').update(bytes).digest('hex')}` : undefined;
  } catch {
    return undefined;
  }
}

function cachedFileOkSync(file: string): boolean {
  let sealed: string | undefined;
  try {
    sealed = readFileSync(`${file}.seal`, 'utf8').trim();
  } catch {
    return false;
  }
  return sealed === fingerprintSync(file);
}

function sealIntoCacheSync(tmp: string, file: string): boolean {
  const actual = fingerprintSync(tmp);
  if (!actual) {
    rmSync(tmp, { force: true });
    return false;
  }
  const sealTmp = tmpName(`${file}.seal`);
  writeFileSync(sealTmp, `${actual}\n`);
  renameSync(tmp, file);
  renameSync(sealTmp, `${file}.seal`);
  return true;
}

/**
 * buildNative for synchronous callers (opencl.ts answers the target's synchronous hardware
 * fingerprint): the same cache entry, built with spawnSync when missing. No OpenMP
 * fallback is needed: only tools without OpenMP are built this way.
 */
export function buildNativeSync(name: NativeBinaryName, opts: BuildOptions = {}): string {
  const compiler = findCompilerSync(opts.cc);
  const { spec, binary, dir, args } = binaryPlan(name, compiler, opts.cacheDir);
  if (spec.openmp) throw new Error(`buildNativeSync: ${name} needs OpenMP; use buildNative`);
  if (cachedFileOkSync(binary)) return binary;
  mkdirSync(dir, { recursive: true });
  const tmp = tmpName(binary);
  const result = spawnSync(compiler.command, args([], tmp), { encoding: 'utf8', timeout: COMPILER_TIMEOUT_MS });
  const what = `building the native tool ${name}`;
  if (result.error || result.status !== 0) {
    rmSync(tmp, { force: true });
    const timedOut = (result.error as NodeJS.ErrnoException | undefined)?.code === 'ETIMEDOUT';
    const why = compilerFailure({ timedOut, stderr: result.stderr, message: result.error?.message }, COMPILER_TIMEOUT_MS, 20);
    throw compilerError(what, compiler, why + missingHeaderHint(result.stderr));
  }
  if (!sealIntoCacheSync(tmp, binary)) throw compilerError(what, compiler, 'the compiler wrote an empty file');
  return binary;
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
  const tmp = `${output}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
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

/** The flags of the runtime's object file: position-independent, and hidden, so that each
 *  library keeps its own copy's tt_cl_* symbols out of its exports. */
const OPENCL_OBJECT_FLAGS: readonly string[] = [...CFLAGS, '-fPIC', '-fvisibility=hidden', '-c'];

const runtimeObjects = memoAsync<string>();

/**
 * The OpenCL runtime compiled by `compiler` (the host's, or a target's cross compiler) into
 * an object file, once per source, flag and compiler change, in the native cache. An OpenCL
 * candidate or model links it: `cc -shared -fPIC lib.c <object> -ldl -I<nativeIncludeDir()>`.
 * Needs the OpenCL headers (CL/cl.h), never an OpenCL library.
 */
export function openclRuntimeObject(compiler: Compiler, opts: { cacheDir?: string } = {}): Promise<string> {
  const dir = path.join(opts.cacheDir ?? cacheRoot(), 'native',
    buildHash('tt_opencl.o', compiler, OPENCL_OBJECT_FLAGS, [], [OPENCL_RUNTIME, OPENCL_HEADER]));
  const object = path.join(dir, 'tt_opencl.o');
  return runtimeObjects(object, async () => {
    if (await cachedFileOk(object)) return object;
    await fs.mkdir(dir, { recursive: true });
    const tmp = tmpName(object);
    const { execa } = await loadExeca();
    const result = await execa(
      compiler.command,
      [...compiler.args, ...OPENCL_OBJECT_FLAGS, `-I${nativeIncludeDir()}`, openclRuntimeSource(), '-o', tmp],
      { reject: false, timeout: COMPILER_TIMEOUT_MS },
    );
    const what = 'building the OpenCL runtime (native/opencl/tt_opencl.c)';
    if (result.failed) {
      await fs.rm(tmp, { force: true });
      throw compilerError(what, compiler, compilerFailure(result, COMPILER_TIMEOUT_MS, 20) + missingHeaderHint(result.stderr));
    }
    if (!(await sealIntoCache(tmp, object))) throw compilerError(what, compiler, 'the compiler wrote an empty file');
    return object;
  });
}
