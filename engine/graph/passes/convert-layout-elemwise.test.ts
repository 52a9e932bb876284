// Elementwise and broadcasting ops of any kind (ONNX's activations, comparisons, where,
// prelu, pow) follow a converted input into NHWC: no transposes around them, same outputs.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Graph } from '../graph';
import { runGraph } from '../run';
import { uniform } from '../../runtime/random';
import { convertLayout } from './convert-layout';

const rand = (n: number, seed: number): Float32Array => uniform(n, seed, 0).map((u) => 2 * u - 1);

test('conv -> mish -> prelu (per channel) -> power -> where(greater) stays NHWC between the boundary transposes', () => {
  const g = new Graph();
  const x = g.input('x', [1, 3, 6, 6]);
  const w = g.constant('w', [4, 3, 3, 3], rand(108, 1));
  const conv = g.op('conv2d', [x, w], { padding: [1, 1, 1, 1], layout: 'NCHW' });
  const mish = g.op('mish', [conv]);
  const slope = g.constant('slope', [4, 1, 1], rand(4, 2));
  const prelu = g.op('prelu', [mish, slope]);
  const two = g.constant('two', [1], Float32Array.of(2));
  const sq = g.op('power', [prelu, two]);
  const zero = g.constant('zero', [1], Float32Array.of(0.1));
  const cond = g.op('greater', [prelu, zero]);
  g.outputs = [g.op('where', [cond, sq, prelu])];
  const nhwc = convertLayout(g, 'NHWC');
  const transposes = nhwc.nodes.filter((n) => n.op === 'transpose').length;
  assert.is(transposes, 2, 'one transpose at the input, one at the output');
  const data = rand(108, 3);
  const [want] = runGraph(g, new Map([['x', data]])) as Float32Array[];
  const [got] = runGraph(nhwc, new Map([['x', data]])) as Float32Array[];
  want.forEach((v, i) => assert.ok(Math.abs(got[i] - v) <= 1e-5 * (1 + Math.abs(v)), `${i}: ${got[i]} vs ${v}`));
});

test.run();
