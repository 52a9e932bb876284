import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runGraph } from '../graph/run';
import type { Layout } from '../topi/nn';
import { NetBuilder } from './builder';
import { permute } from '../ir/tensor';
import { fillUniform } from './init';

/** A tiny net touching every layer of the DSL; the flatten sees a 2x2 map, so NHWC needs fc's columns permuted. */
function tiny(layout: Layout): NetBuilder {
  const b = new NetBuilder({ batch: 2, layout, imageSize: 8, seed: 3, randomStats: true, weights: 'random' });
  const x = b.input();
  let y = b.conv2d(x, 'c1', { channels: 6, kernel: [3, 3], padding: [1, 1] });
  y = b.relu(b.batchNorm(b.bias(y, 'c1_bias'), 'bn1', 1e-5));
  const d = b.conv2d(y, 'dw', { channels: 6, kernel: [3, 3], padding: [1, 1], groups: 6, weightName: 'dw_weight' });
  const p = b.avgPool(y, [3, 3], [1, 1], [1, 1], true);
  y = b.concat([d, b.add(p, y)]);
  y = b.maxPool(y, [2, 2], [2, 2]);
  y = b.maxPool(y, [2, 2], [2, 2]); // 2x2 map of 12 channels
  y = b.dense(b.flatten(y), 'fc', 5);
  b.graph.outputs = [y, b.softmax(y)];
  return b;
}

test('builder: both layouts compute the same function (flatten of a spatial map included)', () => {
  const shape = [2, 3, 8, 8];
  const x = fillUniform(new Float32Array(2 * 3 * 64), 11, -1, 1);
  const [la, pa] = runGraph(tiny('NCHW').graph, new Map([['data', x]])) as Float32Array[];
  const [lb, pb] = runGraph(tiny('NHWC').graph, new Map([['data', permute(x, shape, [0, 2, 3, 1])]])) as Float32Array[];
  assert.is(la.length, 10);
  for (let i = 0; i < la.length; i++) assert.ok(Math.abs(la[i] - lb[i]) <= 1e-5 * Math.max(1, Math.abs(la[i])), `${i}: ${la[i]} vs ${lb[i]}`);
  for (let i = 0; i < pa.length; i++) assert.ok(Math.abs(pa[i] - pb[i]) < 1e-6);
  assert.ok(Math.abs(pa.subarray(0, 5).reduce((s, v) => s + v, 0) - 1) < 1e-6);
});

test('builder: conv attrs, bias broadcast shapes, batch_norm inputs', () => {
  for (const layout of ['NHWC', 'NCHW'] as const) {
    const g = tiny(layout).graph;
    const conv = g.nodes.find((n) => n.name === 'c1')!;
    assert.equal((conv as { attrs: unknown }).attrs, { layout, strides: [1, 1], padding: [1, 1, 1, 1], dilation: [1, 1], groups: 1 });
    assert.equal(g.nodes.find((n) => n.name === 'c1_bias')!.shape, layout === 'NCHW' ? [6, 1, 1] : [6]);
    assert.equal(g.nodes.find((n) => n.name === 'fc_bias')!.shape, [5]);
    const bn = g.nodes.find((n) => n.op === 'batch_norm')!;
    assert.equal(bn.inputs.slice(1).map((i) => g.node(i).name), ['bn1_gamma', 'bn1_beta', 'bn1_moving_mean', 'bn1_moving_var']);
    assert.equal((bn as { attrs: unknown }).attrs, { axis: layout === 'NHWC' ? 3 : 1, epsilon: 1e-5 });
    assert.equal(g.nodes.find((n) => n.name === 'dw_weight')!.shape, layout === 'NCHW' ? [6, 1, 3, 3] : [3, 3, 6, 1]);
  }
});

test.run();
