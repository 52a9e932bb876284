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
import type { OpenclDevice } from '../native/opencl';
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

/** tt_cl_describe's JSON (native/README.md, "tt_opencl_info"). */
interface Description {
  platforms?: { name: string; vendor: string; version: string; devices: { name: string; vendor: string; version: string; driver_version: string; type: string;
    max_compute_units: number; max_work_group_size: number; max_work_item_sizes: number[]; local_mem_size: number; global_mem_size: number;
    preferred_vector_width_float: number }[] }[];
  selected?: { platform: number; device: number } | null;
  selection_error?: string;
}

/** The OpenCL device the device's runtime selects (what its candidates open), or why there is none. */
export function describedOpenclDevice(described: unknown, describeError: string | undefined): { device: OpenclDevice } | { error: string } {
  if (described === undefined) return { error: describeError || 'the device did not describe its OpenCL platforms' };
  const d = described as Description;
  if (!d || !Array.isArray(d.platforms)) return { error: `the device's OpenCL description is not tt_cl_describe's: ${JSON.stringify(described).slice(0, 200)}` };
  if (!d.selected) return { error: d.selection_error ?? 'no OpenCL device selected' };
  const p = d.platforms[d.selected.platform];
  const v = p?.devices?.[d.selected.device];
  if (!p || !v) return { error: `the device's OpenCL runtime selected a device it did not list: ${JSON.stringify(d.selected)}` };
  return {
    device: {
      platform: p.name, platformVendor: p.vendor, platformVersion: p.version, device: v.name, deviceVendor: v.vendor,
      deviceVersion: v.version, driverVersion: v.driver_version, type: v.type, computeUnits: v.max_compute_units,
      maxWorkGroupSize: v.max_work_group_size, maxWorkItemSizes: v.max_work_item_sizes, localMemSize: v.local_mem_size,
      globalMemSize: v.global_mem_size, preferredVectorWidthFloat: v.preferred_vector_width_float,
    },
  };
}
