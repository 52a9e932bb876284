// Target strings: what each maps to (compiler flags, vector width, cross prefix, GPU
// hardware parameters, host), and one clear UserError naming the offending part for
// everything else; the hardware fingerprint of CPU and OpenCL targets.

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { UserError } from './errors';
import type { OpenclDevice } from './native/opencl';
import { skip } from './skip.fixture';
import {
  checkRunsHere, cpuModel, gpuParams, hardwareFingerprint, isGpu, MALI_GPU_PARAMS, NO_OPENCL_DEVICE, openclDevice, openclGpuParams,
  parseTarget, withHardwareParams, type OpenclProbe,
  CUDA_GPU_PARAMS, NO_CUDA_DEVICE, type CudaProbe,
} from './target';
import { cudaDeviceIndex, cudaDeviceSync, parseNvidiaSmi } from './native/cuda';

/** A UserError of one line matching `want`. */
function refuses(run: () => unknown, want: RegExp, label: string): void {
  try {
    run();
    assert.unreachable(`accepted ${label}`);
  } catch (e) {
    assert.instance(e, UserError, label);
    assert.match((e as Error).message, want, label);
    assert.not.match((e as Error).message, /\n/, `one line for ${label}`);
  }
}

test('llvm targets map to compiler flags and a vector width', () => {
  const native = parseTarget('  llvm   -mcpu=native ');
  assert.is(native.text, 'llvm -mcpu=native', 'normalised spacing');
  assert.equal(native.cflags, ['-march=native']);
  assert.ok([4, 8, 16].includes(native.vectorLanes));
  assert.equal(parseTarget('llvm').cflags, ['-march=native'], 'no -mcpu means this machine');

  const zen4 = parseTarget('llvm -mcpu=znver4');
  assert.equal(zen4.cflags, ['-march=znver4']);
  assert.is(zen4.vectorLanes, 16);
  const avx2 = parseTarget('llvm -mcpu=native -mattr=+avx2,+fma,-avx512f');
  assert.equal(avx2.cflags, ['-march=native', '-mavx2', '-mfma', '-mno-avx512f']);
  assert.is(avx2.vectorLanes, 8);
  assert.is(parseTarget('llvm -mcpu=haswell').vectorLanes, 8);
});

test('-mtriple for another architecture selects a cross compiler prefix and portable defaults', () => {
  const arm = parseTarget('llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72');
  assert.is(arm.ccPrefix, 'aarch64-linux-gnu-');
  assert.equal(arm.cflags, ['-mcpu=cortex-a72'], 'aarch64 gcc spells the CPU -mcpu');
  assert.is(arm.vectorLanes, 4, 'NEON: 4 float lanes');
  const host = parseTarget(`llvm -mtriple=${process.arch === 'x64' ? 'x86_64' : process.arch}-linux-gnu`);
  assert.is(host.ccPrefix, undefined, 'a triple of this machine is not a cross target');
});

