// IsNaN, IsInf, Attention, RMSNormalization, RotaryEmbedding, NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss imported and run by the reference evaluator, against ONNX Runtime
// on seeded inputs: bool outputs equal, float ones within 1e-5 (relative to 1 + |x|).
// (The node conformance cases of these operators also compile and pass natively:
// npm run conformance -- --filter '^test_(attention|rms|rotary|isnan|isinf|sce|nllloss)'.)

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DataType } from './schema';
import { OnnxModelBuilder } from './model-builder';
import { importError } from './ort-agree.fixture';
import { agreesTyped, randFloats, randInts } from './typed-ort.fixture';

const B = DataType.BOOL, I64 = DataType.INT64;
const size = (s: readonly number[]): number => s.reduce((a, b) => a * b, 1);

test('IsNaN and IsInf (both signs, positive only, negative only) give bools', async () => {
  const x = Float32Array.from([0, NaN, Infinity, -Infinity, 1.5, -2, NaN, 3.4e38]);
  const m = new OnnxModelBuilder(20).input('x', [2, 4])
    .node('IsNaN', ['x'], ['nan']).typedOutput('nan', B)
    .node('IsInf', ['x'], ['inf']).typedOutput('inf', B)
    .node('IsInf', ['x'], ['pos'], { detect_negative: 0 }).typedOutput('pos', B)
    .node('IsInf', ['x'], ['neg'], { detect_positive: 0 }).typedOutput('neg', B);
  const { outputs } = await agreesTyped('isnan-isinf', m.build(), [x]);
  assert.equal([...outputs[0]], [0, 1, 0, 0, 0, 0, 1, 0]);
  assert.equal([...outputs[1]], [0, 0, 1, 1, 0, 0, 0, 0]);
});

test('Attention 4-D: grouped-query heads, a bool mask with is_causal, softcap, scale', async () => {
  const [b, qh, kvh, s, l, d, dv] = [2, 6, 2, 4, 5, 8, 3];
  // A query row never fully masked: key 0 stays allowed (ONNX Runtime and ONNX disagree on such rows).
  const mask = Int32Array.from({ length: s * l }, (_, k) => (k % l === 0 || (k * 7) % 3 !== 0 ? 1 : 0));
  const m = new OnnxModelBuilder(23).input('q', [b, qh, s, d]).input('k', [b, kvh, l, d]).input('v', [b, kvh, l, dv]).typedInput('m', B, [s, l])
    .node('Attention', ['q', 'k', 'v', 'm'], ['y'], { is_causal: 1, softcap: 2.5, scale: 0.3 }).output('y')
    .node('Attention', ['q', 'k', 'v'], ['y2', '', '', 'qk'], { qk_matmul_output_mode: 0 }).output('y2').output('qk');
  await agreesTyped('attention-4d', m.build(), [randFloats(b * qh * s * d, 1), randFloats(b * kvh * l * d, 2), randFloats(b * kvh * l * dv, 3), mask]);
});

test('Attention 3-D with past_key/past_value (the present outputs), a float mask and the softmax as qk_matmul_output (mode 3)', async () => {
  const [b, qh, kvh, s, l, p, d] = [1, 4, 2, 3, 3, 2, 4];
  const m = new OnnxModelBuilder(23).input('q', [b, s, qh * d]).input('k', [b, l, kvh * d]).input('v', [b, l, kvh * d])
    .input('m', [b, 1, s, p + l]).input('pk', [b, kvh, p, d]).input('pv', [b, kvh, p, d])
    .node('Attention', ['q', 'k', 'v', 'm', 'pk', 'pv'], ['y', 'present_k', 'present_v', 'probs'], { q_num_heads: qh, kv_num_heads: kvh, is_causal: 1, qk_matmul_output_mode: 3 })
    .output('y').output('present_k').output('present_v').output('probs');
  const shapes = [[b, s, qh * d], [b, l, kvh * d], [b, l, kvh * d], [b, 1, s, p + l], [b, kvh, p, d], [b, kvh, p, d]];
  await agreesTyped('attention-3d-past', m.build(), shapes.map((sh, i) => randFloats(size(sh), 10 + i)));
});

