// Gather (computed indices: the embedding lookup), GatherElements, GatherND, ArgMax/ArgMin,
// CumSum, OneHot, Range, Shape/Size, ConstantOfShape, NonZero, Dropout's mask and If with a
// condition known at import, imported and run by the reference evaluator against ONNX
// Runtime on seeded inputs: integer and bool outputs equal, float ones within 1e-5
// (relative to 1 + |x|). ONNX Runtime raises on an out-of-range index, so the ids fed
// are in range (negative ones included); our clamping of the others is tested in topi.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { int64TensorProto } from './tensor';
import { DataType } from './schema';
import { OnnxModelBuilder } from './model-builder';
import { importError } from './ort-agree.fixture';
import { agreesTyped, randFloats, randInts } from './typed-ort.fixture';
import { importOnnx } from './import';
import { isOpNode, type ConstantNode } from '../../graph/graph';

const B = DataType.BOOL, I64 = DataType.INT64;

test('Gather of computed ids into a constant table (an embedding lookup), negative ids included', async () => {
  const m = new OnnxModelBuilder(13).typedInput('ids', I64, [1, 6]).float('table', [10, 4], randFloats(40, 1))
    .node('Gather', ['table', 'ids'], ['emb']).output('emb');
  const ids = randInts(6, 2, -10, 9);
  const { model } = await agreesTyped('gather-embedding', m.build(), [ids]);
  assert.ok(model.graph.nodes.some((n) => n.op === 'take'));
});

test('Gather along middle and last axes of a computed tensor, constant and computed indices, int data', async () => {
  const m = new OnnxModelBuilder(13).input('x', [2, 5, 3]).typedInput('i', I64, [2, 2]).typedInput('d', I64, [4, 3])
    .int64('k', [2, -1, 0, 4], [2, 2])
    .node('Gather', ['x', 'k'], ['mid'], { axis: 1 }).output('mid')
    .node('Gather', ['x', 'i'], ['last'], { axis: -1 }).output('last')
    .int64('s', [-2], [])
    .node('Gather', ['d', 's'], ['row']).typedOutput('row', I64);
  await agreesTyped('gather-axes', m.build(), [randFloats(30, 3), randInts(4, 4, -3, 2), randInts(12, 5, -50, 50)]);
});

test('GatherElements on either axis and GatherND (batch_dims 0 and 1) with computed indices', async () => {
  const m = new OnnxModelBuilder(13).input('x', [3, 4]).typedInput('i', I64, [3, 2]).typedInput('j', I64, [2, 4])
    .input('y', [2, 3, 4]).typedInput('n', I64, [2, 2]).typedInput('nb', I64, [2, 1])
    .node('GatherElements', ['x', 'i'], ['ge1'], { axis: 1 }).output('ge1')
    .node('GatherElements', ['x', 'j'], ['ge0'], { axis: 0 }).output('ge0')
    .node('GatherND', ['y', 'n'], ['gnd']).output('gnd')
    .node('GatherND', ['y', 'nb'], ['gndb'], { batch_dims: 1 }).output('gndb');
  const n = Int32Array.of(1, -1, 0, 2);
  await agreesTyped('gather-elements-nd', m.build(), [randFloats(12, 6), randInts(6, 7, -4, 3), randInts(8, 8, -3, 2), randFloats(24, 9), n, Int32Array.of(2, -3)]);
});

test('ArgMax / ArgMin: axis, keepdims, select_last_index (opset 12+), ties, int64 output', async () => {
  const m = new OnnxModelBuilder(13).input('x', [3, 5]);
  m.node('ArgMax', ['x'], ['a0']).typedOutput('a0', I64);
  m.node('ArgMax', ['x'], ['a1'], { axis: 1, keepdims: 0 }).typedOutput('a1', I64);
  m.node('ArgMax', ['x'], ['a1l'], { axis: -1, select_last_index: 1 }).typedOutput('a1l', I64);
  m.node('ArgMin', ['x'], ['m1'], { axis: 1, keepdims: 0 }).typedOutput('m1', I64);
  m.node('ArgMin', ['x'], ['m0l'], { axis: 0, select_last_index: 1 }).typedOutput('m0l', I64);
  await agreesTyped('argmax', m.build(), [randFloats(15, 10, -2, 2, 1)]);
  const old = new OnnxModelBuilder(11).input('x', [2, 3]).node('ArgMax', ['x'], ['a'], { axis: 1 }).typedOutput('a', I64);
  await agreesTyped('argmax-11', old.build(), [randFloats(6, 11)]);
});

