// Builds the native tools in native/ (tt_bench, tt_measure) with the system C compiler
// ($CC or cc), into a cache directory keyed by a hash of their sources, the flags and the
// compiler, so that they are compiled once per change and never shipped prebuilt. A cached
// tool counts only while it matches its seal (file-cache.ts), and every compiler call has a
// time limit (COMPILER_TIMEOUT_MS).

import { createHash } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { packageRoot } from '../package-root';
import { ABI_VERSION } from '../runtime/abi';
import { UserError } from '../runtime/errors';
import { cachedFileOk, sealIntoCache } from './file-cache';

type Execa = typeof import('execa');
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

export type NativeBinaryName = 'tt_bench' | 'tt_measure';

interface BinarySpec {
  sources: string[]; // relative to native/
  openmp: boolean;
}

const BINARIES: Record<NativeBinaryName, BinarySpec> = {
  tt_bench: { sources: ['bench/tt_bench.c', 'common/tt_common.c'], openmp: false },
  // Linked with OpenMP so that libgomp and its thread pool stay loaded while kernel
  // libraries come and go; the worker falls back to a build without it.
  tt_measure: { sources: ['measure/tt_measure.c', 'common/tt_common.c'], openmp: true },
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

async function probeCompiler(cc: string): Promise<Compiler> {
  const { execa } = await loadExeca();
  const [command, ...args] = cc.split(/\s+/);
  // A target's cross compiler (`<triple>-gcc`) gets its own advice: $CC does not apply to it.
  const cross = /^([a-z0-9_]+(-[a-z0-9_]+)+)-gcc$/.exec(cc);
  const noCompiler = (why: string): UserError => new UserError(cross
    ? `no cross compiler for -mtriple=${cross[1]}: install ${cc} (Debian: apt-get install gcc-${cross[1]}) (tried '${cc}': ${why})`
    : `no C compiler: set $CC or install gcc (tried '${cc}': ${why})`);
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

function compilerError(what: string, compiler: Compiler, why: string): UserError {
  return new UserError(`${what} with '${[compiler.command, ...compiler.args].join(' ')}' failed:\n${why}`);
}

export interface BuildOptions {
  /** The compiler command; default $CC or cc. */
  cc?: string;
  /** The cache root; default cacheRoot(). */
  cacheDir?: string;
}

/** Builds one native tool unless the cache already holds it; returns the binary's path. */
export async function buildNative(name: NativeBinaryName, opts: BuildOptions = {}): Promise<string> {
  const spec = BINARIES[name];
  const compiler = await findCompiler(opts.cc);
  const root = nativeDir();
  const flags = [...CFLAGS, ...(spec.openmp ? ['-fopenmp'] : [])];
  const hash = createHash('sha256');
  hash.update(`tensortune-native abi=${ABI_VERSION} ${name}\0${compiler.command} ${compiler.args.join(' ')}\0`);
  hash.update(`${compiler.identity}\0${flags.join(' ')}\0${LIBS.join(' ')}\0`);
  for (const file of [...spec.sources, ...HEADERS].sort()) {
    hash.update(`${file}\0`);
    hash.update(await fs.readFile(path.join(root, file)));
    hash.update('\0');
  }
  const dir = path.join(opts.cacheDir ?? cacheRoot(), 'native', hash.digest('hex').slice(0, 16));
  const binary = path.join(dir, name);
  if (await cachedFileOk(binary)) return binary;

  await fs.mkdir(dir, { recursive: true });
  const tmp = `${binary}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  const { execa } = await loadExeca();
  const compile = (extra: string[]) =>
    execa(
      compiler.command,
      [
        ...compiler.args,
        ...CFLAGS,
        ...extra,
        `-I${path.join(root, 'include')}`,
        `-I${path.join(root, 'common')}`,
        ...spec.sources.map((s) => path.join(root, s)),
        '-o',
        tmp,
        ...LIBS,
      ],
      { reject: false, timeout: COMPILER_TIMEOUT_MS },
    );
  let result = await compile(spec.openmp ? ['-fopenmp'] : []);
  if (result.failed && spec.openmp && !result.timedOut) result = await compile([]); // a compiler without OpenMP
  const what = `building the native tool ${name}`;
  if (result.failed) {
    await fs.rm(tmp, { force: true });
    throw compilerError(what, compiler, compilerFailure(result, COMPILER_TIMEOUT_MS, 20));
  }
  // Renamed into place, then sealed: concurrent builders race harmlessly.
  if (!(await sealIntoCache(tmp, binary))) throw compilerError(what, compiler, 'the compiler wrote an empty file');
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
