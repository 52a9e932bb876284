import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { UserError } from '../errors';
import type { ConstantNode, Graph, OpNode } from '../graph/graph';
import { runGraph } from '../graph/run';
import { permute } from '../ir/tensor';
import { fillUniform } from './init';
import { countParams, getNetwork, NETWORK_NAMES, type NetworkOptions } from './networks';

// Parameter counts (elements of all constants, BN moving statistics included), derived
// by hand from the architectures. Cross-checks with published numbers: MobileNet v1 =
// Keras' 4,253,864 total; VGG-11/16/19 and SqueezeNet 1.0/1.1 = torchvision's counts.
// ResNet here is TVM's pre-activation variant (bn_data + BN before each conv), so it
// differs slightly from torchvision's ResNet v1 (11,689,512 trainable for resnet-18).
const PARAMS: Record<string, number> = {
  mobilenet: 4253864,
  'resnet-18': 11699892, 'resnet-34': 21815476, 'resnet-50': 25595060, 'resnet-101': 44639412, 'resnet-152': 60329140,
  'vgg-11': 132863336, 'vgg-13': 133047848, 'vgg-16': 138357544, 'vgg-19': 143667240,
  'vgg-11-bn': 132874344, 'vgg-13-bn': 133059624, 'vgg-16-bn': 138374440, 'vgg-19-bn': 143689256,
  'squeezenet_v1.0': 1248424, 'squeezenet_v1.1': 1235496,
  inception_v3: 23869000,
  // torchvision's mobilenet_v2 has 3,504,872 (no BN moving statistics); + 2 x 17,056 BN channels.
  mobilenet_v2: 3538984,
};

const constants = (g: Graph): Map<string, ConstantNode> =>
  new Map(g.nodes.filter((n): n is ConstantNode => n.op === 'constant').map((n) => [n.name, n]));
const ops = (g: Graph, op: string): OpNode[] => g.nodes.filter((n): n is OpNode => n.op === op);

test('resnet-18 parameter count from the architecture', () => {
  // bn_data 4*3; conv0 64*3*49 + bn0 4*64; per basic unit bn1(cin) + conv3x3 cin->nf + bn2(nf) + conv3x3 nf->nf
  // (+ 1x1 projection cin->nf on the first unit of each stage); bn1 4*512; fc1 512*1000 + 1000.
  let p = 12 + 64 * 3 * 49 + 256;
  let cin = 64;
  for (const nf of [64, 128, 256, 512]) {
    for (let u = 0; u < 2; u++) {
      p += 4 * cin + cin * nf * 9 + 4 * nf + nf * nf * 9 + (u === 0 ? cin * nf : 0);
      cin = nf;
    }
  }
  p += 4 * 512 + 512 * 1000 + 1000;
  assert.is(p, PARAMS['resnet-18']);
});

test('every network: output [N, 1000] in both layouts, exact parameter count', () => {
  // The image classifiers (the transformers and generators have tests of their own).
  const classifiers = NETWORK_NAMES.filter((n) => n in PARAMS);
  assert.equal(classifiers.sort(), Object.keys(PARAMS).sort());
  for (const name of classifiers) {
    for (const layout of ['NHWC', 'NCHW'] as const) {
      const batch = name === 'mobilenet' ? 2 : 1;
      const net = getNetwork(name, { layout, batch, weights: 'zeros' });
      const s = name === 'inception_v3' ? 299 : 224;
      assert.equal(net.inputShape, layout === 'NHWC' ? [batch, s, s, 3] : [batch, 3, s, s], `${name} ${layout}`);
      assert.equal(net.outputShape, [batch, 1000], `${name} ${layout}`);
      assert.is(net.inputName, 'data');
      assert.equal(net.graph.outputs.length, 1);
      assert.is(net.graph.node(net.graph.outputs[0]).op, 'softmax', name);
      assert.is(countParams(net.graph), PARAMS[name], `${name} ${layout}`);
      // Every conv is in the requested layout; every BN normalises the channel axis.
      for (const n of ops(net.graph, 'conv2d')) assert.is(n.attrs.layout, layout);
      for (const n of ops(net.graph, 'batch_norm')) assert.is(n.attrs.axis, layout === 'NHWC' ? 3 : 1);
      const names = net.graph.nodes.filter((n) => n.op === 'constant').map((n) => n.name);
      assert.is(new Set(names).size, names.length, `${name}: duplicate constant names`);
    }
  }
});

