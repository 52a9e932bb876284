// Every pass must compute the same function as the graph it was given. Each test runs
// both graphs with the reference evaluator (runGraph) on random inputs, with batch-norm
// statistics that are far from the identity (gamma in [0.5, 1.5], beta and mean in
// [-0.5, 0.5], var in [0.5, 2]), and compares elementwise with
//   |got - want| <= 1e-5 + 1e-4 * |want|
// (folding a scale into weights reorders float32 roundings; nothing more).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fillUniform } from '../../frontend/init';
import { getNetwork } from '../../frontend/networks';
import { Graph, type OpNode } from '../graph';
import { runGraph } from '../run';
import { extractTasks } from '../extract';
import {
  canonicalizeBias, convertLayout, foldConstants, foldScaleIntoWeights, mergeConstantChains, optimize, removeIdentityOps, simplifyInference,
} from './index';

const ATOL = 1e-5, RTOL = 1e-4;

const rand = (n: number, seed: number, lo = -1, hi = 1): Float32Array => fillUniform(new Float32Array(n), seed, lo, hi);
const size = (s: readonly number[]): number => s.reduce((a, b) => a * b, 1);

function inputsOf(g: Graph, seed = 7): Map<string, Float32Array> {
  return new Map(g.nodes.filter((n) => n.op === 'input').map((n, i) => [n.name, rand(size(n.shape), seed + i)]));
}

function assertSameFunction(before: Graph, after: Graph, what: string): void {
  const feeds = inputsOf(before);
  const want = runGraph(before, feeds), got = runGraph(after, feeds);
  assert.is(got.length, want.length, `${what}: number of outputs`);
  want.forEach((w, k) => {
    assert.is(got[k].length, w.length, `${what}: output ${k} size`);
    for (let i = 0; i < w.length; i++) {
      const err = Math.abs(got[k][i] - w[i]);
      if (!(err <= ATOL + RTOL * Math.abs(w[i]))) assert.unreachable(`${what}: output ${k}[${i}] = ${got[k][i]}, expected ${w[i]}`);
    }
  });
}

const ops = (g: Graph, op?: string): OpNode[] => g.nodes.filter((n): n is OpNode => n.op !== 'input' && n.op !== 'constant' && (!op || n.op === op));

let seed = 100;
/** A batch norm over `axis` with non-trivial statistics. */
function bn(g: Graph, x: number, axis: number): number {
  const c = g.node(x).shape[axis];
  const s = seed++ * 10;
  return g.op('batch_norm', [x,
    g.constant('gamma', [c], rand(c, s, 0.5, 1.5)), g.constant('beta', [c], rand(c, s + 1, -0.5, 0.5)),
    g.constant('mean', [c], rand(c, s + 2, -0.5, 0.5)), g.constant('var', [c], rand(c, s + 3, 0.5, 2))],
  { axis, epsilon: 1e-5 });
}

function conv(g: Graph, x: number, layout: 'NHWC' | 'NCHW', co: number, k: number, opts: { stride?: number; groups?: number } = {}): number {
  const ci = g.node(x).shape[layout === 'NHWC' ? 3 : 1];
  const groups = opts.groups ?? 1;
  const depthwise = groups > 1 && groups === ci;
  const shape = layout === 'NHWC'
    ? (depthwise ? [k, k, ci, co / ci] : [k, k, ci / groups, co])
    : (depthwise ? [ci, co / ci, k, k] : [co, ci / groups, k, k]);
  const w = g.constant('w', shape, rand(size(shape), seed++));
  const p = (k - 1) >> 1, s = opts.stride ?? 1;
  return g.op('conv2d', [x, w], { layout, strides: [s, s], padding: [p, p, p, p], dilation: [1, 1], groups });
}

