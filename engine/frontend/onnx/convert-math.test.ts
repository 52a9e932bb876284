// ONNX's elementwise math and activations (convert-math.ts) imported and run by the reference
// evaluator, in NCHW and NHWC, against ONNX Runtime on seeded inputs: float outputs within
// |ours - ORT| <= 1e-5 * (1 + |ORT|) (agreesWithOrt / agreesTyped), integer outputs equal.
// A model mixing them compiles with default schedules and equals the reference within
// 1e-5 * (1 + |ref|).

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { compileModel } from '../../compile/model';
import { readManifest } from '../../compile/manifest';
import { isOpNode } from '../../graph/graph';
import { runGraph } from '../../graph/run';
import { runBench } from '../../native/bench';
import { readFloat32File, writeFloat32File } from '../../runtime/rawfile';
import { parseTarget } from '../../target';
import { importOnnx, loadOnnx } from './import';
import { OnnxModelBuilder, type AttrValue } from './model-builder';
import { agreesWithOrt, importError, rand } from './ort-agree.fixture';
import { agreesTyped, randInts } from './typed-ort.fixture';
import { DataType } from './schema';

const I64 = DataType.INT64;

/** One model: input x of `shape`, each [op, attrs, opset-independent] applied to x as its own output. */
function unaryModel(opset: number, shape: number[], ops: [string, Record<string, AttrValue>?][]): Uint8Array {
  const m = new OnnxModelBuilder(opset).input('x', shape);
  ops.forEach(([op, attrs], i) => m.node(op, ['x'], [`${op}_${i}`], attrs ?? {}).output(`${op}_${i}`));
  return m.build();
}

test('unary math and activations over [-3, 3) against ONNX Runtime (opset 13, and Mish 18, Gelu 20)', async () => {
  const ops: [string, Record<string, AttrValue>?][] = [
    ['Exp'], ['Erf'], ['Floor'], ['Ceil'], ['Round'], ['Sin'], ['Cos'], ['Atan'], ['Neg'], ['Abs'], ['Sign'], ['Softsign'], ['Softplus'],
    ['Elu'], ['Elu', { alpha: 0.7 }], ['Selu'], ['Selu', { alpha: 1.5, gamma: 0.25 }], ['Celu'], ['Celu', { alpha: 0.5 }],
    ['ThresholdedRelu'], ['ThresholdedRelu', { alpha: 0.25 }],
  ];
  const model = await agreesWithOrt('unary-13', unaryModel(13, [2, 3, 4, 5], ops), { range: [-3, 3] });
  assert.is(model.graph.outputs.length, ops.length);
  await agreesWithOrt('mish-18', unaryModel(18, [2, 3, 4, 5], [['Mish']]), { range: [-6, 6] });
  await agreesWithOrt('gelu-20', unaryModel(20, [2, 3, 4, 5], [['Gelu'], ['Gelu', { approximate: 'tanh' }], ['Gelu', { approximate: 'none' }]]), { range: [-4, 4] });
  // Tan away from its poles; the positive-only ones over (0.05, 4).
  await agreesWithOrt('tan-7', unaryModel(7, [3, 40], [['Tan']]), { range: [-1.3, 1.3] });
  await agreesWithOrt('positive-7', unaryModel(7, [3, 40], [['Sqrt'], ['Log'], ['Reciprocal'], ['Exp'], ['Abs']]), { range: [0.05, 4] });
  // opset 22's versions (wider type lists only).
  await agreesWithOrt('unary-22', unaryModel(22, [4, 10], [['Round'], ['Sin'], ['Cos'], ['Softplus'], ['Softsign'], ['Elu'], ['Selu'], ['ThresholdedRelu'], ['Mish']]), { range: [-3, 3] });
});

test('Round ties to even, Softplus and Mish where exp overflows or underflows, Sign of 0 (inputs written out)', async () => {
  const x = Float32Array.from([-3.5, -2.5, -1.5, -0.5, 0, 0.5, 1.5, 2.5, 3.5, 2.4999998, -2.5000002, 100, -100, 90, -90, 1e-8]);
  const m = new OnnxModelBuilder(18).input('x', [16]);
  for (const op of ['Round', 'Softplus', 'Mish', 'Sign', 'Floor', 'Ceil', 'Neg', 'Abs', 'Softsign', 'Erf']) m.node(op, ['x'], [op]).output(op);
  const { outputs } = await agreesTyped('ties', m.build(), [x]);
  assert.equal([...outputs[0]].slice(0, 9), [-4, -2, -2, -0, 0, 0, 2, 2, 4]);
  assert.equal([...outputs[1]].slice(11, 13).map((v) => Math.round(v)), [100, 0]);
});

