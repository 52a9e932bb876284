// The OpenCL device this machine offers, as native/opencl/tt_opencl_info describes it:
// the device that TT_OPENCL_PLATFORM / TT_OPENCL_DEVICE select (native/include/tt_opencl.h),
// which is also the one every OpenCL candidate and model opens at run time.
//
// Synchronous on purpose: the target's hardware fingerprint is synchronous. The tool is
// built with spawnSync when the cache lacks it (build.ts, buildNativeSync) and run with
// spawnSync; the answer is memoised per process and per selection.

import { spawnSync } from 'node:child_process';
import { buildNativeSync } from './build';

export interface OpenclDevice {
  platform: string;
  platformVendor: string;
  platformVersion: string;
  device: string;
  deviceVendor: string;
  deviceVersion: string;
  driverVersion: string;
  /** 'cpu', 'gpu', 'accelerator' or 'other'. */
  type: string;
  computeUnits: number;
  maxWorkGroupSize: number;
  maxWorkItemSizes: number[];
  /** Bytes. */
  localMemSize: number;
  globalMemSize: number;
  preferredVectorWidthFloat: number;
}

/** tt_opencl_info's JSON (native/README.md, "tt_opencl_info"); tt_remote's info returns the same. */
export interface Description {
  platforms: {
    name: string;
    vendor: string;
    version: string;
    devices: {
      name: string;
      vendor: string;
      version: string;
      driver_version: string;
      type: string;
      max_compute_units: number;
      max_work_group_size: number;
      max_work_item_sizes: number[];
      local_mem_size: number;
      global_mem_size: number;
      max_mem_alloc_size: number;
      preferred_vector_width_float: number;
    }[];
  }[];
  selected: { platform: number; device: number } | null;
  selection_error?: string;
}

/** Time limit of one tt_opencl_info run (a driver's first initialisation can be slow). */
const INFO_TIMEOUT_MS = 60_000;

export type OpenclAnswer = { device: OpenclDevice } | { error: string };

const answers = new Map<string, OpenclAnswer>();

/** The selected OpenCL device, or why there is none (no compiler or OpenCL headers to build
 *  the tool, no ICD loader, no platform, no device, a selector that matches nothing). */
export function openclDeviceSync(): OpenclAnswer {
  const key = `${process.env.TT_OPENCL_PLATFORM ?? ''}\0${process.env.TT_OPENCL_DEVICE ?? ''}\0${process.env.TT_OPENCL_LIBRARY ?? ''}`;
  let answer = answers.get(key);
  if (!answer) {
    answer = describe();
    answers.set(key, answer);
  }
  return answer;
}

/** openclAvailable's answer where the OpenCL headers are missing (nothing OpenCL builds here). */
export const OPENCL_HEADERS_MISSING = "the OpenCL headers (CL/cl.h) are missing: install them, e.g. Debian's opencl-headers";

/** undefined when an OpenCL device is usable here, else the reason (for tests' skip()). */
export function openclAvailable(): string | undefined {
  const answer = openclDeviceSync();
  return 'error' in answer ? answer.error : undefined;
}

function describe(): OpenclAnswer {
  let binary: string;
  try {
    binary = buildNativeSync('tt_opencl_info');
  } catch (e) {
    // One line: the answer is shown as a reason (a skipped test, the fingerprint's note).
    const message = (e as Error).message;
    if (message.includes('CL/cl.h')) return { error: OPENCL_HEADERS_MISSING };
    const line = message.split('\n').map((l) => l.trim()).filter(Boolean).join('; ');
    return { error: `cannot build tt_opencl_info: ${line.length > 400 ? `${line.slice(0, 400)}...` : line}` };
  }
  const r = spawnSync(binary, [], { encoding: 'utf8', timeout: INFO_TIMEOUT_MS });
  if (r.error) return { error: `tt_opencl_info did not run: ${r.error.message}` };
  if (r.status !== 0) {
    const why = (r.stderr ?? '').trim().replace(/^tt_opencl_info: /, '');
    return { error: why || `tt_opencl_info ${r.signal ? `was killed by ${r.signal}` : `exited with code ${r.status}`}` };
  }
  let d: Description;
  try {
    d = JSON.parse(r.stdout) as Description;
  } catch {
    return { error: `tt_opencl_info printed something other than JSON: ${r.stdout.slice(0, 200)}` };
  }
  return selectedOpenclDevice(d, 'tt_opencl_info');
}

/** The device a tt_cl_describe description selects (tt_opencl_info's, or a remote device's
 *  through tt_remote's info), or why there is none; `who` names the describer in messages. */
export function selectedOpenclDevice(d: Description, who: string): OpenclAnswer {
  if (!d.selected) return { error: d.selection_error ?? 'no OpenCL device selected' };
  const p = d.platforms[d.selected.platform];
  const v = p?.devices?.[d.selected.device];
  if (!p || !v) return { error: `${who} selected a device it did not list: ${JSON.stringify(d.selected)}` };
  return {
    device: {
      platform: p.name,
      platformVendor: p.vendor,
      platformVersion: p.version,
      device: v.name,
      deviceVendor: v.vendor,
      deviceVersion: v.version,
      driverVersion: v.driver_version,
      type: v.type,
      computeUnits: v.max_compute_units,
      maxWorkGroupSize: v.max_work_group_size,
      maxWorkItemSizes: v.max_work_item_sizes,
      localMemSize: v.local_mem_size,
      globalMemSize: v.global_mem_size,
      preferredVectorWidthFloat: v.preferred_vector_width_float,
    },
  };
}
