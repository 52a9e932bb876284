// The printer against TVM's own output: the expected strings below are copied verbatim
// from the `extract_tasks` listing of mobilenet NHWC in TVM's Mali tutorial (engine/graph/fixtures/mobilenet-nhwc-tasks.txt), and
// the workload keys there are md5 hashes of TVM's simple-mode print, so matching them
// byte for byte checks the simple mode too.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from './dag';
import {
  add, and, bool, call, cast, f32, floordiv, floormod, ge, ifThenElse, int, load, lt, max, min, mul, not, or,
  reduceAxis, select, sub, sum, v,
} from './expr';
import { formatFloat32, formatTvmFloat, printExpr } from './printer';
import { compute, placeholder } from './tensor';
import { adaptivePool2d, conv2dNHWC, dense, depthwiseConv2dNHWC, pool2d, softmax } from '../topi/nn';
import { binary, relu } from '../topi/elemwise';

const P = placeholder;

/** Seed Task 0: 1x1 conv2d NHWC + bias + relu. */
function task0(): ComputeDAG {
  const conv = conv2dNHWC(P('p0', [1, 56, 56, 128]), P('p1', [1, 1, 128, 128]), { strides: [1, 1], padding: [0, 0, 0, 0], dilation: [1, 1] });
  return new ComputeDAG([relu(binary('add', conv, P('p2', [1, 1, 1, 128])))]);
}

/** Seed Tasks 4/8: depthwise 3x3, padding 1, + bias + relu. */
function depthwiseTask(h: number, c: number, stride: number): ComputeDAG {
  const dw = depthwiseConv2dNHWC(P('p0', [1, h, h, c]), P('p1', [3, 3, c, 1]), { strides: [stride, stride], padding: [1, 1, 1, 1], dilation: [1, 1] });
  return new ComputeDAG([relu(binary('add', dw, P('p2', [1, 1, 1, c])))]);
}

test('seed Task 0: conv2d_nhwc + add + relu, print and key', () => {
  const dag = task0();
  assert.is(dag.print(), `p0 = PLACEHOLDER [1, 56, 56, 128]
pad_temp(i0, i1, i2, i3) = p0[i0, i1, i2, i3]
p1 = PLACEHOLDER [1, 1, 128, 128]
conv2d_nhwc(nn, yy, xx, ff) += (pad_temp[nn, (yy + ry), (xx + rx), rc]*p1[ry, rx, rc, ff])
p2 = PLACEHOLDER [1, 1, 1, 128]
T_add(ax0, ax1, ax2, ax3) = (conv2d_nhwc[ax0, ax1, ax2, ax3] + p2[ax0, 0, 0, ax3])
T_relu(ax0, ax1, ax2, ax3) = max(T_add[ax0, ax1, ax2, ax3], 0f)
`);
  assert.is(dag.workloadKey, '["6d628209072e3e3dd8f49359935acea6", [1, 56, 56, 128], [1, 1, 128, 128], [1, 1, 1, 128], [1, 56, 56, 128]]');
});

test('seed Task 2: dense + add', () => {
  const dag = new ComputeDAG([binary('add', dense(P('p0', [1, 1024]), P('p1', [1000, 1024])), P('p2', [1, 1000]))]);
  assert.is(dag.print(), `p0 = PLACEHOLDER [1, 1024]
p1 = PLACEHOLDER [1000, 1024]
T_matmul_NT(i, j) += (p0[i, k]*p1[j, k])
p2 = PLACEHOLDER [1, 1000]
T_add(ax0, ax1) = (T_matmul_NT[ax0, ax1] + p2[ax0, ax1])
`);
  assert.is(dag.workloadKey, '["00a059b856ac30ac172b6252254479a6", [1, 1024], [1000, 1024], [1, 1000], [1, 1000]]');
});