test('Neg, Abs, Sign, Max, Min of int64 tensors', async () => {
  const m = new OnnxModelBuilder(13).typedInput('a', I64, [2, 3]).typedInput('b', I64, [3]);
  for (const op of ['Neg', 'Abs', 'Sign']) m.node(op, ['a'], [op]).typedOutput(op, I64);
  // Sum is defined on floats only; Max and Min on integers too (opset 12).
  for (const op of ['Max', 'Min']) m.node(op, ['a', 'b', 'a'], [op]).typedOutput(op, I64);
  const { model } = await agreesTyped('int-math', m.build(), [randInts(6, 1, -9, 9), randInts(3, 2, -9, 9)]);
  assert.ok(model.graph.outputs.every((id) => model.graph.node(id).dtype === 'int32'));
});

test('PRelu: a per-channel [C, 1, 1] slope, a [W] slope, a scalar slope, a slope input; opsets 7, 9, 16', async () => {
  for (const opset of [7, 9, 16]) {
    const m = new OnnxModelBuilder(opset).input('x', [2, 3, 4, 5]).input('s', [4, 5])
      .float('sc', [3, 1, 1], [0.1, -0.5, 2]).float('sw', [5], [0.1, 0.2, 0.3, 0.4, 0.5]).float('s1', [1], [0.25])
      .node('PRelu', ['x', 'sc'], ['c']).output('c')
      .node('PRelu', ['x', 'sw'], ['w']).output('w')
      .node('PRelu', ['x', 's1'], ['one']).output('one')
      .node('PRelu', ['x', 's'], ['in']).output('in');
    await agreesWithOrt(`prelu-${opset}`, m.build(), { range: [-2, 2] });
  }
  // After a conv, NHWC: the [C, 1, 1] slope follows the channels.
  const conv = new OnnxModelBuilder(13).input('x', [1, 2, 6, 6]).float('w', [3, 2, 3, 3], rand(54, 3, -0.5, 0.5)).float('sc', [3, 1, 1], [0.1, -0.5, 2])
    .node('Conv', ['x', 'w'], ['c'], { pads: [1, 1, 1, 1] }).node('PRelu', ['c', 'sc'], ['y']).output('y');
  await agreesWithOrt('conv-prelu', conv.build());
  const bad = new OnnxModelBuilder(13).input('x', [2, 3]).float('s', [2, 1, 3], new Array<number>(6).fill(0.1)).node('PRelu', ['x', 's'], ['y']).output('y');
  assert.match(importError(bad.build()), /PRelu 'y': PRelu: the slope \[2, 1, 3\] does not broadcast to X \[2, 3\]/);
});

test('Pow: constant exponents 2, 3, 0.5, 1, -1.5 (a scalar and a [1]), a broadcast exponent tensor; opsets 7, 12, 15', async () => {
  for (const opset of [7, 12, 15]) {
    const m = new OnnxModelBuilder(opset).input('x', [2, 3, 4]).input('y', [3, 1]);
    const exps: [string, number[], number][] = [['e2', [], 2], ['e3', [1], 3], ['eh', [], 0.5], ['e1', [1], 1], ['en', [], -1.5]];
    for (const [name, dims, v] of exps) m.float(name, dims, [v]).node('Pow', ['x', name], [`p_${name}`]).output(`p_${name}`);
    m.node('Pow', ['x', 'y'], ['p_t']).output('p_t');
    m.float('ev', [4], [0, 1, 2.5, -2]).node('Pow', ['x', 'ev'], ['p_v']).output('p_v');
    const model = await agreesWithOrt(`pow-${opset}`, m.build(), { range: [0.1, 2] });
    const ops = model.graph.nodes.filter(isOpNode).map((n) => n.op);
    assert.is(ops.filter((o) => o === 'power_scalar').length, 5, `${ops}`);
    assert.is(ops.filter((o) => o === 'power').length, 2);
  }
  // Negative bases: integer exponents give signed results, 0.5 NaN (as powf).
  const neg = new OnnxModelBuilder(13).input('x', [12]).float('e2', [], [2]).float('e3', [], [3]).float('eh', [], [0.5]).float('et', [], [-3])
    .node('Pow', ['x', 'e2'], ['a']).output('a').node('Pow', ['x', 'e3'], ['b']).output('b')
    .node('Pow', ['x', 'eh'], ['c']).output('c').node('Pow', ['x', 'et'], ['d']).output('d');
  await agreesWithOrt('pow-negative', neg.build(), { range: [-2, -0.1] });
  // Integer exponents (opset 12's T1): an int64 tensor input, broadcasting, and an int64 constant.
  const ints = new OnnxModelBuilder(13).input('x', [2, 4]).typedInput('k', I64, [4]).int64('three', [3], [])
    .node('Pow', ['x', 'k'], ['a']).output('a').node('Pow', ['x', 'three'], ['b']).output('b');
  const { model } = await agreesTyped('pow-int-exponent', ints.build(), [Float32Array.from([0.5, -1.5, 2, 3, -0.25, 1.25, -2, 0.75]), Int32Array.from([2, 3, -1, 0])]);
  assert.ok(model.graph.nodes.some((n) => isOpNode(n) && n.op === 'power_scalar'));
});