test('CumSum: float and int64, axis input, exclusive and reverse', async () => {
  const m = new OnnxModelBuilder(14).input('x', [3, 4]).typedInput('i', I64, [5]).int64('ax1', [1], []).int64('ax0', [-2], []).int64('z', [0], []);
  m.node('CumSum', ['x', 'ax1'], ['c']).output('c');
  m.node('CumSum', ['x', 'ax0'], ['ce'], { exclusive: 1 }).output('ce');
  m.node('CumSum', ['x', 'ax1'], ['cr'], { reverse: 1 }).output('cr');
  m.node('CumSum', ['x', 'ax0'], ['cer'], { exclusive: 1, reverse: 1 }).output('cer');
  m.node('CumSum', ['i', 'z'], ['ci']).typedOutput('ci', I64);
  await agreesTyped('cumsum', m.build(), [randFloats(12, 12), randInts(5, 13, -9, 9)]);
});

test('OneHot of computed indices (negative wrapped), axis -1 and 0, float and int64 values', async () => {
  const m = new OnnxModelBuilder(11).typedInput('i', I64, [2, 3]).int64('depth', [4], []).float('fv', [2], [0, 1])
    .int64('iv', [-1, 7])
    .node('OneHot', ['i', 'depth', 'fv'], ['oh']).output('oh')
    .node('OneHot', ['i', 'depth', 'iv'], ['oh0'], { axis: 0 }).typedOutput('oh0', I64);
  await agreesTyped('onehot', m.build(), [randInts(6, 14, -4, 3)]);
});

test('Range, Size, Shape with start/end (opset 15) fold at import and feed computed nodes', async () => {
  const m = new OnnxModelBuilder(15).input('x', [2, 3, 4])
    .tensor(int64TensorProto('start', [], [1])).tensor(int64TensorProto('limit', [], [13])).tensor(int64TensorProto('delta', [], [3]))
    .node('Range', ['start', 'limit', 'delta'], ['r'])
    .node('Cast', ['r'], ['rf'], { to: DataType.FLOAT })
    .node('Add', ['x', 'rf'], ['y']).output('y')
    .node('Shape', ['x'], ['s'], { start: 1, end: -1 })
    .node('Size', ['x'], ['n'])
    .node('Cast', ['s'], ['sf'], { to: DataType.FLOAT })
    .node('Cast', ['n'], ['nf'], { to: DataType.FLOAT })
    .node('Mul', ['sf', 'nf'], ['sn'])
    .node('Add', ['x', 'sn'], ['z']).output('z');
  const { model } = await agreesTyped('range-shape', m.build(), [randFloats(24, 15)]);
  assert.not.ok(model.graph.nodes.some((n) => isOpNode(n) && n.op === 'cast'), 'all static');
  const computed = new OnnxModelBuilder(13).typedInput('l', I64, []).int64('a', [0], []).int64('d', [1], [])
    .node('Range', ['a', 'l', 'd'], ['r']).typedOutput('r', I64).build();
  assert.match(importError(computed), /Range 'r': unsupported: limit must be a constant/);
});

test('ConstantOfShape over 2^24 elements is one graph constant (AlexNet-style classifier weights); int ones too', () => {
  const shape = [4097, 4096];
  const model = importOnnx(new OnnxModelBuilder(13).input('x', [1, 4097]).int64('shape', shape)
    .node('ConstantOfShape', ['shape'], ['w'], { value: { tensor: { dims: [1], data_type: DataType.FLOAT, float_data: [0.5] } } })
    .node('MatMul', ['x', 'w'], ['y']).output('y').build(), 'big.onnx');
  const w = model.graph.nodes.find((n) => n.op === 'constant') as ConstantNode | undefined; // MatMul's dense holds it transposed
  assert.ok(w && w.data instanceof Float32Array && w.data.length === 4097 * 4096 && w.data[123456] === 0.5);
  const ints = importOnnx(new OnnxModelBuilder(13).typedInput('i', I64, [2, 1 << 20]).int64('ishape', [2, 1 << 20])
    .node('ConstantOfShape', ['ishape'], ['k'], { value: { tensor: int64TensorProto('v', [1], [3]) } })
    .node('Add', ['i', 'k'], ['y']).typedOutput('y', I64).build(), 'big-int.onnx');
  const k = ints.graph.nodes.find((n) => n.op === 'constant') as ConstantNode | undefined;
  assert.ok(k && k.data instanceof Int32Array && k.data.length === 2 << 20 && k.data[77] === 3 && k.dtype === 'int32');
});

