import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { evaluate } from '../ir/evaluate';
import { fillUniform } from '../frontend/init';
import { getNetwork } from '../frontend/networks';
import { Graph, isOpNode, type ConstantNode } from './graph';
import { partition, type FusedGroup } from './fuse';
import { optimize } from './passes';
import { runGraph } from './run';

const size = (s: readonly number[]): number => s.reduce((a, b) => a * b, 1);
const rand = (n: number, seed: number): Float32Array => fillUniform(new Float32Array(n), seed, -1, 1);
const opsOf = (g: Graph, group: FusedGroup): string[] => group.nodes.map((id) => g.node(id).op);

/** Run a partitioned graph group by group, each through its own DAG; returns the graph outputs. */
function runGroups(g: Graph, groups: readonly FusedGroup[], feeds: Map<string, Float32Array>): Float32Array[] {
  const values = new Map<number, Float32Array>();
  for (const n of g.nodes) {
    if (n.op === 'input') values.set(n.id, feeds.get(n.name)!);
    else if (!isOpNode(n)) values.set(n.id, (n as ConstantNode).data as Float32Array);
  }
  for (const group of groups) {
    const args = new Map(group.dag.inputs.map((t, i) => [t, values.get(group.inputs[i])!]));
    for (const [t, v] of args) assert.ok(v, `group ${group.id}: input ${t.name} computed before use`);
    values.set(group.output, evaluate(group.dag, args).get(group.dag.outputs[0].name) as Float32Array);
  }
  return g.outputs.map((o) => values.get(o)!);
}

function conv(g: Graph, x: number, co: number, k = 3): number {
  const ci = g.node(x).shape[3];
  const p = (k - 1) >> 1;
  const w = g.constant('w', [k, k, ci, co], rand(k * k * ci * co, co + k));
  return g.op('conv2d', [x, w], { layout: 'NHWC', strides: [1, 1], padding: [p, p, p, p], dilation: [1, 1], groups: 1 });
}
const bias = (g: Graph, x: number): number => {
  const c = g.node(x).shape[3];
  return g.op('add', [x, g.constant('b', [1, 1, 1, c], rand(c, 5))]);
};

test('conv + bias + relu is one group; placeholders p0 data, p1 weight, p2 bias; prints as in the seed', () => {
  const g = new Graph();
  const x = g.input('data', [1, 4, 4, 2]);
  g.outputs = [g.op('relu', [bias(g, conv(g, x, 3, 1))])];
  const [group] = partition(g);
  assert.equal(opsOf(g, group), ['conv2d', 'add', 'relu']);
  assert.equal(group.inputs, [0, 1, 3]);
  assert.is(group.output, 5);
  assert.ok(group.hasReduction);
  assert.is(group.dag.print(), [
    'p0 = PLACEHOLDER [1, 4, 4, 2]',
    'pad_temp(i0, i1, i2, i3) = p0[i0, i1, i2, i3]',
    'p1 = PLACEHOLDER [1, 1, 2, 3]',
    'conv2d_nhwc(nn, yy, xx, ff) += (pad_temp[nn, (yy + ry), (xx + rx), rc]*p1[ry, rx, rc, ff])',
    'p2 = PLACEHOLDER [1, 1, 1, 3]',
    'T_add(ax0, ax1, ax2, ax3) = (conv2d_nhwc[ax0, ax1, ax2, ax3] + p2[ax0, 0, 0, ax3])',
    'T_relu(ax0, ax1, ax2, ax3) = max(T_add[ax0, ax1, ax2, ax3], 0f)',
    '',
  ].join('\n'));
});