test('Sum, Max, Min, Mean of 1, 2 and 3 inputs, broadcasting (opsets 8, 13), equal shapes at opset 7', async () => {
  for (const opset of [8, 13]) {
    const m = new OnnxModelBuilder(opset).input('a', [2, 3, 4]).input('b', [3, 1]).input('c', [4]);
    for (const op of ['Sum', 'Max', 'Min', 'Mean']) {
      m.node(op, ['a'], [`${op}1`]).output(`${op}1`);
      m.node(op, ['a', 'b'], [`${op}2`]).output(`${op}2`);
      m.node(op, ['b', 'a', 'c'], [`${op}3`]).output(`${op}3`);
    }
    await agreesWithOrt(`variadic-${opset}`, m.build(), { range: [-2, 2] });
  }
  const m7 = new OnnxModelBuilder(7).input('a', [2, 3]).input('b', [2, 3]);
  for (const op of ['Sum', 'Max', 'Min', 'Mean']) m7.node(op, ['a', 'b', 'a'], [op]).output(op);
  await agreesWithOrt('variadic-7', m7.build());
  const bad = new OnnxModelBuilder(7).input('a', [2, 3]).input('b', [3]).node('Sum', ['a', 'b'], ['y']).output('y');
  assert.match(importError(bad.build()), /Sum 'y': Sum: input 1 is \[3\], input 0 \[2, 3\]; opset 7 takes equal shapes/);
});

test('Mod of floats with fmod=1 (signs of the dividend), broadcasting; integer Mod still converts; fmod=0 on floats below opset 28 is refused', async () => {
  const m = new OnnxModelBuilder(13).input('a', [2, 3, 4]).float('b', [4], [1.5, -1.5, 0.75, -2.25])
    .node('Mod', ['a', 'b'], ['y'], { fmod: 1 }).output('y');
  await agreesWithOrt('fmod', m.build(), { range: [-5, 5] });
  const ints = new OnnxModelBuilder(13).typedInput('a', I64, [6]).int64('b', [3, -3, 4, -4, 5, -5])
    .node('Mod', ['a', 'b'], ['y']).typedOutput('y', I64);
  await agreesTyped('int-mod', ints.build(), [randInts(6, 3, -20, 20)]);
  const f0 = new OnnxModelBuilder(13).input('a', [3]).input('b', [3]).node('Mod', ['a', 'b'], ['y']).output('y');
  assert.match(importError(f0.build()), /Mod 'y': Mod: fmod=0 on floats is defined from opset 28 \(the model is opset 13; fmod must be 1\)/);
});

test('Mod of floats with fmod=0 at opset 28: the divisor\'s sign, as a - floor(a / b) * b', () => {
  const m = new OnnxModelBuilder(28).input('a', [8]).input('b', [8]).node('Mod', ['a', 'b'], ['y']).output('y');
  const a = Float32Array.from([5.5, -5.5, 5.5, -5.5, 3, -3, 0, 7.25]);
  const b = Float32Array.from([2, 2, -2, -2, 3, 1.5, 2, -0.5]);
  const { graph } = importOnnx(m.build(), 'mod28.onnx');
  const [y] = runGraph(graph, new Map([['a', a], ['b', b]]));
  const want = [...a].map((x, i) => x - Math.floor(x / b[i]) * b[i]);
  assert.equal([...y], want);
});

test('static inputs fold at import: Neg, Abs, Max and Sqrt of shape values reshape a tensor', async () => {
  // reshape x [2, 3, 4] to [max(2, 1), |-(12)|] through Shape -> Gather -> ... -> Concat.
  const m = new OnnxModelBuilder(13).input('x', [2, 3, 4]).int64('i0', [0], []).int64('one', [1]).int64('d12', [12]).int64('z', [0])
    .node('Shape', ['x'], ['s']).node('Gather', ['s', 'i0'], ['s0']).node('Unsqueeze', ['s0', 'z'], ['s0v'])
    .node('Max', ['s0v', 'one'], ['m']).node('Neg', ['d12'], ['n']).node('Abs', ['n'], ['a'])
    .node('Concat', ['m', 'a'], ['shape'], { axis: 0 }).node('Reshape', ['x', 'shape'], ['r'])
    .float('sixteen', [], [16]).node('Sqrt', ['sixteen'], ['four']).node('Div', ['r', 'four'], ['y']).output('y');
  const model = await agreesWithOrt('fold', m.build());
  const ops = model.graph.nodes.filter(isOpNode).map((n) => n.op);
  assert.equal(ops.filter((o) => o !== 'reshape' && o !== 'batch_flatten' && o !== 'divide'), [], `${ops}`);
});

