// The importer against ONNX Runtime as the oracle: small models that use every supported
// operator and attribute form are imported (NCHW, and converted to NHWC), run with the
// reference evaluator and compared with ONNX Runtime's outputs on the same input. Without
// onnxruntime-node those comparisons are skipped with a message; the refusal tests run
// regardless.

import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { main } from '../../cli';
import { openOrtSession, tryLoadOnnxRuntime } from '../../compare/ort';
import { UserError } from '../../errors';
import { skip } from '../../skip.fixture';
import { extractTasks } from '../../graph/extract';
import { convertLayout } from '../../graph/passes';
import { runGraph } from '../../graph/run';
import { uniform } from '../../runtime/random';
import { cancelTransposes, importOnnx, loadOnnx } from './import';
import { OnnxModelBuilder } from './model-builder';
import { DataType, EXTERNAL_DATA } from './schema';

const ort = tryLoadOnnxRuntime();

const rand = (n: number, seed: number, lo = -1, hi = 1): Float32Array => uniform(n, seed, 0).map((u) => lo + (hi - lo) * u);
const size = (s: readonly number[]): number => s.reduce((a, b) => a * b, 1);

/** Import `bytes`, run it (NCHW and NHWC) on seeded inputs and compare every output with ONNX Runtime. */
async function agreesWithOrt(what: string, bytes: Uint8Array, tol = 1e-5): Promise<void> {
  const model = importOnnx(bytes, `${what}.onnx`);
  const inputs = model.inputs.map((inp, i) => rand(size(inp.shape), 11 + i));
  const feeds = new Map(model.inputs.map((inp, i) => [inp.name, inputs[i]]));
  const nchw = runGraph(model.graph, feeds);
  const nhwc = runGraph(cancelTransposes(convertLayout(model.graph, 'NHWC')), feeds);
  nhwc.forEach((o, k) => o.forEach((v, i) => assert.ok(Math.abs(v - nchw[k][i]) <= tol * (1 + Math.abs(v)), `${what}: NHWC output ${k}[${i}] ${v} vs ${nchw[k][i]}`)));
  if (!ort.module) { skip(`${what}: the comparison with ONNX Runtime`, ort.error); return; }
  const session = await openOrtSession(bytes, 1, model.inputs.map((i) => i.shape));
  const want = await session.run(inputs);
  await session.release();
  assert.is(want.length, nchw.length, `${what}: number of outputs`);
  want.forEach((w, k) => {
    assert.is(nchw[k].length, w.length, `${what}: output ${k} size`);
    for (let i = 0; i < w.length; i++) {
      if (!(Math.abs(nchw[k][i] - w[i]) <= tol * (1 + Math.abs(w[i])))) assert.unreachable(`${what}: output ${k}[${i}] = ${nchw[k][i]}, ONNX Runtime ${w[i]}`);
    }
  });
}

test('Conv (groups, dilations, asymmetric pads, bias), depthwise SAME_LOWER, BN, LeakyRelu, HardSigmoid, MaxPool ceil_mode', async () => {
  const b = new OnnxModelBuilder(13).input('x', [1, 4, 11, 11])
    .float('w1', [6, 2, 3, 3], rand(108, 1)).float('b1', [6], rand(6, 2))
    .float('g', [6], rand(6, 3, 0.5, 1.5)).float('be', [6], rand(6, 4)).float('m', [6], rand(6, 5)).float('v', [6], rand(6, 6, 0.5, 2))
    .float('w2', [12, 1, 3, 3], rand(108, 7))
    .node('Conv', ['x', 'w1', 'b1'], ['c1'], { group: 2, dilations: [2, 1], strides: [1, 2], pads: [1, 0, 2, 1], kernel_shape: [3, 3] })
    .node('BatchNormalization', ['c1', 'g', 'be', 'm', 'v'], ['bn'], { epsilon: 1e-3 })
    .node('LeakyRelu', ['bn'], ['lr'], { alpha: 0.1 })
    .node('Conv', ['lr', 'w2'], ['c2'], { group: 6, strides: [2, 2], auto_pad: 'SAME_LOWER' })
    .node('HardSigmoid', ['c2'], ['hs'], { alpha: 0.3, beta: 0.4 })
    .node('MaxPool', ['hs'], ['y'], { kernel_shape: [2, 2], strides: [2, 2], ceil_mode: 1 })
    .output('y');
  await agreesWithOrt('conv', b.build());
});

