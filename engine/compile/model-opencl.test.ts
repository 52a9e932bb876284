// Whole networks on OpenCL targets: compile writes model.so (a C host library with the
// OpenCL source of every kernel embedded, the runtime linked in), params.bin, kernels.cl and
// a manifest with the host and each kernel's launches; the model runs through tt_bench on the
// local OpenCL device (PoCL's CPU device in CI) and agrees with the reference evaluator
// (within 1e-4 of the largest output, same top-1 class); `opencl -device=mali` with an
// aarch64 host gives an aarch64 model.so whose kernels, rebuilt with a host library for
// this machine, build and run on the local device; benchmark refuses the aarch64 model
// here; a tuned schedule that does not lower for the device falls back to the default one.
// Skipped, with skip() saying why, without an OpenCL device or the aarch64 cross compiler.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cSourceLiteral } from '../codegen/opencl-host';
import { loadOnnx } from '../frontend/onnx/import';
import { OnnxModelBuilder } from '../frontend/onnx/model-builder';
import { floatTensorProto } from '../frontend/onnx/tensor';
import { getNetwork } from '../frontend/networks';
import { writeOnnxFile } from '../frontend/onnx/export';
import { withoutSoftmax } from '../compare/compare';
import { extractTasks } from '../graph/extract';
import { runGraph } from '../graph/run';
import { runBench } from '../native/bench';
import { findCompiler, nativeIncludeDir, OPENCL_RUNTIME_LIBS, openclRuntimeObject } from '../native/build';
import { OPENCL_HEADERS_MISSING, openclAvailable } from '../native/opencl';
import { outputFileName } from '../runtime/abi';
import { readFloat32File, writeFloat32File } from '../runtime/rawfile';
import { uniform } from '../runtime/random';
import { defaultSchedule } from '../schedule/defaults';
import { skip } from '../skip.fixture';
import { parseTarget } from '../target';
import { readManifest } from './manifest';
import { compileModel } from './model';
import { argmax, cli } from './gpu-model.fixture';

const work = mkdtempSync(path.join(tmpdir(), 'tt-opencl-model-test-'));
const cache = path.join(work, 'cache');
const IMAGE = 32;
const CROSS_CC = 'aarch64-linux-gnu-gcc';
const EM_AARCH64 = 183;

// MobileNet with random weights and batch-norm statistics, its logits as the output (so that
// the top-1 class is a clear winner), as an ONNX file.
const net = getNetwork('mobilenet', { imageSize: IMAGE, randomStats: true, seed: 7 });
const onnx = path.join(work, 'mobilenet.onnx');
writeOnnxFile(onnx, withoutSoftmax(net.graph));
const reference = loadOnnx(onnx);

/** Runs `library` once through tt_bench on a seeded input and checks it against the reference evaluator. */
async function runAndCompare(library: string, params: string, what: string): Promise<void> {
  const [{ name, shape }] = reference.inputs;
  const x = uniform(shape.reduce((a, b) => a * b, 1), 11, 0);
  const input = path.join(work, `${what}.in.bin`);
  await writeFloat32File(input, x);
  const saved = path.join(work, `${what}.out`);
  await runBench({ model: library, params, repeat: 1, number: 1, minRepeatMs: 0, threads: 1, inputs: { [name]: input }, saveOutputs: saved });
  const got = await readFloat32File(path.join(saved, `${outputFileName(reference.outputs[0])}.bin`));
  const [ref] = runGraph(reference.graph, new Map([[name, x]]));
  assert.is(got.length, ref.length);
  let err = 0, peak = 0;
  for (let i = 0; i < ref.length; i++) { err = Math.max(err, Math.abs(got[i] - ref[i])); peak = Math.max(peak, Math.abs(ref[i])); }
  assert.ok(err <= 1e-4 * peak, `${what}: max abs error ${err} > 1e-4 x ${peak}`);
  assert.is(argmax(got), argmax(ref), `${what}: top-1 class`);
}