test('residual add: the first conv in post-DFS order keeps the add; the other conv is alone', () => {
  const g = new Graph();
  const x = g.input('data', [1, 4, 4, 2]);
  const shortcut = conv(g, x, 2, 1); // created first, but the add reads it second
  const main = conv(g, g.op('relu', [conv(g, x, 2)]), 2);
  const sum = g.op('add', [main, shortcut]);
  g.outputs = [g.op('relu', [bias(g, sum)])];
  const groups = partition(g);
  assert.equal(groups.map((gr) => opsOf(g, gr)), [['conv2d'], ['conv2d', 'relu'], ['conv2d', 'add', 'add', 'relu']]);
  // The two T_adds get unique stage names.
  assert.match(groups[2].dag.print(), /T_add_1\(ax0, ax1, ax2, ax3\) = \(T_add\[/);
  assert.equal(groups[2].dag.inputs.map((t) => t.shape), [[1, 4, 4, 2], [3, 3, 2, 2], [1, 4, 4, 2], [1, 1, 1, 2]]);
  assert.is(groups[2].inputs[2], groups[0].output);
});

test('element-wise ops in front of a conv stay out of its group (TVM: conv edges are not injective)', () => {
  const g = new Graph();
  const x = g.input('data', [1, 4, 4, 2]);
  const pre = g.op('relu', [bias(g, g.op('multiply', [x, g.constant('s', [1, 1, 1, 2], rand(2, 1))]))]);
  g.outputs = [conv(g, pre, 2)];
  assert.equal(partition(g).map((gr) => opsOf(g, gr)), [['multiply', 'add', 'relu'], ['conv2d']]);
});

test('element-wise ops fuse into a following reduction of an injective chain; pool -> flatten -> dense stay apart', () => {
  const g = new Graph();
  const x = g.input('data', [1, 4, 4, 8]);
  const r = g.op('relu', [x]);
  const pooled = g.op('global_avg_pool2d', [r], { layout: 'NHWC' });
  const flat = g.op('batch_flatten', [pooled]);
  const d = g.op('add', [g.op('dense', [flat, g.constant('w', [3, 8], rand(24, 9))]), g.constant('b', [1, 3], rand(3, 8))]);
  g.outputs = [g.op('softmax', [d], { axis: -1 })];
  const groups = partition(g);
  assert.equal(groups.map((gr) => opsOf(g, gr)), [['relu'], ['global_avg_pool2d'], ['batch_flatten'], ['dense', 'add'], ['softmax']]);
  assert.equal(groups.map((gr) => gr.hasReduction), [false, true, false, true, true]);
});

test('injective chains fuse; an element-wise op joins a following injective op', () => {
  const g = new Graph();
  const x = g.input('data', [1, 2, 3, 4]);
  const t = g.op('transpose', [g.op('relu', [x])], { axes: [0, 3, 1, 2] });
  g.outputs = [g.op('reshape', [t], { newShape: [1, 24] })];
  const groups = partition(g);
  assert.equal(groups.map((gr) => opsOf(g, gr)), [['relu', 'transpose', 'reshape']]);
  assert.not.ok(groups[0].hasReduction);
});

test('two reductions never share a group: conv -> max pool', () => {
  const g = new Graph();
  const x = g.input('data', [1, 4, 4, 2]);
  const c = g.op('relu', [conv(g, x, 2)]);
  g.outputs = [g.op('max_pool2d', [c], { layout: 'NHWC', kernel: [2, 2], strides: [2, 2], padding: [0, 0, 0, 0] })];
  assert.equal(partition(g).map((gr) => opsOf(g, gr)), [['conv2d', 'relu'], ['max_pool2d']]);
});

test('a diamond after a conv fuses when every branch is element-wise', () => {
  const g = new Graph();
  const x = g.input('data', [1, 4, 4, 2]);
  const c = conv(g, x, 2);
  const a = g.op('relu', [c]);
  const b = g.op('sigmoid', [c]);
  g.outputs = [g.op('add', [a, b])];
  assert.equal(partition(g).map((gr) => opsOf(g, gr)), [['conv2d', 'relu', 'sigmoid', 'add']]);
});

/** Two pre-activation residual units (projection, then identity shortcut) with BN everywhere, as TVM's ResNet. */
function miniResnet(): Graph {
  const g = new Graph();
  let seed = 50;
  const bnRelu = (x: number): number => {
    const c = g.node(x).shape[3];
    const v = (lo: number, hi: number): number => g.constant('bn', [c], fillUniform(new Float32Array(c), seed++, lo, hi));
    return g.op('relu', [g.op('batch_norm', [x, v(0.5, 1.5), v(-0.5, 0.5), v(-0.5, 0.5), v(0.5, 2)], { axis: 3, epsilon: 2e-5 })]);
  };
  let x = conv(g, g.input('data', [1, 6, 6, 3]), 4);
  for (const project of [true, false]) {
    const act = bnRelu(x);
    const shortcut = project ? conv(g, act, 4, 1) : x;
    x = g.op('add', [conv(g, bnRelu(conv(g, act, 4)), 4), shortcut]);
  }
  const pooled = g.op('batch_flatten', [g.op('global_avg_pool2d', [bnRelu(x)], { layout: 'NHWC' })]);
  g.outputs = [g.op('softmax', [g.op('dense', [pooled, g.constant('fc', [3, 4], rand(12, 77))])], { axis: -1 })];
  return g;
}

const NETS: [string, () => { graph: Graph; input: string }][] = [
  ['mobilenet (32x32)', () => {
    const net = getNetwork('mobilenet', { imageSize: 32, randomStats: true });
    return { graph: net.graph, input: net.inputName };
  }],
  ['a two-unit pre-activation ResNet', () => ({ graph: miniResnet(), input: 'data' })],
];

for (const [name, make] of NETS) {
  test(`${name}: running the groups' DAGs in order gives the graph's output`, () => {
    const { graph, input } = make();
    const g = optimize(graph);
    const groups = partition(g);
    assert.equal(groups.map((gr) => gr.id), groups.map((_, i) => i));
    const covered = groups.flatMap((gr) => gr.nodes).sort((a, b) => a - b);
    assert.equal(covered, g.nodes.filter(isOpNode).map((n) => n.id), 'every op node in exactly one group');
    const feeds = new Map([[input, rand(size(g.node(g.nodes.find((n) => n.op === 'input')!.id).shape), 3)]]);
    const want = runGraph(g, feeds)[0], got = runGroups(g, groups, feeds)[0];
    for (let i = 0; i < want.length; i++) assert.ok(Math.abs(got[i] - want[i]) <= 1e-6, `output ${i}: ${got[i]} vs ${want[i]}`);
  });
}

test('the mini ResNet partitions as TVM does ResNet', () => {
  const g = optimize(miniResnet());
  assert.equal(partition(g).map((gr) => opsOf(g, gr).join('+')), [
    'conv2d+add+relu', // first conv, unit 1's BN1 folded into it (nothing else reads the conv)
    'conv2d', // projection shortcut (its node comes first; post-DFS order gave the add to conv2)
    'conv2d+add+relu', // unit 1 conv1 + BN2 shift + relu
    'conv2d+add', // unit 1 conv2 + residual
    'multiply+add+relu', // unit 2's BN1 + relu: the conv after it does not take it
    'conv2d+add+relu',
    'conv2d+add+multiply+add+relu', // unit 2 conv2 + residual + tail BN + relu
    'global_avg_pool2d', 'batch_flatten', 'dense', 'softmax',
  ]);
});

test.run();