for (const opset of [11, 14]) {
  test(`opset ${opset}: SAME_UPPER conv, Clip, pools with and without count_include_pad, Pad, HardSwish/HardSigmoid, Shape/Gather flatten, Gemm, Softmax`, async () => {
    const b = new OnnxModelBuilder(opset).input('x', ['N', 3, 9, 9])
      .float('w', [4, 3, 3, 3], rand(108, 8)).float('lo', [], [0]).float('hi', [], [0.5])
      .int64('pads', [0, 0, 1, 2, 0, 0, 0, 1]).float('pv', [], [0.25])
      .int64('zero', [0], []).int64('minus1', [-1])
      .float('fc', [4, 5], rand(20, 9)).float('fcb', [1, 5], rand(5, 10))
      .node('Conv', ['x', 'w'], ['c'], { auto_pad: 'SAME_UPPER', strides: [2, 2] })
      .node('Clip', ['c', 'lo', 'hi'], ['cl'])
      .node('AveragePool', ['cl'], ['p1'], { kernel_shape: [3, 3], pads: [1, 1, 1, 1], count_include_pad: 1 })
      .node('Sigmoid', ['p1'], ['s'])
      .node('AveragePool', ['s'], ['p2'], { kernel_shape: [3, 3], pads: [1, 1, 1, 1], strides: [2, 2] })
      .node('Tanh', ['p2'], ['t'])
      .node('Pad', ['t', 'pads', 'pv'], ['pd'], { mode: 'constant' })
      .node(opset >= 14 ? 'HardSwish' : 'HardSigmoid', ['pd'], ['hw'])
      .node('GlobalAveragePool', ['hw'], ['gp'])
      .node('Shape', ['gp'], ['shape'])
      .node('Gather', ['shape', 'zero'], ['n'], { axis: 0 })
      .node('Unsqueeze', opset >= 13 ? ['n', 'ax0'] : ['n'], ['n1'], opset >= 13 ? {} : { axes: [0] })
      .int64(opset >= 13 ? 'ax0' : 'unused_in_opset_11', [0])
      .node('Concat', ['n1', 'minus1'], ['newshape'], { axis: 0 })
      .node('Reshape', ['gp', 'newshape'], ['flat'])
      .node('Gemm', ['flat', 'fc', 'fcb'], ['g'], { alpha: 0.5, beta: 1.5 })
      .node('Softmax', ['g'], ['y'], { axis: 1 })
      .output('y');
    await agreesWithOrt(`opset${opset}`, b.build());
  });
}

