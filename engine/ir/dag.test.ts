// ComputeDAG: stage order, workload keys and FLOP counts (TVM's FlopEstimator rules).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from './dag';
import { add, cast, f32, gt, ifThenElse, load, lt, mul, select, sub, v } from './expr';
import { compute, placeholder } from './tensor';
import { adaptivePool2d, conv2dNHWC, dense, depthwiseConv2dNHWC, softmax, type Conv2dParams } from '../topi/nn';
import { binary, relu } from '../topi/elemwise';

const P = placeholder;
const params = (s: number, p: number): Conv2dParams => ({ strides: [s, s], padding: [p, p, p, p], dilation: [1, 1] });

/** conv2d NHWC (+ bias + relu when `fused`), names p0/p1/p2 as relay gives them. */
function convTask(h: number, ci: number, co: number, k: number, s: number, p: number, fused = true): ComputeDAG {
  const conv = conv2dNHWC(P('p0', [1, h, h, ci]), P('p1', [k, k, ci, co]), params(s, p));
  return new ComputeDAG([fused ? relu(binary('add', conv, P('p2', [1, 1, 1, co]))) : conv]);
}

const hashOf = (key: string): string => (JSON.parse(key) as [string])[0];

// ---------------------------------------------------------------- structure

test('stages in topological order, inputs just before their first reader', () => {
  const dag = convTask(8, 4, 4, 3, 1, 1);
  assert.equal(dag.stages.map((t) => t.name), ['p0', 'pad_temp', 'p1', 'conv2d_nhwc', 'p2', 'T_add', 'T_relu']);
  assert.equal(dag.inputs.map((t) => t.name), ['p0', 'p1', 'p2']);
  assert.equal(dag.outputs.map((t) => t.name), ['T_relu']);
  assert.equal(dag.computeStages.map((t) => t.name), ['pad_temp', 'conv2d_nhwc', 'T_add', 'T_relu']);
  assert.equal(dag.tensors.map((t) => t.name), ['p0', 'p1', 'p2', 'T_relu']);
  assert.is(dag.stage('conv2d_nhwc').op.kind, 'compute');
  assert.equal(dag.consumers(dag.stage('conv2d_nhwc')).map((t) => t.name), ['T_add']);
  assert.equal(dag.consumers(dag.stage('T_relu')), []);
  assert.throws(() => dag.stage('nope'), /no stage named nope/);
});

test('a tensor read twice appears once; several outputs keep their order', () => {
  const x = P('x', [4]);
  const sq = compute('sq', [4], ['i'], (i) => mul(load(x, [i]), load(x, [i])));
  const twice = compute('twice', [4], ['i'], (i) => add(load(sq, [i]), load(sq, [i])));
  const neg = compute('neg', [4], ['i'], (i) => sub(f32(0), load(x, [i])));
  const dag = new ComputeDAG([twice, neg]);
  assert.equal(dag.stages.map((t) => t.name), ['x', 'sq', 'twice', 'neg']);
  assert.equal(dag.tensors.map((t) => t.name), ['x', 'twice', 'neg']);
  assert.equal(dag.shapes, [[4], [4], [4]]);
});

test('errors: no outputs, two stages with one name', () => {
  assert.throws(() => new ComputeDAG([]), /at least one output/);
  const a = P('p0', [2]), b = P('p0', [2]);
  const s = compute('s', [2], ['i'], (i) => add(load(a, [i]), load(b, [i])));
  assert.throws(() => new ComputeDAG([s]), /two stages are named p0/);
});

// ---------------------------------------------------------------- workload key

test('key format: ["<32 hex>", input shapes..., output shape]', () => {
  const key = convTask(8, 4, 6, 3, 2, 1).workloadKey;
  assert.match(key, /^\["[0-9a-f]{32}", \[1, 8, 8, 4\], \[3, 3, 4, 6\], \[1, 1, 1, 6\], \[1, 4, 4, 6\]\]$/);
  const parsed = JSON.parse(key) as unknown[];
  assert.equal(parsed.slice(1), [[1, 8, 8, 4], [3, 3, 4, 6], [1, 1, 1, 6], [1, 4, 4, 6]]);
  assert.equal(convTask(8, 4, 6, 3, 2, 1).shapes, parsed.slice(1));
});

test('equal DAGs built twice, from different placeholder objects, get one key', () => {
  const a = convTask(8, 4, 4, 3, 1, 1), b = convTask(8, 4, 4, 3, 1, 1);
  assert.is.not(a.inputs[0], b.inputs[0]);
  assert.is(a.workloadKey, b.workloadKey);
  assert.is(a.print(), b.print());
});

test('placeholder shapes stay out of the hash but are in the shape list', () => {
  // Same structure, other shapes (in TVM's mobilenet listing, tasks 0, 1, 5, ... share 6d628209...).
  const a = convTask(56, 128, 128, 1, 1, 0), b = convTask(7, 1024, 1024, 1, 1, 0);
  assert.is(hashOf(a.workloadKey), hashOf(b.workloadKey));
  assert.is.not(a.workloadKey, b.workloadKey);
  assert.ok(a.print(true).includes('p0 = PLACEHOLDER \n'));
  assert.not.ok(a.print(true).includes('56'));
  // Padding extents live in an if_then_else body, which simple mode elides (seed tasks 4/7).
  const dw = (h: number) => new ComputeDAG([depthwiseConv2dNHWC(P('p0', [1, h, h, 8]), P('p1', [3, 3, 8, 1]), params(1, 1))]);
  assert.is(hashOf(dw(28).workloadKey), hashOf(dw(56).workloadKey));
});

