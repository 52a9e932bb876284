// The OpenCL runtime (native/opencl/tt_opencl.c) end to end: hand-written candidate
// libraries that use tt_opencl.h, linked with openclRuntimeObject and measured by the real
// MeasureWorker through tt_measure's device hooks. Needs an OpenCL device (PoCL will do);
// every test skips, with its reason, where openclAvailable() finds none.

import { mkdtempSync, promises as fs, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MeasureWorker, type MeasureRequest, type MeasureResult } from '../measure/worker';
import { readFloat32File } from '../runtime/rawfile';
import { uniform } from '../runtime/random';
import { skip } from '../skip.fixture';
import { buildNative, buildNativeSync, findCompiler, loadExeca, nativeIncludeDir, OPENCL_RUNTIME_LIBS, openclRuntimeObject, openclRuntimeSource } from './build';
import { openclAvailable, openclDeviceSync, type OpenclDevice } from './opencl';

const dir = mkdtempSync(path.join(tmpdir(), 'tt-opencl-test-'));
// PoCL lists no device when it cannot create its kernel cache (~/.cache/pocl by default):
// a per-run cache keeps the tests working with a read-only home, and starts them clean.
process.env.POCL_CACHE_DIR ??= path.join(dir, 'pocl-cache');
const unavailable = openclAvailable();

const N = 1024;
let worker: MeasureWorker;
let device: OpenclDevice;
let built = 0;

type Role = 'TT_CL_IN' | 'TT_CL_OUT' | 'TT_CL_TEMP';
interface Launch {
  kernel: string;
  args: number[];
  global: [number, number, number];
  local: [number, number, number];
}

/**
 * A candidate library in the shape the tuner's builder emits: `cand` runs the launches,
 * cand_setup creates the program and writes the inputs, cand_finish reads the outputs back.
 * The worker's buffers are the program's first buffers, in order; TEMP buffers follow.
 */
function candidateSource(source: string, buffers: [number, Role][], launches: Launch[]): string {
  const io = buffers.filter(([, role]) => role !== 'TT_CL_TEMP').length;
  const c = (n: number[]): string => `{${n.join(', ')}}`;
  return `#include <stdio.h>
#include "tensortune.h"
#include "tt_opencl.h"
static const char* SOURCE = ${JSON.stringify(source)};
static const tt_cl_buffer_spec BUFFERS[] = {${buffers.map(([n, role]) => `{${n}, ${role}}`).join(', ')}};
${launches.map((l, i) => `static const int ARGS${i}[] = ${c(l.args)};`).join('\n')}
static const tt_cl_launch LAUNCHES[] = {${launches
    .map((l, i) => `{"${l.kernel}", ${l.args.length}, ARGS${i}, ${c(l.global)}, ${c(l.local)}}`)
    .join(', ')}};
static tt_cl_program* program;
static char message[8192];
static int failed(void) { snprintf(message, sizeof message, "%s", tt_cl_error(program)); return 1; }
TT_EXPORT int cand_setup(float* const* args) {
  int kind;
  program = tt_cl_create(SOURCE, NULL, BUFFERS, ${buffers.length}, LAUNCHES, ${launches.length}, &kind, message, sizeof message);
  if (!program) return kind;
  for (int i = 0; i < ${io}; i++)
    if (BUFFERS[i].role == TT_CL_IN && tt_cl_write(program, i, args[i]) != 0) return failed();
  return 0;
}
TT_EXPORT int cand(float* const* args) { (void)args; return tt_cl_run(program) != 0 ? failed() : 0; }
TT_EXPORT int cand_finish(float* const* args) {
  int rc = 0;
  for (int i = 0; i < ${io} && !rc; i++)
    if (BUFFERS[i].role == TT_CL_OUT && tt_cl_read(program, i, args[i]) != 0) rc = failed();
  tt_cl_destroy(program);
  program = NULL;
  return rc;
}
TT_EXPORT const char* cand_error(void) { return message; }
`;
}

/** Compiles a candidate and links the runtime as the builder does; returns the library. */
async function buildCandidate(code: string): Promise<string> {
  const compiler = await findCompiler();
  const src = path.join(dir, `cand${++built}.c`);
  const lib = path.join(dir, `cand${built}.so`); // unique per content: the worker loads each path once
  await fs.writeFile(src, code);
  const { execa } = await loadExeca();
  const object = await openclRuntimeObject(compiler);
  await execa(compiler.command, [...compiler.args, '-shared', '-fPIC', src, object, ...OPENCL_RUNTIME_LIBS, `-I${nativeIncludeDir()}`, '-o', lib]);
  return lib;
}