test('ReduceMean, Squeeze/Unsqueeze, Transpose, Concat, MatMul, Sub/Div/Mul, Dropout, Identity, Constant, Flatten, legacy Softmax axis', async () => {
  const b = new OnnxModelBuilder(13).input('x', [2, 3, 4, 5])
    .int64('ax1', [1]).float('w', [5, 3], rand(15, 12))
    .node('ReduceMean', ['x'], ['m1'], { axes: [2, 3], keepdims: 0 })
    .node('ReduceMean', ['x'], ['m2'], { axes: [1], keepdims: 1 })
    .node('Constant', [], ['k'], { value_float: 0.5 })
    .node('Sub', ['x', 'm2'], ['d'])
    .node('Mul', ['d', 'k'], ['dk'])
    .node('Constant', [], ['two'], { value: { tensor: { dims: [1, 1, 1, 5], data_type: DataType.FLOAT, float_data: [2, 3, 4, 5, 6] } } })
    .node('Div', ['dk', 'two'], ['q'])
    .node('Transpose', ['q'], ['qt'], { perm: [0, 2, 3, 1] })
    .node('Dropout', ['qt'], ['dr'])
    .node('Identity', ['dr'], ['id'])
    .node('Flatten', ['id'], ['fl'], { axis: 2 })
    .node('MatMul', ['x', 'w'], ['mm'])
    .node('ReduceMean', ['mm'], ['mmr'], { axes: [1, 2], keepdims: 0 })
    .node('Unsqueeze', ['m1', 'ax1'], ['u'])
    .node('Squeeze', ['u', 'ax1'], ['sq'])
    .node('Concat', ['sq', 'mmr'], ['cat'], { axis: 1 })
    .node('Softmax', ['cat'], ['y'], { axis: 0 })
    .output('y').output('fl');
  await agreesWithOrt('misc', b.build());
});

test('symbolic batch takes the batch option; a fixed batch must match', () => {
  const bytes = new OnnxModelBuilder().input('x', ['batch', 3]).node('Relu', ['x'], ['y']).output('y').build();
  assert.equal(importOnnx(bytes, 'm.onnx', { batch: 4 }).inputs, [{ name: 'x', shape: [4, 3], dtype: 'float32' }]);
  assert.equal(importOnnx(bytes, 'm.onnx').inputs, [{ name: 'x', shape: [1, 3], dtype: 'float32' }]);
  const fixed = new OnnxModelBuilder().input('x', [2, 3]).node('Relu', ['x'], ['y']).output('y').build();
  assert.throws(() => importOnnx(fixed, 'm.onnx', { batch: 4 }), (e: Error) => e instanceof UserError && /fixed batch of 2/.test(e.message));
});

