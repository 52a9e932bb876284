// nvcc and ptxas: finding nvcc (PATH, $CUDA_HOME) or saying in one line that it is missing;
// ptxas's resource report parsed per kernel; limits checked with ptxas's numbers; a source
// nvcc rejects is a compile error, static shared memory over the architecture's limit and
// a candidate whose registers × threads exceed the device's registers per block are invalid
// schedules, refused before anything runs. Needs nvcc (not a GPU); skipped without it.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { UserError } from '../errors';
import { Builder } from '../measure/builder';
import type { Step } from '../schedule/steps';
import { elementwise } from '../search/gpu-fixtures.fixture';
import { skip } from '../skip.fixture';
import { parseTarget } from '../target';
import { checkArch, compileCubin, findNvcc, nvccMissing, parsePtxas, usageProblem, type KernelUsage } from './nvcc';

const dir = mkdtempSync(path.join(tmpdir(), 'tt-nvcc-test-'));

const REPORT = `ptxas info    : 0 bytes gmem
ptxas info    : Function properties for helper
    24 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'k1' for 'sm_80'
ptxas info    : Function properties for k1
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 0 barriers, 360 bytes cmem[0]
ptxas info    : Compile time = 12.823 ms
ptxas info    : Compiling entry function 'k0' for 'sm_80'
ptxas info    : Function properties for k0
    304 bytes stack frame, 40 bytes spill stores, 36 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 304 bytes cumulative stack size, 1024 bytes smem, 368 bytes cmem[0]
ptxas info    : Compile time = 10.790 ms
`;

test('ptxas -v: registers, spills, shared memory and stack per kernel (device functions ignored)', () => {
  assert.equal(parsePtxas(REPORT), [
    { kernel: 'k1', registers: 10, spillStores: 0, spillLoads: 0, sharedBytes: 0, stackBytes: 0 },
    { kernel: 'k0', registers: 255, spillStores: 40, spillLoads: 36, sharedBytes: 1024, stackBytes: 304 },
  ]);
  assert.equal(parsePtxas('nvcc warning : something\n'), []);
});

