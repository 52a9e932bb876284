import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Graph } from './graph';
import { runGraph } from './run';

test('runGraph: conv + bias + relu + dense by hand', () => {
  const g = new Graph();
  const x = g.input('x', [1, 2, 2, 1]); // NHWC, one channel
  const w = g.constant('w', [1, 1, 1, 2], Float32Array.from([2, -1])); // HWIO 1x1, 1 -> 2 channels
  const c = g.op('conv2d', [x, w], { layout: 'NHWC', strides: [1, 1], padding: [0, 0, 0, 0], dilation: [1, 1], groups: 1 });
  const b = g.constant('b', [2], Float32Array.from([0.5, 0.5]));
  const r = g.op('relu', [g.op('add', [c, b])]);
  const f = g.op('batch_flatten', [r]);
  const dw = g.constant('dw', [1, 8], Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8]));
  const d = g.op('dense', [f, dw]);
  g.outputs = [d, r];
  const [dv, rv] = runGraph(g, new Map([['x', Float32Array.from([1, -1, 2, 0])]]));
  // conv: [2,-1], [-2,1], [4,-2], [0,0]; +0.5 then relu
  assert.equal(Array.from(rv), [2.5, 0, 0, 1.5, 4.5, 0, 0.5, 0.5]);
  assert.equal(Array.from(dv), [2.5 * 1 + 1.5 * 4 + 4.5 * 5 + 0.5 * 7 + 0.5 * 8]);
});

test('runGraph: an input read twice, unused nodes skipped, errors name the input', () => {
  const g = new Graph();
  const x = g.input('x', [3]);
  g.op('relu', [g.input('unused', [4])]);
  g.outputs = [g.op('multiply', [x, x])];
  assert.equal(Array.from(runGraph(g, new Map([['x', Float32Array.from([1, -2, 3])]]))[0]), [1, 4, 9]);
  assert.throws(() => runGraph(g, new Map()), /no data for input x/);
  assert.throws(() => runGraph(g, new Map([['x', new Float32Array(2)]])), /input x has 2 values, shape \[3\] needs 3/);
  assert.throws(() => runGraph(g, new Map([['y', new Float32Array(3)]])), /no input named y/);
});

test.run();