test('Dropout (opsets 7, 10, 13) passes its input through; its mask is all true at 12+ (as ONNX Runtime: false/zeros before)', async () => {
  for (const opset of [7, 10, 13]) {
    const m = new OnnxModelBuilder(opset).input('x', [2, 3])
      .node('Dropout', ['x'], ['y', 'mask'], opset < 12 ? { ratio: 0.3 } : {}).output('y').typedOutput('mask', opset < 10 ? DataType.FLOAT : B)
      .node('Relu', ['y'], ['r']).output('r');
    await agreesTyped(`dropout-${opset}`, m.build(), [randFloats(6, 16)]);
  }
  const training = new OnnxModelBuilder(13).input('x', [2]).tensor({ name: 't', dims: [], data_type: B, int32_data: [1] })
    .node('Dropout', ['x', '', 't'], ['y']).output('y').build();
  assert.match(importError(training), /Dropout 'y': unsupported: Dropout with training_mode true/);
});

test('NonZero of a static tensor folds; of a computed one is refused', async () => {
  const m = new OnnxModelBuilder(13).input('x', [2, 3]).float('c', [2, 3], [0, 1, 0, 2, 3, 0])
    .node('NonZero', ['c'], ['nz']).node('Cast', ['nz'], ['nzf'], { to: DataType.FLOAT })
    .node('ReduceSum', ['nzf'], ['s'], { keepdims: 0 })
    .node('Add', ['x', 's'], ['y']).output('y');
  await agreesTyped('nonzero', m.build(), [randFloats(6, 17)]);
  const bad = new OnnxModelBuilder(13).input('x', [2]).node('NonZero', ['x'], ['y']).typedOutput('y', I64).build();
  assert.match(importError(bad), /NonZero 'y': unsupported: NonZero of a computed tensor/);
});

test('If whose condition folds from a shape: the taken branch is inlined, reading outer values; a computed one selects between both branches', async () => {
  const thenB = new OnnxModelBuilder(13).float('one', [1], [1]).node('Add', ['x', 'one'], ['t_out']).output('t_out').subgraph('then');
  const elseB = new OnnxModelBuilder(13).float('m', [1], [-2]).node('Mul', ['x', 'm'], ['e_out']).output('e_out').subgraph('else');
  for (const [dim, op] of [[2, 'add'], [3, 'multiply']] as const) {
    const m = new OnnxModelBuilder(13).input('x', [dim, 3])
      .node('Shape', ['x'], ['s']).int64('zero', [0], []).node('Gather', ['s', 'zero'], ['d']).int64('two', [2], [])
      .node('Equal', ['d', 'two'], ['c'])
      .node('If', ['c'], ['y'], { then_branch: { graph: thenB }, else_branch: { graph: elseB } })
      .node('Relu', ['y'], ['r']).output('r');
    const { model } = await agreesTyped(`if-${op}`, m.build(), [randFloats(dim * 3, 18)]);
    assert.equal(model.graph.nodes.filter(isOpNode).map((n) => n.op), [op, 'relu']);
  }
  const broken = new OnnxModelBuilder(13).node('NoSuchOp', ['x'], ['b_out']).output('b_out').subgraph('broken');
  const inBranch = new OnnxModelBuilder(13).input('x', [2]).tensor({ name: 'c', dims: [], data_type: B, int32_data: [1] })
    .node('If', ['c'], ['y'], { then_branch: { graph: broken }, else_branch: { graph: elseB } }).output('y').build();
  assert.match(importError(inBranch), /If 'y': unsupported: in its then_branch: NoSuchOp 'b_out': operator is not supported/);
  // A computed condition (silero VAD's `sr == 16000` on an int64 scalar input): both branches, selected at run time.
  const computed = new OnnxModelBuilder(13).input('x', [2]).typedInput('sr', I64, []).int64('k', [16000], [])
    .node('Equal', ['sr', 'k'], ['c'])
    .node('If', ['c'], ['y'], { then_branch: { graph: thenB }, else_branch: { graph: elseB } }).output('y').build();
  for (const sr of [16000, 8000]) {
    const { outputs } = await agreesTyped(`if-computed-${sr}`, computed, [randFloats(2, 19), Int32Array.of(sr)]);
    assert.is(outputs.length, 1);
  }
  const otherShape = new OnnxModelBuilder(13).float('w', [2, 2], [1, 2, 3, 4]).int64('ax', [0]).node('MatMul', ['x', 'w'], ['o']).node('Unsqueeze', ['o', 'ax'], ['e_out']).output('e_out').subgraph('else2');
  const mismatch = new OnnxModelBuilder(13).input('x', [2]).typedInput('c', B, [])
    .node('If', ['c'], ['y'], { then_branch: { graph: thenB }, else_branch: { graph: otherShape } }).output('y').build();
  assert.match(importError(mismatch), /If 'y': unsupported: If with a computed condition whose branches give output 0 as float32 \[2\] and float32 \[1, 2\]/);
});

