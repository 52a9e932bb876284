// float16, bfloat16 and float64 models, which run as float32: the importer accepts their
// inputs and outputs and records the declared types; Cast to float16 / bfloat16 rounds
// exactly as ir/half.ts (and ONNX Runtime) do, in the reference evaluator and compiled; a
// float16 output is rounded to float16; every operator's float16 / bfloat16 result is
// rounded (once; inputs on entry; not what only moves values; nothing in a float32 model);
// whole models against ONNX Runtime fed the same values in their declared types: an fp16
// Conv + Add + Relu and MatMul + Add + Relu at rtol 1e-3 (the float16 outputs' precision,
// 2^-11 = 4.9e-4 per rounding; both round after each operator, summing in float32 in
// different orders, and ORT fuses some operators), a float64 MatMul + Add + Relu + Tanh at rtol 1e-6
// (float64 runs in float32 precision here: about 6e-8 per operation). Each tolerance reads
// |ours - ORT| <= rtol * |ORT| + atol, with atol stated beside it.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadOnnxRuntime, tryLoadOnnxRuntime } from '../../compare/ort';
import { compileModel } from '../../compile/model';
import { readManifest } from '../../compile/manifest';
import { isOpNode } from '../../graph/graph';
import { convertLayout } from '../../graph/passes';
import { runGraph } from '../../graph/run';
import { bfloat16Bits, bfloat16Value, float16Bits, float16Value, roundBfloat16, roundFloat16 } from '../../ir/half';
import { runBench } from '../../native/bench';
import { readFloat32File, writeFloat32File } from '../../runtime/rawfile';
import { skip } from '../../skip.fixture';
import { parseTarget } from '../../target';
import { cancelTransposes, importOnnx } from './import';
import { OnnxModelBuilder } from './model-builder';
import { DataType, type TensorMessage } from './schema';
import { randFloats } from './typed-ort.fixture';

const F16 = DataType.FLOAT16, BF16 = DataType.BFLOAT16, F64 = DataType.DOUBLE;
const ort = tryLoadOnnxRuntime();
const work = mkdtempSync(path.join(tmpdir(), 'tt-narrow-float-'));
test.after(() => rmSync(work, { recursive: true, force: true }));

/** A float16 / bfloat16 / float64 initializer of the given values (float16 and bfloat16 rounded to their type), in raw_data. */
function typedTensor(name: string, type: number, dims: readonly number[], values: ArrayLike<number>): TensorMessage {
  const n = values.length;
  const bytes = new Uint8Array(n * (type === F64 ? 8 : 2));
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < n; i++) {
    if (type === F64) view.setFloat64(i * 8, values[i], true);
    else view.setUint16(i * 2, type === F16 ? float16Bits(values[i]) : bfloat16Bits(values[i]), true);
  }
  return { name, dims: [...dims], data_type: type, raw_data: bytes };
}

/** Values of `type` (float16 and bfloat16 rounded to it; float64 ones as given). */
const ofType = (type: number, xs: Float32Array): Float32Array => (type === F16 ? xs.map(roundFloat16) : type === BF16 ? xs.map(roundBfloat16) : xs);

/** The model compiled (NHWC inside, default schedules) and run by tt_bench on `inputs`: its outputs as float32. */
async function compiledOutputs(name: string, bytes: Uint8Array, inputs: readonly Float32Array[]): Promise<Float32Array[]> {
  const model = importOnnx(bytes, `${name}.onnx`);
  const outDir = path.join(work, name);
  const result = await compileModel({ name, graph: cancelTransposes(convertLayout(model.graph, 'NHWC')), target: parseTarget('llvm'), outDir, cacheDir: path.join(work, 'cache') });
  const files: Record<string, string> = {};
  for (const [i, inp] of model.inputs.entries()) {
    files[inp.name] = path.join(work, `${name}-${inp.name}.bin`);
    await writeFloat32File(files[inp.name], inputs[i]);
  }
  const saved = path.join(work, `${name}-out`);
  await runBench({ model: result.library, params: result.params, repeat: 1, number: 1, minRepeatMs: 0, threads: 1, inputs: files, saveOutputs: saved });
  return Promise.all(readManifest(outDir).outputs.map((o) => readFloat32File(path.join(saved, `${o.file}`))));
}