/** a, b in; c = 2a + b out, through a TEMP buffer and two launches. */
const SCALE_ADD = `
__kernel void scale(__global const float* a, __global float* t) { int i = get_global_id(0); t[i] = 2.0f * a[i]; }
__kernel void add(__global const float* t, __global const float* b, __global float* c) {
  int i = get_global_id(0); c[i] = t[i] + b[i];
}`;
const ADD_BUFFERS: [number, Role][] = [[N, 'TT_CL_IN'], [N, 'TT_CL_IN'], [N, 'TT_CL_OUT']];
const launch = (kernel: string, args: number[], local = 64, global = N): Launch => ({
  kernel, args, global: [global, 1, 1], local: [local, 1, 1],
});

function measure(lib: string, extra: Partial<MeasureRequest> = {}, out?: string): MeasureRequest {
  return {
    lib,
    symbol: 'cand',
    buffers: [{ kind: 'in', size: N }, { kind: 'in', size: N }, { kind: 'out', size: N, file: out }],
    timeoutMs: 60_000, // PoCL compiles each new kernel with LLVM
    repeat: 3,
    ...extra,
  };
}

function failure(r: MeasureResult): { error: string; message: string } {
  if (!('error' in r)) throw new Error(`expected an error, got costs ${JSON.stringify(r)}`);
  return r;
}

test.before(() => {
  if (unavailable) return;
  const d = openclDeviceSync();
  if ('device' in d) device = d.device;
  worker = new MeasureWorker({ threads: 1 });
});

