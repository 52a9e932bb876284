// A batch run one sample at a time computes exactly what the batch computes: for graphs of
// every kind of rule (convs and pools, dense layers, embeddings, norms, attention with views,
// reshapes and slices that keep the batch first), the one-sample graph's outputs, sample by
// sample, equal the batch graph's bit for bit (both run by the reference evaluator, which
// computes each output element the same way at any batch). Graphs that mix samples keep
// the whole batch.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fillUniform } from '../frontend/init';
import { getNetwork } from '../frontend/networks';
import { tuningTasks } from './extract';
import { Graph } from './graph';
import { optimize } from './passes';
import { batchShape, oneSampleGraph, samplePlan } from './per-sample';
import { runGraph } from './run';
import { numElements, type TensorData } from '../ir/tensor';

const rand = (shape: readonly number[], seed: number): Float32Array => fillUniform(new Float32Array(numElements(shape)), seed, -1, 1);

/** The batch graph's outputs against its one-sample graph's, run once per sample on that sample's rows. */
function assertSameBySample(g: Graph, feeds: ReadonlyMap<string, TensorData>): void {
  const one = oneSampleGraph(g);
  assert.ok(one, 'the graph runs per sample');
  const n = one.samples;
  const whole = runGraph(g, feeds);
  const parts = Array.from({ length: n }, (_, s) => {
    const slice = new Map([...feeds].map(([name, data]) => {
      const rows = data.length / n;
      return [name, data.slice(s * rows, (s + 1) * rows)];
    }));
    return runGraph(one.graph, slice);
  });
  g.outputs.forEach((id, o) => {
    assert.equal(batchShape(one.graph.node(id).shape, n), [...g.node(id).shape], `output ${o}: one sample's shape times the batch`);
    const rows = whole[o].length / n;
    for (let s = 0; s < n; s++) {
      assert.equal(Array.from(parts[s][o]), Array.from(whole[o].slice(s * rows, (s + 1) * rows)), `output ${o}, sample ${s}`);
    }
  });
}

test('a CNN (conv, bias, relu, pools, flatten, dense, softmax) runs per sample exactly', () => {
  const g = new Graph();
  const x = g.input('data', [3, 8, 8, 4]);
  const w = g.constant('w', [3, 3, 4, 6], rand([3, 3, 4, 6], 1));
  let y = g.op('conv2d', [x, w], { layout: 'NHWC', strides: [1, 1], padding: [1, 1, 1, 1], dilation: [1, 1], groups: 1 });
  y = g.op('relu', [g.op('add', [y, g.constant('b', [1, 1, 1, 6], rand([6], 2))])]);
  y = g.op('max_pool2d', [y], { layout: 'NHWC', kernel: [2, 2], strides: [2, 2], padding: [0, 0, 0, 0] });
  const side = g.op('global_avg_pool2d', [y], { layout: 'NHWC' });
  const flat = g.op('batch_flatten', [side]);
  const logits = g.op('dense', [flat, g.constant('fc', [5, 6], rand([5, 6], 3))]);
  g.outputs = [g.op('softmax', [logits], { axis: -1 }), y];
  assertSameBySample(g, new Map([['data', rand([3, 8, 8, 4], 4)]]));
});

test('a transformer layer (embedding, mask, layer norm, attention through views, slices, concat) runs per sample exactly', () => {
  const [n, s, heads, d] = [2, 5, 2, 4], c = heads * d;
  const g = new Graph();
  const ids = g.input('ids', [n, s], 'int32');
  const mask = g.input('mask', [n, s], 'int32');
  let x = g.op('take', [g.constant('table', [7, c], rand([7, c], 5)), ids], { axis: 0 });
  x = g.op('add', [x, g.constant('pos', [1, s, c], rand([1, s, c], 6))]);
  x = g.op('layer_norm', [x, g.constant('gamma', [c], rand([c], 7)), g.constant('beta', [c], rand([c], 8))], { axis: -1, epsilon: 1e-5 });
  const qkv = g.op('dense', [x, g.constant('wqkv', [3 * c, c], rand([3 * c, c], 9))]);
  const part = (k: number) => g.op('strided_slice', [qkv], { begin: [0, 0, k * c], step: [1, 1, 1], shape: [n, s, c] });
  const q = part(0);
  const kT = g.op('transpose', [g.op('reshape', [part(1)], { newShape: [n, s, heads, d] })], { axes: [0, 2, 3, 1] });
  const extended = g.op('multiply', [g.op('reshape', [g.op('cast', [mask], { dtype: 'float32' })], { newShape: [n, 1, 1, s] }), g.constant('big', [1, 1, 1, 1], new Float32Array([-100]))]);
  const view = { shape: [n, s, heads, d], perm: [0, 2, 1, 3] };
  let scores = g.op('batch_matmul', [q, kT], { transB: false, viewA: view });
  scores = g.op('softmax', [g.op('add', [scores, extended])], { axis: -1 });
  const vView = { begin: [0, 0, 2 * c], box: [n, s, c], shape: [n, s, heads, d], perm: [0, 2, 1, 3] };
  const ctx = g.op('batch_matmul', [scores, qkv], { transB: false, viewB: vView });
  const merged = g.op('reshape', [g.op('transpose', [ctx], { axes: [0, 2, 1, 3] })], { newShape: [n, s, c] });
  const both = g.op('concatenate', [merged, x], { axis: 2 });
  g.outputs = [g.op('mean', [both], { axes: [1], keepdims: false })];
  const idData = Int32Array.from({ length: n * s }, (_, i) => (i * 5 + 3) % 7);
  const maskData = Int32Array.from({ length: n * s }, (_, i) => (i % 4 === 3 ? 0 : 1));
  assertSameBySample(g, new Map<string, TensorData>([['ids', idData], ['mask', maskData]]));
});

