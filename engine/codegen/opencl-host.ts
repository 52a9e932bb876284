// The host side of an OpenCL program, as C: the OpenCL source embedded as a string, its
// buffer and launch tables, and calls into the runtime of native/opencl (tt_opencl.h),
// which opens the device, builds the source and runs the launches. Used for measurement
// candidates (a tt_kernel_fn library with the device hooks tt_measure knows, below); the
// compiled model's host code uses the same tables and runtime.

import { cString, utf8 } from './c-string';
import type { OpenclLaunchTable } from './opencl';

const ROLE = { in: 'TT_CL_IN', out: 'TT_CL_OUT', temp: 'TT_CL_TEMP', param: 'TT_CL_PARAM' } as const;

/** `source` as a C string literal, one literal per line (adjacent literals concatenate). */
export function cSourceLiteral(source: string): string {
  const lines = source.split('\n');
  return lines.map((l, i) => {
    const text = i < lines.length - 1 ? `${l}\n` : l;
    return text === '' ? '""' : cString(utf8(text));
  }).join('\n  ');
}

/**
 * The static tables of one program, named with `prefix`: `<prefix>_SOURCE`,
 * `<prefix>_BUFFERS`, `<prefix>_LAUNCHES`, and `<prefix>_NBUFFERS` / `<prefix>_NLAUNCHES`.
 * `roles` overrides a buffer's role (a model's weights are TT_CL_PARAM).
 */
export function clTables(prefix: string, source: string, table: OpenclLaunchTable, roles: ReadonlyMap<number, keyof typeof ROLE> = new Map()): string {
  const out: string[] = [`static const char ${prefix}_SOURCE[] =\n  ${cSourceLiteral(source)};`];
  out.push(`static const tt_cl_buffer_spec ${prefix}_BUFFERS[] = {`);
  table.buffers.forEach((b, i) => out.push(`  {${b.size}, ${ROLE[roles.get(i) ?? b.role]}},`));
  out.push('};');
  table.launches.forEach((l, i) => out.push(`static const int ${prefix}_ARGS${i}[] = {${l.args.length ? l.args.join(', ') : '0'}};`));
  out.push(`static const tt_cl_launch ${prefix}_LAUNCHES[] = {`);
  table.launches.forEach((l, i) => {
    out.push(`  {${cString(utf8(l.kernel))}, ${l.args.length}, ${prefix}_ARGS${i}, {${l.global.join(', ')}}, {${l.local.join(', ')}}},`);
  });
  out.push('};');
  out.push(`#define ${prefix}_NBUFFERS ${table.buffers.length}`, `#define ${prefix}_NLAUNCHES ${table.launches.length}`);
  return out.join('\n');
}

/**
 * A measurement candidate: exports `symbol` (a tt_kernel_fn that runs every launch and waits)
 * and the hooks tt_measure calls around the timed runs (native/README.md): `<symbol>_setup`
 * opens the device, builds the program (2 on a build failure: a compile error) and uploads
 * the inputs; `<symbol>_finish` reads the outputs back and releases the device;
 * `<symbol>_error` says what failed. args[i] is program buffer i (inputs, then outputs).
 */
export function openclCandidateSource(symbol: string, source: string, table: OpenclLaunchTable): string {
  const ins = table.buffers.flatMap((b, i) => (b.role === 'in' ? [i] : []));
  const outs = table.buffers.flatMap((b, i) => (b.role === 'out' ? [i] : []));
  return [
    '#include <stdio.h>',
    '#include <stddef.h>',
    '#include "tensortune.h"',
    '#include "tt_opencl.h"',
    clTables('P', source, table),
    'static tt_cl_program* program;',
    'static char error[2048];',
    'static int fail(void) { snprintf(error, sizeof error, "%s", tt_cl_error(program)); return 1; }',
    `TT_EXPORT int ${symbol}_setup(float* const* args) {`,
    '  int kind = 0;',
    '  error[0] = 0;',
    '  program = tt_cl_create(P_SOURCE, NULL, P_BUFFERS, P_NBUFFERS, P_LAUNCHES, P_NLAUNCHES, &kind, error, sizeof error);',
    '  if (!program) return kind == TT_CL_BUILD_ERROR ? 2 : 1;',
    ...ins.map((i) => `  if (tt_cl_write(program, ${i}, args[${i}]) != 0) return fail();`),
    '  return 0;',
    '}',
    `TT_EXPORT int ${symbol}(float* const* args) {`,
    '  (void)args;',
    '  return tt_cl_run(program) != 0 ? fail() : 0;',
    '}',
    `TT_EXPORT int ${symbol}_finish(float* const* args) {`,
    '  int rc = 0;',
    ...outs.map((i) => `  if (rc == 0 && tt_cl_read(program, ${i}, args[${i}]) != 0) rc = fail();`),
    '  tt_cl_destroy(program);',
    '  program = NULL;',
    '  (void)args;',
    '  return rc;',
    '}',
    `TT_EXPORT const char* ${symbol}_error(void) { return error; }`,
    '',
  ].join('\n');
}
