// The host side of a GPU program as C, over either device runtime of native/ (tt_opencl.h,
// tt_cuda.h): the program's code embedded in the library, its buffer and launch tables, and
// a measurement candidate's hooks or a compiled model's ABI. Both runtimes take the same tables and make the same
// calls (tt_<api>_create, _write, _run, _read, _destroy); what differs is described by a
// DeviceRuntime (opencl-host.ts, cuda-host.ts).

import { cString, utf8 } from './c-string';
import type { Dim3 } from './gpu';
import type { BufferRole } from './opencl';

/** A buffer's role in the tables; a model's weights are 'param'. */
export type HostRole = BufferRole | 'param';

/** One runtime of native/ as the host code calls it; `L` is a launch of its launch table. */
export interface DeviceRuntime<L = never> {
  /** `cl` or `cu`: tt_<api>_create, tt_<api>_program, TT_<API>_IN, ... */
  readonly api: 'cl' | 'cu';
  /** The runtime's name in the generated comments. */
  readonly name: 'OpenCL' | 'CUDA';
  /** The runtime's header. */
  readonly header: string;
  /** The fields of tt_<api>_launch after the argument list: OpenCL's global and local sizes, CUDA's grid and block. */
  sizes(launch: L): readonly [Dim3, Dim3];
  /** The arguments of tt_<api>_create before the buffers, for the code of the tables named `prefix`. */
  readonly codeArgs: (prefix: string) => string;
  /** The kind a failed create reports when the program's code is at fault (a build error, a refused cubin). */
  readonly codeError: string;
  /** Lines a candidate's setup hook adds once the program is created. */
  readonly candidateSetup?: readonly string[];
  /** The runtime's device time of a program's last run in ms (CUDA events), where it has one: candidates export it as `<symbol>_elapsed_ms`, and tt_measure times their runs with it instead of the host clock. */
  readonly elapsedMs?: string;
}

/** What the tables hold of a program: its buffers and its launches. */
export interface HostTable<L> {
  readonly buffers: readonly { size: number; role: BufferRole }[];
  readonly launches: readonly (L & { kernel: string; args: readonly number[] })[];
}

/**
 * The static tables of one program named with `prefix`, after `code` (the declaration of
 * the program's code, `<prefix>_SOURCE` or `<prefix>_IMAGE`): `<prefix>_BUFFERS`,
 * `<prefix>_LAUNCHES`, `<prefix>_NBUFFERS` / `<prefix>_NLAUNCHES`. `roles` overrides a
 * buffer's role (a model's weights are params).
 */
export function deviceTables<L>(
  rt: DeviceRuntime<L>, prefix: string, code: string, table: HostTable<L>, roles: ReadonlyMap<number, HostRole> = new Map(),
): string {
  const API = rt.api.toUpperCase();
  const out: string[] = [code];
  out.push(`static const tt_${rt.api}_buffer_spec ${prefix}_BUFFERS[] = {`);
  table.buffers.forEach((b, i) => out.push(`  {${b.size}, TT_${API}_${(roles.get(i) ?? b.role).toUpperCase()}},`));
  out.push('};');
  table.launches.forEach((l, i) => out.push(`static const int ${prefix}_ARGS${i}[] = {${l.args.length ? l.args.join(', ') : '0'}};`));
  out.push(`static const tt_${rt.api}_launch ${prefix}_LAUNCHES[] = {`);
  table.launches.forEach((l, i) => {
    const [a, b] = rt.sizes(l);
    out.push(`  {${cString(utf8(l.kernel))}, ${l.args.length}, ${prefix}_ARGS${i}, {${a.join(', ')}}, {${b.join(', ')}}},`);
  });
  out.push('};');
  out.push(`#define ${prefix}_NBUFFERS ${table.buffers.length}`, `#define ${prefix}_NLAUNCHES ${table.launches.length}`);
  return out.join('\n');
}

/**
 * A measurement candidate over `tables` (deviceTables named `P`): exports `symbol` (a
 * tt_kernel_fn that makes every launch and waits) and the hooks tt_measure calls around the
 * timed runs (native/README.md): `<symbol>_setup` opens the device, creates the program (2
 * when its code is refused: a compile error) and uploads the inputs; `<symbol>_finish` reads
 * the outputs back and releases the device; `<symbol>_error` says what failed. args[i] is
 * program buffer i (inputs, then outputs).
 */
