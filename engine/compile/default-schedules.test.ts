// Models that tripped the default schedule compile with it and match ONNX Runtime
// (|ours - ORT| <= 1e-4 + 1e-4 * |ORT| on every element):
//  - a MobileNetV3-style classifier (PaddleOCR's text-angle classifier's shape: 1x3x48x192,
//    convs followed by BatchNormalization, HardSwish as the operator and as x * HardSigmoid(x),
//    squeeze-excite GlobalAveragePool -> Conv 1x1 -> Relu -> Conv 1x1 -> HardSigmoid -> Mul):
//    its compile died with `ScheduleError: compute_at conv2d_nhwc: only a stage's single
//    consumer can hold it (read by T_add)`;
//  - a conv whose epilogue reads a sigmoid twice (y = s * k + s): the sigmoid stays at root
//    between the conv and the output, so the conv's tile cannot be held by the output.
// And when a default schedule does not lower, or its heuristics pick a step that does not
// apply, compile falls back to the plain schedule (every stage at root) with a warning, and
// still computes the right values (a tuned schedule that does not replay gives way to the
// default, with a warning); an engine error past that is one line naming the kernel (or the
// task, in tune), exit code 70.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { main } from '../cli';
import { openOrtSession, tryLoadOnnxRuntime } from '../compare/ort';
import { loadModel } from '../frontend/load';
import { OnnxModelBuilder } from '../frontend/onnx/model-builder';
import { extractTasks } from '../graph/extract';
import { runGraph } from '../graph/run';
import { runBench } from '../native/bench';
import { outputFileName } from '../runtime/abi';
import { readFloat32File, writeFloat32File } from '../runtime/rawfile';
import { uniform } from '../runtime/random';
import { ScheduleError, State } from '../schedule/state';
import type { Step } from '../schedule/steps';
import { skip } from '../skip.fixture';
import { parseTarget } from '../target';
import { INTERNAL_EXIT_CODE } from './internal-error';
import { readManifest } from './manifest';
import { compileModel } from './model';
import { compileNetwork } from '../app/compile';

const work = mkdtempSync(path.join(tmpdir(), 'tt-default-schedules-test-'));
const cacheDir = path.join(work, 'cache');
const ort = tryLoadOnnxRuntime();
const TOL = 1e-4;