test('different strides, kernel structure or fused ops give different hashes', () => {
  const base = hashOf(convTask(8, 4, 4, 3, 1, 1).workloadKey);
  assert.is.not(hashOf(convTask(8, 4, 4, 3, 2, 1).workloadKey), base, 'stride 2 prints yy*2');
  assert.is.not(hashOf(convTask(8, 4, 4, 1, 1, 0).workloadKey), base, 'no padding: identity pad_temp');
  assert.is.not(hashOf(convTask(8, 4, 4, 3, 1, 1, false).workloadKey), base, 'no bias/relu');
  const dil = new ComputeDAG([conv2dNHWC(P('p0', [1, 8, 8, 4]), P('p1', [3, 3, 4, 4]), { strides: [1, 1], padding: [1, 1, 1, 1], dilation: [2, 2] })]);
  assert.is.not(hashOf(dil.workloadKey), hashOf(convTask(8, 4, 4, 3, 1, 1, false).workloadKey), 'dilation prints ry*2');
  // Same structure and same shapes except one input: same hash, different key.
  const d1 = new ComputeDAG([dense(P('p0', [2, 8]), P('p1', [3, 8]))]);
  const d2 = new ComputeDAG([dense(P('p0', [2, 16]), P('p1', [3, 16]))]);
  assert.is(hashOf(d1.workloadKey), hashOf(d2.workloadKey));
  assert.is.not(d1.workloadKey, d2.workloadKey);
});

// ---------------------------------------------------------------- FLOPs

test('FLOPs: conv2d NHWC = 2*N*OH*OW*CO*KH*KW*CI, +1 per output element per fused add/relu', () => {
  const n = 1, oh = 56, ow = 56, co = 128, kh = 1, kw = 1, ci = 128;
  const conv = 2 * n * oh * ow * co * kh * kw * ci;
  assert.is(convTask(56, 128, 128, 1, 1, 0, false).flops, conv);
  assert.is(convTask(56, 128, 128, 1, 1, 0).flops, conv + 2 * n * oh * ow * co);
  // 3x3 stride 2 with padding: the padding stage's bound checks are index math, free.
  const padded = convTask(9, 3, 8, 3, 2, 1, false);
  assert.is(padded.flops, 2 * 1 * 5 * 5 * 8 * 3 * 3 * 3);
  const batch = new ComputeDAG([conv2dNHWC(P('p0', [2, 6, 6, 3]), P('p1', [3, 3, 3, 5]), params(1, 0))]);
  assert.is(batch.flops, 2 * 2 * 4 * 4 * 5 * 3 * 3 * 3);
});

test('FLOPs: dense, softmax, adaptive pool, depthwise', () => {
  const d = new ComputeDAG([binary('add', dense(P('p0', [1, 1024]), P('p1', [1000, 1024])), P('p2', [1, 1000]))]);
  assert.is(d.flops, 2 * 1000 * 1024 + 1000);
  // max (1 per step) + exp(x - max) (1) + sum (1 per step) + divide (1)
  assert.is(new ComputeDAG([softmax(P('p0', [2, 10]))]).flops, 4 * 2 * 10);
  // sum over 7x7 windows + one divide and one multiply of the two float32 window sizes
  assert.is(new ComputeDAG([adaptivePool2d(P('p0', [1, 7, 7, 16]), [1, 1], 'avg', 'NHWC')]).flops, 16 * 49 + 16 * 2);
  const dw = new ComputeDAG([depthwiseConv2dNHWC(P('p0', [1, 8, 8, 4]), P('p1', [3, 3, 4, 1]), params(2, 1))]);
  assert.is(dw.flops, 2 * 4 * 4 * 4 * 9);
});

test('FLOPs: padding and other index-only stages count 0', () => {
  const x = P('x', [4, 4]);
  const padOnly = compute('pad', [6, 6], ['i', 'j'], (i, j) =>
    ifThenElse(lt(sub(i, 1), 4), load(x, [sub(i, 1), sub(j, 1)]), f32(0)));
  assert.is(new ComputeDAG([padOnly]).flops, 0);
  const copy = compute('copy', [4, 4], ['i', 'j'], (i, j) => load(x, [j, i]));
  assert.is(new ComputeDAG([copy]).flops, 0);
});

test('FLOPs: select = cond + dearer branch; if_then_else (a call in TVM) = cond + both; casts free', () => {
  const x = P('x', [10]);
  const xi = (i: ReturnType<typeof v>) => load(x, [i]);
  const sel = compute('sel', [10], ['i'], (i) => select(gt(xi(i), f32(0)), mul(xi(i), xi(i)), add(add(xi(i), f32(1)), f32(2))));
  assert.is(new ComputeDAG([sel]).flops, 10 * (1 + 2));
  const ite = compute('ite', [10], ['i'], (i) => ifThenElse(gt(xi(i), f32(0)), mul(xi(i), xi(i)), add(add(xi(i), f32(1)), f32(2))));
  assert.is(new ComputeDAG([ite]).flops, 10 * (1 + 1 + 2));
  const withCast = compute('c', [10], ['i'], (i) => mul(xi(i), cast('float32', add(i, 1))));
  assert.is(new ComputeDAG([withCast]).flops, 10 * 1);
});

test.run();