/** A small network with every pattern the passes handle: conv/depthwise/grouped conv + BN, conv + bias + BN, dense + bias. */
function smallNet(layout: 'NHWC' | 'NCHW'): Graph {
  const g = new Graph();
  const axis = layout === 'NHWC' ? 3 : 1;
  let x = g.input('data', layout === 'NHWC' ? [1, 6, 6, 3] : [1, 3, 6, 6]);
  x = g.op('relu', [bn(g, conv(g, x, layout, 4, 3, { stride: 2 }), axis)]);
  x = g.op('relu', [bn(g, conv(g, x, layout, 8, 3, { groups: 4 }), axis)]); // depthwise, multiplier 2
  x = g.op('relu', [bn(g, conv(g, x, layout, 8, 1, { groups: 2 }), axis)]); // grouped
  const biasShape = layout === 'NHWC' ? [6] : [6, 1, 1];
  x = g.op('add', [conv(g, x, layout, 6, 3), g.constant('b', biasShape, rand(6, seed++))]);
  x = g.op('relu', [bn(g, x, axis)]);
  x = g.op('batch_flatten', [g.op('global_avg_pool2d', [x], { layout })]);
  x = g.op('add', [g.op('dense', [x, g.constant('fc', [5, 6], rand(30, seed++))]), g.constant('fc_b', [5], rand(5, seed++))]);
  g.outputs = [g.op('softmax', [x], { axis: -1 })];
  return g;
}

for (const layout of ['NHWC', 'NCHW'] as const) {
  test(`simplifyInference (${layout}): batch_norm -> multiply + add of [..C..] constants`, () => {
    const g = smallNet(layout);
    const s = simplifyInference(g);
    assert.is(ops(s, 'batch_norm').length, 0);
    const shape = layout === 'NHWC' ? [1, 1, 1, 4] : [1, 4, 1, 1];
    const mul = ops(s, 'multiply')[0];
    assert.equal(s.node(mul.inputs[1]).shape, shape);
    assertSameFunction(g, s, 'simplifyInference');
  });

  test(`canonicalizeBias (${layout}): low-rank constants reshaped to full rank`, () => {
    const g = smallNet(layout);
    const s = canonicalizeBias(g);
    const adds = ops(s, 'add').map((n) => s.node(n.inputs[1]).shape);
    assert.equal(adds, [layout === 'NHWC' ? [1, 1, 1, 6] : [1, 6, 1, 1], [1, 5]]);
    assertSameFunction(g, s, 'canonicalizeBias');
  });

  test(`foldScaleIntoWeights (${layout}): every BN scale ends in a conv's weights`, () => {
    const g = smallNet(layout);
    const s = foldScaleIntoWeights(canonicalizeBias(simplifyInference(g)));
    assert.is(ops(s, 'multiply').length, 0, 'no multiply left');
    // conv + bias + BN: the bias is scaled and kept, followed by the BN shift.
    assert.is(ops(s, 'add').length, 4 + 1 + 1);
    assertSameFunction(g, s, 'foldScaleIntoWeights');
  });

  test(`optimize (${layout}): conv + one bias per conv, same function`, () => {
    const g = smallNet(layout);
    const s = optimize(g);
    assert.equal(ops(s).map((n) => n.op), [
      'conv2d', 'add', 'relu', 'conv2d', 'add', 'relu', 'conv2d', 'add', 'relu', 'conv2d', 'add', 'relu',
      'global_avg_pool2d', 'batch_flatten', 'dense', 'add', 'softmax',
    ]);
    assertSameFunction(g, s, 'optimize');
  });
}

test('foldScaleIntoWeights leaves a conv whose output has another reader', () => {
  const g = new Graph();
  const x = g.input('data', [1, 4, 4, 2]);
  const c = conv(g, x, 'NHWC', 3, 3);
  const m = g.op('multiply', [c, g.constant('s', [1, 1, 1, 3], rand(3, 1, 0.5, 2))]);
  g.outputs = [g.op('add', [m, c])];
  const s = foldScaleIntoWeights(g);
  assert.is(ops(s, 'multiply').length, 1);
  // A scale that varies along a non-channel axis (the seed's [1, 112, 1, 1] case) is not folded either.
  const h = new Graph();
  const y = conv(h, h.input('data', [1, 4, 4, 2]), 'NHWC', 3, 3);
  h.outputs = [h.op('multiply', [y, h.constant('s', [1, 4, 1, 1], rand(4, 2))])];
  assert.is(ops(foldScaleIntoWeights(h), 'multiply').length, 1);
});