test('input shapes fix symbolic dimensions and scalars; inputs may differ in their first dimension; int and bool inputs', () => {
  const sym = new OnnxModelBuilder().input('x', ['N', 'L']).input('s', []).node('Mul', ['x', 's'], ['y']).output('y').build();
  assert.throws(() => importOnnx(sym, 'm.onnx'), (e: Error) => e instanceof UserError &&
    e.message === "m.onnx: graph input 'x' [N, L] has a symbolic dimension 1 ('L'); fix it with --input-shapes x:[1,<L>], a number for each <dimension> (in Nx: the network's inputs)");
  const fixed = importOnnx(sym, 'm.onnx', { inputShapes: [{ name: 'x', shape: [2, 7] }, { name: 's', shape: [] }] });
  assert.equal(fixed.inputs.map((i) => i.shape), [[2, 7], []]);
  assert.equal(importOnnx(sym, 'm.onnx', { inputShapes: [{ shape: [3, 5] }, { shape: [] }] }).inputs.map((i) => i.shape), [[3, 5], []], 'by position');
  assert.throws(() => importOnnx(sym, 'm.onnx', { inputShapes: [{ name: 'x', shape: [2] }] }), (e: Error) => /graph input 'x' has rank 2 \[N, L\]; the shape given for it, \[2\], has rank 1/.test(e.message));
  const gemm = new OnnxModelBuilder().input('a', [3, 5]).input('b', [5, 4]).node('Gemm', ['a', 'b'], ['y']).output('y').build();
  assert.equal(importOnnx(gemm, 'm.onnx').inputs.map((i) => i.shape), [[3, 5], [5, 4]], 'different fixed first dimensions are kept');
  assert.throws(() => importOnnx(gemm, 'm.onnx', { inputShapes: [{ name: 'a', shape: [4, 5] }] }), (e: Error) => /differs in dimension 0/.test(e.message));
  const ints = new OnnxModelBuilder().typedInput('ids', DataType.INT64, [1, 4]).typedInput('m', DataType.BOOL, [1, 4]).node('Identity', ['ids'], ['y']).output('y').build();
  assert.equal(importOnnx(ints, 'm.onnx').inputs.map((i) => i.dtype), ['int32', 'bool']);
  const u64 = new OnnxModelBuilder().typedInput('u', DataType.UINT64, [2]).node('Identity', ['u'], ['y']).output('y').build();
  assert.equal(importOnnx(u64, 'm.onnx').inputs.map((i) => i.dtype), ['int32'], 'UINT64 runs as int32 too');
  const f8 = new OnnxModelBuilder(19).typedInput('q', DataType.FLOAT8E4M3FN, [2]).typedInput('i4', DataType.INT4, [2]).node('Identity', ['q'], ['y']).output('y').build();
  assert.equal(importOnnx(f8, 'm.onnx').inputs.map((i) => i.dtype), ['float32', 'int32'], 'float8 runs as float32, int4 as int32');
  // An input with an empty dimension is the empty tensor, a constant: CastLike takes only its type.
  // (The builder writes no dim_value 0, which reads as symbolic: the shape is given.)
  const like = new OnnxModelBuilder(19).input('x', [3]).typedInput('like', DataType.FLOAT16, ['n']).node('CastLike', ['x', 'like'], ['y']).typedOutput('y', DataType.FLOAT16).build();
  const m = importOnnx(like, 'm.onnx', { inputShapes: [{ name: 'like', shape: [0] }] });
  assert.equal(m.inputs.map((i) => i.name), ['x']);
  assert.equal(runGraph(m.graph, new Map([['x', new Float32Array([1, 1.0001, 70000])]]))[0], new Float32Array([1, 1, Infinity]), 'rounded to float16');
  const onlyEmpty = new OnnxModelBuilder(13).input('e', [2, 'n']).node('Identity', ['e'], ['y']).output('y').build();
  assert.throws(() => importOnnx(onlyEmpty, 'm.onnx', { inputShapes: [{ name: 'e', shape: [2, 0] }] }), (e: Error) => e.message === "m.onnx: the graph has no (non-initializer) inputs left ('e' is empty, the others bound to constants)");
  const dbl = new OnnxModelBuilder().typedInput('d', DataType.DOUBLE, [2]).typedInput('h', DataType.FLOAT16, [2]).node('Add', ['d', 'h'], ['y']).output('y').build();
  assert.equal(importOnnx(dbl, 'm.onnx').inputs.map((i) => i.dtype), ['float32', 'float32'], 'DOUBLE and FLOAT16 run as float32');
  assert.equal(importOnnx(dbl, 'm.onnx').onnxTypes.inputs, ['DOUBLE', 'FLOAT16']);
  const str = new OnnxModelBuilder().typedInput('s', DataType.STRING, [2]).node('Identity', ['s'], ['y']).output('y').build();
  assert.throws(() => importOnnx(str, 'm.onnx'), (e: Error) => e.message === "m.onnx: graph input 's' is STRING; supported input types: FLOAT, FLOAT16, BFLOAT16, DOUBLE and the float8/float4 types (run as float32), the integer types (run as int32) and BOOL");
});