export function deviceCandidateSource<L>(rt: DeviceRuntime<L>, symbol: string, tables: string, buffers: HostTable<unknown>['buffers']): string {
  const api = `tt_${rt.api}`;
  const ins = buffers.flatMap((b, i) => (b.role === 'in' ? [i] : []));
  const outs = buffers.flatMap((b, i) => (b.role === 'out' ? [i] : []));
  return [
    '#include <stdio.h>',
    '#include <stddef.h>',
    '#include "tensortune.h"',
    `#include "${rt.header}"`,
    tables,
    `static ${api}_program* program;`,
    'static char error[2048];',
    `static int fail(void) { snprintf(error, sizeof error, "%s", ${api}_error(program)); return 1; }`,
    `TT_EXPORT int ${symbol}_setup(float* const* args) {`,
    '  int kind = 0;',
    '  error[0] = 0;',
    `  program = ${api}_create(${rt.codeArgs('P')}, P_BUFFERS, P_NBUFFERS, P_LAUNCHES, P_NLAUNCHES, &kind, error, sizeof error);`,
    `  if (!program) return kind == ${rt.codeError} ? 2 : 1;`,
    ...(rt.candidateSetup ?? []).map((l) => `  ${l}`),
    ...ins.map((i) => `  if (${api}_write(program, ${i}, args[${i}]) != 0) return fail();`),
    '  return 0;',
    '}',
    `TT_EXPORT int ${symbol}(float* const* args) {`,
    '  (void)args;',
    `  return ${api}_run(program) != 0 ? fail() : 0;`,
    '}',
    `TT_EXPORT int ${symbol}_finish(float* const* args) {`,
    '  int rc = 0;',
    ...outs.map((i) => `  if (rc == 0 && ${api}_read(program, ${i}, args[${i}]) != 0) rc = fail();`),
    `  ${api}_destroy(program);`,
    '  program = NULL;',
    '  (void)args;',
    '  return rc;',
    '}',
    `TT_EXPORT const char* ${symbol}_error(void) { return error; }`,
    ...(rt.elapsedMs ? [`TT_EXPORT double ${symbol}_elapsed_ms(void) { return ${rt.elapsedMs}(program); }`] : []),
    '',
  ].join('\n');
}

/** Where a compiled model's tensors are among its buffers: each input's and output's buffer, each params entry's buffer and offset (floats) in the params. */
export interface ModelBuffers {
  readonly inputs: readonly number[];
  readonly outputs: readonly number[];
  readonly params: readonly { buffer: number; offset: number }[];
}

/**
 * model.c of a GPU model: the tensortune ABI (tt_init, tt_run, ...) over `tables`
 * (deviceTables named `TT`). `heading`: the comment it opens with; `info`: the lines that
 * describe the model and declare tt_error (compile/model-common.ts, modelInfoSource).
 * tt_init creates the program and uploads the params; tt_run uploads the inputs, makes
 * every launch and reads the outputs back.
 */
export function deviceModelSource<L>(rt: DeviceRuntime<L>, heading: string, info: readonly string[], tables: string, buffers: ModelBuffers): string {
  const api = `tt_${rt.api}`;
  const list = (xs: readonly number[]): string => (xs.length ? xs.join(', ') : '0');
  return [
    heading,
    '#include "tensortune.h"',
    `#include "${rt.header}"`,
    '#include <stddef.h>',
    '#include <stdint.h>',
    '#include <stdio.h>',
    ...info,
    tables,
    `static const int TT_INPUT_BUFFERS[] = {${list(buffers.inputs)}};`,
    `static const int TT_OUTPUT_BUFFERS[] = {${list(buffers.outputs)}};`,
    `static const struct { int buffer; int64_t offset; } TT_PARAMS[] = {${buffers.params.length ? buffers.params.map((p) => `{${p.buffer}, ${p.offset}}`).join(', ') : '{0, 0}'}};`,
    `#define TT_NPARAMS ${buffers.params.length}`,
    `static ${api}_program* tt_program = 0;`,
    `static int fail(int rc) { snprintf(tt_error, sizeof tt_error, "%s", ${api}_error(tt_program)); return rc; }`,
    `/* ${rt.name} models do not use OpenMP: the device runs the kernels. */`,
    'TT_EXPORT void tt_set_num_threads(int n) { (void)n; }',
    'TT_EXPORT int tt_init(const float* params) {',
    '  if (!params) { snprintf(tt_error, sizeof tt_error, "tt_init: params is NULL"); return 1; }',
    `  if (tt_program) { ${api}_destroy(tt_program); tt_program = 0; }`,
    '  int kind = 0;',
    '  tt_error[0] = 0;',
    `  tt_program = ${api}_create(${rt.codeArgs('TT')}, TT_BUFFERS, TT_NBUFFERS, TT_LAUNCHES, TT_NLAUNCHES, &kind, tt_error, sizeof tt_error);`,
    `  if (!tt_program) return kind == ${rt.codeError} ? 3 : 2;`,
    '  for (int i = 0; i < TT_NPARAMS; i++) {',
    `    if (${api}_write(tt_program, TT_PARAMS[i].buffer, params + TT_PARAMS[i].offset) != 0) {`,
    '      fail(2);',
    `      ${api}_destroy(tt_program);`,
    '      tt_program = 0;',
    '      return 2;',
    '    }',
    '  }',
    '  return 0;',
    '}',
    'TT_EXPORT int tt_run(const float* const* inputs, float* const* outputs) {',
    '  if (!tt_program) { snprintf(tt_error, sizeof tt_error, "tt_run: call tt_init first"); return 1; }',
    `  for (int i = 0; i < ${buffers.inputs.length}; i++) if (${api}_write(tt_program, TT_INPUT_BUFFERS[i], inputs[i]) != 0) return fail(2);`,
    `  if (${api}_run(tt_program) != 0) return fail(2);`,
    `  for (int i = 0; i < ${buffers.outputs.length}; i++) if (${api}_read(tt_program, TT_OUTPUT_BUFFERS[i], outputs[i]) != 0) return fail(2);`,
    '  return 0;',
    '}',
    '',
  ].join('\n');
}
