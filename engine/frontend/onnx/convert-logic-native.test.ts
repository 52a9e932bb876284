// The comparison, logic, cast and indexing converters compiled with the default schedules
// and run natively (tt_bench on files of our own inputs), against the reference evaluator
// on the same inputs, exactly for integer and bool outputs and within 1e-5 (relative to
// 1 + |x|) for float ones. Unlike the ONNX Runtime checks (convert-*.test.ts), the ids here
// include out-of-range ones, which the kernels must clamp as the evaluator does.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import { OnnxModelBuilder } from './model-builder';
import { DataType } from './schema';
import { compiledAgrees } from './native-agree.fixture';
import { randFloats, randInts } from './typed-ort.fixture';

const work = mkdtempSync(path.join(tmpdir(), 'tt-logic-native-'));
test.after(() => rmSync(work, { recursive: true, force: true }));

const B = DataType.BOOL, I64 = DataType.INT64;


test('compiled: embedding Gather with negative and out-of-range ids, GatherElements, GatherND, OneHot', async () => {
  const m = new OnnxModelBuilder(13).typedInput('ids', I64, [2, 8]).typedInput('i', I64, [4, 3]).typedInput('nd', I64, [3, 2])
    .float('table', [16, 8], randFloats(128, 1)).input('x', [4, 5])
    .node('Gather', ['table', 'ids'], ['emb']).output('emb')
    .node('GatherElements', ['x', 'i'], ['ge'], { axis: 1 }).output('ge')
    .node('GatherND', ['x', 'nd'], ['gnd']).output('gnd')
    .int64('depth', [6], []).float('vals', [2], [-1, 2])
    .node('OneHot', ['i', 'depth', 'vals'], ['oh'], { axis: 1 }).output('oh');
  await compiledAgrees(work, 'gather', m.build(), [randInts(16, 2, -40, 40), randInts(12, 3, -9, 9), randInts(6, 4, -7, 7), randFloats(20, 5)]);
});

test('compiled: comparisons, Not/And/Xor, Where, Cast (to int8 wrapping, to bool, back), integer Div/Mod, ArgMax/ArgMin, CumSum', async () => {
  const m = new OnnxModelBuilder(13).input('x', [4, 6]).input('y', [6]).typedInput('a', I64, [4, 6]).typedInput('b', I64, [6])
    .node('Greater', ['x', 'y'], ['g']).typedOutput('g', B)
    .node('LessOrEqual', ['a', 'b'], ['le']).typedOutput('le', B)
    .node('Not', ['g'], ['ng'])
    .node('Xor', ['ng', 'le'], ['xo'])
    .node('And', ['xo', 'g'], ['an']).typedOutput('an', B)
    .node('Where', ['xo', 'x', 'y'], ['w']).output('w')
    .node('Cast', ['x'], ['xb'], { to: B }).typedOutput('xb', B)
    .node('Cast', ['a'], ['a8'], { to: DataType.INT8 }).typedOutput('a8', DataType.INT8)
    .node('Cast', ['x'], ['xi'], { to: I64 }).typedOutput('xi', I64)
    .node('Div', ['a', 'b'], ['dv']).typedOutput('dv', I64)
    .node('Mod', ['a', 'b'], ['md']).typedOutput('md', I64)
    .node('Mod', ['a', 'b'], ['fm'], { fmod: 1 }).typedOutput('fm', I64)
    .node('ArgMax', ['x'], ['am'], { axis: 1 }).typedOutput('am', I64)
    .node('ArgMin', ['a'], ['amin'], { axis: 0, keepdims: 0, select_last_index: 1 }).typedOutput('amin', I64)
    .int64('ax', [1], [])
    .node('CumSum', ['x', 'ax'], ['cs'], { reverse: 1 }).output('cs')
    .node('CumSum', ['a', 'ax'], ['csi'], { exclusive: 1 }).typedOutput('csi', I64);
  const x = randFloats(24, 6, -4, 4, 0.5);
  x[0] = 0.25; x[1] = -0.75;
  await compiledAgrees(work, 'logic', m.build(), [x, randFloats(6, 7, -4, 4, 0.5), randInts(24, 8, -300, 300), Int32Array.of(7, -3, 0, 5, -128, 1)]);
});

test('compiled: fused with their neighbours: computed ids and a computed table, a gather of a conv output, argmax after a matmul', async () => {
  const m = new OnnxModelBuilder(13).typedInput('ids', I64, [1, 5]).input('x', [1, 3, 6, 6]).input('q', [4, 8])
    .float('table', [12, 8], randFloats(96, 9)).int64('one', [1], [1]).float('w', [4, 3, 3, 3], randFloats(108, 10))
    .float('k', [8, 10], randFloats(80, 11)).float('half', [1], [0.5])
    .node('Add', ['ids', 'one'], ['ids1'])
    .node('Relu', ['table'], ['rt'])
    .node('Gather', ['rt', 'ids1'], ['emb'])
    .node('Mul', ['emb', 'half'], ['embh']).output('embh')
    .node('Conv', ['x', 'w'], ['c'], { pads: [1, 1, 1, 1] })
    .int64('sel', [2, 0], [2])
    .node('Gather', ['c', 'sel'], ['cg'], { axis: 1 })
    .node('Greater', ['cg', 'half'], ['pos'])
    .node('Where', ['pos', 'cg', 'half'], ['cw']).output('cw')
    .node('MatMul', ['q', 'k'], ['qk'])
    .node('ArgMax', ['qk'], ['best'], { axis: 1, keepdims: 0 }).typedOutput('best', I64)
    .node('Cast', ['best'], ['bestf'], { to: DataType.FLOAT })
    .node('ReduceSum', ['bestf'], ['bs'], { keepdims: 0 }).output('bs');
  await compiledAgrees(work, 'fused', m.build(), [randInts(5, 12, -14, 14), randFloats(108, 13), randFloats(32, 14)]);
});

test('compiled: ScatterElements and ScatterND, plain and with reductions, with out-of-range indices ignored; TopK', async () => {
  const m = new OnnxModelBuilder(18).input('x', [4, 5]).typedInput('i', I64, [3, 2]).input('u', [3, 2]).typedInput('k', I64, [2, 1]).input('v', [2, 5])
    .node('ScatterElements', ['x', 'i', 'u'], ['se'], { axis: 0 }).output('se')
    .node('ScatterElements', ['x', 'i', 'u'], ['sa'], { axis: 1, reduction: 'add' }).output('sa')
    .node('ScatterND', ['x', 'k', 'v'], ['sn']).output('sn')
    .node('ScatterND', ['x', 'k', 'v'], ['sm'], { reduction: 'max' }).output('sm')
    .int64('three', [3]).node('TopK', ['x', 'three'], ['tv', 'ti']).output('tv').typedOutput('ti', I64);
  await compiledAgrees(work, 'scatter', m.build(), [randFloats(20, 15), randInts(6, 16, -6, 6), randFloats(6, 17), Int32Array.of(9, -1), randFloats(10, 18)]);
});

test.run();