test('seed Task 3: global (adaptive 7->1) average pool', () => {
  const dag = new ComputeDAG([adaptivePool2d(P('p0', [1, 7, 7, 1024]), [1, 1], 'avg', 'NHWC')]);
  assert.is(dag.print(), `p0 = PLACEHOLDER [1, 7, 7, 1024]
adaptive_pool_sum(ax0, ax1, ax2, ax3) += p0[ax0, ((ax1*7) + rv0), ((ax2*7) + rv1), ax3]
adaptive_pool_avg(ax0, ax1, ax2, ax3) = (adaptive_pool_sum[ax0, ax1, ax2, ax3]/(float32((select((bool)1, ((ax1 + 1)*7), (((ax1 + 1)*7) + 1)) - (ax1*7)))*float32((select((bool)1, ((ax2 + 1)*7), (((ax2 + 1)*7) + 1)) - (ax2*7)))))
`);
  assert.is(dag.workloadKey, '["8c53ca2904398da2889aa7508082d7bb", [1, 7, 7, 1024], [1, 1, 1, 1024]]');
});

test('seed Task 4: depthwise stride 1 with padding', () => {
  const dag = depthwiseTask(28, 256, 1);
  assert.is(dag.print(), `p0 = PLACEHOLDER [1, 28, 28, 256]
PaddedInput(i0, i1, i2, i3) = tir.if_then_else(((((i1 >= 1) && (i1 < 29)) && (i2 >= 1)) && (i2 < 29)), p0[i0, (i1 - 1), (i2 - 1), i3], 0f)
p1 = PLACEHOLDER [3, 3, 256, 1]
DepthwiseConv2d(b, i, j, c) += (PaddedInput[b, (i + di), (j + dj), c]*p1[di, dj, c, 0])
p2 = PLACEHOLDER [1, 1, 1, 256]
T_add(ax0, ax1, ax2, ax3) = (DepthwiseConv2d[ax0, ax1, ax2, ax3] + p2[ax0, 0, 0, ax3])
T_relu(ax0, ax1, ax2, ax3) = max(T_add[ax0, ax1, ax2, ax3], 0f)
`);
  assert.is(dag.workloadKey, '["98cde4888c94ec7beaa9972f806856d0", [1, 28, 28, 256], [3, 3, 256, 1], [1, 1, 1, 256], [1, 28, 28, 256]]');
});

test('seed Task 8: depthwise stride 2 with padding', () => {
  const dag = depthwiseTask(14, 512, 2);
  assert.is(dag.print(), `p0 = PLACEHOLDER [1, 14, 14, 512]
PaddedInput(i0, i1, i2, i3) = tir.if_then_else(((((i1 >= 1) && (i1 < 15)) && (i2 >= 1)) && (i2 < 15)), p0[i0, (i1 - 1), (i2 - 1), i3], 0f)
p1 = PLACEHOLDER [3, 3, 512, 1]
DepthwiseConv2d(b, i, j, c) += (PaddedInput[b, ((i*2) + di), ((j*2) + dj), c]*p1[di, dj, c, 0])
p2 = PLACEHOLDER [1, 1, 1, 512]
T_add(ax0, ax1, ax2, ax3) = (DepthwiseConv2d[ax0, ax1, ax2, ax3] + p2[ax0, 0, 0, ax3])
T_relu(ax0, ax1, ax2, ax3) = max(T_add[ax0, ax1, ax2, ax3], 0f)
`);
  assert.is(dag.workloadKey, '["88a2e34d300a6ccfcf0228f0b90f13ec", [1, 14, 14, 512], [3, 3, 512, 1], [1, 1, 1, 512], [1, 7, 7, 512]]');
});

test('seed Task 9: softmax', () => {
  const dag = new ComputeDAG([softmax(P('p0', [1, 1000]))]);
  assert.is(dag.print(), `p0 = PLACEHOLDER [1, 1000]
T_softmax_maxelem(i0) max= p0[i0, k]
T_softmax_exp(i0, i1) = tir.exp((p0[i0, i1] - T_softmax_maxelem[i0]))
T_softmax_expsum(i0) += T_softmax_exp[i0, k]
T_softmax_norm(i0, i1) = (T_softmax_exp[i0, i1]/T_softmax_expsum[i0])
`);
  assert.is(dag.workloadKey, '["7d79c516e212fe1d73f5dbb90eaca2cf", [1, 1000], [1, 1000]]');
});

