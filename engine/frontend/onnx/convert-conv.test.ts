// Conv, ConvTranspose and the pools in 1-D, 2-D and 3-D against ONNX Runtime: each small
// model is imported, run by the reference evaluator in ONNX's layout and after the layout
// pass (channels last: NHWC, NDHWC), and compared with ONNX Runtime's outputs on the same
// seeded input. Tolerance: |ours - ORT| <= 1e-5 * (1 + |ORT|) (float32 sums in another order).
// Without onnxruntime-node the ORT half is skipped with a message; refusals run regardless.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openOrtSession, tryLoadOnnxRuntime } from '../../compare/ort';
import { isOpNode } from '../../graph/graph';
import { convertLayout } from '../../graph/passes';
import { runGraph } from '../../graph/run';
import { uniform } from '../../runtime/random';
import { skip } from '../../skip.fixture';
import { cancelTransposes, importOnnx } from './import';
import { OnnxModelBuilder, type AttrValue } from './model-builder';

const ort = tryLoadOnnxRuntime();
const TOL = 1e-5;

const rand = (n: number, seed: number, lo = -1, hi = 1): Float32Array => uniform(n, seed, 0).map((u) => lo + (hi - lo) * u);
const size = (s: readonly number[]): number => s.reduce((a, b) => a * b, 1);

async function agreesWithOrt(what: string, bytes: Uint8Array): Promise<void> {
  const model = importOnnx(bytes, `${what}.onnx`);
  const inputs = model.inputs.map((inp, i) => rand(size(inp.shape), 11 + i));
  const feeds = new Map(model.inputs.map((inp, i) => [inp.name, inputs[i]]));
  const first = runGraph(model.graph, feeds);
  const lastGraph = cancelTransposes(convertLayout(model.graph, 'NHWC'));
  const last = runGraph(lastGraph, feeds);
  last.forEach((o, k) => o.forEach((v, i) => assert.ok(Math.abs(v - first[k][i]) <= TOL * (1 + Math.abs(v)), `${what}: channels-last output ${k}[${i}] ${v} vs ${first[k][i]}`)));
  if (!ort.module) { skip(`${what}: the comparison with ONNX Runtime`, ort.error); return; }
  const session = await openOrtSession(bytes, 1, model.inputs.map((i) => i.shape));
  const want = await session.run(inputs);
  await session.release();
  assert.is(want.length, first.length, `${what}: number of outputs`);
  want.forEach((w, k) => {
    assert.is(first[k].length, w.length, `${what}: output ${k} size`);
    for (let i = 0; i < w.length; i++) {
      if (!(Math.abs(first[k][i] - w[i]) <= TOL * (1 + Math.abs(w[i])))) assert.unreachable(`${what}: output ${k}[${i}] = ${first[k][i]}, ONNX Runtime ${w[i]}`);
    }
  });
}

/** One node over input x (shape `x`) with a weight `w` and an optional bias, then a Relu so the output is not the op itself. */
function single(op: string, x: number[], attrs: Record<string, AttrValue>, w?: number[], bias?: number, opset = 13): Uint8Array {
  const b = new OnnxModelBuilder(opset).input('x', x);
  const ins = ['x'];
  if (w) { b.float('w', w, rand(size(w), 2)); ins.push('w'); }
  if (bias) { b.float('b', [bias], rand(bias, 3)); ins.push('b'); }
  return b.node(op, ins, ['y0'], attrs).node('Relu', ['y0'], ['y']).output('y').build();
}