/** A MobileNetV3-small-style classifier at opset 14, seeded weights. */
function mobilenetV3(): Uint8Array {
  const b = new OnnxModelBuilder(14).input('image', [1, 3, 48, 192]).output('logits');
  let seed = 100, k = 0, channels = 3;
  const w = (n: number, scale: number): Float32Array => uniform(n, seed++, 0).map((u) => (u * 2 - 1) * scale);
  /** Conv (no bias) + BatchNormalization, as exporters write them. */
  const convBn = (x: string, cout: number, ks: number, stride: number, depthwise = false): string => {
    const name = `conv${k++}`, cin = depthwise ? 1 : channels;
    b.float(`${name}.w`, [cout, cin, ks, ks], w(cout * cin * ks * ks, Math.sqrt(3 / (cin * ks * ks))));
    b.node('Conv', [x, `${name}.w`], [name], { kernel_shape: [ks, ks], strides: [stride, stride], pads: Array(4).fill(ks >> 1), group: depthwise ? cout : 1 });
    b.float(`${name}.g`, [cout], w(cout, 1).map((v) => 1 + 0.2 * v)).float(`${name}.b`, [cout], w(cout, 0.1));
    b.float(`${name}.m`, [cout], w(cout, 0.1)).float(`${name}.v`, [cout], w(cout, 1).map((v) => 1 + 0.5 * v));
    b.node('BatchNormalization', [name, `${name}.g`, `${name}.b`, `${name}.m`, `${name}.v`], [`${name}.bn`]);
    channels = cout;
    return `${name}.bn`;
  };
  const act = (x: string, kind: 'relu' | 'hswish' | 'hswish-mul'): string => {
    const y = `${x}.${kind}`;
    if (kind === 'relu') b.node('Relu', [x], [y]);
    else if (kind === 'hswish') b.node('HardSwish', [x], [y]);
    else {
      b.node('HardSigmoid', [x], [`${y}.gate`], { alpha: 1 / 6, beta: 0.5 });
      b.node('Mul', [x, `${y}.gate`], [y]);
    }
    return y;
  };
  const se = (x: string, mid: number): string => {
    const ch = channels;
    b.node('GlobalAveragePool', [x], [`${x}.gap`]);
    const name = `se${k++}`;
    b.float(`${name}.w1`, [mid, ch, 1, 1], w(mid * ch, Math.sqrt(3 / ch))).float(`${name}.b1`, [mid], w(mid, 0.1));
    b.float(`${name}.w2`, [ch, mid, 1, 1], w(ch * mid, Math.sqrt(3 / mid))).float(`${name}.b2`, [ch], w(ch, 0.1));
    b.node('Conv', [`${x}.gap`, `${name}.w1`, `${name}.b1`], [`${name}.c1`]).node('Relu', [`${name}.c1`], [`${name}.r`]);
    b.node('Conv', [`${name}.r`, `${name}.w2`, `${name}.b2`], [`${name}.c2`]);
    b.node('HardSigmoid', [`${name}.c2`], [`${name}.s`], { alpha: 0.2, beta: 0.5 });
    b.node('Mul', [x, `${name}.s`], [`${name}.out`]);
    return `${name}.out`;
  };
  let t = act(convBn('image', 16, 3, 2), 'hswish-mul');
  // Inverted residual blocks: [expand, kernel, stride, out, SE, activation].
  const blocks: [number, number, number, number, boolean, 'relu' | 'hswish' | 'hswish-mul'][] = [
    [16, 3, 2, 16, true, 'relu'], [72, 3, 2, 24, false, 'relu'], [88, 3, 1, 24, false, 'relu'],
    [96, 5, 2, 40, true, 'hswish'], [240, 5, 1, 40, true, 'hswish-mul'], [120, 5, 1, 48, true, 'hswish'],
  ];
  for (const [expand, ks, stride, out, useSe, a] of blocks) {
    const input = t, cin = channels;
    let y = expand !== cin ? act(convBn(t, expand, 1, 1), a) : t;
    y = act(convBn(y, expand, ks, stride, true), a);
    if (useSe) y = se(y, Math.max(8, expand >> 2));
    y = convBn(y, out, 1, 1);
    if (stride === 1 && cin === out) { b.node('Add', [input, y], [`${y}.res`]); y = `${y}.res`; }
    t = y;
  }
  t = act(convBn(t, 288, 1, 1), 'hswish');
  b.node('GlobalAveragePool', [t], ['pool']);
  b.float('head.w', [256, 288, 1, 1], w(256 * 288, Math.sqrt(3 / 288)));
  b.node('Conv', ['pool', 'head.w'], ['head']).node('HardSwish', ['head'], ['head.act']);
  b.node('Flatten', ['head.act'], ['flat'], { axis: 1 });
  b.float('fc.w', [2, 256], w(512, 0.1)).float('fc.b', [2], w(2, 0.1));
  b.node('Gemm', ['flat', 'fc.w', 'fc.b'], ['logits'], { transB: 1 });
  return b.build();
}

/** y = sigmoid(conv(x)) * k + sigmoid(conv(x)): the sigmoid is read by two stages of the conv's epilogue. */
function sigmoidReadTwice(): Uint8Array {
  const w = (n: number, s: number, seed: number): Float32Array => uniform(n, seed, 0).map((u) => (u * 2 - 1) * s);
  return new OnnxModelBuilder(13).input('x', [1, 16, 12, 12]).output('y')
    .float('w', [32, 16, 1, 1], w(512, 0.25, 1)).float('bias', [32], w(32, 0.1, 2)).float('k', [1, 32, 1, 1], w(32, 1, 3))
    .node('Conv', ['x', 'w', 'bias'], ['c']).node('Sigmoid', ['c'], ['s']).node('Mul', ['s', 'k'], ['m']).node('Add', ['m', 's'], ['y'])
    .build();
}