/** ONNX Runtime's outputs for `inputs` given as float32 values, fed in each input's declared type (float16/bfloat16 as bits, float64 widened); outputs as float32. */
async function ortOutputs(bytes: Uint8Array, types: readonly number[], inputs: readonly Float32Array[], shapes: readonly (readonly number[])[]): Promise<Float32Array[] | undefined> {
  if (!ort.module) return undefined;
  const rt = loadOnnxRuntime();
  const Tensor = rt.Tensor as unknown as new (type: string, data: unknown, dims: readonly number[]) => { data: unknown; dims: readonly number[] };
  const session = await rt.InferenceSession.create(bytes, { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all' });
  const feeds: Record<string, { data: unknown; dims: readonly number[] }> = {};
  session.inputNames.forEach((name, i) => {
    const t = types[i], x = inputs[i];
    feeds[name] = t === F16 ? new Tensor('float16', Uint16Array.from(x, float16Bits), shapes[i])
      : t === BF16 ? new Tensor('bfloat16', Uint16Array.from(x, bfloat16Bits), shapes[i])
        : t === F64 ? new Tensor('float64', Float64Array.from(x), shapes[i]) : new Tensor('float32', x, shapes[i]);
  });
  const out = await session.run(feeds as never);
  await session.release();
  return session.outputNames.map((name, k) => {
    const d = out[name].data;
    if (d instanceof Float32Array) return d;
    if (d instanceof Float64Array) return Float32Array.from(d);
    if (d instanceof Uint16Array) return Float32Array.from(d, session.outputNames.length && outputTypeOf(bytes, k) === BF16 ? bfloat16Value : float16Value);
    throw new Error(`ONNX Runtime output ${name} is ${String((d as object).constructor.name)}`);
  });
}

/** The declared element type of graph output k (from the imported model's record). */
const outputTypeOf = (bytes: Uint8Array, k: number): number => (importOnnx(bytes, 'm.onnx').onnxTypes.outputs[k] === 'BFLOAT16' ? BF16 : F16);

function close(what: string, got: ArrayLike<number>, want: ArrayLike<number>, rtol: number, atol: number): void {
  assert.is(got.length, want.length, `${what}: size`);
  for (let i = 0; i < want.length; i++) {
    const a = got[i], b = want[i];
    const ok = Number.isNaN(b) ? Number.isNaN(a) : a === b || Math.abs(a - b) <= rtol * Math.abs(b) + atol;
    if (!ok) assert.unreachable(`${what}[${i}] = ${a}, expected ${b} (rtol ${rtol}, atol ${atol})`);
  }
}

/** Bit-exact equality (NaN equal to NaN, -0 distinct from 0). */
function exact(what: string, got: ArrayLike<number>, want: ArrayLike<number>): void {
  assert.is(got.length, want.length, `${what}: size`);
  for (let i = 0; i < want.length; i++) {
    const a = got[i], b = want[i];
    if (!(Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b)))) assert.unreachable(`${what}[${i}] = ${a}, expected ${b}`);
  }
}