test('limits: registers per block (registers × threads), registers per thread, shared memory, with ptxas\'s numbers in the message', () => {
  const limits = { maxRegistersPerBlock: 65536, maxRegistersPerThread: 255, maxSharedMemoryPerBlock: 49152 };
  const u: KernelUsage = { kernel: 'k', registers: 128, spillStores: 8, spillLoads: 4, sharedBytes: 1024, stackBytes: 16 };
  assert.is(usageProblem(u, 512, limits), undefined, '128 × 512 = 65536 fits exactly');
  assert.is(usageProblem(u, 513, limits),
    'k: 128 registers × 513 threads = 65664 registers per block, more than the device\'s 65536 (ptxas: 128 registers, 1024 bytes smem, 16 bytes stack, 8/4 bytes spill stores/loads)');
  assert.match(usageProblem({ ...u, sharedBytes: 50000 }, 32, limits)!, /^k: 50000 bytes of shared memory per block, more than the device's 49152/);
  assert.match(usageProblem({ ...u, registers: 300 }, 1, limits)!, /300 registers per thread, more than 255/);
});

test('nvcc is found on PATH or in $CUDA_HOME/bin; without it, one line saying so', () => {
  assert.is(findNvccError({ PATH: '/nonexistent', CUDA_HOME: '/nonexistent/cuda' }), 'cuda targets need nvcc (the CUDA toolkit) to compile kernels: none on PATH nor in $CUDA_HOME/bin (/nonexistent/cuda/bin); install the CUDA toolkit or set CUDA_HOME');
  assert.match(findNvccError({ PATH: '' })!, /none on PATH and \$CUDA_HOME is not set/);
  const here = nvccMissing();
  if (here) { skip('nvcc through $CUDA_HOME', here); return; }
  const home = path.dirname(path.dirname(findNvcc().command));
  assert.is(findNvcc({ PATH: '/nonexistent', CUDA_HOME: home }).command, path.join(home, 'bin', 'nvcc'), 'found through $CUDA_HOME alone');
});

function findNvccError(env: NodeJS.ProcessEnv): string | undefined {
  try {
    findNvcc(env);
    return undefined;
  } catch (e) {
    assert.instance(e, UserError);
    assert.not.match((e as Error).message, /\n/, 'one line');
    return (e as Error).message;
  }
}

test('an architecture this nvcc does not know is refused in one line naming the target', () => {
  const why = nvccMissing();
  if (why) { skip('nvcc architectures', why); return; }
  const nvcc = findNvcc();
  assert.ok(nvcc.archs.includes('sm_80') && nvcc.archs.includes('sm_90'), `sm_80 and sm_90 in ${nvcc.archs.join(' ')}`);
  checkArch(nvcc, 'sm_90a');
  assert.throws(() => checkArch(nvcc, 'sm_20', 'targets.gpu.target'), (e: Error) => e instanceof UserError && /^targets\.gpu\.target: -arch=sm_20: this nvcc .* does not compile for it; it knows .*sm_80/.test(e.message));
});

test('compileCubin: a source nvcc rejects is a compile error with its first lines; static shared memory over 48 KiB is invalid, with the numbers', async () => {
  const why = nvccMissing();
  if (why) { skip('compileCubin errors', why); return; }
  const nvcc = findNvcc();
  const bad = await compileCubin(nvcc, 'extern "C" __global__ void k(float* a) { a[0] = undefined_name; }\n', 'sm_80', { cacheDir: dir });
  assert.ok(!bad.ok && bad.kind === 'compile_error', 'a compile error');
  if (bad.ok) return;
  assert.match(bad.message, /kernel\.cu\(1\): error: identifier "undefined_name" is undefined/);
  const big = await compileCubin(nvcc, 'extern "C" __global__ void big(float* a) { __shared__ float s[16384 + 1]; s[threadIdx.x] = a[threadIdx.x]; __syncthreads(); a[threadIdx.x] = s[threadIdx.x + 1]; }\n', 'sm_80', { cacheDir: dir });
  assert.ok(!big.ok && big.kind === 'invalid', `invalid: ${JSON.stringify(big)}`);
  if (big.ok) return;
  assert.match(big.message, /^big: 65540 bytes of static shared memory, more than sm_80's 49152 \(ptxas\)$/);
  const good = await compileCubin(nvcc, 'extern "C" __global__ void ok(float* a) { a[threadIdx.x] *= 2.0f; }\n', 'sm_80', { cacheDir: dir });
  assert.ok(good.ok && !good.cached && good.usage.length === 1 && good.usage[0].kernel === 'ok');
  const again = await compileCubin(nvcc, 'extern "C" __global__ void ok(float* a) { a[threadIdx.x] *= 2.0f; }\n', 'sm_80', { cacheDir: dir });
  assert.ok(again.ok && again.cached, 'the second compile of the same source comes from the cache, usage included');
  if (again.ok && good.ok) assert.equal(again.usage, good.usage);
});

/** relu(x + y) with 1024 threads per block. */
const WIDE: Step[] = [
  { s: 'compute_inline', stage: 'T_add' },
  { s: 'fuse', stage: 'T_relu', iters: ['ax0', 'ax1', 'ax2', 'ax3'] },
  { s: 'split', stage: 'T_relu', iter: 'ax0@ax1@ax2@ax3', lengths: [1024] },
  { s: 'bind', stage: 'T_relu', iter: 'ax0@ax1@ax2@ax3.0', thread: 'blockIdx.x' },
  { s: 'bind', stage: 'T_relu', iter: 'ax0@ax1@ax2@ax3.1', thread: 'threadIdx.x' },
];

test('the builder: a CUDA candidate over the device\'s registers per block is an invalid schedule with ptxas\'s numbers; one within builds a library', async () => {
  const why = nvccMissing();
  if (why) { skip('CUDA candidates in the builder', why); return; }
  const task = elementwise();
  // A device with 1024 registers per block cannot run 1024 threads of any kernel (each uses at least 2).
  const small = new Builder(parseTarget('cuda -arch=sm_80 -max_registers_per_block=1024'), { workDir: path.join(dir, 'small'), jobs: 1 });
  const [over] = await small.build(task.dag, [WIDE]);
  assert.ok('error' in over && over.error === 'invalid_schedule', JSON.stringify(over));
  if ('error' in over) {
    assert.match(over.message, /^over the device's limits: tt_candidate_kernel_k0: \d+ registers × 1024 threads = \d+ registers per block, more than the device's 1024 \(ptxas: \d+ registers, 0 bytes smem/);
  }
  const normal = new Builder(parseTarget('cuda -arch=sm_80'), { workDir: path.join(dir, 'normal'), jobs: 1 });
  const [ok] = await normal.build(task.dag, [WIDE]);
  assert.ok('lib' in ok, JSON.stringify(ok));
  if ('lib' in ok) {
    assert.is(ok.ptxas?.length, 1);
    assert.is(ok.ptxas![0].kernel, 'tt_candidate_kernel_k0');
    // The device hooks, and the device's own clock (CUDA events) that tt_measure times it by.
    const symbols = execFileSync('nm', ['-D', '--defined-only', ok.lib], { encoding: 'utf8' });
    for (const hook of ['_setup', '_finish', '_error', '_elapsed_ms']) assert.match(symbols, new RegExp(` T ${ok.symbol}${hook}$`, 'm'));
  }
  // Too many threads for the target: refused by the lowering, before nvcc.
  const narrow = new Builder(parseTarget('cuda -arch=sm_80 -max_threads_per_block=512'), { workDir: path.join(dir, 'narrow'), jobs: 1 });
  const [threads] = await narrow.build(task.dag, [WIDE]);
  assert.ok('error' in threads && threads.error === 'invalid_schedule' && /1024 threads per block, more than the device's 512/.test(threads.message), JSON.stringify(threads));
});

test.after(() => rmSync(dir, { recursive: true, force: true }));

test.run();