test('seed Task 19: strided padded conv2d * scale + shift + relu (key only)', () => {
  const conv = conv2dNHWC(P('p0', [1, 224, 224, 3]), P('p1', [3, 3, 3, 32]), { strides: [2, 2], padding: [1, 1, 1, 1], dilation: [1, 1] });
  const dag = new ComputeDAG([relu(binary('add', binary('multiply', conv, P('p2', [1, 112, 1, 1])), P('p3', [1, 112, 1, 1])))]);
  assert.is(dag.print().split('\n')[3], 'conv2d_nhwc(nn, yy, xx, ff) += (pad_temp[nn, ((yy*2) + ry), ((xx*2) + rx), rc]*p1[ry, rx, rc, ff])');
  assert.is(dag.print().split('\n')[5], 'T_multiply(ax0, ax1, ax2, ax3) = (conv2d_nhwc[ax0, ax1, ax2, ax3]*p2[ax0, ax1, 0, 0])');
  assert.is(dag.workloadKey, '["ad24d4d2f83975ff580a4833fbf3ef94", [1, 224, 224, 3], [3, 3, 3, 32], [1, 112, 1, 1], [1, 112, 1, 1], [1, 112, 112, 32]]');
});

test('simple mode: placeholders lose their shape (trailing space kept), call bodies print as the callee', () => {
  assert.is(depthwiseTask(28, 256, 1).print(true), `p0 = PLACEHOLDER 
PaddedInput(i0, i1, i2, i3) = Op(tir.if_then_else)
p1 = PLACEHOLDER 
DepthwiseConv2d(b, i, j, c) += (PaddedInput[b, (i + di), (j + dj), c]*p1[di, dj, c, 0])
p2 = PLACEHOLDER 
T_add(ax0, ax1, ax2, ax3) = (DepthwiseConv2d[ax0, ax1, ax2, ax3] + p2[ax0, 0, 0, ax3])
T_relu(ax0, ax1, ax2, ax3) = max(T_add[ax0, ax1, ax2, ax3], 0f)
`);
  assert.is(new ComputeDAG([softmax(P('p0', [1, 1000]))]).print(true).split('\n')[2], 'T_softmax_exp(i0, i1) = Op(tir.exp)');
  // Only a call at the top of the body is elided; a select or arithmetic prints in full.
  const x = P('x', [4]);
  const s = compute('s', [4], ['i'], (i) => select(lt(i, 2), load(x, [i]), f32(0)));
  assert.is(new ComputeDAG([s]).print(true), 'x = PLACEHOLDER \ns(i) = select((i < 2), x[i], 0f)\n');
});

test('max pool with padding: TOPI C++ pad (ax names, min float32 printed as TVM does)', () => {
  // Seed 004 (resnet-18, older TVM naming), Task 20:
  //   pad_temp(ax0, ax1, ax2, ax3) = tir.if_then_else(((((ax1 >= 1) && (ax1 < 113)) && (ax2 >= 1)) && (ax2 < 113)), placeholder[ax0, (ax1 - 1), (ax2 - 1), ax3], -3.40282e+38f)
  const pool = pool2d(P('p0', [1, 112, 112, 64]), { kind: 'max', kernel: [3, 3], strides: [2, 2], padding: [1, 1, 1, 1], layout: 'NHWC' });
  assert.is(new ComputeDAG([pool]).print(), `p0 = PLACEHOLDER [1, 112, 112, 64]
pad_temp(ax0, ax1, ax2, ax3) = tir.if_then_else(((((ax1 >= 1) && (ax1 < 113)) && (ax2 >= 1)) && (ax2 < 113)), p0[ax0, (ax1 - 1), (ax2 - 1), ax3], -3.40282e+38f)
pool_max(ax0, ax1, ax2, ax3) max= pad_temp[ax0, ((ax1*2) + rv0), ((ax2*2) + rv1), ax3]
`);
  // C++ pad checks only the padded sides; without padding there is no pad stage at all.
  const lopsided = pool2d(P('p0', [1, 4, 4, 1]), { kind: 'max', kernel: [2, 2], strides: [2, 2], padding: [0, 0, 1, 1], layout: 'NHWC' });
  assert.is(new ComputeDAG([lopsided]).print().split('\n')[1],
    'pad_temp(ax0, ax1, ax2, ax3) = tir.if_then_else(((ax1 < 4) && (ax2 < 4)), p0[ax0, ax1, ax2, ax3], -3.40282e+38f)');
  const unpadded = pool2d(P('p0', [1, 4, 4, 1]), { kind: 'max', kernel: [2, 2], strides: [2, 2], padding: [0, 0, 0, 0], layout: 'NHWC' });
  assert.is(new ComputeDAG([unpadded]).print(), 'p0 = PLACEHOLDER [1, 4, 4, 1]\npool_max(ax0, ax1, ax2, ax3) max= p0[ax0, ((ax1*2) + rv0), ((ax2*2) + rv1), ax3]\n');
});

