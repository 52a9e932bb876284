// The converters of convert-extra.ts compiled with the default schedules and run natively
// (tt_bench on files of our inputs), against the reference evaluator on the same inputs:
// integer and bool outputs exactly, float ones within 1e-5 (relative to 1 + |x|; NaN as NaN).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import { OnnxModelBuilder } from './model-builder';
import { DataType } from './schema';
import { compiledAgrees } from './native-agree.fixture';
import { randFloats, randInts } from './typed-ort.fixture';

const B = DataType.BOOL, I64 = DataType.INT64;
const work = mkdtempSync(path.join(tmpdir(), 'tt-extra-native-'));
test.after(() => rmSync(work, { recursive: true, force: true }));


test('compiled: Attention 4-D (grouped heads, bool mask, causal, softcap) and 3-D with past, RMSNormalization, RotaryEmbedding, IsNaN/IsInf', async () => {
  const [b, qh, kvh, s, l, d] = [1, 4, 2, 3, 5, 8];
  const mask = Int32Array.from({ length: s * l }, (_, k) => (k % l === 0 || k % 3 !== 1 ? 1 : 0));
  const m = new OnnxModelBuilder(23).input('q', [b, qh, s, d]).input('k', [b, kvh, l, d]).input('v', [b, kvh, l, d]).typedInput('m', B, [s, l])
    .input('q3', [b, s, qh * d]).input('k3', [b, s, kvh * d]).input('pk', [b, kvh, 2, d]).input('pv', [b, kvh, 2, d])
    .input('g', [d]).input('cs', [b, s, d / 2]).input('sn', [b, s, d / 2]).input('x', [6])
    .node('Attention', ['q', 'k', 'v', 'm'], ['y'], { is_causal: 1, softcap: 2.5 }).output('y')
    .node('Attention', ['q3', 'k3', 'k3', '', 'pk', 'pv'], ['y3', 'pk2', 'pv2'], { q_num_heads: qh, kv_num_heads: kvh, is_causal: 1 }).output('y3').output('pk2')
    .node('RMSNormalization', ['q', 'g'], ['r']).output('r')
    .node('RotaryEmbedding', ['q', 'cs', 'sn'], ['ro'], { interleaved: 1 }).output('ro')
    .node('IsNaN', ['x'], ['nan']).typedOutput('nan', B)
    .node('IsInf', ['x'], ['inf'], { detect_negative: 0 }).typedOutput('inf', B);
  const sizes = [b * qh * s * d, b * kvh * l * d, b * kvh * l * d];
  await compiledAgrees(work, 'attention', m.build(), [
    randFloats(sizes[0], 1), randFloats(sizes[1], 2), randFloats(sizes[2], 3), mask,
    randFloats(b * s * qh * d, 4), randFloats(b * s * kvh * d, 5), randFloats(b * kvh * 2 * d, 6), randFloats(b * kvh * 2 * d, 7),
    randFloats(d, 8), randFloats(b * s * d / 2, 9), randFloats(b * s * d / 2, 10), Float32Array.from([1, NaN, Infinity, -Infinity, 0, -2]),
  ], { nanEqual: true });
});

test('compiled: NLL and softmax cross-entropy losses (weights, ignore_index, mean), CumProd, LpNormalization, Shrink, Swish, MaxUnpool', async () => {
  const [n, c, dd] = [3, 4, 2];
  const t = randInts(n * dd, 1, 0, c - 1);
  t[1] = 2;
  const m = new OnnxModelBuilder(24).input('x', [n, c, dd]).typedInput('t', I64, [n, dd]).input('w', [c]).int64('a', [1], [])
    .input('u', [1, 1, 2, 2]).typedInput('ui', I64, [1, 1, 2, 2])
    .node('NegativeLogLikelihoodLoss', ['x', 't', 'w'], ['nll'], { ignore_index: 2 }).output('nll')
    .node('SoftmaxCrossEntropyLoss', ['x', 't'], ['sce', 'lp'], { reduction: 'sum' }).output('sce').output('lp')
    .node('CumProd', ['x', 'a'], ['cp'], { reverse: 1 }).output('cp')
    .node('LpNormalization', ['x'], ['ln'], { axis: 1, p: 1 }).output('ln')
    .node('Shrink', ['x'], ['sh'], { lambd: 0.2, bias: 0.1 }).output('sh')
    .node('Swish', ['x'], ['sw'], { alpha: 0.5 }).output('sw')
    .node('MaxUnpool', ['u', 'ui'], ['up'], { kernel_shape: [2, 2], strides: [2, 2] }).output('up');
  await compiledAgrees(work, 'losses', m.build(), [randFloats(n * c * dd, 2), t, randFloats(c, 3, 0.5, 2), randFloats(4, 4), Int32Array.from([5, 7, 13, 15])], { nanEqual: true });
});

test('compiled: BitShift (int8 LEFT wraps, int32 RIGHT of negatives, counts past the width) and BitwiseAnd/Xor/Not of int32', async () => {
  const m = new OnnxModelBuilder(28).typedInput('x', DataType.INT8, [8]).typedInput('y', DataType.INT8, [8])
    .typedInput('p', DataType.INT32, [8]).typedInput('q', DataType.INT32, [8])
    .node('BitShift', ['x', 'y'], ['l8'], { direction: 'LEFT' }).typedOutput('l8', DataType.INT8)
    .node('BitShift', ['p', 'q'], ['r32'], { direction: 'RIGHT' }).typedOutput('r32', DataType.INT32)
    .node('BitShift', ['p', 'q'], ['l32'], { direction: 'LEFT' }).typedOutput('l32', DataType.INT32)
    .node('BitwiseAnd', ['p', 'q'], ['and']).typedOutput('and', DataType.INT32)
    .node('BitwiseXor', ['p', 'q'], ['xor']).typedOutput('xor', DataType.INT32)
    .node('BitwiseNot', ['x'], ['not']).typedOutput('not', DataType.INT8);
  await compiledAgrees(work, 'bits', m.build(), [
    Int32Array.from([-128, -5, 127, 100, -1, 3, 64, -77]), Int32Array.from([1, 2, 1, 7, 8, 9, -1, 0]),
    Int32Array.from([-2147483648, -5, 2147483647, 123456789, -1, 3, 1 << 30, -77]), Int32Array.from([1, 2, 1, 31, 32, 40, -1, 0]),
  ], { nanEqual: true });
});

test.run();
