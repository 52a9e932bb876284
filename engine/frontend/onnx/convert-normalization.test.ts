// The normalization converters against ONNX Runtime (ort-agree.fixture.ts: NCHW, NHWC after
// convertLayout, and ORT; |ours - ORT| <= 1e-5 * (1 + |ORT|)): LayerNormalization (axes,
// broadcast scale, no bias, the Mean and InvStdDev outputs), InstanceNormalization,
// GroupNormalization at opsets 18 and 21, MeanVarianceNormalization, LRN, and LogSoftmax
// and Hardmax with the axis semantics before and from opset 13; most after a conv, so the
// NHWC run sees them on a moved channel axis. Refusals say so in one line.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { agreesWithOrt, importError, rand } from './ort-agree.fixture';
import { skip } from '../../skip.fixture';
import { SUPPORTED_OPS } from './import';
import { OnnxModelBuilder } from './model-builder';

test('LayerNormalization opset 17: last axis with bias, two axes with a [S, 1] scale and no bias, Mean and InvStdDev', async () => {
  const b = new OnnxModelBuilder(17).input('x', [2, 5, 8])
    .float('s', [8], rand(8, 1, 0.5, 1.5)).float('bias', [8], rand(8, 2))
    .float('s2', [5, 1], rand(5, 3, 0.5, 1.5))
    .node('LayerNormalization', ['x', 's', 'bias'], ['y', 'mean', 'inv'], { epsilon: 1e-3 })
    .node('LayerNormalization', ['x', 's2'], ['y2'], { axis: 1 })
        // ONNX Runtime 1.30 crashes on an empty B input ('') and on InvStdDev without Mean: not tried.
    .output('y').output('mean').output('inv').output('y2');
  const m = await agreesWithOrt('layernorm', b.build(), { range: [-2, 3] });
  assert.equal(m.graph.node(m.graph.outputs[1]).shape, [2, 5, 1]);
});

test('LayerNormalization over a conv\'s [C, H, W]', async () => {
  const b = new OnnxModelBuilder(17).input('x', [1, 3, 5, 5])
    .float('w', [4, 3, 3, 3], rand(108, 4)).float('s', [4, 5, 5], rand(100, 5, 0.5, 1.5))
    .node('Conv', ['x', 'w'], ['c'], { pads: [1, 1, 1, 1] })
    .node('LayerNormalization', ['c', 's'], ['y'], { axis: 1 })
    .output('y');
  await agreesWithOrt('layernorm chw', b.build());
});

test('the decomposed LayerNorm exporters write below opset 17 (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add)', async () => {
  const missing = ['Pow', 'Sqrt'].filter((op) => !SUPPORTED_OPS.includes(op));
  if (missing.length) { skip('the decomposed LayerNorm', `${missing.join(' and ')} not converted yet`); return; }
  const b = new OnnxModelBuilder(13).input('x', [2, 6, 16])
    .float('two', [], [2]).float('eps', [], [1e-5]).float('g', [16], rand(16, 1, 0.5, 1.5)).float('be', [16], rand(16, 2))
    .node('ReduceMean', ['x'], ['m'], { axes: [-1] })
    .node('Sub', ['x', 'm'], ['d'])
    .node('Pow', ['d', 'two'], ['sq'])
    .node('ReduceMean', ['sq'], ['v'], { axes: [-1] })
    .node('Add', ['v', 'eps'], ['ve'])
    .node('Sqrt', ['ve'], ['sd'])
    .node('Div', ['d', 'sd'], ['n'])
    .node('Mul', ['n', 'g'], ['ng'])
    .node('Add', ['ng', 'be'], ['y'])
    .output('y');
  await agreesWithOrt('decomposed layernorm', b.build(), { range: [-2, 3] });
});