test('ScatterElements (opsets 11, 18 with each reduction) and ScatterND (13, 18) with computed indices and updates', async () => {
  // Distinct indices per line for 'none' (ONNX leaves duplicates undefined).
  const e = Int32Array.of(2, 0, 1, 3, 1, 2, -1, 0, 2);
  const m11 = new OnnxModelBuilder(11).input('x', [3, 4]).typedInput('i', I64, [3, 3]).input('u', [3, 3])
    .node('ScatterElements', ['x', 'i', 'u'], ['s'], { axis: 1 }).output('s');
  await agreesTyped('scatter-elements-11', m11.build(), [randFloats(12, 30), e, randFloats(9, 31)]);
  const m18 = new OnnxModelBuilder(18).input('x', [3, 4]).typedInput('i', I64, [3, 3]).input('u', [3, 3]).typedInput('j', I64, [2, 4]);
  for (const r of ['add', 'mul', 'max', 'min']) m18.node('ScatterElements', ['x', 'i', 'u'], [r], { axis: 1, reduction: r }).output(r);
  m18.input('v', [2, 4]).node('ScatterElements', ['x', 'j', 'v'], ['a0'], { axis: 0, reduction: 'add' }).output('a0');
  await agreesTyped('scatter-elements-18', m18.build(), [randFloats(12, 32), randInts(9, 33, -4, 3), randFloats(9, 34), randInts(8, 35, -3, 2), randFloats(8, 36)]);
  const nd = new OnnxModelBuilder(13).input('x', [4, 3]).typedInput('i', I64, [2, 1]).input('u', [2, 3]).typedInput('k', I64, [3, 2]).typedInput('w', I64, [3])
    .typedInput('y', I64, [4, 3])
    .node('ScatterND', ['x', 'i', 'u'], ['rows']).output('rows')
    .node('ScatterND', ['y', 'k', 'w'], ['els']).typedOutput('els', I64);
  await agreesTyped('scatter-nd-13', nd.build(), [randFloats(12, 37), Int32Array.of(3, -4), randFloats(6, 38), Int32Array.of(0, 1, 3, 2, -1, 0), Int32Array.of(7, 8, 9), randInts(12, 39, -9, 9)]);
  const ndr = new OnnxModelBuilder(18).input('x', [4, 3]).typedInput('i', I64, [3, 1]).input('u', [3, 3]);
  for (const r of ['add', 'mul', 'max', 'min']) ndr.node('ScatterND', ['x', 'i', 'u'], [r], { reduction: r }).output(r);
  await agreesTyped('scatter-nd-18', ndr.build(), [randFloats(12, 40), Int32Array.of(1, -3, 2), randFloats(9, 41)]);
});

test('TopK (opsets 9, 11 with largest/sorted, 13 on int64): values and int64 indices, ties in index order', async () => {
  const m9 = new OnnxModelBuilder(9).input('x', [3, 6]).node('TopK', ['x'], ['v', 'i'], { k: 2 }).output('v').typedOutput('i', I64);
  await agreesTyped('topk-9', m9.build(), [randFloats(18, 42)]);
  const m11 = new OnnxModelBuilder(11).input('x', [4, 5]).int64('k', [3])
    .node('TopK', ['x', 'k'], ['v', 'i'], { axis: 0 }).output('v').typedOutput('i', I64)
    .node('TopK', ['x', 'k'], ['vs', 'is'], { largest: 0 }).output('vs').typedOutput('is', I64);
  await agreesTyped('topk-11', m11.build(), [randFloats(20, 43, -2, 2, 1)]);
  const m13 = new OnnxModelBuilder(13).typedInput('x', I64, [2, 7]).int64('k', [7])
    .node('TopK', ['x', 'k'], ['v', 'i']).typedOutput('v', I64).typedOutput('i', I64);
  await agreesTyped('topk-13', m13.build(), [randInts(14, 44, -3, 3)]);
});

test('Unique of a constant (flattened and along an axis, sorted or not) folds; its four outputs equal ONNX Runtime\'s', async () => {
  const c = [2, 1, 1, 3, 4, 3, 1, 2, 1, 3, 4, 3];
  for (const attrs of [{}, { sorted: 0 }, { axis: 0 }, { axis: 1, sorted: 0 }, { axis: -1 }] as Record<string, number>[]) {
    const m = new OnnxModelBuilder(11).input('x', [1]).float('c', [2, 6], c)
      .node('Unique', ['c'], ['y', 'i', 'inv', 'n'], attrs)
      .node('Add', ['x', 'y'], ['xy']).output('xy').typedOutput('i', I64).typedOutput('inv', I64).typedOutput('n', I64);
    await agreesTyped(`unique-${JSON.stringify(attrs)}`, m.build(), [Float32Array.of(0.5)]);
  }
  const computed = new OnnxModelBuilder(11).input('x', [3]).node('Unique', ['x'], ['y']).output('y').build();
  assert.match(importError(computed), /Unique 'y': unsupported: Unique of a computed tensor/);
});

test.run();
