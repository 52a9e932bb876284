// The host side of an OpenCL program, as C: the OpenCL source embedded as a string, its
// buffer and launch tables, and calls into the runtime of native/opencl (tt_opencl.h),
// which opens the device, builds the source and runs the launches. Used for measurement
// candidates (a tt_kernel_fn library with the device hooks tt_measure knows, written by
// device-host.ts as for CUDA); the compiled model's host code uses the same tables and runtime.

import { cString, utf8 } from './c-string';
import { deviceCandidateSource, deviceTables, type DeviceRuntime, type HostRole } from './device-host';
import type { OpenclLaunchTable } from './opencl';

/** tt_opencl.h as the host code calls it. */
const OPENCL_RUNTIME: DeviceRuntime<OpenclLaunchTable['launches'][number]> = {
  api: 'cl',
  header: 'tt_opencl.h',
  sizes: (l) => [l.global, l.local],
  codeArgs: (prefix) => `${prefix}_SOURCE, NULL`,
  codeError: 'TT_CL_BUILD_ERROR',
};

/** `source` as a C string literal, one literal per line (adjacent literals concatenate). */
export function cSourceLiteral(source: string): string {
  const lines = source.split('\n');
  return lines.map((l, i) => {
    const text = i < lines.length - 1 ? `${l}\n` : l;
    return text === '' ? '""' : cString(utf8(text));
  }).join('\n  ');
}

/**
 * The static tables of one program, named with `prefix` (deviceTables), the source as
 * `<prefix>_SOURCE`. `roles` overrides a buffer's role (a model's weights are params).
 */
export function clTables(prefix: string, source: string, table: OpenclLaunchTable, roles?: ReadonlyMap<number, HostRole>): string {
  return deviceTables(OPENCL_RUNTIME, prefix, `static const char ${prefix}_SOURCE[] =\n  ${cSourceLiteral(source)};`, table, roles);
}

/** A measurement candidate (deviceCandidateSource): its setup hook builds the source (a build failure is a compile error). */
export function openclCandidateSource(symbol: string, source: string, table: OpenclLaunchTable): string {
  return deviceCandidateSource(OPENCL_RUNTIME, symbol, clTables('P', source, table), table.buffers);
}
