// The host side of a CUDA program, as C: the cubin nvcc built embedded as a byte array, its
// buffer and launch tables, and calls into the runtime of native/cuda (tt_cuda.h), which
// opens the device, loads the cubin and makes the launches. Used for measurement candidates
// (a tt_kernel_fn library with the device hooks tt_measure knows, as opencl-host.ts writes
// them) and for compiled models (model-cuda.ts).

import { cString, utf8 } from './c-string';
import type { CudaLaunchTable } from './cuda';

const ROLE = { in: 'TT_CU_IN', out: 'TT_CU_OUT', temp: 'TT_CU_TEMP', param: 'TT_CU_PARAM' } as const;

/** `bytes` as the initialiser lines of a C `unsigned char` array (24 bytes a line). */
function byteLines(bytes: Uint8Array): string {
  const lines: string[] = [];
  for (let i = 0; i < bytes.length; i += 24) lines.push(`  ${Array.from(bytes.subarray(i, i + 24), (b) => `${b}`).join(',')},`);
  return lines.join('\n');
}

/**
 * The static tables of one program, named with `prefix`: `<prefix>_IMAGE` (the cubin,
 * 8-byte aligned as cuModuleLoadData wants an ELF image), `<prefix>_BUFFERS`,
 * `<prefix>_LAUNCHES`, `<prefix>_NBUFFERS` / `<prefix>_NLAUNCHES`. `roles` overrides a
 * buffer's role (a model's weights are TT_CU_PARAM).
 */
export function cuTables(prefix: string, cubin: Uint8Array, table: CudaLaunchTable, roles: ReadonlyMap<number, keyof typeof ROLE> = new Map()): string {
  const out: string[] = [
    `static const unsigned char ${prefix}_IMAGE[${cubin.length}] __attribute__((aligned(8))) = {`, byteLines(cubin), '};',
  ];
  out.push(`static const tt_cu_buffer_spec ${prefix}_BUFFERS[] = {`);
  table.buffers.forEach((b, i) => out.push(`  {${b.size}, ${ROLE[roles.get(i) ?? b.role]}},`));
  out.push('};');
  table.launches.forEach((l, i) => out.push(`static const int ${prefix}_ARGS${i}[] = {${l.args.length ? l.args.join(', ') : '0'}};`));
  out.push(`static const tt_cu_launch ${prefix}_LAUNCHES[] = {`);
  table.launches.forEach((l, i) => {
    out.push(`  {${cString(utf8(l.kernel))}, ${l.args.length}, ${prefix}_ARGS${i}, {${l.grid.join(', ')}}, {${l.block.join(', ')}}},`);
  });
  out.push('};');
  out.push(`#define ${prefix}_NBUFFERS ${table.buffers.length}`, `#define ${prefix}_NLAUNCHES ${table.launches.length}`);
  return out.join('\n');
}

/**
 * A measurement candidate: exports `symbol` (a tt_kernel_fn that makes every launch and
 * waits) and the hooks tt_measure calls around the timed runs (native/README.md):
 * `<symbol>_setup` opens the device, loads the cubin (2 when the driver refuses it: a
 * compile error) and uploads the inputs; `<symbol>_finish` reads the outputs back and
 * releases the device; `<symbol>_error` says what failed. A fault in a kernel ends the
 * worker (tt_cu_set_fatal_on_fault): the CUDA context cannot be used after one, and the
 * measurer starts a fresh worker for the next candidate.
 */
export function cudaCandidateSource(symbol: string, cubin: Uint8Array, table: CudaLaunchTable): string {
  const ins = table.buffers.flatMap((b, i) => (b.role === 'in' ? [i] : []));
  const outs = table.buffers.flatMap((b, i) => (b.role === 'out' ? [i] : []));
  return [
    '#include <stdio.h>',
    '#include <stddef.h>',
    '#include "tensortune.h"',
    '#include "tt_cuda.h"',
    cuTables('P', cubin, table),
    'static tt_cu_program* program;',
    'static char error[2048];',
    'static int fail(void) { snprintf(error, sizeof error, "%s", tt_cu_error(program)); return 1; }',
    `TT_EXPORT int ${symbol}_setup(float* const* args) {`,
    '  int kind = 0;',
    '  error[0] = 0;',
    '  program = tt_cu_create(P_IMAGE, sizeof P_IMAGE, P_BUFFERS, P_NBUFFERS, P_LAUNCHES, P_NLAUNCHES, &kind, error, sizeof error);',
    '  if (!program) return kind == TT_CU_LOAD_ERROR ? 2 : 1;',
    '  tt_cu_set_fatal_on_fault(program, 1);',
    ...ins.map((i) => `  if (tt_cu_write(program, ${i}, args[${i}]) != 0) return fail();`),
    '  return 0;',
    '}',
    `TT_EXPORT int ${symbol}(float* const* args) {`,
    '  (void)args;',
    '  return tt_cu_run(program) != 0 ? fail() : 0;',
    '}',
    `TT_EXPORT int ${symbol}_finish(float* const* args) {`,
    '  int rc = 0;',
    ...outs.map((i) => `  if (rc == 0 && tt_cu_read(program, ${i}, args[${i}]) != 0) rc = fail();`),
    '  tt_cu_destroy(program);',
    '  program = NULL;',
    '  (void)args;',
    '  return rc;',
    '}',
    `TT_EXPORT const char* ${symbol}_error(void) { return error; }`,
    '',
  ].join('\n');
}
