// OpenCL on a device reached through a runner: what the device's OpenCL driver offers,
// asked through tt_remote's info request. tt_remote links nothing of OpenCL; the request
// carries a small "describe library" (native/opencl/tt_opencl_describe.c, the OpenCL
// runtime's own listing, tt_cl_describe) built with the device's compiler and linked with
// the runtime object that OpenCL candidates link, so the device lists its platforms and
// devices as `tensortune fingerprint --target opencl` lists this machine's.

import { promises as fs } from 'node:fs';
import { findCompiler, memoAsync, openclDescribeLibraryFile } from '../native/build';
import { selectedOpenclDevice, type Description, type OpenclAnswer } from '../native/opencl';
import type { Target } from '../target';

/** The exported function of the describe library (tt_remote's info `symbol`). */
export const OPENCL_DESCRIBE_SYMBOL = 'tt_opencl_describe';

const builds = memoAsync<Buffer>();

/** The describe library for the target's host (its -mtriple cross compiler, else this machine's), as bytes. */
export function openclDescribeLibrary(target: Target): Promise<Buffer> {
  const cc = target.ccPrefix ? `${target.ccPrefix}gcc` : undefined;
  return builds(cc ?? '', async () => fs.readFile(await openclDescribeLibraryFile(await findCompiler(cc))));
}

/** The OpenCL device the device's runtime selects (what its candidates open), or why there is none. */
export function describedOpenclDevice(described: unknown, describeError: string | undefined): OpenclAnswer {
  if (described === undefined) return { error: describeError || 'the device did not describe its OpenCL platforms' };
  const d = described as Description;
  if (!d || !Array.isArray(d.platforms)) return { error: `the device's OpenCL description is not tt_cl_describe's: ${JSON.stringify(described).slice(0, 200)}` };
  return selectedOpenclDevice(d, "the device's OpenCL runtime");
}
