// The host side of a CUDA program, as C: the cubin nvcc built embedded as a byte array, its
// buffer and launch tables, and calls into the runtime of native/cuda (tt_cuda.h), which
// opens the device, loads the cubin and makes the launches. Used for measurement candidates
// (a tt_kernel_fn library with the device hooks tt_measure knows, written by device-host.ts
// as for OpenCL) and for compiled models (model-cuda.ts).

import type { CudaLaunchTable } from './cuda';
import { deviceCandidateSource, deviceTables, type DeviceRuntime, type HostRole } from './device-host';

/** tt_cuda.h as the host code calls it. */
const CUDA_RUNTIME: DeviceRuntime<CudaLaunchTable['launches'][number]> = {
  api: 'cu',
  header: 'tt_cuda.h',
  sizes: (l) => [l.grid, l.block],
  codeArgs: (prefix) => `${prefix}_IMAGE, sizeof ${prefix}_IMAGE`,
  codeError: 'TT_CU_LOAD_ERROR',
  // A fault leaves the CUDA context unusable: it ends the worker (see cudaCandidateSource).
  candidateSetup: ['tt_cu_set_fatal_on_fault(program, 1);'],
};

/** `bytes` as the initialiser lines of a C `unsigned char` array (24 bytes a line). */
function byteLines(bytes: Uint8Array): string {
  const lines: string[] = [];
  for (let i = 0; i < bytes.length; i += 24) lines.push(`  ${Array.from(bytes.subarray(i, i + 24), (b) => `${b}`).join(',')},`);
  return lines.join('\n');
}

/**
 * The static tables of one program, named with `prefix` (deviceTables), the cubin as
 * `<prefix>_IMAGE`, 8-byte aligned as cuModuleLoadData wants an ELF image. `roles`
 * overrides a buffer's role (a model's weights are params).
 */
export function cuTables(prefix: string, cubin: Uint8Array, table: CudaLaunchTable, roles?: ReadonlyMap<number, HostRole>): string {
  const image = `static const unsigned char ${prefix}_IMAGE[${cubin.length}] __attribute__((aligned(8))) = {\n${byteLines(cubin)}\n};`;
  return deviceTables(CUDA_RUNTIME, prefix, image, table, roles);
}

/**
 * A measurement candidate (deviceCandidateSource): its setup hook loads the cubin (a cubin
 * the driver refuses is a compile error). A fault in a kernel ends the worker
 * (tt_cu_set_fatal_on_fault): the CUDA context cannot be used after one, and the measurer
 * starts a fresh worker for the next candidate.
 */
export function cudaCandidateSource(symbol: string, cubin: Uint8Array, table: CudaLaunchTable): string {
  return deviceCandidateSource(CUDA_RUNTIME, symbol, cuTables('P', cubin, table), table.buffers);
}
