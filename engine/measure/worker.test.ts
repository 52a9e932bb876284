import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { compileSharedLibrary, nativeDir } from '../native/build';
import { readFloat32File, writeFloat32File } from '../runtime/rawfile';
import { uniform } from '../runtime/random';
import { MeasureWorker, type MeasureBuffer, type MeasureRequest, type MeasureResult } from './worker';

const N = 1024; // the fixture kernels' buffer length
let dir = '';
let lib = '';
let deviceLib = '';
let worker: MeasureWorker;

// A device library without a device (native/README.md, "Device libraries"): setup copies
// the inputs into its own memory, the kernel adds them there, finish copies the sum into
// args[2] and the call counts into args[3]. Each symbol family fails in one place.
const DEVICE_LIBRARY = `
#include <stdlib.h>
#include <string.h>
#include "tensortune.h"
#define N ${N}
static float *a, *b, *c;
static int setups, runs;
static const char* message = "";
static int setup(float* const* args) {
  a = malloc(N * sizeof *a); b = malloc(N * sizeof *b); c = malloc(N * sizeof *c);
  memcpy(a, args[0], N * sizeof *a); memcpy(b, args[1], N * sizeof *b);
  setups++; runs = 0;
  return 0;
}
static int run(void) { for (int i = 0; i < N; i++) c[i] = a[i] + b[i]; runs++; return 0; }
static int finish(float* const* args) {
  memcpy(args[2], c, N * sizeof *c);
  args[3][0] = (float)setups; args[3][1] = (float)runs;
  free(a); free(b); free(c); a = b = c = NULL;
  return 0;
}
#define FAMILY(name, SETUP, RUN, FINISH) \
  TT_EXPORT int name##_setup(float* const* args) { SETUP; return setup(args); } \
  TT_EXPORT int name(float* const* args) { (void)args; RUN; return run(); } \
  TT_EXPORT int name##_finish(float* const* args) { FINISH; return finish(args); } \
  TT_EXPORT const char* name##_error(void) { return message; }
FAMILY(dev_ok, , , )
FAMILY(dev_build, message = "build log: 1:7: error: expected ';'"; return 2, , )
FAMILY(dev_nodevice, message = "no OpenCL device"; return 1, , )
FAMILY(dev_launch, , message = "launch 0 (kernel 'k') failed"; return 5, )
FAMILY(dev_readback, , , finish(args); message = "reading buffer 2 failed"; return 3)
/* A device that times its own runs (as CUDA events do): run k took 0.25 * k ms by its clock. */
FAMILY(dev_clocked, , , )
TT_EXPORT double dev_clocked_elapsed_ms(void) { return 0.25 * runs; }
TT_EXPORT int dev_partial(float* const* args) { (void)args; return 0; }
TT_EXPORT int dev_partial_setup(float* const* args) { (void)args; return 0; }
`;

function deviceRequest(symbol: string, extra: Partial<MeasureRequest> = {}, out?: string, counts?: string): MeasureRequest {
  const buffers: MeasureBuffer[] = [
    { kind: 'in', size: N },
    { kind: 'in', size: N },
    { kind: 'out', size: N, file: out },
    { kind: 'out', size: 2, file: counts },
  ];
  return { lib: deviceLib, symbol, buffers, timeoutMs: 5000, ...extra };
}

function request(symbol: string, extra: Partial<MeasureRequest> = {}, out?: string): MeasureRequest {
  const buffers: MeasureBuffer[] = [
    { kind: 'in', size: N },
    { kind: 'in', size: N },
    { kind: 'out', size: N, file: out },
  ];
  return { lib, symbol, buffers, timeoutMs: 5000, repeat: 3, ...extra };
}

function costs(r: MeasureResult): number[] {
  if ('error' in r) throw new Error(`expected costs, got ${r.error}: ${r.message}`);
  return r.costs_ms;
}

test.before(async () => {
  dir = await fs.mkdtemp(path.join(tmpdir(), 'tt measure test-')); // a space on purpose
  lib = path.join(dir, 'kernels.so');
  await compileSharedLibrary([path.join(nativeDir(), 'test', 'fixtures', 'kernels.c')], lib);
  deviceLib = path.join(dir, 'device.so');
  await fs.writeFile(path.join(dir, 'device.c'), DEVICE_LIBRARY);
  await compileSharedLibrary([path.join(dir, 'device.c')], deviceLib);
  worker = new MeasureWorker({ threads: 1 });
});

test.after(async () => {
  await worker.close();
  await fs.rm(dir, { recursive: true, force: true });
});

