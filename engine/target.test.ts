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
} from './target';

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
    ['cuda', /'cuda' is planned but not built yet: issue 11/],
    ['vulkan', /unsupported target kind 'vulkan'; expected 'llvm' .* or 'opencl' \(e\.g\. "opencl -device=mali"\)/],
    ['llvm -max_threads_per_block=64', /'-max_threads_per_block' in "llvm -max_threads_per_block=64" is a hardware parameter of GPU targets \(opencl\)/],
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

  refuses(() => parseTarget('llvm -mcpu=native', '--target', 'llvm'), /^--host: a host applies to GPU targets \(opencl\) only; the CPU target "llvm -mcpu=native" is its own host/, 'llvm with a host');
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
  refuses(() => withHardwareParams('llvm', { warpSize: 4 }, at), /^targets\.gpu\.hardwareParams: hardware parameters apply to GPU targets \(opencl\); "llvm" is a CPU target$/, 'llvm');
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

test.run();