test('bad target strings: one UserError naming the field and what was expected', () => {
  const cases: [string, RegExp][] = [
    ['', /unsupported target kind ''.*expected 'llvm'/],
    ['vulkan', /unsupported target kind 'vulkan'; expected 'llvm' .*, 'opencl' \(e\.g\. "opencl -device=mali"\) or 'cuda' \(e\.g\. "cuda -arch=sm_80"\)/],
    ['llvm -max_threads_per_block=64', /'-max_threads_per_block' in "llvm -max_threads_per_block=64" is a hardware parameter of GPU targets \(opencl, cuda\)/],
    ['cuda -arch=80', /bad -arch '80' in "cuda -arch=80"; expected sm_XX, the compute capability without its dot \(e\.g\. sm_80/],
    ['cuda -arch=compute_80', /bad -arch 'compute_80'/],
    ['cuda -arch=sm_80 -arch=sm_90', /-arch is given twice/],
    ['cuda -arch=sm_80 -mcpu=native', /unknown option '-mcpu=native'.*belongs to the host/],
    ['cuda -arch=sm_80 -device=mali', /unknown option '-device=mali' in "cuda -arch=sm_80 -device=mali"; expected -arch=sm_XX, -max_registers_per_block=N or -cache_line_bytes=N/],
    ['cuda -arch=sm_80 -max_registers_per_block=12', /bad -max_registers_per_block '12'.*from 256 to 1048576/],
    ['cuda -arch=sm_80 -max_threads_per_block=0', /bad -max_threads_per_block '0'/],
    ['opencl -device=adreno', /unknown OpenCL device '-device=adreno'.*known: -device=mali, or no -device/],
    ['opencl -device=', /unknown OpenCL device '-device='/],
    ['opencl -mcpu=native', /unknown option '-mcpu=native'.*belongs to the host: --host/],
    ['opencl -max_threads=64', /unknown option '-max_threads=64'.*expected -device=mali or -cache_line_bytes=N, .*-max_threads_per_block=N/],
    ['opencl -max_threads_per_block', /unknown option '-max_threads_per_block'/],
    ['opencl -max_threads_per_block=0', /bad -max_threads_per_block '0' in "opencl -max_threads_per_block=0"; expected an integer from 1 to 16384/],
    ['opencl -max_threads_per_block=65536', /bad -max_threads_per_block '65536'.*from 1 to 16384/],
    ['opencl -max_threads_per_block=064', /bad -max_threads_per_block '064'/],
    ['opencl -max_shared_memory_per_block=-1', /bad -max_shared_memory_per_block '-1'.*from 1 to 2147483647/],
    ['opencl -max_local_memory_per_block=1e3', /bad -max_local_memory_per_block '1e3'/],
    ['opencl -thread_warp_size=two', /bad -thread_warp_size 'two'.*from 1 to 1024/],
    ['opencl -max_vthread_extent=0', /bad -max_vthread_extent '0'/],
    ['opencl -vector_unit_bytes=12', /bad -vector_unit_bytes '12'.*a power of two from 4 to 256/],
    ['opencl -cache_line_bytes=2', /bad -cache_line_bytes '2'.*a power of two from 4 to 4096/],
    ['opencl -device=mali -thread_warp_size=4 -device=mali', /-device is given twice/],
    ['opencl -max_threads_per_block=64 -max_threads_per_block=64', /-max_threads_per_block is given twice/],
    ['opencl -device=mali -thread_warp_size=512', /-thread_warp_size=512 is more than the 256 threads per block/],
    ['opencl -max_threads_per_block=16 -thread_warp_size=32', /-thread_warp_size=32 is more than the 16 threads per block/],
    ['llvm -mcpu', /unknown option '-mcpu' in "llvm -mcpu"; expected -mcpu=<cpu>/],
    ['llvm -O3=1', /unknown option '-O3=1'/],
    ['llvm --mcpu=native', /unknown option '--mcpu=native'/],
    ['llvm -mattr=avx2', /bad -mattr entry 'avx2'.*expected \+feature or -feature/],
    ['llvm -mcpu=native;rm', /bad -mcpu 'native;rm'/],
    ['llvm -mtriple=aarch64', /bad -mtriple 'aarch64'/],
    ['llvm -mtriple=$(x)-linux', /bad -mtriple/],
  ];
  for (const [text, want] of cases) {
    refuses(() => parseTarget(text, '--target'), new RegExp(`^--target: .*${want.source}`), `"${text}"`);
  }
});

test('the hardware fingerprint depends on the target string and is stable', () => {
  const a = hardwareFingerprint(parseTarget('llvm -mcpu=native'));
  assert.match(a, /^[0-9a-f]{16}$/);
  assert.is(hardwareFingerprint(parseTarget('llvm  -mcpu=native')), a);
  assert.is.not(hardwareFingerprint(parseTarget('llvm -mcpu=native -mattr=+avx2')), a);
});

test('CPU targets keep their text and fingerprint (records tuned before GPU targets existed still apply)', () => {
  // The fingerprint as it was computed before OpenCL targets: any change here orphans every CPU record.
  const flags = new Set(readFileSync('/proc/cpuinfo', 'utf8').split('\n').find((l) => l.startsWith('flags'))?.split(':')[1]?.trim().split(/\s+/) ?? []);
  const features = [...flags].filter((f) => /^(avx|fma|sse4|neon|asimd|sve)/.test(f)).sort();
  for (const text of ['llvm -mcpu=native', 'llvm', 'llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72', 'llvm -device=arm_cpu -mcpu=native']) {
    const t = parseTarget(`  ${text.replace(/ /g, '  ')} `);
    assert.is(t.text, text);
    assert.is(t.kind, 'llvm');
    assert.not.ok(isGpu(t));
    assert.is(t.gpu, undefined);
    assert.is(t.host, undefined);
    const old = JSON.stringify({ model: cpuModel(), features, cores: cpus().length, target: text, arch: process.arch });
    assert.is(hardwareFingerprint(t), createHash('sha256').update(old).digest('hex').slice(0, 16), text);
  }
  assert.throws(() => gpuParams(parseTarget('llvm')), /not a GPU target/);
});

test('opencl -device=mali: TVM\'s fixed Mali parameters, float4 vectors, a host that is this machine unless given', () => {
  // TVM v0.19.0, src/auto_scheduler/search_task.cc, GetDefaultHardwareParams, the Mali branch:
  // HardwareParams(-1, 16, 64, 32768, INT32_MAX, 256, 1, 1).
  const mali = parseTarget('opencl -device=mali');
  assert.is(mali.text, 'opencl -device=mali');
  assert.is(mali.kind, 'opencl');
  assert.is(mali.device, 'mali');
  assert.ok(isGpu(mali));
  assert.equal(gpuParams(mali), {
    maxSharedMemoryPerBlock: 32768, maxLocalMemoryPerBlock: 2147483647, maxThreadsPerBlock: 256,
    maxVthreadExtent: 1, warpSize: 1, vectorUnitBytes: 16, cacheLineBytes: 64,
  });
  assert.equal(mali.gpu, MALI_GPU_PARAMS);
  assert.is(mali.vectorLanes, 4, 'vector_unit_bytes / 4');
  assert.is(mali.host?.text, 'llvm', 'the default host');
  assert.equal(mali.cflags, parseTarget('llvm').cflags, 'the host library is C for the host');
  assert.is(mali.ccPrefix, undefined);
});

test('--host: a cross host gives the host library its compiler; CPU targets refuse a host; tune and benchmark refuse a cross host', () => {
  const seed = parseTarget('opencl -device=mali', '--target', '  llvm   -mtriple=aarch64-linux-gnu ');
  assert.is(seed.text, 'opencl -device=mali', 'the host is not part of the target text');
  assert.is(seed.host?.text, 'llvm -mtriple=aarch64-linux-gnu');
  assert.is(seed.ccPrefix, 'aarch64-linux-gnu-');
  assert.equal(seed.cflags, seed.host?.cflags);
  assert.equal(seed.gpu, MALI_GPU_PARAMS);
  refuses(() => checkRunsHere(seed, 'benchmark'), /^--host: benchmark runs on this machine .*"llvm -mtriple=aarch64-linux-gnu" is another architecture/, 'benchmark with a cross host');
  refuses(() => checkRunsHere(seed, 'benchmark', 'targets.mali.host'), /^targets\.mali\.host: benchmark runs on this machine/, 'benchmark with a cross host');
  checkRunsHere(parseTarget('opencl -device=mali', '--target', 'llvm -mcpu=native'), 'tune');
  checkRunsHere(parseTarget('llvm -mtriple=aarch64-linux-gnu'), 'benchmark'); // a CPU target has no host (its own cross triple is compile's business)

  refuses(() => parseTarget('llvm -mcpu=native', '--target', 'llvm'), /^--host: a host applies to GPU targets \(opencl, cuda\) only; the CPU target "llvm -mcpu=native" is its own host/, 'llvm with a host');
  refuses(() => parseTarget('opencl', 'targets.gpu.target', 'opencl'), /^targets\.gpu\.host: the host of a GPU target is a CPU target/, 'a GPU host');
  refuses(() => parseTarget('opencl', 'targets.gpu.target', 'llvm -mattr=avx2'), /^targets\.gpu\.host: bad -mattr entry 'avx2'/, 'a bad host');
  refuses(() => parseTarget('opencl', '--target', 'llvm -mtriple=aarch64'), /^--host: bad -mtriple 'aarch64'/, 'a bad host triple');
});

test('plain opencl: a pinned GPU-like profile, lowered to the device\'s limits; TVM\'s vthread rule', () => {
  const pocl = { maxWorkGroupSize: 4096, localMemSize: 4 * 1024 * 1024 };
  const pinned = { maxSharedMemoryPerBlock: 49152, maxLocalMemoryPerBlock: 2147483647, maxThreadsPerBlock: 256, maxVthreadExtent: 1, warpSize: 1, vectorUnitBytes: 16, cacheLineBytes: 64 };
  assert.equal(openclGpuParams(undefined, {}, pocl), pinned, 'what a CPU device reports does not matter');
  assert.equal(openclGpuParams(undefined, {}), pinned, 'no device: the pinned profile');
  assert.equal(openclGpuParams(undefined, {}, { maxWorkGroupSize: 128, localMemSize: 32768 }), { ...pinned, maxThreadsPerBlock: 128, maxSharedMemoryPerBlock: 32768 });
  assert.equal(openclGpuParams(undefined, {}, { maxWorkGroupSize: 0, localMemSize: Number.NaN }), pinned, 'nonsense from a driver is ignored');
  assert.is(openclGpuParams(undefined, { warpSize: 32 }).maxVthreadExtent, 8, 'max(1, warp_size / 4), as TVM');
  assert.is(openclGpuParams(undefined, { warpSize: 32, maxVthreadExtent: 2 }).maxVthreadExtent, 2);
  assert.is(openclGpuParams(undefined, { maxThreadsPerBlock: 1024 }, { maxWorkGroupSize: 256, localMemSize: 65536 }).maxThreadsPerBlock, 1024, 'an override is taken as given');
  assert.is(openclGpuParams('mali', { warpSize: 32 }).maxVthreadExtent, 1, 'Mali: fixed');

  const t = parseTarget('opencl');
  assert.is(t.text, 'opencl');
  assert.is(t.device, undefined);
  assert.ok(t.gpu!.maxThreadsPerBlock >= 1 && t.gpu!.maxThreadsPerBlock <= 256);
  assert.ok(t.gpu!.maxSharedMemoryPerBlock >= 1 && t.gpu!.maxSharedMemoryPerBlock <= 49152);
  assert.is(t.gpu!.warpSize, 1);
  assert.is(t.vectorLanes, 4);
});

test('hardware parameter options: normalised order, part of the text, every one overrides', () => {
  const all = parseTarget('opencl  -vector_unit_bytes=32 -thread_warp_size=32 -max_vthread_extent=4 -max_threads_per_block=1024 ' +
    '-max_shared_memory_per_block=65536 -max_local_memory_per_block=4096 -cache_line_bytes=128 -device=mali');
  assert.is(all.text, 'opencl -device=mali -cache_line_bytes=128 -max_local_memory_per_block=4096 -max_shared_memory_per_block=65536 ' +
    '-max_threads_per_block=1024 -max_vthread_extent=4 -thread_warp_size=32 -vector_unit_bytes=32');
  assert.equal(all.gpu, {
    maxSharedMemoryPerBlock: 65536, maxLocalMemoryPerBlock: 4096, maxThreadsPerBlock: 1024,
    maxVthreadExtent: 4, warpSize: 32, vectorUnitBytes: 32, cacheLineBytes: 128,
  });
  assert.is(all.vectorLanes, 8);
  assert.is(parseTarget(all.text).text, all.text, 'normalising is idempotent');
  assert.is(parseTarget('opencl -thread_warp_size=32 -max_threads_per_block=128').text, parseTarget('opencl -max_threads_per_block=128 -thread_warp_size=32').text);
  const both = parseTarget('opencl -max_threads_per_block=64 -max_shared_memory_per_block=1024');
  assert.equal(both.gpu, { ...openclGpuParams(undefined), maxThreadsPerBlock: 64, maxSharedMemoryPerBlock: 1024 });
});

test('withHardwareParams: config hardwareParams give the text the same options on the command line give', () => {
  assert.is(withHardwareParams('opencl', { maxThreadsPerBlock: 128 }), parseTarget('opencl -max_threads_per_block=128').text);
  assert.is(withHardwareParams('opencl  -device=mali', { warpSize: 4, maxThreadsPerBlock: 128 }), 'opencl -device=mali -max_threads_per_block=128 -thread_warp_size=4');
  assert.is(withHardwareParams('opencl -thread_warp_size=4', { maxThreadsPerBlock: 128 }), parseTarget('opencl -max_threads_per_block=128 -thread_warp_size=4').text);
  assert.is(withHardwareParams('llvm  -mcpu=native', undefined), 'llvm  -mcpu=native', 'no parameters: the string as given');
  assert.is(withHardwareParams('opencl -device=mali', {}), 'opencl -device=mali');
  const at = 'targets.gpu.hardwareParams';
  refuses(() => withHardwareParams('llvm', { warpSize: 4 }, at), /^targets\.gpu\.hardwareParams: hardware parameters apply to GPU targets \(opencl, cuda\); "llvm" is a CPU target$/, 'llvm');
  refuses(() => withHardwareParams('opencl -thread_warp_size=4', { warpSize: 8 }, at), /^targets\.gpu\.hardwareParams\.warpSize: the target string "opencl -thread_warp_size=4" gives -thread_warp_size already; give it once$/, 'twice');
  refuses(() => withHardwareParams('opencl', { vectorUnitBytes: 12 }, at), /^targets\.gpu\.hardwareParams\.vectorUnitBytes: expected a power of two from 4 to 256, got 12$/, 'bad value');
  refuses(() => withHardwareParams('opencl', { maxThreadsPerBlock: 1.5 }, at), /^targets\.gpu\.hardwareParams\.maxThreadsPerBlock: expected an integer from 1 to 16384, got 1\.5$/, 'fraction');
  refuses(() => withHardwareParams('opencl -device=nosuch', { warpSize: 1 }, at), /^targets\.gpu\.target: unknown OpenCL device/, 'bad target');
});

const device = (name: string, over: Partial<OpenclDevice> = {}): OpenclDevice => ({
  platform: 'Portable Computing Language', platformVendor: 'The pocl project', platformVersion: 'OpenCL 3.0 PoCL 3.1', device: name,
  deviceVendor: 'AuthenticAMD', deviceVersion: 'OpenCL 3.0 PoCL', driverVersion: '3.1', type: 'cpu', computeUnits: 4, maxWorkGroupSize: 4096,
  maxWorkItemSizes: [4096, 4096, 4096], localMemSize: 1 << 20, globalMemSize: 1 << 30, preferredVectorWidthFloat: 8, ...over,
});
const found = (d: OpenclDevice): OpenclProbe => () => ({ device: d });

test('the fingerprint of an OpenCL target names the platform and device, and the target string; not the host string', () => {
  const t = parseTarget('opencl');
  const a = hardwareFingerprint(t, found(device('cpu-haswell-AMD EPYC 7763')));
  assert.match(a, /^[0-9a-f]{16}$/);
  assert.is(hardwareFingerprint(parseTarget(' opencl '), found(device('cpu-haswell-AMD EPYC 7763'))), a, 'stable');
  assert.is.not(hardwareFingerprint(t, found(device('Mali-G72'))), a, 'another device');
  assert.is.not(hardwareFingerprint(t, found(device('cpu-haswell-AMD EPYC 7763', { driverVersion: '4.0' }))), a, 'another driver');
  assert.is.not(hardwareFingerprint(t, found(device('cpu-haswell-AMD EPYC 7763', { platform: 'Intel(R) OpenCL' }))), a, 'another platform');
  assert.is(hardwareFingerprint(t, found(device('cpu-haswell-AMD EPYC 7763', { computeUnits: 64, maxWorkGroupSize: 1024 }))), a, 'limits are not identity');
  assert.is.not(hardwareFingerprint(parseTarget('opencl -device=mali'), found(device('cpu-haswell-AMD EPYC 7763'))), a, 'another target string');
  const cross = parseTarget('opencl', '--target', 'llvm -mtriple=aarch64-linux-gnu');
  assert.is(hardwareFingerprint(cross, found(device('cpu-haswell-AMD EPYC 7763'))), a, 'records tuned with the default host apply to a cross-host compile');

  const none: OpenclProbe = () => ({ error: 'no OpenCL platform' });
  const n = hardwareFingerprint(t, none);
  assert.is(hardwareFingerprint(t, () => ({ error: 'another reason' })), n, `no device: one marker (${NO_OPENCL_DEVICE}) whatever the reason`);
  assert.is.not(n, a);
  assert.is.not(hardwareFingerprint(parseTarget('llvm'), none), hardwareFingerprint(t, none), 'CPU and OpenCL targets never share a fingerprint');
});

test('the OpenCL device of this machine, where there is one', () => {
  const probe = openclDevice();
  if ('error' in probe) { skip('the OpenCL device of this machine', probe.error); return; }
  assert.ok(probe.device.platform.length > 0 && probe.device.device.length > 0);
  assert.is(openclDevice(), probe, 'asked once per process and device selection');
  const t = parseTarget('opencl');
  assert.is(hardwareFingerprint(t), hardwareFingerprint(t, found(probe.device)));
  assert.ok(t.gpu!.maxThreadsPerBlock <= Math.min(256, probe.device.maxWorkGroupSize));
});

test('cuda -arch=sm_XX: TVM\'s CUDA parameters (warp 32, 8 vthreads, 1024 threads, 48 KiB shared, float4), registers per block by architecture', () => {
  const t = parseTarget('cuda  -arch=sm_80');
  assert.is(t.text, 'cuda -arch=sm_80');
  assert.is(t.kind, 'cuda');
  assert.ok(isGpu(t));
  assert.equal(gpuParams(t), { ...CUDA_GPU_PARAMS });
  assert.equal(gpuParams(t), {
    maxSharedMemoryPerBlock: 49152, maxLocalMemoryPerBlock: 2147483647, maxThreadsPerBlock: 1024, maxVthreadExtent: 8,
    warpSize: 32, vectorUnitBytes: 16, cacheLineBytes: 64,
  });
  assert.is(t.vectorLanes, 4, 'float4');
  assert.equal(t.cuda, { arch: 'sm_80', maxRegistersPerBlock: 65536, maxRegistersPerThread: 255 });
  assert.is(parseTarget('cuda -arch=sm_62').cuda!.maxRegistersPerBlock, 32768, 'Jetson TX2: 32 Ki registers per block');
  assert.is(parseTarget('cuda -arch=sm_90a').cuda!.arch, 'sm_90a', 'arch-specific variants are kept');
  assert.is(t.host!.text, 'llvm', 'host: this machine unless given');
  const over = parseTarget('cuda -max_registers_per_block=32768 -thread_warp_size=16 -arch=sm_90 -max_shared_memory_per_block=16384');
  assert.is(over.text, 'cuda -arch=sm_90 -max_shared_memory_per_block=16384 -thread_warp_size=16 -max_registers_per_block=32768', 'normalised order');
  assert.is(over.gpu!.maxVthreadExtent, 4, 'warp / 4 vthreads');
  assert.is(over.gpu!.maxSharedMemoryPerBlock, 16384);
  assert.is(over.cuda!.maxRegistersPerBlock, 32768);
  assert.is(withHardwareParams('cuda -arch=sm_80', { maxThreadsPerBlock: 256 }), 'cuda -arch=sm_80 -max_threads_per_block=256', 'config hardwareParams, as for opencl');
  const cross = parseTarget('cuda -arch=sm_87', '--target', 'llvm -mtriple=aarch64-linux-gnu');
  assert.is(cross.ccPrefix, 'aarch64-linux-gnu-', 'a Jetson host cross-compiles the host library');
  refuses(() => checkRunsHere(cross, 'benchmark'), /^--host: benchmark runs on this machine and its CUDA device/, 'cross host benchmark');
});

test('cuda without -arch: the local GPU\'s (nvidia-smi), else one line saying -arch is required, naming the field', () => {
  const local = cudaDeviceSync();
  if ('device' in local) {
    assert.is(parseTarget('cuda').text, `cuda -arch=${local.device.arch}`);
    skip('cuda without -arch and without a GPU', 'this machine has one');
    return;
  }
  refuses(() => parseTarget('cuda', '--target'), /^--target: "cuda" needs -arch=sm_XX \(e\.g\. "cuda -arch=sm_80"\): it defaults to this machine's GPU, and there is none \(/, '--target');
  refuses(() => parseTarget('cuda -max_threads_per_block=256', 'targets.gpu.target'), /^targets\.gpu\.target: "cuda -max_threads_per_block=256" needs -arch=sm_XX/, 'config');
});

test('nvidia-smi output: name, driver and compute capability per GPU (names may hold commas)', () => {
  assert.equal(parseNvidiaSmi('NVIDIA H100 80GB HBM3, 550.54.15, 9.0\nNVIDIA A100-SXM4-40GB, 550.54.15, 8.0\n\n'), [
    { name: 'NVIDIA H100 80GB HBM3', driverVersion: '550.54.15', arch: 'sm_90', index: 0 },
    { name: 'NVIDIA A100-SXM4-40GB', driverVersion: '550.54.15', arch: 'sm_80', index: 1 },
  ]);
  assert.equal(parseNvidiaSmi('Quadro, odd name, 535.1, 7.5'), [{ name: 'Quadro, odd name', driverVersion: '535.1', arch: 'sm_75', index: 0 }]);
  assert.equal(parseNvidiaSmi('No devices were found'), []);
});

test('TT_CUDA_DEVICE: digits, default 0; anything else is refused naming the variable, as tt_cuda.c refuses it', () => {
  assert.is(cudaDeviceIndex({}), 0);
  assert.is(cudaDeviceIndex({ TT_CUDA_DEVICE: '' }), 0);
  assert.is(cudaDeviceIndex({ TT_CUDA_DEVICE: '2' }), 2);
  for (const bad of ['1x', '-1', ' 1', 'abc', '1234567']) {
    assert.equal(cudaDeviceIndex({ TT_CUDA_DEVICE: bad }), { error: `TT_CUDA_DEVICE='${bad}': expected a device index (0, 1, ...)` }, bad);
  }
});

test('the fingerprint of a CUDA target names the GPU and driver where nvidia-smi finds one, else the arch', () => {
  const t = parseTarget('cuda -arch=sm_80');
  const gpu = (name: string, driverVersion = '550.54.15'): CudaProbe => () => ({ device: { name, driverVersion, arch: 'sm_80', index: 0 } });
  const a = hardwareFingerprint(t, undefined, gpu('NVIDIA A100-SXM4-40GB'));
  assert.match(a, /^[0-9a-f]{16}$/);
  assert.is(hardwareFingerprint(parseTarget('cuda   -arch=sm_80'), undefined, gpu('NVIDIA A100-SXM4-40GB')), a, 'stable');
  assert.is.not(hardwareFingerprint(t, undefined, gpu('NVIDIA A100-SXM4-80GB')), a, 'another GPU');
  assert.is.not(hardwareFingerprint(t, undefined, gpu('NVIDIA A100-SXM4-40GB', '560.1')), a, 'another driver');
  const none = hardwareFingerprint(t, undefined, () => ({ error: 'nvidia-smi not found' }));
  assert.is(hardwareFingerprint(t, undefined, () => ({ error: 'another reason' })), none, `no GPU: one marker (${NO_CUDA_DEVICE}) whatever the reason`);
  assert.is.not(none, a);
  assert.is.not(hardwareFingerprint(parseTarget('cuda -arch=sm_90'), undefined, () => ({ error: 'x' })), none, 'no GPU: the arch tells targets apart');
});

test.run();