/** Compiles `file` with default schedules and runs it once on a seeded input in [-1, 1): its outputs. */
async function compileAndRun(file: string, name: string, warnings: string[] = []): Promise<{ inputs: Float32Array[]; outputs: Float32Array[]; kernels: number }> {
  const dir = path.join(work, name);
  const result = await compileNetwork({ model: file, target: 'llvm -mcpu=native', outDir: dir, cacheDir, warn: (m) => warnings.push(m) });
  const m = readManifest(dir);
  const inputs = m.inputs.map((inp, i) => uniform(inp.shape.reduce((a, b) => a * b, 1), 21, i).map((u) => 2 * u - 1));
  const files: Record<string, string> = {};
  await Promise.all(m.inputs.map(async (inp, i) => {
    files[inp.name] = path.join(work, `${name}.in${i}.bin`);
    await writeFloat32File(files[inp.name], inputs[i]);
  }));
  const saved = path.join(work, `${name}.out`);
  await runBench({ model: result.library, params: result.params, repeat: 1, number: 1, minRepeatMs: 0, threads: 2, inputs: files, saveOutputs: saved });
  const outputs = await Promise.all(m.outputs.map((o) => readFloat32File(path.join(saved, `${outputFileName(o.name)}.bin`))));
  return { inputs, outputs, kernels: result.kernels.length };
}

function assertClose(what: string, got: ArrayLike<number>, want: ArrayLike<number>): void {
  assert.is(got.length, want.length, `${what}: size`);
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= TOL + TOL * Math.abs(want[i]))) assert.unreachable(`${what}[${i}] = ${got[i]}, expected ${want[i]}`);
  }
}

async function matchesOrt(what: string, bytes: Uint8Array, warnings: string[] = []): Promise<number> {
  const file = path.join(work, `${what}.onnx`);
  writeFileSync(file, bytes);
  const { inputs, outputs, kernels } = await compileAndRun(file, what, warnings);
  if (!ort.module) {
    skip(`${what}: the comparison with ONNX Runtime (the reference evaluator instead)`, ort.error);
    const model = loadModel({ model: file });
    const want = runGraph(model.graph, new Map(model.inputs.map((inp, i) => [inp.name, inputs[i]])));
    want.forEach((w, k) => assertClose(`${what}: output ${k}`, outputs[k], w));
    return kernels;
  }
  const session = await openOrtSession(bytes, 1, loadModel({ model: file }).inputs.map((i) => i.shape));
  const want = await session.run(inputs);
  await session.release();
  assert.is(want.length, outputs.length);
  want.forEach((w, k) => assertClose(`${what}: output ${k}`, outputs[k], w));
  return kernels;
}

test('a MobileNetV3-style classifier (HardSwish, squeeze-excite, BN, 1x3x48x192) compiles with default schedules and matches ONNX Runtime', async () => {
  const warnings: string[] = [];
  const kernels = await matchesOrt('mobilenetv3', mobilenetV3(), warnings);
  assert.ok(kernels >= 20, `${kernels} kernels`);
  assert.equal(warnings, [], 'every default schedule lowered as it is');
});

test('a conv whose epilogue reads a sigmoid twice: the conv tiled at root, the epilogue after it, matches ONNX Runtime', async () => {
  const warnings: string[] = [];
  await matchesOrt('sigmoid-twice', sigmoidReadTwice(), warnings);
  assert.equal(warnings, []);
});

/** Runs `fn` with State.prototype.validate replaced by `validate` (restored after). */
async function withValidate<T>(validate: (this: State) => void, fn: () => Promise<T>): Promise<T> {
  const original = State.prototype.validate;
  State.prototype.validate = validate;
  try {
    return await fn();
  } finally {
    State.prototype.validate = original;
  }
}

test('a default schedule that does not lower: compile warns, names the kernel, uses every stage at root, and the values are right', async () => {
  const warnings: string[] = [];
  await withValidate(function (this: State) {
    if (this.steps.length > 0) throw new Error('a lowering bug');
  }, () => matchesOrt('plain-fallback', sigmoidReadTwice(), warnings));
  // Every kernel's (the layout transposes' too), one the conv's.
  assert.ok(warnings.some((w) => /^the default schedule of conv2d\S* 1x12x12x16 -> 1x12x12x32 /.test(w)), warnings.join('\n'));
  for (const w of warnings) {
    assert.match(w, /^the default schedule of \S+ [0-9x]+ -> [0-9x]+ does not lower \(a lowering bug\): compiled with every stage at root instead \(correct, slower\); this is a bug in tensortune/);
  }
});