test.after(async () => {
  await worker?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('buildNativeSync (used to describe the device) and buildNative share one cache entry', async () => {
  const cacheDir = path.join(dir, 'native-cache');
  const sync = buildNativeSync('tt_bench', { cacheDir });
  const mtime = (await fs.stat(sync)).mtimeMs;
  assert.is(await buildNative('tt_bench', { cacheDir }), sync);
  assert.is(buildNativeSync('tt_bench', { cacheDir }), sync);
  assert.is((await fs.stat(sync)).mtimeMs, mtime); // built once
});

test('openclDeviceSync describes the selected device, and honours TT_OPENCL_DEVICE', () => {
  if (unavailable) return skip('opencl: openclDeviceSync', unavailable);
  assert.ok(device.platform && device.device && device.driverVersion, JSON.stringify(device));
  assert.ok(['cpu', 'gpu', 'accelerator', 'other'].includes(device.type));
  assert.ok(device.computeUnits > 0 && device.maxWorkGroupSize > 0 && device.localMemSize > 0 && device.globalMemSize > 0);
  assert.ok(device.maxWorkItemSizes.length >= 3 && device.maxWorkItemSizes.every((n) => n > 0));
  if (/portable computing language/i.test(device.platform)) assert.is(device.type, 'cpu'); // PoCL's pthread device
  assert.is(openclDeviceSync(), openclDeviceSync()); // memoised
  const saved = process.env.TT_OPENCL_DEVICE;
  try {
    process.env.TT_OPENCL_DEVICE = device.device.toUpperCase(); // a case-insensitive substring
    // The same device, described again. PoCL reports a share of the memory free at the
    // moment as globalMemSize, so that one field may differ between two queries.
    const again = openclDeviceSync();
    assert.ok('device' in again, JSON.stringify(again));
    assert.equal({ ...again.device, globalMemSize: 0 }, { ...device, globalMemSize: 0 });
    assert.ok(again.device.globalMemSize > 0);
    process.env.TT_OPENCL_DEVICE = 'nonexistent';
    const none = openclDeviceSync();
    assert.ok('error' in none, JSON.stringify(none));
    assert.match(none.error, /^TT_OPENCL_DEVICE='nonexistent' matches no OpenCL device; available: platform 0 '/);
    assert.ok(none.error.includes(`'${device.device}'`), none.error);
    assert.is(openclAvailable(), none.error);
  } finally {
    if (saved === undefined) delete process.env.TT_OPENCL_DEVICE;
    else process.env.TT_OPENCL_DEVICE = saved;
  }
});

test('a two-launch program through a TEMP buffer: costs, and the output read back', async () => {
  if (unavailable) return skip('opencl: measure', unavailable);
  const lib = await buildCandidate(candidateSource(SCALE_ADD, [...ADD_BUFFERS, [N, 'TT_CL_TEMP']], [
    launch('scale', [0, 3]),
    launch('add', [3, 1, 2]),
  ]));
  const out = path.join(dir, 'out.bin');
  const r = await worker.run(measure(lib, { seed: 9, number: 2 }, out));
  if ('error' in r) throw new Error(`expected costs, got ${r.error}: ${r.message}`);
  assert.is(r.costs_ms.length, 3);
  assert.ok(r.costs_ms.every((v) => v > 0 && Number.isFinite(v)), JSON.stringify(r));
  const a = uniform(N, 9, 0);
  const b = uniform(N, 9, 1);
  assert.equal(Array.from(await readFloat32File(out, N)), Array.from(a, (v, i) => Math.fround(2 * v + b[i]!)));
  // The object is built once per compiler and source, then reused.
  assert.is(await openclRuntimeObject(await findCompiler()), await openclRuntimeObject(await findCompiler()));
  assert.ok(openclRuntimeSource().endsWith(path.join('native', 'opencl', 'tt_opencl.c')));
});

test('an OpenCL syntax error is a compile_error that carries the build log', async () => {
  if (unavailable) return skip('opencl: compile_error', unavailable);
  const broken = '__kernel void add(__global const float* a, __global const float* b, __global float* c) {\n  c[0] = a[0] + b[0]\n}\n';
  const lib = await buildCandidate(candidateSource(broken, ADD_BUFFERS, [launch('add', [0, 1, 2])]));
  const r = failure(await worker.run(measure(lib)));
  assert.is(r.error, 'compile_error', r.message);
  assert.match(r.message, /^building the OpenCL program for '.*' failed \(CL_BUILD_PROGRAM_FAILURE, options '-cl-std=CL1\.2'\):\n/);
  assert.match(r.message, /expected ';'/i); // the compiler's own words, from the build log
});

test('a kernel that never ends times out, and the next command runs on a fresh worker', async () => {
  if (unavailable) return skip('opencl: timeout', unavailable);
  // The inputs are in [0, 1): the loop never exits. Volatile reads are side effects, so
  // the compiler may not delete the loop.
  const spin = `__kernel void spin(__global const float* a, __global const float* b, __global float* c) {
  volatile __global const float* v = a;
  int i = get_global_id(0);
  while (v[i] >= 0.0f) {}
  c[i] = b[i];
}`;
  const lib = await buildCandidate(candidateSource(spin, ADD_BUFFERS, [launch('spin', [0, 1, 2], 64, 64)]));
  const restarts = worker.restarts;
  const r = failure(await worker.run(measure(lib, { timeoutMs: 3000 })));
  assert.is(r.error, 'timeout', r.message);
  const add = await buildCandidate(candidateSource(SCALE_ADD, [...ADD_BUFFERS, [N, 'TT_CL_TEMP']], [
    launch('scale', [0, 3], 32),
    launch('add', [3, 1, 2], 32),
  ]));
  const again = await worker.run(measure(add));
  assert.ok('costs_ms' in again, JSON.stringify(again));
  assert.is(worker.restarts, restarts + 1);
});

test('a work-group over the device limit is a runtime_error naming the launch', async () => {
  if (unavailable) return skip('opencl: launch limits', unavailable);
  const local = device.maxWorkGroupSize * 2;
  const lib = await buildCandidate(candidateSource(SCALE_ADD, [[local, 'TT_CL_IN'], [N, 'TT_CL_IN'], [N, 'TT_CL_OUT'], [local, 'TT_CL_TEMP']], [
    launch('scale', [0, 3], local, local),
    launch('add', [3, 1, 2]),
  ]));
  const r = failure(await worker.run({ ...measure(lib), buffers: [{ kind: 'in', size: local }, { kind: 'in', size: N }, { kind: 'out', size: N }] }));
  assert.is(r.error, 'runtime_error', r.message);
  assert.is(r.message, `launch 0 (kernel 'scale'): work-group size ${local} (${local}x1x1) exceeds the device's CL_DEVICE_MAX_WORK_GROUP_SIZE (${device.maxWorkGroupSize})`);
});

test('TT_OPENCL_DEVICE matching nothing is a runtime_error that lists the devices', async () => {
  if (unavailable) return skip('opencl: device selection', unavailable);
  const lib = await buildCandidate(candidateSource(SCALE_ADD, [...ADD_BUFFERS, [N, 'TT_CL_TEMP']], [
    launch('scale', [0, 3], 16),
    launch('add', [3, 1, 2], 16),
  ]));
  const saved = process.env.TT_OPENCL_DEVICE;
  process.env.TT_OPENCL_DEVICE = 'nonexistent'; // read by the worker started below
  const elsewhere = new MeasureWorker({ threads: 1 });
  try {
    const r = failure(await elsewhere.run(measure(lib)));
    assert.is(r.error, 'runtime_error', r.message);
    assert.match(r.message, /^TT_OPENCL_DEVICE='nonexistent' matches no OpenCL device; available: platform 0 '/);
    assert.ok(r.message.includes(`device 0 '`) && r.message.includes(`'${device.device}'`), r.message);
  } finally {
    if (saved === undefined) delete process.env.TT_OPENCL_DEVICE;
    else process.env.TT_OPENCL_DEVICE = saved;
    await elsewhere.close();
  }
});

test.run();
