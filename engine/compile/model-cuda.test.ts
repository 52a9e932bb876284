// Whole networks on CUDA targets, compiled here without a GPU: `tensortune compile resnet-18
// --target "cuda -arch=sm_80"` writes model.so (a C host library embedding one cubin, the CUDA
// runtime linked in), params.bin, kernels.cu, kernels.sm_80.cubin and a manifest with the host
// and each kernel's launches; a small network compiles for sm_90 too. On a machine with a CUDA
// GPU the model runs through tt_bench and agrees with the reference evaluator (within 1e-4 of
// the largest output, same top-1 class); without one, benchmark fails in one line naming the
// missing driver. A tuned schedule whose kernel ptxas finds over the device's registers per
// block falls back to the default schedule with a warning; a default kernel over them is a
// one-line error; with an aarch64 host (a Jetson) model.so is an aarch64 library that
// benchmark refuses here; without nvcc, compile says so in one line. Skipped without nvcc.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { withoutSoftmax } from '../compare/compare';
import { UserError } from '../errors';
import { getNetwork } from '../frontend/networks';
import { writeOnnxFile } from '../frontend/onnx/export';
import { loadOnnx } from '../frontend/onnx/import';
import { OnnxModelBuilder } from '../frontend/onnx/model-builder';
import { floatTensorProto } from '../frontend/onnx/tensor';
import { extractTasks } from '../graph/extract';
import { runGraph } from '../graph/run';
import { runBench } from '../native/bench';
import { cudaTestTarget } from '../native/cuda-target.fixture';
import { nvccMissing } from '../native/nvcc';
import { outputFileName } from '../runtime/abi';
import { readFloat32File, writeFloat32File } from '../runtime/rawfile';
import { uniform } from '../runtime/random';
import { defaultSchedule } from '../schedule/defaults';
import { skip } from '../skip.fixture';
import { parseTarget } from '../target';
import { readManifest } from './manifest';
import { compileModel } from './model';
import { argmax, cli } from './gpu-model.fixture';

const work = mkdtempSync(path.join(tmpdir(), 'tt-cuda-model-test-'));
const cache = path.join(work, 'cache');
/** ELF e_machine of a cubin. */
const EM_CUDA = 190;
/** What the runtime says when the driver cannot be opened or initialised (tt_cuda.c). */
const NO_DRIVER = /(no CUDA driver: .*libcuda\.so\.1|cuInit failed: )/;