test('TVM parameter names, kernel layouts and bias shapes', () => {
  const nhwc = constants(getNetwork('resnet-18', { weights: 'zeros' }).graph);
  const nchw = constants(getNetwork('resnet-18', { layout: 'NCHW', weights: 'zeros' }).graph);
  for (const n of ['bn_data_gamma', 'bn_data_moving_var', 'conv0_weight', 'bn0_beta', 'stage1_unit1_bn1_gamma',
    'stage2_unit1_sc_weight', 'stage4_unit2_conv2_weight', 'bn1_moving_mean', 'fc1_weight', 'fc1_bias']) {
    assert.ok(nhwc.has(n) && nchw.has(n), n);
  }
  assert.not.ok(nhwc.has('stage1_unit2_sc_weight'));
  assert.equal(nchw.get('conv0_weight')!.shape, [64, 3, 7, 7]); // OIHW
  assert.equal(nhwc.get('conv0_weight')!.shape, [7, 7, 3, 64]); // HWIO
  assert.equal(nchw.get('fc1_weight')!.shape, [1000, 512]);
  assert.equal(nchw.get('fc1_bias')!.shape, [1000]);

  const mn = constants(getNetwork('mobilenet', { weights: 'zeros' }).graph);
  const mc = constants(getNetwork('mobilenet', { layout: 'NCHW', weights: 'zeros' }).graph);
  assert.equal(mc.get('separable_conv_block_1_weight')!.shape, [32, 1, 3, 3]);
  assert.equal(mn.get('separable_conv_block_1_weight')!.shape, [3, 3, 32, 1]); // HWOI
  assert.ok(mn.has('conv_block_1_conv_weight') && mn.has('fc_weight') && mn.has('fc_bias') && mn.has('separable_conv_block_13_bn2_moving_var'));
  const dw = ops(getNetwork('mobilenet', { weights: 'zeros' }).graph, 'conv2d').filter((n) => (n.attrs.groups as number) > 1);
  assert.is(dw.length, 13);

  const sq = getNetwork('squeezenet_v1.1', { layout: 'NCHW', weights: 'zeros' }).graph;
  const sqc = constants(sq);
  assert.equal(sqc.get('conv1_bias')!.shape, [64, 1, 1]); // broadcasts over an NCHW map
  assert.equal(sqc.get('fire1_right_conv_weight')!.shape, [64, 16, 3, 3]);
  assert.equal(constants(getNetwork('squeezenet_v1.1', { weights: 'zeros' }).graph).get('conv1_bias')!.shape, [64]);
  for (const n of ops(sq, 'concatenate')) assert.is(n.attrs.axis, 1);

  const inc = constants(getNetwork('inception_v3', { weights: 'zeros' }).graph);
  assert.ok(inc.has('conv_conv1_weight') && inc.has('mixed_10_tower_1_mixed_conv_1_conv1_weight') && inc.has('fc1_weight') && inc.has('fc2_bias'));
  const vgg = constants(getNetwork('vgg-16-bn', { weights: 'zeros' }).graph);
  assert.ok(vgg.has('conv5_3_weight') && vgg.has('conv5_3_bias') && vgg.has('bn5_3_gamma') && vgg.has('fc8_bias'));
  assert.equal(vgg.get('fc6_weight')!.shape, [4096, 25088]);
});

test('weights: TVM init values, deterministic, seeded', () => {
  const a = constants(getNetwork('resnet-18', { layout: 'NCHW' }).graph);
  const b = constants(getNetwork('resnet-18', { layout: 'NCHW' }).graph);
  const c = constants(getNetwork('resnet-18', { layout: 'NCHW', seed: 1 }).graph);
  assert.equal(a.get('conv0_weight')!.data, b.get('conv0_weight')!.data);
  assert.not.equal(Array.from(a.get('conv0_weight')!.data.subarray(0, 8)), Array.from(c.get('conv0_weight')!.data.subarray(0, 8)));
  const bound = Math.sqrt(3 / ((147 + 3136) / 2));
  const w = a.get('conv0_weight')!.data;
  assert.ok(w.every((x) => Math.abs(x) <= bound) && w.some((x) => Math.abs(x) > 0.9 * bound));
  assert.ok(a.get('bn0_gamma')!.data.every((x) => x === 1) && a.get('bn0_moving_var')!.data.every((x) => x === 1));
  assert.ok(a.get('bn0_beta')!.data.every((x) => x === 0) && a.get('bn0_moving_mean')!.data.every((x) => x === 0));
  assert.ok(a.get('fc1_bias')!.data.every((x) => x === 0));
  // MobileNet's depthwise kernels use Xavier's depthwise factor (kh*kw).
  const dw = constants(getNetwork('mobilenet').graph).get('separable_conv_block_1_weight')!.data;
  assert.ok(dw.every((x) => Math.abs(x) <= Math.sqrt(3 / 9)) && dw.some((x) => Math.abs(x) > 0.5));
});