test('mobilenet compiled for opencl: model.so, params, kernels.cl and a manifest with launches; it runs on the OpenCL device and matches the reference', async () => {
  if (openclAvailable() === OPENCL_HEADERS_MISSING) { skip('mobilenet compiled for opencl', OPENCL_HEADERS_MISSING); return; }
  const out = path.join(work, 'mobilenet-opencl');
  const r = await cli('compile', onnx, '--target', 'opencl', '--out', out, '--cache', cache);
  assert.is(r.code, 0, r.err);
  assert.match(r.out, /rendered \d+ OpenCL kernel program\(s\), \d+ launches/);
  const m = readManifest(out);
  assert.is(m.target, 'opencl');
  assert.is(m.host, 'llvm');
  assert.is(m.opencl_source, 'kernels.cl');
  assert.ok(m.kernels.every((k) => k.schedule === 'default' && k.launches !== undefined && k.launches.length > 0));
  for (const k of m.kernels) {
    for (const l of k.launches!) {
      assert.ok(l.kernel.startsWith(`${k.symbol}_k`), l.kernel);
      assert.ok(l.global.every((g, d) => g % l.local[d] === 0), 'global sizes are whole work-groups');
    }
  }
  // kernels.cl is the source model.so embeds, every launched kernel defined once.
  const source = readFileSync(path.join(out, 'kernels.cl'), 'utf8');
  assert.ok(readFileSync(path.join(out, 'model.c'), 'utf8').includes(cSourceLiteral(source)), 'model.c embeds kernels.cl');
  for (const l of m.kernels.flatMap((k) => k.launches!)) assert.is(source.split(` void ${l.kernel}(`).length, 2, l.kernel);

  const why = openclAvailable();
  if (why !== undefined) { skip('mobilenet on opencl: running the compiled model', why); return; }
  await runAndCompare(path.join(out, 'model.so'), path.join(out, 'params.bin'), 'opencl');
});

test('opencl -device=mali with an aarch64 host: an aarch64 model.so that benchmark refuses here; its kernels build and run on the local device', async () => {
  try {
    execFileSync(CROSS_CC, ['--version'], { stdio: 'ignore' });
  } catch {
    skip('mali model with an aarch64 host', `${CROSS_CC} not installed (Debian: apt-get install gcc-aarch64-linux-gnu)`);
    return;
  }
  if (openclAvailable() === OPENCL_HEADERS_MISSING) { skip('mali model with an aarch64 host', OPENCL_HEADERS_MISSING); return; }
  const out = path.join(work, 'mobilenet-mali');
  const host = 'llvm -mtriple=aarch64-linux-gnu';
  const r = await cli('compile', onnx, '--target', 'opencl -device=mali', '--host', host, '--out', out, '--cache', cache);
  assert.is(r.code, 0, r.err);
  const elf = readFileSync(path.join(out, 'model.so'));
  assert.equal([...elf.subarray(0, 4)], [0x7f, 0x45, 0x4c, 0x46], 'an ELF file');
  assert.is(elf.readUInt16LE(18), EM_AARCH64, 'machine: aarch64');
  const m = readManifest(out);
  assert.is(m.target, 'opencl -device=mali');
  assert.is(m.host, host);
  assert.ok(m.kernels.flatMap((k) => k.launches!).every((l) => l.local[0] * l.local[1] * l.local[2] <= 256), "within Mali's 256 threads per block");

  const refused = await cli('benchmark', out);
  assert.is(refused.code, 2);
  assert.match(refused.err, /manifest\.json host: benchmark runs on this machine .*"llvm -mtriple=aarch64-linux-gnu" is another architecture/);

  const why = openclAvailable();
  if (why !== undefined) { skip('mali model: its kernels on the local OpenCL device', why); return; }
  // The same model.c (its embedded kernels, tables and ABI), built for this machine.
  const compiler = await findCompiler();
  const local = path.join(work, 'mali-here.so');
  execFileSync(compiler.command, [
    ...compiler.args, '-O1', '-std=gnu11', '-fPIC', '-shared', `-I${nativeIncludeDir()}`, path.join(out, 'model.c'),
    await openclRuntimeObject(compiler), '-o', local, ...OPENCL_RUNTIME_LIBS,
  ], { stdio: 'pipe' });
  await runAndCompare(local, path.join(out, 'params.bin'), 'mali');
});