test('resnet-18 compiled for cuda (sm_80, or the GPU\'s architecture where there is one): model.so with one embedded cubin, kernels.cu, the cubin, a manifest with launches; it runs on the GPU', async () => {
  const why = nvccMissing();
  if (why) { skip('resnet-18 for cuda', why); return; }
  const out = path.join(work, 'resnet-18-cuda');
  const target = cudaTestTarget();
  const arch = target.split('=')[1];
  const r = await cli('compile', 'resnet-18', '--target', target, '--out', out, '--cache', cache);
  assert.is(r.code, 0, r.err);
  assert.match(r.out, /compiled \d+ CUDA kernel program\(s\) into one cubin \(\d+ launches/);
  const m = readManifest(out);
  assert.is(m.target, target);
  assert.is(m.host, 'llvm');
  assert.is(m.cuda_source, 'kernels.cu');
  assert.is(m.cubin, `kernels.${arch}.cubin`);
  assert.ok(m.kernels.every((k) => k.schedule === 'default' && k.launches !== undefined && k.launches.length > 0));
  const source = readFileSync(path.join(out, 'kernels.cu'), 'utf8');
  for (const k of m.kernels) {
    for (const l of k.launches!) {
      assert.ok(l.kernel.startsWith(`${k.symbol}_k`), l.kernel);
      assert.ok(l.global.every((g, d) => g % l.local[d] === 0), 'whole blocks');
      assert.is(source.split(` ${l.kernel}(`).length, 2, `${l.kernel} defined once in kernels.cu`);
    }
  }
  const cubin = readFileSync(path.join(out, `kernels.${arch}.cubin`));
  assert.equal([...cubin.subarray(0, 4)], [0x7f, 0x45, 0x4c, 0x46], 'the cubin is an ELF file');
  assert.is(cubin.readUInt16LE(18), EM_CUDA, 'machine: CUDA');
  const modelC = readFileSync(path.join(out, 'model.c'), 'utf8');
  assert.match(modelC, new RegExp(`static const unsigned char TT_IMAGE\\[${cubin.length}\\] __attribute__\\(\\(aligned\\(8\\)\\)\\) = \\{\\n  ${[...cubin.subarray(0, 24)].join(',')},`), 'model.c embeds that cubin');
  const so = readFileSync(path.join(out, 'model.so'));
  assert.is(so.readUInt16LE(18), 62, 'model.so is a host (x86-64) library'); // EM_X86_64

  const bench = await cli('benchmark', out, '--repeat', '1');
  if (bench.code !== 0 && NO_DRIVER.test(bench.err)) {
    assert.is(bench.err.trim().split('\n').length, 1, `one line: ${bench.err}`);
    skip('resnet-18 on a CUDA GPU', bench.err.trim());
    return;
  }
  assert.is(bench.code, 0, bench.err);
});

test('a network compiled for sm_90 (or the GPU\'s architecture) runs, where there is a GPU, and matches the reference (1e-4 of the largest logit, same top-1)', async () => {
  const why = nvccMissing();
  if (why) { skip('mobilenet for cuda sm_90', why); return; }
  const target = cudaTestTarget('sm_90');
  const net = getNetwork('mobilenet', { imageSize: 32, randomStats: true, seed: 7 });
  const onnx = path.join(work, 'mobilenet.onnx');
  writeOnnxFile(onnx, withoutSoftmax(net.graph));
  const out = path.join(work, 'mobilenet-sm90');
  const r = await cli('compile', onnx, '--target', target, '--out', out, '--cache', cache);
  assert.is(r.code, 0, r.err);
  assert.is(readManifest(out).cubin, `kernels.${target.split('=')[1]}.cubin`);
  // Compiling again into the same folder replaces it: kernels.cu and the cubin are compile's own files.
  const again = await cli('compile', onnx, '--target', target, '--out', out, '--cache', cache);
  assert.is(again.code, 0, again.err);
  const reference = loadOnnx(onnx);
  const [{ name, shape }] = reference.inputs;
  const x = uniform(shape.reduce((a, b) => a * b, 1), 11, 0);
  const input = path.join(work, 'in.bin');
  await writeFloat32File(input, x);
  const saved = path.join(work, 'sm90.out');
  try {
    await runBench({ model: path.join(out, 'model.so'), params: path.join(out, 'params.bin'), repeat: 1, number: 1, minRepeatMs: 0, threads: 1, inputs: { [name]: input }, saveOutputs: saved });
  } catch (e) {
    if (e instanceof Error && NO_DRIVER.test(e.message)) { skip('mobilenet on a CUDA GPU', e.message); return; }
    throw e;
  }
  const got = await readFloat32File(path.join(saved, `${outputFileName(reference.outputs[0])}.bin`));
  const [ref] = runGraph(reference.graph, new Map([[name, x]]));
  let err = 0, peak = 0;
  for (let i = 0; i < ref.length; i++) { err = Math.max(err, Math.abs(got[i] - ref[i])); peak = Math.max(peak, Math.abs(ref[i])); }
  assert.ok(err <= 1e-4 * peak, `max abs error ${err} > 1e-4 x ${peak}`);
  assert.is(argmax(got), argmax(ref), 'top-1 class');
});

test('ptxas over the device\'s registers per block: a tuned kernel falls back to the default with a warning; a default kernel is a one-line error', async () => {
  const why = nvccMissing();
  if (why) { skip('CUDA limits at compile', why); return; }
  const onnx = path.join(work, 'conv.onnx');
  writeFileSync(onnx, new OnnxModelBuilder().input('x', [1, 8, 10, 10]).float('w', [16, 8, 3, 3], uniform(16 * 8 * 9, 5, 0))
    .node('Conv', ['x', 'w'], ['c'], { pads: [1, 1, 1, 1], kernel_shape: [3, 3] }).node('Relu', ['c'], ['y']).output('y').build());
  const graph = loadOnnx(onnx).graph;
  const conv = extractTasks(graph).find((t) => t.desc.startsWith('conv2d'))!;
  // The default schedule (64 threads per block) with 1024 threads per block instead: more
  // than 4096 registers per block allow whatever the kernel (at least 2 registers each).
  const dflt = defaultSchedule(conv.dag, { vectorLanes: 4, gpu: { maxThreadsPerBlock: 1024 } });
  const wide = dflt.map((st) => (st.s === 'split' && st.lengths.length === 1 && st.lengths[0] === 64 ? { ...st, lengths: [1024] } : st));
  assert.not.equal(wide, dflt, 'a split of 64 threads was widened');
  const compile = async (target: string, dir: string) => {
    const warnings: string[] = [];
    await compileModel({
      name: 'conv', graph, target: parseTarget(target), outDir: path.join(work, dir), cacheDir: cache, warn: (w) => warnings.push(w),
      schedules: new Map([[conv.key, { steps: wide, source: 'conv.jsonl:1' }]]),
    });
    return { warnings, kernels: readManifest(path.join(work, dir)).kernels.filter((k) => k.key === conv.key) };
  };
  const fits = await compile('cuda -arch=sm_80', 'fits');
  assert.equal(fits.warnings, []);
  assert.equal(fits.kernels.map((k) => k.schedule), ['tuned']);
  const small = await compile('cuda -arch=sm_80 -max_registers_per_block=4096', 'small');
  assert.is(small.warnings.length, 1, small.warnings.join('\n'));
  assert.match(small.warnings[0], /^the tuned schedule of conv2d.* from conv\.jsonl:1 is over "cuda -arch=sm_80 -max_registers_per_block=4096"'s limits once compiled \(tt_k_[0-9a-f]+_k\d+: \d+ registers × 1024 threads = \d+ registers per block, more than the device's 4096 \(ptxas: /);
  assert.equal(small.kernels.map((k) => k.schedule), ['default']);
  try {
    await compile('cuda -arch=sm_80 -max_registers_per_block=256', 'tiny');
    assert.unreachable('compiled over the limits');
  } catch (e) {
    assert.instance(e, UserError);
    assert.match((e as Error).message, /^a default CUDA kernel of conv is over cuda -arch=sm_80 -max_registers_per_block=256's limits: tt_k_[0-9a-f]+_k0: \d+ registers × \d+ threads/);
  }
});

test('cuda -arch=sm_87 with an aarch64 host (a Jetson): an aarch64 model.so around the cubin, which benchmark refuses here', async () => {
  const why = nvccMissing();
  if (why) { skip('cuda with an aarch64 host', why); return; }
  try {
    execFileSync('aarch64-linux-gnu-gcc', ['--version'], { stdio: 'ignore' });
  } catch {
    skip('cuda with an aarch64 host', 'aarch64-linux-gnu-gcc not installed (Debian: apt-get install gcc-aarch64-linux-gnu)');
    return;
  }
  const net = getNetwork('mobilenet', { imageSize: 32, seed: 7 });
  const onnx = path.join(work, 'mobilenet-jetson.onnx');
  writeOnnxFile(onnx, net.graph);
  const out = path.join(work, 'jetson');
  const host = 'llvm -mtriple=aarch64-linux-gnu';
  const r = await cli('compile', onnx, '--target', 'cuda -arch=sm_87', '--host', host, '--out', out, '--cache', cache);
  assert.is(r.code, 0, r.err);
  assert.is(readFileSync(path.join(out, 'model.so')).readUInt16LE(18), 183, 'model.so: aarch64'); // EM_AARCH64
  assert.is(readFileSync(path.join(out, 'kernels.sm_87.cubin')).readUInt16LE(18), EM_CUDA);
  const m = readManifest(out);
  assert.is(m.host, host);
  const refused = await cli('benchmark', out);
  assert.is(refused.code, 2);
  assert.match(refused.err, /manifest\.json host: benchmark runs on this machine and its CUDA device, so the host must be this machine; "llvm -mtriple=aarch64-linux-gnu" is another architecture/);
});

test('without nvcc, a cuda compile says so in one line', async () => {
  const saved = { PATH: process.env.PATH, CUDA_HOME: process.env.CUDA_HOME };
  process.env.PATH = '/nonexistent';
  delete process.env.CUDA_HOME;
  try {
    const r = await cli('compile', 'resnet-18', '--target', 'cuda -arch=sm_80', '--out', path.join(work, 'no-nvcc'), '--cache', cache);
    assert.is(r.code, 2);
    assert.match(r.err, /cuda targets need nvcc \(the CUDA toolkit\) to compile kernels: none on PATH and \$CUDA_HOME is not set/);
    assert.is(r.err.trim().split('\n').length, 1, r.err);
  } finally {
    process.env.PATH = saved.PATH;
    if (saved.CUDA_HOME !== undefined) process.env.CUDA_HOME = saved.CUDA_HOME;
  }
});

test('outputs no kernel computes (an input passed through, a Constant, a value listed twice, an input): one copy launch each; on a GPU every output exact', async () => {
  const why = nvccMissing();
  if (why) { skip('output copies for cuda', why); return; }
  const b = new OnnxModelBuilder(13).input('x', [2, 3, 4]);
  for (const o of ['id', 'k', 'r', 'r', 'x']) b.output(o);
  b.node('Identity', ['x'], ['id']).node('Constant', [], ['k'], { value: { tensor: floatTensorProto('k', [2, 2], Float32Array.from([1.5, -2, 0.25, 8])) } })
    .node('Relu', ['x'], ['r']);
  const onnx = path.join(work, 'passthrough.onnx');
  writeFileSync(onnx, b.build());
  const out = path.join(work, 'passthrough-cuda');
  const r = await cli('compile', onnx, '--target', cudaTestTarget(), '--out', out, '--cache', cache);
  assert.is(r.code, 0, r.err);
  // Relu, and the copies of id, k, the second r and x (three of one shape share a program).
  assert.match(r.out, /compiled 3 CUDA kernel program\(s\) into one cubin \(5 launches\)/);
  const x = uniform(24, 11, 0);
  const input = path.join(work, 'passthrough.in.bin');
  await writeFloat32File(input, x);
  const saved = path.join(work, 'passthrough.out');
  try {
    await runBench({ model: path.join(out, 'model.so'), params: path.join(out, 'params.bin'), repeat: 1, number: 1, minRepeatMs: 0, threads: 1, inputs: { x: input }, saveOutputs: saved });
  } catch (e) {
    if (e instanceof Error && NO_DRIVER.test(e.message)) { skip('output copies on a CUDA GPU', e.message); return; }
    throw e;
  }
  const want = runGraph(loadOnnx(onnx).graph, new Map([['x', x]]));
  for (const [k, name] of ['id', 'k', 'r', 'r', 'x'].entries()) {
    assert.equal([...await readFloat32File(path.join(saved, `${outputFileName(name)}.bin`))], [...want[k]], `output ${k} (${name})`);
  }
});

test.after(() => rmSync(work, { recursive: true, force: true }));
test.run();