test('float16, bfloat16 and float64 inputs and outputs import as float32; the declared types are recorded; narrow outputs are rounded', () => {
  const m = new OnnxModelBuilder(13).typedInput('h', F16, [2, 3]).typedInput('b', BF16, [3]).typedInput('d', F64, [3]).typedInput('ids', DataType.INT64, [3])
    .tensor(typedTensor('hw', F16, [3], [0.1, -2, 65504])).tensor(typedTensor('bw', BF16, [3], [0.1, 1, -3]))
    .node('Add', ['h', 'hw'], ['y']).typedOutput('y', F16)
    .node('Mul', ['b', 'bw'], ['z']).typedOutput('z', BF16)
    .node('Neg', ['d'], ['e']).typedOutput('e', F64)
    .node('Identity', ['ids'], ['i']).typedOutput('i', DataType.INT64);
  const model = importOnnx(m.build(), 'm.onnx');
  assert.equal(model.inputs, [
    { name: 'h', shape: [2, 3], dtype: 'float32' }, { name: 'b', shape: [3], dtype: 'float32' },
    { name: 'd', shape: [3], dtype: 'float32' }, { name: 'ids', shape: [3], dtype: 'int32' },
  ]);
  assert.equal(model.onnxTypes, { inputs: ['FLOAT16', 'BFLOAT16', 'DOUBLE', 'INT64'], outputs: ['FLOAT16', 'BFLOAT16', 'DOUBLE', 'INT64'] });
  const ops = model.graph.outputs.map((id) => { const n = model.graph.node(id); return isOpNode(n) ? n.op : n.op; });
  assert.equal(ops, ['round_f16', 'round_bf16', 'negative', 'input'], 'float16 and bfloat16 outputs end in their rounding');
  const [y, z] = runGraph(model.graph, new Map<string, Float32Array | Int32Array>([
    ['h', Float32Array.from([0, 0, 0, 1, 1, 1])], ['b', Float32Array.from([1, 1, 1])], ['d', Float32Array.from([1, 2, 3])], ['ids', Int32Array.from([1, 2, 3])],
  ]));
  // The initializers hold their types' values (float16 0.1 is 0.0999755859375, bfloat16 0.1 is 0.10009765625); 65504 + 1 rounds back to 65504.
  exact('float16 output', y, [0.0999755859375, -2, 65504, roundFloat16(1.0999755859375), -1, 65504]);
  exact('bfloat16 output', z, [0.10009765625, 1, -3]);
});

/** The ops of a graph's nodes, in order (input and constant nodes by their kind). */
const opsOf = (g: ReturnType<typeof importOnnx>['graph']): string[] => g.nodes.map((n) => n.op);

test('float16 / bfloat16 values are rounded after every operator, once: inputs on entry, arithmetic results, not moved values, not a Cast twice, never in a float32 model', () => {
  for (const [type, op] of [[F16, 'round_f16'], [BF16, 'round_bf16']] as const) {
    const m = new OnnxModelBuilder(13).typedInput('x', type, [2, 3]).tensor(typedTensor('a', type, [3], [0.5, 1, 2]))
      .node('Add', ['x', 'a'], ['s']).node('Relu', ['s'], ['r']).node('Reshape', ['r', 'shape'], ['t'])
      .node('Exp', ['t'], ['e']).node('Cast', ['e'], ['w'], { to: DataType.FLOAT }).node('Mul', ['w', 'w'], ['wide'])
      .node('Cast', ['wide'], ['n'], { to: type }).node('Transpose', ['n'], ['y'], { perm: [1, 0] }).typedOutput('y', type);
    m.tensor({ name: 'shape', dims: [2], data_type: DataType.INT64, int64_data: [3, 2] });
    const g = importOnnx(m.build(), 'm.onnx').graph;
    // x on entry, Add, Exp and the Cast to the type round (the Cast once); Relu, Reshape and
    // Transpose move values; the float32 Mul and the Cast to float do not.
    assert.equal(opsOf(g).filter((o) => o === op).length, 4, `${op} count: ${opsOf(g).join(' ')}`);
    const roundsOf = (name: string): number => g.nodes.filter((n) => n.op === op && g.node(n.inputs[0]).name === name).length;
    assert.equal(['x', 's', 'e', 'wide'].map(roundsOf), [1, 1, 1, 1], 'the input, Add, Exp and the float32 Mul cast to the type are rounded once');
    assert.equal(['r', 't', 'y'].map(roundsOf), [0, 0, 0], 'Relu, Reshape and the output Transpose are not');
  }
  // A float32 model (with a float16 output of a float32 value it never computes in float16) has no rounding but at that output.
  const f32 = new OnnxModelBuilder(13).input('x', [4]).float('a', [4], [1, 2, 3, 4])
    .node('Add', ['x', 'a'], ['s']).node('Exp', ['s'], ['e']).node('MatMul', ['e', 'a'], ['y']).output('y').build();
  assert.not.ok(opsOf(importOnnx(f32, 'f32.onnx').graph).some((o) => o.startsWith('round_')), 'a float32 model is not rounded');
});