for (const opset of [11, 22]) {
  test(`InstanceNormalization opset ${opset} after a conv; MeanVarianceNormalization (default and given axes)`, async () => {
    const b = new OnnxModelBuilder(opset).input('x', [2, 3, 6, 5])
      .float('w', [4, 3, 1, 1], rand(12, 6)).float('s', [4], rand(4, 7, 0.5, 1.5)).float('bi', [4], rand(4, 8))
      .node('Conv', ['x', 'w'], ['c'])
      .node('InstanceNormalization', ['c', 's', 'bi'], ['y'], { epsilon: 1e-4 })
      .node('MeanVarianceNormalization', ['c'], ['mv'])
      .node('MeanVarianceNormalization', ['x'], ['mv2'], { axes: [1, -1] })
      .output('y').output('mv').output('mv2');
    await agreesWithOrt(`instancenorm${opset}`, b.build());
  });
}

for (const opset of [18, 21]) {
  test(`GroupNormalization opset ${opset}: scale and bias per ${opset >= 21 ? 'channel' : 'group'}, 3-D and 4-D input`, async () => {
    const per = opset >= 21 ? 6 : 3;
    const b = new OnnxModelBuilder(opset).input('x', [2, 6, 4, 3]).input('x3', [2, 6, 7])
      .float('s', [per], rand(per, 9, 0.5, 1.5)).float('bi', [per], rand(per, 10))
      .node('GroupNormalization', ['x', 's', 'bi'], ['y'], { num_groups: 3, epsilon: 1e-3 })
      .node('GroupNormalization', ['x3', 's', 'bi'], ['y3'], { num_groups: 3 })
      .output('y').output('y3');
    await agreesWithOrt(`groupnorm${opset}`, b.build());
  });
}

test('LRN after a conv (AlexNet\'s size 5, and size 3; ONNX Runtime refuses even sizes, topi/normalization.test.ts checks them)', async () => {
  const b = new OnnxModelBuilder(13).input('x', [1, 3, 7, 7])
    .float('w', [8, 3, 3, 3], rand(216, 11))
    .node('Conv', ['x', 'w'], ['c'])
    .node('LRN', ['c'], ['y'], { size: 5, alpha: 1e-4, beta: 0.75, bias: 1.5 })
    .node('LRN', ['c'], ['y2'], { size: 3, alpha: 0.5, beta: 0.6 })
    .output('y').output('y2');
  await agreesWithOrt('lrn', b.build(), { range: [-3, 3] });
});

for (const opset of [11, 13]) {
  test(`LogSoftmax and Hardmax opset ${opset}: default axis, axis 1 of a 4-d input, after a conv`, async () => {
    const b = new OnnxModelBuilder(opset).input('x', [2, 3, 4, 5])
      .float('w', [4, 3, 1, 1], rand(12, 12))
      .node('Conv', ['x', 'w'], ['c'])
      .node('LogSoftmax', ['c'], ['ls'])
      .node('LogSoftmax', ['c'], ['ls1'], { axis: 1 })
      .node('LogSoftmax', ['x'], ['ls2'], { axis: -2 })
      .node('Hardmax', ['c'], ['hm'])
      .node('Hardmax', ['c'], ['hm1'], { axis: 1 })
      .node('Hardmax', ['x'], ['hm3'], { axis: 3 })
      .output('ls').output('ls1').output('ls2').output('hm').output('hm1').output('hm3');
    await agreesWithOrt(`logsoftmax${opset}`, b.build(), { range: [-4, 4] });
  });
}

test('normalization refusals, one line each', () => {
  const ln = new OnnxModelBuilder(17).input('x', [2, 4]).float('s', [4], rand(4, 1))
    .node('LayerNormalization', ['x', 's'], ['y'], { stash_type: 11 }).output('y').build();
  assert.match(importError(ln), /LayerNormalization 'y': unsupported: stash_type 11/);
  const inst = new OnnxModelBuilder(13).input('x', [2, 4]).float('s', [4], rand(4, 1))
    .node('InstanceNormalization', ['x', 's', 's'], ['y']).output('y').build();
  assert.match(importError(inst), /InstanceNormalization 'y': unsupported: input of rank 2/);
  const lrn = new OnnxModelBuilder(13).input('x', [1, 4, 2, 2])
    .node('LRN', ['x'], ['y'], { size: 3, bias: -0.5 }).output('y').build();
  assert.match(importError(lrn), /LRN 'y': unsupported: bias -0.5/);
});

test.run();