test('a default schedule whose heuristics meet a shape they did not foresee: compile warns, names the kernel, uses every stage at root, and the values are right', async () => {
  // A step the heuristics chose that does not apply (here every fuse, as a ScheduleError).
  const original = State.prototype.apply;
  State.prototype.apply = function (this: State, step: Step) {
    if (step.s === 'fuse') throw new ScheduleError('an unforeseen shape');
    return original.call(this, step);
  };
  const warnings: string[] = [];
  try {
    await matchesOrt('heuristics-fallback', sigmoidReadTwice(), warnings);
  } finally {
    State.prototype.apply = original;
  }
  assert.ok(warnings.some((w) => /^the default schedule of conv2d\S* 1x12x12x16 -> 1x12x12x32 /.test(w)), warnings.join('\n'));
  for (const w of warnings) {
    assert.match(w, /^the default schedule of \S+ [0-9x]+ -> [0-9x]+ does not apply \(an unforeseen shape\): compiled with every stage at root instead \(correct, slower\); this is a bug in tensortune/);
  }
});

test('a tuned schedule that does not replay (a record of another tensortune): one warning, the default schedule, the right values', async () => {
  const file = path.join(work, 'sigmoid-twice.onnx');
  writeFileSync(file, sigmoidReadTwice());
  const model = loadModel({ model: file });
  const [task] = extractTasks(model.graph);
  const steps: Step[] = [{ s: 'split', stage: 'no_such_stage', iter: 'i', lengths: [4] }];
  const warnings: string[] = [];
  const dir = path.join(work, 'stale-record');
  const r = await compileModel({
    name: 'stale', graph: model.graph, target: parseTarget('llvm -mcpu=native'), outDir: dir, cacheDir,
    schedules: new Map([[task.key, { steps, source: 'old.jsonl:7' }]]), warn: (m) => warnings.push(m),
  });
  assert.is(warnings.length, 1, warnings.join('\n'));
  assert.match(warnings[0], /^the tuned schedule of conv2d\S* 1x12x12x16 -> 1x12x12x32 from old\.jsonl:7 does not lower \(no stage 'no_such_stage'/);
  assert.ok(r.kernels.every((k) => k.schedule === 'default'));
  const x = uniform(16 * 144, 3, 0);
  const input = path.join(work, 'stale.in.bin');
  await writeFloat32File(input, x);
  await runBench({ model: r.library, params: r.params, repeat: 1, number: 1, minRepeatMs: 0, threads: 1, inputs: { x: input }, saveOutputs: path.join(work, 'stale.out') });
  const [want] = runGraph(model.graph, new Map([['x', x]]));
  assertClose('stale record: y', await readFloat32File(path.join(work, 'stale.out', 'output.bin')), want);
});

/** The tensortune command run in this process, its output captured. */
async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '', err = '';
  const code = await main(args, { out: (t) => { out += t; }, err: (t) => { err += t; } });
  return { code, out, err };
}

test('an engine error in compile or tune: one line naming the kernel or task, with the hint to report it, exit 70, no stack', async () => {
  const file = path.join(work, 'sigmoid-twice.onnx');
  writeFileSync(file, sigmoidReadTwice());
  const boom = (): void => { throw new TypeError("Cannot read properties of undefined (reading 'extent')"); };
  const compiled = await withValidate(boom, () => cli('compile', file, '--out', path.join(work, 'broken'), '--cache', cacheDir));
  assert.is(compiled.code, INTERNAL_EXIT_CODE, compiled.err);
  assert.is(compiled.err.trim().split('\n').length, 1, compiled.err);
  assert.match(compiled.err, /^tensortune compile: internal error while compiling the kernel of transpose 1x16x12x12 -> 1x12x12x16: TypeError: Cannot read properties of undefined \(reading 'extent'\); this is a bug in tensortune: please report it with the model and this line \(TENSORTUNE_DEBUG=1 prints the stack\)\n$/);

  const tuned = await withValidate(boom, () => cli('tune', file, '--records', path.join(work, 'broken.jsonl'), '--trials', '2', '--policy', 'random'));
  assert.is(tuned.code, INTERNAL_EXIT_CODE, tuned.err);
  assert.is(tuned.err.trim().split('\n').length, 1, tuned.err);
  assert.match(tuned.err, /^tensortune tune: internal error while tuning task 0 \(conv2d\S* 1x12x12x16 -> 1x12x12x32\): TypeError: Cannot read properties of undefined \(reading 'extent'\); this is a bug in tensortune/);
});

test.after(() => rmSync(work, { recursive: true, force: true }));
test.run();