test('a correct kernel: costs, and outputs computed from the documented random inputs', async () => {
  const out = path.join(dir, 'out add.bin');
  const r = await worker.run(request('tt_test_add', { seed: 3 }, out));
  const c = costs(r);
  assert.is(c.length, 3);
  assert.ok(c.every((v) => v >= 0 && Number.isFinite(v)));
  const a = uniform(N, 3, 0);
  const b = uniform(N, 3, 1);
  assert.equal(Array.from(await readFloat32File(out, N)), Array.from(a, (v, i) => Math.fround(v + b[i]!)));
  assert.is(worker.restarts, 0);
});

test('inputs from files; number grows with min_repeat_ms; flush forces number 1', async () => {
  const a = Float32Array.from({ length: N }, (_, i) => i);
  await writeFloat32File(path.join(dir, 'a.bin'), a);
  const out = path.join(dir, 'out2.bin');
  const req = request('tt_test_add', { minRepeatMs: 2, repeat: 2 }, out);
  req.buffers[0]!.file = path.join(dir, 'a.bin');
  const r = await worker.run(req);
  costs(r);
  assert.ok('number' in r && r.number > 1, JSON.stringify(r));
  const b = uniform(N, 0, 1);
  assert.equal(Array.from(await readFloat32File(out)), Array.from(a, (v, i) => Math.fround(v + b[i]!)));
  const flushed = await worker.run(request('tt_test_add', { flush: true, number: 10, minRepeatMs: 5 }));
  assert.is(costs(flushed).length, 3);
  assert.ok('number' in flushed && flushed.number === 1);
});

test('flush with buffers marked cold: the marked ones are evicted, the outputs stay right', async () => {
  const out = path.join(dir, 'out cold.bin');
  const req = request('tt_test_add', { flush: true, seed: 5 }, out);
  req.buffers[1]!.cold = true;
  const r = await worker.run(req);
  assert.is(costs(r).length, 3);
  assert.ok('number' in r && r.number === 1);
  const a = uniform(N, 5, 0), b = uniform(N, 5, 1);
  assert.equal(Array.from(await readFloat32File(out, N)), Array.from(a, (v, i) => Math.fround(v + b[i]!)));
});

test('probe_ms: the host-rate probe\'s rates before and after the runs come back; without it, none', async () => {
  const probed = await worker.run(request('tt_test_add', { probeMs: 0.2 }));
  costs(probed);
  assert.ok('host_rate' in probed && probed.host_rate!.length === 2 && probed.host_rate!.every((r) => r > 0 && Number.isFinite(r)), JSON.stringify(probed));
  const plain = await worker.run(request('tt_test_add'));
  assert.not.ok('host_rate' in plain, JSON.stringify(plain));
  for (const probeMs of [-1, 1001, NaN]) {
    const err = await worker.run(request('tt_test_add', { probeMs })).then(() => undefined, (e: Error) => e);
    assert.match(err?.message ?? 'no error', /probeMs must be in \[0, 1000\]/);
  }
});

test('a kernel that prints does not disturb the protocol', async () => {
  costs(await worker.run(request('tt_test_noisy')));
});

test('a kernel that returns an error, a missing symbol, a missing library: runtime_error', async () => {
  const pid = worker.pid;
  assert.equal(await worker.run(request('tt_test_fail')), {
    error: 'runtime_error',
    message: "kernel 'tt_test_fail' returned 7",
  });
  const missing = await worker.run(request('no_such_kernel'));
  assert.ok('error' in missing && missing.error === 'runtime_error' && /symbol 'no_such_kernel' not found/.test(missing.message));
  const noLib = await worker.run({ ...request('tt_test_add'), lib: path.join(dir, 'none.so') });
  assert.ok('error' in noLib && /cannot load kernel library/.test(noLib.message));
  assert.is(worker.pid, pid); // none of these costs the worker
});

test('a crashing kernel kills only the worker, which is restarted', async () => {
  const pid = worker.pid;
  const r = await worker.run(request('tt_test_segv'));
  assert.ok('error' in r && r.error === 'runtime_error', JSON.stringify(r));
  assert.match((r as { message: string }).message, /the worker died running tt_test_segv .*killed by SIGSEGV/);
  costs(await worker.run(request('tt_test_add')));
  assert.is.not(worker.pid, pid);
  assert.is(worker.restarts, 1);
});

test('a hanging kernel times out, the worker is killed and restarted', async () => {
  const pid = worker.pid;
  const started = Date.now();
  const r = await worker.run(request('tt_test_hang', { timeoutMs: 300 }));
  assert.ok(Date.now() - started < 4000);
  assert.equal(r, {
    error: 'timeout',
    message: `tt_test_hang from ${lib} did not finish within 300 ms (worker killed)`,
  });
  assert.throws(() => process.kill(pid!, 0)); // the hung process is gone
  costs(await worker.run(request('tt_test_add')));
  assert.is(worker.restarts, 2);
});