test('float16 / bfloat16 arithmetic rounds every operator\'s result (not once at the end), and a float32 word fed as a float16 input is rounded to float16', () => {
  // 1 + 2^-11 is a float16 tie (rounds to even, 1); times 3 that is 3, where one rounding at the end gives 3 + 2^-9.
  // bfloat16 alike with 2^-8: 1 + 2^-8 rounds to 1, times 3 is 3 (once at the end: 3 + 2^-6).
  for (const [type, eps, round] of [[F16, 2 ** -11, roundFloat16], [BF16, 2 ** -8, roundBfloat16]] as const) {
    const m = new OnnxModelBuilder(13).typedInput('x', type, [3]).typedInput('e', type, [3]).tensor(typedTensor('three', type, [1], [3]))
      .node('Add', ['x', 'e'], ['s']).node('Mul', ['s', 'three'], ['y']).typedOutput('y', type)
      .node('Identity', ['x'], ['id']).typedOutput('id', type).build();
    const model = importOnnx(m, 'm.onnx');
    const x = Float32Array.from([1, 1, 1 + eps / 2]), e = Float32Array.from([eps, 3 * eps, 0]);
    const [y, id] = runGraph(model.graph, new Map([['x', x], ['e', e]]));
    const perOp = x.map((v, i) => round(round(round(v) + round(e[i])) * 3));
    exact(`${type === F16 ? 'float16' : 'bfloat16'}: (x + e) * 3 rounded per operator`, y, perOp);
    assert.is(y[0], 3, 'the tie rounds to 1 before the Mul');
    assert.is.not(round((1 + eps) * 3), 3, 'one rounding at the end would differ');
    exact('the input rounded on entry', id, x.map(round));
  }
});

test('float16 through an If with a computed condition: the branches\' results are rounded, the selection is not again, and what follows the If is', () => {
  const thenB = new OnnxModelBuilder(13).tensor(typedTensor('one', F16, [1], [1])).node('Add', ['x', 'one'], ['t_out']).typedOutput('t_out', F16).subgraph('then');
  const elseB = new OnnxModelBuilder(13).tensor(typedTensor('m', F16, [1], [3])).node('Mul', ['x', 'm'], ['e_out']).typedOutput('e_out', F16).subgraph('else');
  const m = new OnnxModelBuilder(13).typedInput('x', F16, [3]).typedInput('c', DataType.BOOL, [])
    .node('If', ['c'], ['y'], { then_branch: { graph: thenB }, else_branch: { graph: elseB } })
    .node('Div', ['y', 'x'], ['q']).typedOutput('q', F16).build();
  const g = importOnnx(m, 'if.onnx').graph;
  const rounded = g.nodes.filter((n) => n.op === 'round_f16').map((n) => g.node(n.inputs[0]).op);
  assert.equal(rounded, ['input', 'add', 'multiply', 'divide'], `rounded: ${rounded.join(', ')}`);
  const x = Float32Array.from([1 + 2 ** -12, 3, 0.1]);
  for (const c of [1, 0]) {
    const [q] = runGraph(g, new Map<string, Float32Array | Int32Array>([['x', x], ['c', Int32Array.from([c])]]));
    const xs = x.map(roundFloat16);
    exact(`If ${c ? 'then' : 'else'}`, q, xs.map((v) => roundFloat16(roundFloat16(c ? v + 1 : v * 3) / v)));
  }
});