const convCases: [string, number[], number[], Record<string, AttrValue>, boolean][] = [
  ['1-D conv: stride, dilation, pads, bias', [2, 3, 17], [4, 3, 3], { strides: [2], dilations: [2], pads: [1, 2] }, true],
  ['1-D depthwise conv, SAME_UPPER', [1, 4, 10], [8, 1, 3], { group: 4, auto_pad: 'SAME_UPPER', strides: [2] }, false],
  ['1-D grouped conv', [1, 4, 9], [6, 2, 2], { group: 2 }, true],
  ['3-D conv: 3x3x3 pad 1, bias', [1, 3, 4, 6, 6], [4, 3, 3, 3, 3], { pads: [1, 1, 1, 1, 1, 1] }, true],
  ['3-D conv: strides, dilations, asymmetric pads, groups', [2, 4, 5, 6, 7], [6, 2, 2, 3, 2], { strides: [2, 1, 2], dilations: [1, 2, 1], pads: [0, 1, 2, 1, 0, 1], group: 2 }, false],
  ['3-D depthwise conv, SAME_LOWER', [1, 3, 3, 5, 5], [3, 1, 3, 3, 3], { group: 3, auto_pad: 'SAME_LOWER', strides: [1, 2, 2] }, true],
];
for (const [what, x, w, attrs, bias] of convCases) {
  test(`Conv ${what}`, async () => { await agreesWithOrt(what, single('Conv', x, attrs, w, bias ? w[0] : undefined)); });
}

const deconvCases: [string, number[], number[], Record<string, AttrValue>, number | undefined][] = [
  ['DCGAN layer: 4x4 stride 2 pad 1', [2, 8, 4, 4], [8, 4, 4, 4], { strides: [2, 2], pads: [1, 1, 1, 1] }, 4],
  ['3x3 stride 2, output_padding, asymmetric pads', [1, 3, 4, 3], [3, 2, 3, 3], { strides: [2, 2], pads: [1, 0, 0, 1], output_padding: [1, 1] }, 2],
  ['groups 2, dilations 2 with stride 2', [1, 4, 3, 4], [4, 3, 3, 2], { strides: [2, 2], dilations: [2, 2], group: 2 }, undefined],
  ['output_shape (odd total padding)', [1, 2, 3, 3], [2, 2, 3, 3], { strides: [2, 2], output_shape: [6, 6] }, 2],
  ['SAME_UPPER', [1, 2, 3, 3], [2, 1, 3, 3], { strides: [2, 2], auto_pad: 'SAME_UPPER' }, undefined],
  ['SAME_LOWER with output_shape', [1, 2, 3, 3], [2, 1, 3, 3], { strides: [2, 2], auto_pad: 'SAME_LOWER', output_shape: [6, 5] }, undefined],
  ['stride 3 over a 2-wide kernel', [1, 2, 3, 4], [2, 3, 2, 2], { strides: [3, 3] }, undefined],
  ['1-D: stride 2, pads, output_padding, bias', [2, 3, 7], [3, 4, 4], { strides: [2], pads: [1, 2], output_padding: [1] }, 4],
  ['3-D: stride 2, pads 1', [1, 4, 2, 3, 3], [4, 3, 4, 4, 4], { strides: [2, 2, 2], pads: [1, 1, 1, 1, 1, 1] }, 3],
  ['3-D: groups, mixed strides, dilation', [1, 4, 3, 2, 3], [4, 2, 2, 3, 2], { strides: [1, 2, 2], dilations: [2, 1, 1], group: 2, pads: [0, 1, 0, 1, 0, 0] }, 4],
];
for (const [what, x, w, attrs, bias] of deconvCases) {
  test(`ConvTranspose ${what}`, async () => { await agreesWithOrt(`deconv ${what}`, single('ConvTranspose', x, attrs, w, bias)); });
}

