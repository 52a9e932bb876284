// The sub-pixel rewrite computes what the direct transposed conv computes (reference
// evaluator, both layouts, strides that divide the kernel and strides that do not, pads,
// output padding), as one conv per phase where the output is a whole number of phases and
// as one conv for all phases where it is not; tolerance 1e-5 relative to the largest output
// (float sums reordered).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Graph } from '../graph';
import { runGraph } from '../run';
import { uniform } from '../../runtime/random';
import { convTransposeAsConv } from './conv-transpose-as-conv';

const rand = (n: number, seed: number): Float32Array => uniform(n, seed, 0).map((u) => 2 * u - 1);

/** `ops`: the op nodes the rewrite makes. */
interface Case { name: string; hw: [number, number]; k: [number, number]; s: [number, number]; pad: number[]; outPad?: number[]; ci: number; co: number; ops: string[] }

const PHASES_4 = ['conv2d', 'conv2d', 'conv2d', 'conv2d', 'subpixel_gather'];

const CASES: Case[] = [
  { name: 'DCGAN 4x4 stride 2 pad 1', hw: [4, 4], k: [4, 4], s: [2, 2], pad: [1, 1, 1, 1], ci: 6, co: 16, ops: PHASES_4 },
  // 3 output channels (an image): one conv of all 12 phase channels, not four of 3.
  { name: 'DCGAN 4x4 stride 2 pad 1 to 3 channels', hw: [4, 4], k: [4, 4], s: [2, 2], pad: [1, 1, 1, 1], ci: 6, co: 3, ops: ['conv2d', 'subpixel_gather'] },
  { name: '3x3 stride 2 pad 1 output_padding 1', hw: [5, 3], k: [3, 3], s: [2, 2], pad: [1, 1, 1, 1], outPad: [1, 1], ci: 3, co: 16, ops: PHASES_4 },
  // 8 output rows are not a whole number of 3 phases: one conv for all phases, cropped.
  { name: '5x3 stride 3x1 asymmetric pads', hw: [3, 4], k: [5, 3], s: [3, 1], pad: [2, 0, 1, 1], ci: 2, co: 3, ops: ['conv2d', 'subpixel_gather'] },
  // 8 = 4 x 2 outputs, but phase 0 would start 1 row into the input (a negative conv padding): one conv for all.
  { name: '3x3 stride 2 pad 3 output_padding 1', hw: [6, 6], k: [3, 3], s: [2, 2], pad: [3, 3, 3, 3], outPad: [1, 1], ci: 2, co: 16, ops: ['conv2d', 'subpixel_gather'] },
  { name: '3x3 stride 1 no pads', hw: [4, 4], k: [3, 3], s: [1, 1], pad: [0, 0, 0, 0], ci: 3, co: 2, ops: ['conv2d', 'subpixel_gather'] },
  { name: '2x2 stride 2 (U-Net up-sampling)', hw: [3, 5], k: [2, 2], s: [2, 2], pad: [0, 0, 0, 0], ci: 4, co: 16, ops: PHASES_4 },
];

for (const layout of ['NHWC', 'NCHW'] as const) {
  for (const c of CASES) {
    test(`${c.name} (${layout}): ${c.ops.join(' + ')}, same outputs`, () => {
      const g = new Graph();
      const inShape = layout === 'NHWC' ? [1, ...c.hw, c.ci] : [1, c.ci, ...c.hw];
      const x = g.input('x', inShape);
      const wShape = layout === 'NHWC' ? [...c.k, c.ci, c.co] : [c.ci, c.co, ...c.k];
      const w = g.constant('w', wShape, rand(c.k[0] * c.k[1] * c.ci * c.co, 2));
      g.outputs = [g.op('conv2d_transpose', [x, w], { strides: c.s, padding: c.pad, outputPadding: c.outPad ?? [0, 0], layout })];
      const rewritten = convTransposeAsConv(g);
      assert.equal(rewritten.nodes.filter((n) => n.inputs.length > 0).map((n) => n.op), c.ops);
      assert.equal(rewritten.node(rewritten.outputs[0]).shape, g.node(g.outputs[0]).shape);
      const feeds = new Map([['x', rand(inShape.reduce((a, b) => a * b, 1), 1)]]);
      const [want] = runGraph(g, feeds) as Float32Array[];
      const [got] = runGraph(rewritten, feeds) as Float32Array[];
      const peak = want.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
      want.forEach((v, i) => assert.ok(Math.abs(got[i] - v) <= 1e-5 * peak, `${i}: ${got[i]} vs ${v}`));
    });
  }
}

test('grouped, dilated or computed-weight transposed convs are left as they are', () => {
  const g = new Graph();
  const x = g.input('x', [1, 4, 4, 4]);
  const w = g.constant('w', [3, 3, 4, 2], rand(72, 3));
  const dil = g.op('conv2d_transpose', [x, w], { strides: [2, 2], dilation: [2, 2], layout: 'NHWC' });
  const wx = g.input('wx', [3, 3, 4, 4]);
  const computed = g.op('conv2d_transpose', [x, wx], { strides: [2, 2], layout: 'NHWC' });
  g.outputs = [dil, computed];
  assert.equal(convTransposeAsConv(g).nodes.filter((n) => n.inputs.length > 0).map((n) => n.op), ['conv2d_transpose', 'conv2d_transpose']);
});

test.run();
