// OpenCL on a device reached through a runner: what the device's OpenCL driver offers,
// asked through tt_remote's info request. tt_remote links nothing of OpenCL; the request
// carries a small "describe library" (native/opencl/tt_opencl_describe.c, the OpenCL
// runtime's own listing, tt_cl_describe) built with the device's compiler and linked with
// the runtime object that OpenCL candidates link, so the device lists its platforms and
// devices as `tensortune fingerprint --target opencl` lists this machine's.

import { createHash, randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { cacheRoot, compilerFailure, findCompiler, loadExeca, memoAsync, nativeDir, nativeIncludeDir, OPENCL_HOST_CFLAGS, OPENCL_RUNTIME_LIBS, openclRuntimeObject } from '../native/build';
import { cachedFileOk, sealIntoCache } from '../native/file-cache';
import { selectedOpenclDevice, type Description, type OpenclAnswer } from '../native/opencl';
import { UserError } from '../errors';
import type { Target } from '../target';

/** The exported function of the describe library (tt_remote's info `symbol`). */
export const OPENCL_DESCRIBE_SYMBOL = 'tt_opencl_describe';
const SOURCE = 'opencl/tt_opencl_describe.c';

const builds = memoAsync<Buffer>();

/** The describe library for the target's host (its -mtriple cross compiler, else this machine's), as bytes. */
export function openclDescribeLibrary(target: Target): Promise<Buffer> {
  const cc = target.ccPrefix ? `${target.ccPrefix}gcc` : undefined;
  return builds(cc ?? '', async () => {
    const compiler = await findCompiler(cc);
    const runtime = await openclRuntimeObject(compiler);
    const source = path.join(nativeDir(), SOURCE);
    const flags = [...OPENCL_HOST_CFLAGS, '-shared', `-I${nativeIncludeDir()}`];
    const hash = createHash('sha256').update(JSON.stringify([await fs.readFile(source, 'utf8'), flags, runtime, compiler.identity])).digest('hex').slice(0, 24);
    const lib = path.join(cacheRoot(), 'native', hash, 'tt_opencl_describe.so');
    if (!(await cachedFileOk(lib))) {
      await fs.mkdir(path.dirname(lib), { recursive: true });
      const tmp = `${lib}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
      const { execa } = await loadExeca();
      const r = await execa(compiler.command, [...compiler.args, ...flags, source, runtime, '-o', tmp, ...OPENCL_RUNTIME_LIBS], { reject: false, timeout: 120_000 });
      if (r.failed) {
        await fs.rm(tmp, { force: true });
        throw new UserError(`building the OpenCL describe library (native/${SOURCE}) failed: ${compilerFailure(r, 120_000, 12)}`);
      }
      if (!(await sealIntoCache(tmp, lib))) throw new UserError(`building the OpenCL describe library wrote an empty file`);
    }
    return fs.readFile(lib);
  });
}

/** The OpenCL device the device's runtime selects (what its candidates open), or why there is none. */
export function describedOpenclDevice(described: unknown, describeError: string | undefined): OpenclAnswer {
  if (described === undefined) return { error: describeError || 'the device did not describe its OpenCL platforms' };
  const d = described as Description;
  if (!d || !Array.isArray(d.platforms)) return { error: `the device's OpenCL description is not tt_cl_describe's: ${JSON.stringify(described).slice(0, 200)}` };
  return selectedOpenclDevice(d, "the device's OpenCL runtime");
}