test('external data: initializers read from a file next to the model', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tt-onnx-'));
  try {
    const w = Float32Array.from([1, 2, 3, 4, 5, 6]);
    writeFileSync(path.join(dir, 'weights.bin'), Buffer.concat([Buffer.alloc(8), Buffer.from(w.buffer)]));
    const ext = (offset: number) => ({
      name: 'w', dims: [3, 2], data_type: DataType.FLOAT, data_location: EXTERNAL_DATA,
      external_data: [{ key: 'location', value: 'weights.bin' }, { key: 'offset', value: String(offset) }, { key: 'length', value: '24' }],
    });
    const model = (offset: number) => new OnnxModelBuilder().input('x', [1, 3]).tensor(ext(offset)).node('MatMul', ['x', 'w'], ['y']).output('y').build();
    writeFileSync(path.join(dir, 'm.onnx'), model(8));
    const m = loadOnnx(path.join(dir, 'm.onnx'), { layout: 'NCHW' });
    assert.equal([...runGraph(m.graph, new Map([['x', Float32Array.from([1, 1, 1])]]))[0]], [9, 12]);
    writeFileSync(path.join(dir, 'bad.onnx'), model(16));
    assert.throws(() => loadOnnx(path.join(dir, 'bad.onnx')), (e: Error) => e instanceof UserError && e.message.includes('bad.onnx') && /has 32 bytes, needs 40/.test(e.message));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('external data must stay inside the model folder: no .., no absolute path, no link out (compile exits 2)', async () => {
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'tt-onnx-'))); // real: the message names where a link leads
  try {
    const folder = path.join(dir, 'model');
    mkdirSync(path.join(folder, 'data'), { recursive: true });
    const w = Buffer.from(Float32Array.from([1, 2, 3, 4, 5, 6]).buffer);
    writeFileSync(path.join(dir, 'secret.bin'), w); // beside the folder: the right size, so only the location check refuses it
    writeFileSync(path.join(folder, 'data', 'weights.bin'), w);
    symlinkSync(path.join(dir, 'secret.bin'), path.join(folder, 'out.bin'));
    symlinkSync(path.join('data', 'weights.bin'), path.join(folder, 'alias.bin'));
    const model = (location: string): string => {
      const file = path.join(folder, `${location.replace(/\W/g, '_')}.onnx`);
      writeFileSync(file, new OnnxModelBuilder().input('x', [1, 3]).tensor({
        name: 'w', dims: [3, 2], data_type: DataType.FLOAT, data_location: EXTERNAL_DATA, external_data: [{ key: 'location', value: location }],
      }).node('MatMul', ['x', 'w'], ['y']).output('y').build());
      return file;
    };
    // Legitimate external data keeps working: a subfolder, and a link that stays inside.
    for (const ok of ['data/weights.bin', 'alias.bin']) {
      const m = loadOnnx(model(ok), { layout: 'NCHW' });
      assert.equal([...runGraph(m.graph, new Map([['x', Float32Array.from([1, 1, 1])]]))[0]], [9, 12], ok);
    }
    const refused: [string, string][] = [
      ['../../../../etc/passwd', "climbs out with '..'"],
      ['../secret.bin', "climbs out with '..'"],
      ['data/../../secret.bin', "climbs out with '..'"],
      [path.join(dir, 'secret.bin'), 'is an absolute path'],
      ['out.bin', `is a link to ${path.join(dir, 'secret.bin')}, outside the folder`],
    ];
    for (const [location, why] of refused) {
      const file = model(location);
      const want = `${file}: initializer 'w': external data location '${location}' ${why} (expected a relative path inside the model's folder ${folder}, without '..', as onnx.checker requires)`;
      assert.throws(() => loadOnnx(file), (e: Error) => e instanceof UserError && e.message === want, location);
    }
    // The command line: one line, exit code 2, nothing compiled.
    const file = model('../../../../etc/passwd');
    const err: string[] = [];
    const code = await main(['compile', file, '--out', path.join(dir, 'out')], { out: () => undefined, err: (t) => { err.push(t); } });
    assert.is(code, 2);
    assert.is(err.join(''), `tensortune compile: ${file}: initializer 'w': external data location '../../../../etc/passwd' climbs out with '..' (expected a relative path inside the model's folder ${folder}, without '..', as onnx.checker requires)\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('one UserError names the file and lists every unsupported node at once', () => {
  const bytes = new OnnxModelBuilder().input('x', [1, 2, 4, 4]).float('w', [2, 2, 1, 1], rand(4, 1)).int64('p', [0, 0, 1, 1, 0, 0, 1, 1])
    .node('Conv', ['x', 'w'], ['c'], { foo: 1 }, 'conv_with_foo')
    .node('TfIdfVectorizer', ['c'], ['l'], {}, 'my_tfidf')
    .node('Pad', ['l', 'p'], ['pd'], { mode: 'reflect' }, 'reflect_pad')
    .node('Relu', ['x'], ['r'], {}, 'fine_relu')
    .node('Pad', ['r', 'p'], ['pr'], { mode: 'wrap' }, 'wrap_pad')
    .output('pd').output('pr').build();
  try {
    importOnnx(bytes, '/models/bad.onnx');
    assert.unreachable('expected a UserError');
  } catch (e) {
    assert.instance(e, UserError);
    const msg = (e as Error).message;
    assert.ok(msg.startsWith('/models/bad.onnx: cannot import 3 node(s)'), msg);
    assert.match(msg, /Conv 'conv_with_foo': unsupported attribute foo/);
    assert.match(msg, /TfIdfVectorizer 'my_tfidf': operator is not supported/);
    assert.match(msg, /Pad 'wrap_pad': unsupported: Pad mode 'wrap' before opset 19/);
    assert.not.match(msg, /reflect_pad/); // it reads the unsupported TfIdfVectorizer's output: reported once, there
    assert.not.match(msg, /fine_relu/);
  }
});

test('not ONNX, truncated, wrong opset, no graph: clear UserErrors naming the file', () => {
  const good = new OnnxModelBuilder().input('x', [1, 3]).float('w', [3, 2], rand(6, 3)).node('MatMul', ['x', 'w'], ['y']).output('y').build();
  const expectError = (bytes: Uint8Array, pattern: RegExp): void => {
    try {
      importOnnx(bytes, 'model.onnx');
      assert.unreachable(`expected an error matching ${pattern}`);
    } catch (e) {
      assert.instance(e, UserError);
      assert.ok((e as Error).message.startsWith('model.onnx: '), (e as Error).message);
      assert.match((e as Error).message, pattern);
    }
  };
  expectError(new TextEncoder().encode('this is not a model at all\n'), /not an ONNX model/);
  expectError(good.subarray(0, good.length - 7), /not an ONNX model, or a truncated one/);
  expectError(new Uint8Array(0), /not an ONNX model/);
  expectError(new OnnxModelBuilder(6).input('x', [1]).node('Relu', ['x'], ['y']).output('y').build(), /opset 6 is not supported \(expected 7-28;/);
  expectError(new OnnxModelBuilder(13).input('x', [1]).node('Relu', ['x'], ['y']).node('Neg', ['x'], ['y']).output('y').build(), /^model\.onnx: value 'y' is defined twice \(again by Neg 'y'\); ONNX requires each value name to be defined once$/);
  expectError(new OnnxModelBuilder(13).input('x', [1]).node('Relu', ['z'], ['y']).output('y').build(), /value 'z' is used before it is defined/);
});

test('HardSwish, HardSigmoid, Clip and LeakyRelu after a conv fuse into its task (elementwise epilogue, NHWC)', () => {
  const bytes = new OnnxModelBuilder(14).input('x', [1, 3, 8, 8]).float('w', [4, 3, 3, 3], rand(108, 1)).float('b', [4], rand(4, 2))
    .node('Conv', ['x', 'w', 'b'], ['c'], { pads: [1, 1, 1, 1] })
    .node('HardSwish', ['c'], ['h1']).node('HardSigmoid', ['h1'], ['h2']).node('LeakyRelu', ['h2'], ['h3']).node('Clip', ['h3'], ['y'])
    .output('y').build();
  const dir = mkdtempSync(path.join(tmpdir(), 'tt-onnx-'));
  try {
    writeFileSync(path.join(dir, 'm.onnx'), bytes);
    const tasks = extractTasks(loadOnnx(path.join(dir, 'm.onnx')).graph);
    assert.equal(tasks.map((t) => t.desc), ['conv2d_nhwc+add+hard_swish+hard_sigmoid+leaky_relu+clip 1x8x8x3 -> 1x8x8x4']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