const poolCases: [string, string, number[], Record<string, AttrValue>, number][] = [
  ['1-D max: pads, strides', 'MaxPool', [2, 3, 11], { kernel_shape: [3], strides: [2], pads: [1, 1] }, 13],
  ['1-D max: dilations, ceil_mode', 'MaxPool', [1, 2, 12], { kernel_shape: [3], strides: [2], dilations: [2], ceil_mode: 1 }, 13],
  ['1-D average: count_include_pad', 'AveragePool', [1, 2, 9], { kernel_shape: [4], strides: [2], pads: [2, 1], count_include_pad: 1 }, 13],
  ['2-D max: dilations', 'MaxPool', [1, 2, 7, 8], { kernel_shape: [2, 3], strides: [1, 2], dilations: [2, 1], pads: [1, 0, 1, 1] }, 13],
  ['2-D average: ceil_mode with count_include_pad', 'AveragePool', [1, 2, 6, 6], { kernel_shape: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1], ceil_mode: 1, count_include_pad: 1 }, 13],
  ['2-D max: ceil_mode dropping a window that starts in the padding', 'MaxPool', [1, 1, 5, 5], { kernel_shape: [3, 3], strides: [3, 3], pads: [0, 0, 2, 2], ceil_mode: 1 }, 13],
  ['2-D average: dilations (opset 19)', 'AveragePool', [1, 2, 7, 7], { kernel_shape: [2, 2], strides: [2, 1], dilations: [2, 2], pads: [1, 0, 1, 1] }, 19],
  ['3-D max: ceil_mode', 'MaxPool', [1, 2, 5, 6, 7], { kernel_shape: [2, 3, 3], strides: [2, 2, 2], ceil_mode: 1 }, 13],
  ['3-D average: pads, no pads in the count', 'AveragePool', [2, 2, 4, 5, 5], { kernel_shape: [3, 3, 3], strides: [1, 2, 2], pads: [1, 1, 1, 1, 1, 1] }, 13],
  ['3-D average: SAME_UPPER, count_include_pad, ceil_mode', 'AveragePool', [1, 3, 5, 4, 5], { kernel_shape: [2, 3, 2], strides: [2, 2, 2], auto_pad: 'SAME_UPPER', count_include_pad: 1, ceil_mode: 1 }, 13],
  ['3-D max: dilations', 'MaxPool', [1, 1, 6, 5, 6], { kernel_shape: [2, 2, 2], dilations: [2, 1, 2], pads: [0, 1, 1, 1, 0, 0] }, 13],
  ['1-D Lp, p 1', 'LpPool', [1, 2, 9], { kernel_shape: [3], strides: [2], pads: [1, 1], p: 1 }, 13],
  ['2-D Lp, p 2 (default), SAME_UPPER', 'LpPool', [1, 2, 7, 6], { kernel_shape: [3, 2], strides: [2, 2], auto_pad: 'SAME_UPPER' }, 13],
  ['2-D Lp, p 3, dilations, ceil_mode (opset 18)', 'LpPool', [1, 2, 8, 7], { kernel_shape: [2, 2], strides: [2, 2], dilations: [1, 2], ceil_mode: 1, p: 3 }, 18],
  ['3-D Lp, p 2', 'LpPool', [1, 2, 4, 5, 4], { kernel_shape: [2, 2, 2], strides: [2, 1, 2], pads: [0, 1, 0, 0, 1, 1] }, 13],
  ['GlobalLpPool 2-D, p 3', 'GlobalLpPool', [2, 3, 4, 5], { p: 3 }, 13],
  ['GlobalLpPool 3-D', 'GlobalLpPool', [1, 3, 2, 3, 4], {}, 13],
];
for (const [what, op, x, attrs, opset] of poolCases) {
  test(`${op} ${what}`, async () => { await agreesWithOrt(what, single(op, x, attrs, undefined, undefined, opset)); });
}

for (const x of [[2, 3, 7], [1, 2, 3, 4, 5]]) {
  test(`GlobalAveragePool and GlobalMaxPool of rank ${x.length}`, async () => {
    const b = new OnnxModelBuilder(13).input('x', x)
      .node('GlobalAveragePool', ['x'], ['a']).node('GlobalMaxPool', ['x'], ['m']).node('Add', ['a', 'm'], ['y']).output('y');
    await agreesWithOrt(`global pools rank ${x.length}`, b.build());
  });
}

test('GlobalAveragePool and GlobalMaxPool of rank 6 (ONNX Runtime has none): the mean and max over the spatial axes', () => {
  const b = new OnnxModelBuilder(13).input('x', [1, 2, 2, 3, 2, 3])
    .node('GlobalAveragePool', ['x'], ['a']).node('GlobalMaxPool', ['x'], ['m']).output('a').output('m');
  const model = importOnnx(b.build(), 'rank6.onnx');
  const x = rand(72, 5);
  const [a, m] = runGraph(model.graph, new Map([['x', x]]));
  assert.equal(model.graph.node(model.graph.outputs[0]).shape, [1, 2, 1, 1, 1, 1]);
  for (let c = 0; c < 2; c++) {
    const part = x.slice(c * 36, (c + 1) * 36);
    assert.ok(Math.abs(a[c] - part.reduce((p, v) => p + v, 0) / 36) <= TOL, `mean of channel ${c}`);
    assert.is(m[c], Math.max(...part), `max of channel ${c}`);
  }
});