test('Cast float32 -> float16 / bfloat16 -> float32 is exact (subnormals, ties, overflow, NaN, ±0), imported, compiled and in ONNX Runtime', async () => {
  const edges = Float32Array.from([
    0, -0, NaN, Infinity, -Infinity, 65504, 65519.99609375, 65520, -65520, 1e6, 1 + 2 ** -11, 1 + 3 * 2 ** -11, -(1 + 2 ** -11),
    2 ** -14, 2 ** -24, 2 ** -25, -(2 ** -25), 3 * 2 ** -25, 1.5 * 2 ** -24, 2 ** -26, 1e-45, 0.1, 3.14159,
    1 + 2 ** -8, 1 + 3 * 2 ** -8, 3.4028234663852886e38, -3.4028234663852886e38, 2 ** -133 * 1.5, 2 ** -149, 0.47892547, -7.123456,
  ]);
  const xs = Float32Array.from([...edges, ...randFloats(97, 3, -70000, 70000), ...randFloats(64, 4, -1e-4, 1e-4)]);
  for (const [type, f, name] of [[F16, roundFloat16, 'float16'], [BF16, roundBfloat16, 'bfloat16']] as const) {
    const m = new OnnxModelBuilder(15).input('x', [xs.length])
      .node('Cast', ['x'], ['n'], { to: type }).node('Cast', ['n'], ['y'], { to: DataType.FLOAT }).output('y')
      .node('Identity', ['n'], ['narrow']).typedOutput('narrow', type)
      .node('CastLike', ['x', 'n'], ['like']).typedOutput('like', type);
    const bytes = m.build();
    const want = xs.map(f);
    const model = importOnnx(bytes, 'cast.onnx');
    const ours = runGraph(model.graph, new Map([['x', xs]]));
    ours.forEach((o, k) => exact(`${name}: reference evaluator, output ${k}`, o, want));
    (await compiledOutputs(`cast-${name}`, bytes, [xs])).forEach((o, k) => exact(`${name}: compiled, output ${k}`, o, want));
    // The same Cast folded at import (a static input) rounds alike.
    const folded = new OnnxModelBuilder(13).input('x', [xs.length]).float('c', [xs.length], xs)
      .node('Cast', ['c'], ['n'], { to: type }).node('Cast', ['n'], ['cf'], { to: DataType.FLOAT }).node('Add', ['x', 'cf'], ['y']).output('y').build();
    exact(`${name}: folded at import`, runGraph(importOnnx(folded, 'f.onnx').graph, new Map([['x', new Float32Array(xs.length)]]))[0], want.map((v) => v + 0));
    // ONNX Runtime on the Cast pair alone (onnxruntime-node cannot return a bfloat16 output).
    const pair = new OnnxModelBuilder(13).input('x', [xs.length])
      .node('Cast', ['x'], ['n'], { to: type }).node('Cast', ['n'], ['y'], { to: DataType.FLOAT }).output('y').build();
    const theirs = await ortOutputs(pair, [DataType.FLOAT], [xs], [[xs.length]]);
    if (!theirs) { skip(`Cast to ${name}: the comparison with ONNX Runtime`, ort.error); continue; }
    exact(`${name}: ONNX Runtime's Cast against ir/half.ts`, theirs[0], want);
  }
});

/**
 * A model of `type` (inputs, initializers, outputs): MatMul + Add + Relu (+ Tanh for
 * float64), and for float16 also Conv 3x3 (pads 1) + Add (per channel) + Relu (ONNX
 * Runtime's CPU has no float64 Conv).
 */