test('randomStats gives non-trivial BN statistics; scale=False BNs keep gamma = 1', () => {
  const g = constants(getNetwork('resnet-18', { randomStats: true }).graph);
  const gamma = g.get('bn0_gamma')!.data, beta = g.get('bn0_beta')!.data;
  const mean = g.get('bn0_moving_mean')!.data, variance = g.get('bn0_moving_var')!.data;
  assert.ok(gamma.every((x) => x >= 0.5 && x <= 1.5) && new Set(gamma).size > 32);
  assert.ok(beta.every((x) => Math.abs(x) <= 0.5) && new Set(beta).size > 32);
  assert.ok(mean.every((x) => Math.abs(x) <= 0.5) && new Set(mean).size > 32);
  assert.ok(variance.every((x) => x >= 0.5 && x <= 2) && new Set(variance).size > 32);
  // bn_data has scale=False in TVM: gamma is ignored there, so it stays 1.
  assert.ok(g.get('bn_data_gamma')!.data.every((x) => x === 1));
  assert.ok(g.get('bn_data_moving_var')!.data.some((x) => x !== 1));
  const inc = constants(getNetwork('inception_v3', { randomStats: true, weights: 'random' }).graph);
  assert.ok(inc.get('conv_bn_gamma')!.data.every((x) => x === 1));
  assert.ok(inc.get('conv_bn_moving_mean')!.data.some((x) => x !== 0));
  // The conv weights are the same with or without random statistics.
  assert.equal(g.get('conv0_weight')!.data, constants(getNetwork('resnet-18').graph).get('conv0_weight')!.data);
});

test('NHWC weights are the NCHW weights transposed', () => {
  const a = constants(getNetwork('mobilenet', { layout: 'NCHW' }).graph);
  const b = constants(getNetwork('mobilenet', { layout: 'NHWC' }).graph);
  const w = a.get('conv_block_1_conv_weight')!;
  assert.equal(permute(w.data, w.shape, [2, 3, 1, 0]), b.get('conv_block_1_conv_weight')!.data);
  const d = a.get('separable_conv_block_3_weight')!;
  assert.equal(permute(d.data, d.shape, [2, 3, 0, 1]), b.get('separable_conv_block_3_weight')!.data);
  assert.equal(a.get('fc_weight')!.data, b.get('fc_weight')!.data);
});