test('Attention refusals: nonpad_kv_seqlen, sliding windows, softmax_precision other than float', () => {
  const base = (attrs: Record<string, number>, extra: string[] = []): Uint8Array => {
    const m = new OnnxModelBuilder(24).input('q', [1, 2, 3, 4]).input('k', [1, 2, 3, 4]).input('v', [1, 2, 3, 4]);
    if (extra.length) m.typedInput('n', I64, [1]);
    return m.node('Attention', ['q', 'k', 'v', ...extra], ['y'], attrs).output('y').build();
  };
  assert.match(importError(base({}, ['', '', '', 'n'])), /Attention 'y': unsupported: nonpad_kv_seqlen/);
  assert.match(importError(base({ softmax_precision: DataType.FLOAT16 })), /unsupported: softmax_precision 10/);
});

test('RMSNormalization: default axis, axis 1 with a [C, W] scale, epsilon', async () => {
  const m = new OnnxModelBuilder(23).input('x', [2, 3, 4]).input('s', [4]).input('s2', [3, 4])
    .node('RMSNormalization', ['x', 's'], ['y']).output('y')
    .node('RMSNormalization', ['x', 's2'], ['y1'], { axis: 1, epsilon: 0.01 }).output('y1');
  await agreesTyped('rms-norm', m.build(), [randFloats(24, 1), randFloats(4, 2), randFloats(12, 3)]);
  const bad = new OnnxModelBuilder(23).input('x', [2, 3]).input('s', [3]).node('RMSNormalization', ['x', 's'], ['y'], { stash_type: 0 }).output('y').build();
  assert.match(importError(bad), /unsupported: stash_type 0/);
});

test('RotaryEmbedding: 4-D halves with per-batch caches; 3-D interleaved, partial, with position_ids', async () => {
  const [b, h, s, d] = [2, 2, 3, 8];
  const m = new OnnxModelBuilder(23).input('x', [b, h, s, d]).input('c', [b, s, d / 2]).input('sn', [b, s, d / 2])
    .node('RotaryEmbedding', ['x', 'c', 'sn'], ['y']).output('y');
  await agreesTyped('rotary-4d', m.build(), [randFloats(b * h * s * d, 1), randFloats(b * s * d / 2, 2), randFloats(b * s * d / 2, 3)]);
  const r = 4, positions = 6;
  const m3 = new OnnxModelBuilder(23).input('x', [b, s, h * d]).input('c', [positions, r / 2]).input('sn', [positions, r / 2]).typedInput('p', I64, [b, s])
    .node('RotaryEmbedding', ['x', 'c', 'sn', 'p'], ['y'], { interleaved: 1, rotary_embedding_dim: r, num_heads: h }).output('y');
  await agreesTyped('rotary-3d', m3.build(), [randFloats(b * s * h * d, 4), randFloats(positions * r / 2, 5), randFloats(positions * r / 2, 6), randInts(b * s, 7, 0, positions - 1)]);
});

test('NegativeLogLikelihoodLoss (none, sum, mean; weights; ignore_index) and SoftmaxCrossEntropyLoss with log_prob', async () => {
  const [n, c, d] = [3, 5, 2];
  const target = randInts(n * d, 1, 0, c - 1);
  target[2] = 1; // ignore_index below
  const m = new OnnxModelBuilder(22).input('x', [n, c, d]).typedInput('t', I64, [n, d]).input('w', [c])
    .node('NegativeLogLikelihoodLoss', ['x', 't'], ['none'], { reduction: 'none' }).output('none')
    .node('NegativeLogLikelihoodLoss', ['x', 't', 'w'], ['sum'], { reduction: 'sum' }).output('sum')
    .node('NegativeLogLikelihoodLoss', ['x', 't', 'w'], ['mean'], { ignore_index: 1 }).output('mean')
    .node('NegativeLogLikelihoodLoss', ['x', 't'], ['mean_plain']).output('mean_plain')
    .node('SoftmaxCrossEntropyLoss', ['x', 't', 'w'], ['sce', 'log_prob'], { ignore_index: 1 }).output('sce').output('log_prob');
  await agreesTyped('losses', m.build(), [randFloats(n * c * d, 2), target, randFloats(c, 3, 0.5, 2)]);
});

test.run();