function typedModel(type: number): { bytes: Uint8Array; shapes: number[][]; inputs: Float32Array[] } {
  const mw = ofType(type, randFloats(16 * 8, 23, -0.5, 0.5)), mb = ofType(type, randFloats(8, 24, -0.5, 0.5));
  const m = new OnnxModelBuilder(13).typedInput('v', type, [5, 16])
    .tensor(typedTensor('mw', type, [16, 8], mw)).tensor(typedTensor('mb', type, [8], mb))
    .node('MatMul', ['v', 'mw'], ['mm']).node('Add', ['mm', 'mb'], ['ma']).node('Relu', ['ma'], ['mr']);
  if (type === F64) m.node('Tanh', ['mr'], ['dense']); else m.node('Identity', ['mr'], ['dense']);
  m.typedOutput('dense', type);
  const v = ofType(type, randFloats(80, 26, -2, 2));
  if (type === F64) return { bytes: m.build(), shapes: [[5, 16]], inputs: [v] };
  const w = ofType(type, randFloats(4 * 3 * 3 * 3, 21, -0.5, 0.5)), bias = ofType(type, randFloats(4, 22, -0.2, 0.2));
  m.typedInput('x', type, [1, 3, 6, 6]).tensor(typedTensor('w', type, [4, 3, 3, 3], w)).tensor(typedTensor('bias', type, [1, 4, 1, 1], bias))
    .node('Conv', ['x', 'w'], ['c'], { pads: [1, 1, 1, 1] }).node('Add', ['c', 'bias'], ['ca']).node('Relu', ['ca'], ['conv']).typedOutput('conv', type);
  return { bytes: m.build(), shapes: [[5, 16], [1, 3, 6, 6]], inputs: [v, ofType(type, randFloats(108, 25, -2, 2))] };
}

test('an fp16 model (Conv + Add + Relu, MatMul + Add + Relu; fp16 inputs, initializers, outputs) compiled, against ONNX Runtime at rtol 1e-3', async () => {
  const { bytes, shapes, inputs } = typedModel(F16);
  const ours = await compiledOutputs('fp16', bytes, inputs);
  const reference = runGraph(importOnnx(bytes, 'fp16.onnx').graph, new Map([['v', inputs[0]], ['x', inputs[1]]]));
  // Compiled against the reference evaluator: float32 arithmetic in another order, then the
  // same rounding to float16; at most one float16 step apart where a sum falls near a tie.
  ours.forEach((o, k) => close(`fp16 compiled vs reference, output ${k}`, o, reference[k] as Float32Array, 2 ** -10, 1e-6));
  ours.forEach((o, k) => exact(`fp16 output ${k} holds float16 values`, o, o.map(roundFloat16)));
  const theirs = await ortOutputs(bytes, [F16, F16], inputs, shapes);
  if (!theirs) { skip('fp16 model: the comparison with ONNX Runtime', ort.error); return; }
  // ORT fuses MatMul + Add and Conv + Add + Relu and rounds their result once, where we round
  // after each operator: a float16 step apart at most (2^-9 at 2-4, 6 of 40 and 25 of 144
  // values differ); atol 1e-3: a Relu output near 0 after cancellation carries that step of its operands (2^-11 at 0.5-1).
  theirs.forEach((t, k) => close(`fp16 model vs ONNX Runtime, output ${k}`, ours[k], t, 1e-3, 1e-3));
});

test('a float64 model (MatMul + Add + Relu + Tanh) compiled, against ONNX Runtime at rtol 1e-6', async () => {
  const { bytes, shapes, inputs } = typedModel(F64);
  const ours = await compiledOutputs('fp64', bytes, inputs);
  const theirs = await ortOutputs(bytes, [F64], inputs, shapes);
  if (!theirs) { skip('float64 model: the comparison with ONNX Runtime', ort.error); return; }
  // atol 1e-6: float32 sums of 16-27 products of magnitude up to 1 differ from float64's by a few 1e-7.
  theirs.forEach((t, k) => close(`float64 model vs ONNX Runtime, output ${k}`, ours[k], t, 1e-6, 1e-6));
});

test.run();