test('bad names and options are UserErrors that say what was expected', () => {
  const fails = (name: string, opts: NetworkOptions | undefined, re: RegExp): void => {
    try {
      getNetwork(name, opts);
    } catch (e) {
      assert.instance(e, UserError);
      assert.match((e as Error).message, re);
      return;
    }
    assert.unreachable(`${name} ${JSON.stringify(opts)} should fail`);
  };
  fails('resnet-19', {}, /unknown network "resnet-19" \(expected one of: mobilenet, resnet-18, .*inception_v3.*\)/);
  fails('mobilenet', { layout: 'NCWH' as never }, /layout must be 'NHWC' or 'NCHW'/);
  fails('mobilenet', { batch: 0 }, /batch must be a positive integer/);
  fails('mobilenet', { batch: 1.5 }, /batch must be a positive integer/);
  fails('mobilenet', { imageSize: 31 }, /imageSize must be an integer >= 32/);
  fails('resnet-18', { imageSize: 28 }, /imageSize must be an integer >= 29/);
  fails('inception_v3', { imageSize: 298 }, /imageSize must be an integer >= 299/);
  fails('mobilenet', { seed: -1 }, /seed must be an integer/);
  fails('mobilenet', { weights: 'ones' as never }, /weights must be 'random' or 'zeros'/);
  fails('mobilenet', { randomStats: 'yes' as never }, /randomStats must be true or false/);
  fails('mobilenet', { layuot: 'NCHW' } as never, /unknown option\(s\) layuot \(expected: batch, layout, imageSize/);
});

test('every network builds at its smallest image size', () => {
  const min: Record<string, number> = { 'resnet-50': 29, 'vgg-11': 32, 'squeezenet_v1.0': 29, 'squeezenet_v1.1': 29, inception_v3: 299, mobilenet: 32 };
  for (const [name, s] of Object.entries(min)) {
    for (const layout of ['NHWC', 'NCHW'] as const) {
      assert.equal(getNetwork(name, { imageSize: s, layout, weights: 'zeros' }).outputShape, [1, 1000], `${name} ${s}`);
    }
  }
  // At 32 px and below ResNet uses TVM's small-image stem: conv0 3x3/1, no bn0, no pooling.
  const small = constants(getNetwork('resnet-18', { imageSize: 32, weights: 'zeros' }).graph);
  assert.equal(small.get('conv0_weight')!.shape, [3, 3, 3, 64]);
  assert.not.ok(small.has('bn0_gamma'));
});

// ---- numerics with the reference evaluator (small images keep this fast) ----

const nchwToNhwc = (x: Float32Array, [n, c, h, w]: readonly number[]): Float32Array => permute(x, [n, c, h, w], [0, 2, 3, 1]);

/** Logits (the softmax's input) and probabilities of a network on `x`. */
function run(name: string, opts: NetworkOptions, x: Float32Array): { logits: Float32Array; probs: Float32Array } {
  const net = getNetwork(name, opts);
  const out = net.graph.outputs[0];
  net.graph.outputs = [out, net.graph.node(out).inputs[0]];
  const [probs, logits] = runGraph(net.graph, new Map([[net.inputName, x]])) as Float32Array[];
  return { logits, probs };
}

/** max |a - b| relative to max |b|. */
function relErr(a: Float32Array, b: Float32Array): number {
  let err = 0, scale = 0;
  for (let i = 0; i < a.length; i++) { err = Math.max(err, Math.abs(a[i] - b[i])); scale = Math.max(scale, Math.abs(b[i])); }
  return err / scale;
}

// Small images keep the reference evaluator fast (~0.5-1 s per run). With TVM's default
// statistics every BN is the identity, so resnet-18 runs with random statistics: a BN on
// the wrong axis would show.
const LAYOUT_CASES = [
  { name: 'mobilenet', imageSize: 32, randomStats: false },
  { name: 'resnet-18', imageSize: 40, randomStats: true },
] as const;
for (const { name, imageSize, randomStats } of LAYOUT_CASES) {
  test(`${name} (${imageSize}px, batch 2${randomStats ? ', random BN stats' : ''}): NHWC and NCHW give the same logits`, () => {
    const batch = 2;
    const shape = [batch, 3, imageSize, imageSize];
    const x = fillUniform(new Float32Array(shape.reduce((a, b) => a * b)), 1234, -1, 1);
    const a = run(name, { layout: 'NCHW', imageSize, randomStats, batch }, x);
    const b = run(name, { layout: 'NHWC', imageSize, randomStats, batch }, nchwToNhwc(x, shape));
    assert.ok(a.logits.some((v) => v !== 0) && a.logits.every(Number.isFinite));
    // Same weights; only the summation order differs (float64 accumulation, float32
    // stores): tolerance 1e-5 of the largest logit.
    const err = relErr(b.logits, a.logits);
    assert.ok(err < 1e-5, `relative logit error ${err}`);
    // The logits depend on the image: the batch's two images get different ones.
    assert.ok(relErr(a.logits.subarray(0, 1000), a.logits.subarray(1000)) > 1e-3);
  });
}

test('reference evaluation of all of mobilenet (224px, NHWC) is a probability vector', () => {
  const net = getNetwork('mobilenet');
  const x = fillUniform(new Float32Array(224 * 224 * 3), 99, -1, 1);
  const [p] = runGraph(net.graph, new Map([['data', x]])) as Float32Array[];
  assert.is(p.length, 1000);
  assert.ok(p.every((v) => Number.isFinite(v) && v >= 0 && v <= 1));
  const total = p.reduce((a, v) => a + v, 0);
  assert.ok(Math.abs(total - 1) < 1e-5, `sum ${total}`);
});

test.run();