test('a device library: setup once before the warm-up, finish before the outputs are written, flush ignored', async () => {
  const out = path.join(dir, 'device-out.bin');
  const counts = path.join(dir, 'device-counts.bin');
  const r = await worker.run(deviceRequest('dev_ok', { seed: 5, number: 2, repeat: 3, warmup: 1 }, out, counts));
  assert.is(costs(r).length, 3);
  const a = uniform(N, 5, 0);
  const b = uniform(N, 5, 1);
  assert.equal(Array.from(await readFloat32File(out, N)), Array.from(a, (v, i) => Math.fround(v + b[i]!)));
  assert.equal(Array.from(await readFloat32File(counts, 2)), [1, 1 + 3 * 2]); // one setup; warm-up + repeat x number runs
  const flushed = await worker.run(deviceRequest('dev_ok', { flush: true, number: 4, repeat: 2 }, undefined, counts));
  assert.ok('number' in flushed && flushed.number === 4, JSON.stringify(flushed)); // not forced to 1
  assert.equal(Array.from(await readFloat32File(counts, 2)), [1, 1 + 2 * 4]);
});

test('a device library with <symbol>_elapsed_ms is timed by the device\'s clock: each run counts what it returns, not the host time around it', async () => {
  const counts = path.join(dir, 'clocked-counts.bin');
  const r = await worker.run(deviceRequest('dev_clocked', { number: 2, repeat: 3, warmup: 1, minRepeatMs: 0 }, undefined, counts));
  // Runs 2..7 are timed (run 1 is the warm-up), two per repeat: (0.5 + 0.75) / 2, (1 + 1.25) / 2, (1.5 + 1.75) / 2.
  assert.equal(costs(r), [0.625, 1.125, 1.625]);
  assert.equal(Array.from(await readFloat32File(counts, 2)), [1, 7]);
  // number grows by the device's time too: 0.25 ms runs reach min_repeat_ms 1 after a few.
  const grown = await worker.run(deviceRequest('dev_clocked', { number: 1, repeat: 1, warmup: 0, minRepeatMs: 1 }));
  assert.ok('number' in grown && grown.number > 1, JSON.stringify(grown));
});

test('a device library: setup 2 is a compile_error, other failures are runtime_errors with its message', async () => {
  const pid = worker.pid;
  assert.equal(await worker.run(deviceRequest('dev_build')), { error: 'compile_error', message: "build log: 1:7: error: expected ';'" });
  assert.equal(await worker.run(deviceRequest('dev_nodevice')), { error: 'runtime_error', message: 'no OpenCL device' });
  assert.equal(await worker.run(deviceRequest('dev_launch')), {
    error: 'runtime_error',
    message: "kernel 'dev_launch' returned 5: launch 0 (kernel 'k') failed",
  });
  assert.equal(await worker.run(deviceRequest('dev_readback')), {
    error: 'runtime_error',
    message: "'dev_readback_finish' returned 3: reading buffer 2 failed",
  });
  const partial = await worker.run(deviceRequest('dev_partial'));
  assert.ok('error' in partial && partial.error === 'runtime_error', JSON.stringify(partial));
  assert.match(partial.message, /exports some device hooks of 'dev_partial' but not 'dev_partial_finish'/);
  costs(await worker.run(deviceRequest('dev_ok')));
  assert.is(worker.pid, pid);
});

test('concurrent calls are queued', async () => {
  const results = await Promise.all([1, 2, 3].map(() => worker.run(request('tt_test_add', { repeat: 1 }))));
  for (const r of results) assert.is(costs(r).length, 1);
});

test('a malformed request is a programming error, and the worker stays usable', async () => {
  const pid = worker.pid;
  await writeFloat32File(path.join(dir, 'short.bin'), new Float32Array(3));
  const req = request('tt_test_add');
  req.buffers[1]!.file = path.join(dir, 'short.bin');
  try {
    await worker.run(req);
    assert.unreachable('expected an error');
  } catch (e) {
    assert.match((e as Error).message, /tt_measure rejected the command .*expected 4096 bytes \(1024 float32 values\), the file has 12 bytes/);
  }
  try {
    await worker.run(request('bad symbol'));
    assert.unreachable('expected an error');
  } catch (e) {
    assert.match((e as Error).message, /bad symbol/);
  }
  costs(await worker.run(request('tt_test_add')));
  assert.is(worker.pid, pid);
});

test.run();