test('refused: Gelu below opset 20, an unknown Gelu approximation, an int64 Pow base', () => {
  assert.match(importError(unaryModel(18, [3], [['Gelu']])), /Gelu 'Gelu_0': Gelu is defined from opset 20; the model is opset 18/);
  assert.match(importError(unaryModel(20, [3], [['Gelu', { approximate: 'fast' }]])), /Gelu 'Gelu_0': unsupported: Gelu approximate 'fast'/);
  const ip = new OnnxModelBuilder(13).typedInput('a', I64, [3]).int64('e', [2], []).node('Pow', ['a', 'e'], ['y']).typedOutput('y', I64);
  assert.match(importError(ip.build()), /Pow 'y': unsupported: Pow of a(n)? int32/);
});

test('compiled with default schedules: a conv net with PRelu, Mish, Gelu, Pow, Sqrt, Erf, Sum, Max, Mean, Mod, Round, Softplus equals the reference', async () => {
  const b = new OnnxModelBuilder(20).input('x', [1, 3, 12, 12])
    .float('w1', [8, 3, 3, 3], rand(216, 1, -0.3, 0.3)).float('w2', [8, 8, 3, 3], rand(576, 2, -0.1, 0.1))
    .float('slope', [8, 1, 1], rand(8, 3, 0, 0.5)).float('two', [], [2]).float('half', [1], [0.5]).float('e', [1, 12], rand(12, 4, 0.5, 2))
    .float('m', [1], [0.75]).float('eps', [], [1e-3])
    .node('Conv', ['x', 'w1'], ['c1'], { pads: [1, 1, 1, 1] }).node('PRelu', ['c1', 'slope'], ['p1'])
    .node('Mish', ['p1'], ['mi']).node('Conv', ['mi', 'w2'], ['c2'], { pads: [1, 1, 1, 1] }).node('Gelu', ['c2'], ['g'])
    .node('Pow', ['g', 'two'], ['sq']).node('Add', ['sq', 'eps'], ['sqe']).node('Pow', ['sqe', 'half'], ['rt']).node('Sqrt', ['rt'], ['rt2'])
    .node('Erf', ['c2'], ['er']).node('Sum', ['rt2', 'er', 'p1'], ['s']).node('Max', ['s', 'c2'], ['mx']).node('Mean', ['mx', 'g'], ['me'])
    .node('Abs', ['me'], ['ab']).node('Pow', ['ab', 'e'], ['pe']).node('Mod', ['pe', 'm'], ['md'], { fmod: 1 })
    .node('Round', ['c2'], ['rd']).node('Softplus', ['rd'], ['sp']).node('Neg', ['sp'], ['ng']).node('Min', ['ng', 'md'], ['y'])
    .output('y').output('me');
  const work = mkdtempSync(path.join(tmpdir(), 'tt-math-test-'));
  try {
    const file = path.join(work, 'm.onnx');
    writeFileSync(file, b.build());
    await agreesWithOrt('compiled-math', b.build(), { tol: 1e-4 });
    const m = loadOnnx(file);
    const outDir = path.join(work, 'out');
    const result = await compileModel({ name: 'm', graph: m.graph, target: parseTarget('llvm'), outDir, cacheDir: path.join(work, 'cache') });
    const x = rand(3 * 12 * 12, 7);
    await writeFloat32File(path.join(work, 'x.bin'), x);
    await runBench({ model: result.library, params: result.params, repeat: 1, number: 1, minRepeatMs: 0, threads: 1, inputs: { x: path.join(work, 'x.bin') }, saveOutputs: path.join(work, 'y') });
    const want = runGraph(m.graph, new Map([['x', x]]));
    const outs = readManifest(outDir).outputs;
    for (let k = 0; k < outs.length; k++) {
      const got = await readFloat32File(path.join(work, 'y', outs[k].file!));
      assert.is(got.length, want[k].length, outs[k].name);
      for (let i = 0; i < got.length; i++) {
        if (!(Math.abs(got[i] - want[k][i]) <= 1e-5 * (1 + Math.abs(want[k][i])))) assert.unreachable(`${outs[k].name}[${i}] = ${got[i]}, reference ${want[k][i]}`);
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

test.run();