test('a tuned schedule that does not lower for the device falls back to the default schedule with a warning; one that lowers is used', async () => {
  if (openclAvailable() === OPENCL_HEADERS_MISSING) { skip('opencl tuned-schedule fallback', OPENCL_HEADERS_MISSING); return; }
  const onnx = path.join(work, 'conv.onnx');
  writeFileSync(onnx, new OnnxModelBuilder().input('x', [1, 8, 10, 10]).float('w', [16, 8, 3, 3], uniform(16 * 8 * 9, 5, 0))
    .node('Conv', ['x', 'w'], ['c'], { pads: [1, 1, 1, 1], kernel_shape: [3, 3] }).node('Relu', ['c'], ['y']).output('y').build());
  const graph = loadOnnx(onnx).graph;
  const conv = extractTasks(graph).find((t) => t.desc.startsWith('conv2d'))!;
  const target = parseTarget('opencl -max_threads_per_block=32');
  const compile = async (steps: ReturnType<typeof defaultSchedule>, dir: string) => {
    const warnings: string[] = [];
    await compileModel({
      name: 'conv', graph, target, outDir: path.join(work, dir), cacheDir: cache, warn: (w) => warnings.push(w),
      schedules: new Map([[conv.key, { steps, source: 'conv.jsonl:1' }]]),
    });
    return { warnings, kernels: readManifest(path.join(work, dir)).kernels.filter((k) => k.key === conv.key) };
  };
  // A CPU schedule binds nothing.
  const cpu = await compile(defaultSchedule(conv.dag, { vectorLanes: 4 }), 'fallback');
  assert.is(cpu.warnings.length, 1);
  assert.match(cpu.warnings[0], /the tuned schedule of conv2d.* from conv\.jsonl:1 does not lower for "opencl -max_threads_per_block=32" \(.*no loop is bound to blockIdx or threadIdx.*\); its task uses the default schedule/);
  assert.equal(cpu.kernels.map((k) => k.schedule), ['default']);
  // 64 threads per block, more than the target's 32.
  const wide = await compile(defaultSchedule(conv.dag, { vectorLanes: 4, gpu: { maxThreadsPerBlock: 64 } }), 'too-wide');
  assert.match(wide.warnings[0], /64 threads per block, more than the device's 32/);
  const fits = await compile(defaultSchedule(conv.dag, { vectorLanes: 4, gpu: { maxThreadsPerBlock: 16 } }), 'tuned');
  assert.equal(fits.warnings, []);
  assert.equal(fits.kernels.map((k) => [k.schedule, k.source]), [['tuned', 'conv.jsonl:1']]);
  assert.ok(fits.kernels[0].launches!.every((l) => l.local[0] === 16));
  assert.ok(existsSync(path.join(work, 'tuned', 'kernels.cl')));
});

test('outputs no kernel computes (an input passed through, a Constant, a value listed twice, an input): one copy launch each; every output exact on the device', async () => {
  if (openclAvailable() === OPENCL_HEADERS_MISSING) { skip('output copies for opencl', OPENCL_HEADERS_MISSING); return; }
  const b = new OnnxModelBuilder(13).input('x', [2, 3, 4]);
  for (const o of ['id', 'k', 'r', 'r', 'x']) b.output(o);
  b.node('Identity', ['x'], ['id']).node('Constant', [], ['k'], { value: { tensor: floatTensorProto('k', [2, 2], Float32Array.from([1.5, -2, 0.25, 8])) } })
    .node('Relu', ['x'], ['r']);
  const file = path.join(work, 'passthrough.onnx');
  writeFileSync(file, b.build());
  const out = path.join(work, 'passthrough-opencl');
  const r = await cli('compile', file, '--target', 'opencl', '--out', out, '--cache', cache);
  assert.is(r.code, 0, r.err);
  // Relu, and the copies of id, k, the second r and x (three of one shape share a program).
  assert.match(r.out, /rendered 3 OpenCL kernel program\(s\), 5 launches/);
  const why = openclAvailable();
  if (why !== undefined) { skip('output copies on opencl: running the compiled model', why); return; }
  const x = uniform(24, 11, 0);
  const input = path.join(work, 'passthrough.in.bin');
  await writeFloat32File(input, x);
  const saved = path.join(work, 'passthrough.out');
  await runBench({ model: path.join(out, 'model.so'), params: path.join(out, 'params.bin'), repeat: 1, number: 1, minRepeatMs: 0, threads: 1, inputs: { x: input }, saveOutputs: saved });
  const want = runGraph(loadOnnx(file).graph, new Map([['x', x]]));
  for (const [k, name] of ['id', 'k', 'r', 'r', 'x'].entries()) {
    assert.equal([...await readFloat32File(path.join(saved, `${outputFileName(name)}.bin`))], [...want[k]], `output ${k} (${name})`);
  }
});

test.after(() => rmSync(work, { recursive: true, force: true }));
test.run();