test('softmax over a middle axis names the reduced stages i0, i1, ... as TOPI does', () => {
  assert.is(new ComputeDAG([softmax(P('p0', [1, 3, 2, 2]), 1)]).print(), `p0 = PLACEHOLDER [1, 3, 2, 2]
T_softmax_maxelem(i0, i1, i2) max= p0[i0, k, i1, i2]
T_softmax_exp(i0, i1, i2, i3) = tir.exp((p0[i0, i1, i2, i3] - T_softmax_maxelem[i0, i2, i3]))
T_softmax_expsum(i0, i1, i2) += T_softmax_exp[i0, k, i1, i2]
T_softmax_norm(i0, i1, i2, i3) = (T_softmax_exp[i0, i1, i2, i3]/T_softmax_expsum[i0, i2, i3])
`);
});

test('expression forms', () => {
  const i = v('i'), j = v('j');
  assert.is(printExpr(floordiv(i, 4)), 'floordiv(i, 4)');
  assert.is(printExpr(floormod(add(i, 1), 4)), 'floormod((i + 1), 4)');
  assert.is(printExpr(min(i, j)), 'min(i, j)');
  assert.is(printExpr(max(sub(i, 2), 0)), 'max((i - 2), 0)');
  assert.is(printExpr(mul(i, 3)), '(i*3)');
  assert.is(printExpr(and(ge(i, 0), or(lt(j, 5), not(lt(i, j))))), '((i >= 0) && ((j < 5) || !(i < j)))');
  assert.is(printExpr(bool(true)), '(bool)1');
  assert.is(printExpr(bool(false)), '(bool)0');
  assert.is(printExpr(cast('float32', i)), 'float32(i)');
  assert.is(printExpr(call('sigmoid', f32(0.5))), 'tir.sigmoid(0.5f)');
  assert.is(printExpr(ifThenElse(lt(i, 2), f32(1), f32(-1))), 'tir.if_then_else((i < 2), 1f, -1f)');
  assert.is(printExpr(int(-3)), '-3');
  // Index identities fold, so stride 1 / offset 0 never print.
  assert.is(printExpr(add(mul(i, 1), mul(j, 1))), '(i + j)');
  assert.is(printExpr(sub(i, 0)), 'i');
  assert.is(printExpr(floordiv(i, 1)), 'i');
});

test('reduction heads: += / max= / min=', () => {
  const x = P('x', [4, 8]);
  const k = reduceAxis('k', 8);
  const s = compute('s', [4], ['i'], (i) => sum(load(x, [i, v('k')]), [k]));
  assert.is(new ComputeDAG([s]).print(), 'x = PLACEHOLDER [4, 8]\ns(i) += x[i, k]\n');
});

test('floats print like a C++ stream (%g, 6 digits)', () => {
  const cases: [number, string][] = [
    [0, '0'], [1, '1'], [6, '6'], [-1, '-1'], [0.5, '0.5'], [0.1, '0.1'], [1e-5, '1e-05'], [0.001, '0.001'],
    [0.0001, '0.0001'], [1e-4 / 2, '5e-05'], [123456, '123456'], [1234567, '1.23457e+06'], [1e6, '1e+06'],
    [-3.4028234663852886e38, '-3.40282e+38'], [3.14159265, '3.14159'], [999999.5, '1e+06'], [2.5e-10, '2.5e-10'],
    [Infinity, 'inf'], [-Infinity, '-inf'],
  ];
  for (const [x, s] of cases) assert.is(formatTvmFloat(x), s, String(x));
  // f32 constants are stored rounded to float32 and still print short.
  assert.is(printExpr(f32(0.1)), '0.1f');
  assert.is(printExpr(f32(1e-5)), '1e-05f');
  // formatFloat32 (for code generators) stays round-trip exact.
  assert.is(formatFloat32(Math.fround(0.1)), '0.1');
  assert.is(Math.fround(Number(formatFloat32(Math.fround(3.14159265)))), Math.fround(3.14159265));
});

test.run();