test('foldConstants computes all-constant ops; mergeConstantChains joins x + c1 + c2', () => {
  const g = new Graph();
  const x = g.input('data', [1, 3, 3, 4]);
  const c1 = g.op('multiply', [g.constant('a', [1, 1, 1, 4], rand(4, 3)), g.constant('b', [1, 1, 1, 4], rand(4, 4))]);
  const y = g.op('add', [g.op('add', [x, c1]), g.constant('c', [1, 1, 1, 4], rand(4, 5))]);
  g.outputs = [g.op('relu', [g.op('multiply', [g.op('multiply', [y, g.constant('d', [1, 1, 1, 1], rand(1, 6))]), g.constant('e', [1, 1, 1, 4], rand(4, 7))])])];
  const folded = foldConstants(g);
  assert.is(ops(folded).length, 5);
  const merged = mergeConstantChains(folded);
  assert.equal(ops(merged).map((n) => n.op), ['add', 'multiply', 'relu']);
  assertSameFunction(g, merged, 'fold + merge');
});

test('removeIdentityOps drops no-op reshape / transpose / pad / flatten', () => {
  const g = new Graph();
  const x = g.input('data', [2, 5]);
  let y = g.op('reshape', [x], { newShape: [2, 5] });
  y = g.op('transpose', [y], { axes: [0, 1] });
  y = g.op('pad', [y], { before: [0, 0], after: [0, 0] });
  y = g.op('batch_flatten', [y]);
  y = g.op('transpose', [g.op('relu', [y])], { axes: [1, 0] });
  g.outputs = [y];
  const s = removeIdentityOps(g);
  assert.equal(ops(s).map((n) => n.op), ['relu', 'transpose']);
  assertSameFunction(g, s, 'removeIdentityOps');
});

test('optimize: mobilenet (32x32, random BN statistics) computes the same softmax', () => {
  for (const layout of ['NHWC', 'NCHW'] as const) {
    const net = getNetwork('mobilenet', { imageSize: 32, randomStats: true, layout });
    const s = optimize(net.graph);
    assert.is(ops(s, 'batch_norm').length + ops(s, 'multiply').length, 0);
    assertSameFunction(net.graph, s, `mobilenet ${layout}`);
  }
});

test('convertLayout: NCHW <-> NHWC keeps the function; boundary layout kept', () => {
  for (const [from, to] of [['NCHW', 'NHWC'], ['NHWC', 'NCHW']] as const) {
    const g = smallNet(from);
    const c = convertLayout(g, to);
    assert.ok(ops(c, 'conv2d').every((n) => n.attrs.layout === to));
    assert.equal(c.node(c.nodes.find((n) => n.op === 'input')!.id).shape, g.node(0).shape);
    // Only the input is transposed: BN, bias, relu follow the convs; the pooled [N, 1, 1, C] flattens as is.
    assert.is(ops(c, 'transpose').length, 1);
    assertSameFunction(g, c, `convertLayout ${from} -> ${to}`);
    assertSameFunction(g, optimize(g, { layout: to }), `optimize(layout ${to}) from ${from}`);
  }
  const net = getNetwork('mobilenet', { imageSize: 32, randomStats: true, layout: 'NCHW' });
  assertSameFunction(net.graph, convertLayout(net.graph, 'NHWC'), 'mobilenet NCHW -> NHWC');
});

test('convertLayout: pad, concatenate and a flatten of a spatial map', () => {
  const g = new Graph();
  const x = g.input('data', [1, 2, 5, 5]);
  const a = g.op('relu', [conv(g, x, 'NCHW', 3, 3)]);
  const p = g.op('pad', [conv(g, x, 'NCHW', 2, 1)], { before: [0, 0, 1, 0], after: [0, 0, 0, 1] });
  const q = g.op('max_pool2d', [p], { layout: 'NCHW', kernel: [2, 2], strides: [1, 1], padding: [0, 0, 0, 0] });
  const cat = g.op('concatenate', [a, q], { axis: 1 });
  g.outputs = [g.op('batch_flatten', [cat]), cat];
  const c = convertLayout(g, 'NHWC');
  assert.ok(ops(c, 'concatenate')[0].attrs.axis === 3);
  assertSameFunction(g, c, 'pad + concat + flatten');
});

test('convertLayout: NCHW networks converted to NHWC give the NHWC networks\' tasks', () => {
  for (const name of ['mobilenet', 'resnet-18', 'squeezenet_v1.1']) {
    const keys = (layout: 'NHWC' | 'NCHW'): string[] =>
      extractTasks(getNetwork(name, { layout, weights: 'zeros' }).graph, { layout: 'NHWC' }).map((t) => `${t.key} x${t.weight}`).sort();
    assert.equal(keys('NCHW'), keys('NHWC'), name);
  }
});

test.run();