test('a 3-D chain runs in NDHWC after the layout pass: Conv, BatchNormalization, Relu, MaxPool, ConvTranspose, Add, GlobalAveragePool', async () => {
  const b = new OnnxModelBuilder(13).input('x', [1, 3, 4, 6, 6])
    .float('w', [4, 3, 3, 3, 3], rand(324, 4)).float('g', [4], rand(4, 5, 0.5, 1.5)).float('be', [4], rand(4, 6))
    .float('m', [4], rand(4, 7)).float('v', [4], rand(4, 8, 0.5, 2)).float('wt', [4, 4, 2, 2, 2], rand(128, 9))
    .node('Conv', ['x', 'w'], ['c'], { pads: [1, 1, 1, 1, 1, 1] })
    .node('BatchNormalization', ['c', 'g', 'be', 'm', 'v'], ['bn'])
    .node('Relu', ['bn'], ['r'])
    .node('MaxPool', ['r'], ['p'], { kernel_shape: [2, 2, 2], strides: [2, 2, 2] })
    .node('ConvTranspose', ['p', 'wt'], ['u'], { strides: [2, 2, 2] })
    .node('Add', ['u', 'r'], ['s'])
    .node('GlobalAveragePool', ['s'], ['y'])
    .output('y');
  const bytes = b.build();
  const nhwc = convertLayout(importOnnx(bytes, 'chain.onnx').graph, 'NHWC');
  const ops = nhwc.nodes.filter(isOpNode);
  assert.equal(ops.filter((n) => n.op === 'transpose').length, 2, 'one transpose at the input, one at the output');
  for (const op of ['conv3d', 'max_pool3d', 'conv3d_transpose', 'global_avg_pool3d']) assert.is(ops.find((n) => n.op === op)?.attrs.layout, 'NDHWC', op);
  await agreesWithOrt('3-D chain', bytes);
});

test('ConvTranspose with an output_shape above the convolution\'s (ONNX: negative pads; ONNX Runtime refuses it): the output framed in zeros', () => {
  // As ONNX's reference evaluator computes it: total padding -2 per axis, split -1 / -1.
  const run = (attrs: Record<string, AttrValue>): Float32Array => {
    const model = importOnnx(single('ConvTranspose', [1, 1, 3, 3], attrs, [1, 1, 3, 3]), 'm.onnx');
    return runGraph(model.graph, new Map([['x', rand(9, 11)]]))[0] as Float32Array;
  };
  const natural = run({ strides: [2, 2] }), framed = run({ strides: [2, 2], output_shape: [9, 9], auto_pad: 'SAME_UPPER' });
  assert.is(framed.length, 81);
  for (let y = 0; y < 9; y++) for (let x = 0; x < 9; x++) {
    const inside = y >= 1 && y < 8 && x >= 1 && x < 8;
    assert.is(framed[y * 9 + x], inside ? natural[(y - 1) * 7 + (x - 1)] : 0, `(${y}, ${x})`);
  }
});

test('refusals: rank 6 convs, SAME asking for more than the convolution gives, negative pads', () => {
  const refused = (bytes: Uint8Array, re: RegExp): void => assert.throws(() => importOnnx(bytes, 'm.onnx'), re);
  refused(single('Conv', [1, 1, 2, 2, 2, 2], {}, [1, 1, 1, 1, 1, 1]), /Conv 'y0': unsupported: input of rank 6/);
  refused(single('ConvTranspose', [1, 1, 3, 3], { strides: [2, 2], auto_pad: 'SAME_UPPER' }, [1, 1, 1, 1]), /auto_pad SAME_UPPER asking for an output \[6, 6\] larger than the convolution gives \(\[5, 5\]\)/);
  refused(single('MaxPool', [1, 1, 5, 5, 5], { kernel_shape: [2, 2, 2], pads: [0, 0, -1, 0, 0, 0] }), /negative pads/);
});

test.run();