/** A graph of `data` [4, 6] through `op` (and a constant of shape `constant`, when given), for the refusals. */
function oneOp(op: string, attrs: Record<string, unknown>, constant?: number[]): Graph {
  const g = new Graph();
  const x = g.input('data', [4, 6]);
  g.outputs = [g.op(op, constant ? [x, g.constant('c', constant, rand(constant, 1))] : [x], attrs)];
  return g;
}

test('graphs that mix samples keep the whole batch', () => {
  const cases: [string, Graph][] = [
    ['softmax over the batch axis', oneOp('softmax', { axis: 0 })],
    ['a reduction over the batch axis', oneOp('mean', { axes: [0], keepdims: true })],
    ['a reshape that merges the batch', oneOp('reshape', { newShape: [24] })],
    ['a reshape that splits the batch', oneOp('reshape', { newShape: [2, 2, 6] })],
    ['a transpose that moves the batch', oneOp('transpose', { axes: [1, 0] })],
    ['a slice of the batch', oneOp('strided_slice', { begin: [1, 0], step: [1, 1], shape: [3, 6] })],
    ['a constant with a row per sample', oneOp('add', {}, [4, 6])],
    ['a cumulative sum over the batch axis', oneOp('cumsum', { axis: 0, exclusive: false, reverse: false })],
    ['an operator without a rule (even along another axis)', oneOp('topk_indices', { k: 2, axis: 1, largest: true })],
    ['a pad of the batch axis', oneOp('pad', { before: [1, 0], after: [0, 0] })],
  ];
  for (const [what, g] of cases) assert.is(oneSampleGraph(g), undefined, what);
  const concat = new Graph();
  const x = concat.input('data', [4, 6]);
  concat.outputs = [concat.op('concatenate', [x, x], { axis: 0 })];
  assert.is(oneSampleGraph(concat), undefined, 'a concat along the batch');
  const shared = new Graph();
  shared.input('data', [4, 6]);
  shared.outputs = [shared.constant('c', [4, 6], rand([4, 6], 2))];
  assert.is(oneSampleGraph(shared), undefined, 'an output that is not per sample');
  const single = new Graph();
  single.outputs = [single.op('relu', [single.input('data', [1, 6])])];
  assert.is(oneSampleGraph(single), undefined, 'a batch of one');
  const two = new Graph();
  const a = two.input('a', [4, 6]), b = two.input('b', [2, 6]);
  two.outputs = [two.op('relu', [a]), two.op('relu', [b])];
  assert.is(oneSampleGraph(two), undefined, 'inputs of different batches');
});

test('samplePlan runs per sample where one sample moves more activations than weights (MobileNet-V2), else the whole batch (ResNet-18)', () => {
  const mnv2 = samplePlan(optimize(getNetwork('mobilenet_v2', { batch: 4, weights: 'zeros' }).graph));
  assert.is(mnv2.samples, 4);
  assert.equal(mnv2.graph.nodes.find((nd) => nd.op === 'input')!.shape, [1, 224, 224, 3]);
  const resnet = samplePlan(optimize(getNetwork('resnet-18', { batch: 4, weights: 'zeros' }).graph));
  assert.is(resnet.samples, 1);
  assert.equal(resnet.graph.nodes.find((nd) => nd.op === 'input')!.shape, [4, 224, 224, 3]);
});

test('a CPU tune of a batch that runs per sample tunes the batch-1 tasks; a GPU tune keeps the batch', () => {
  const at = (batch: number, target: string) => tuningTasks(getNetwork('mobilenet_v2', { batch, weights: 'zeros' }).graph, target).map((t) => t.key);
  assert.equal(at(4, 'llvm'), at(1, 'llvm'));
  const gpu = at(4, 'cuda -arch=sm_80');
  assert.ok(gpu.every((k) => !at(1, 'cuda -arch=sm_80').includes(k)), 'the GPU tasks are the batch of 4');
});

test.run();
