// Every kind of task, lowered with its default schedule and with hand-written step lists
// (splits that do not divide, reorders, compute_at, cache_write, vectorise, unroll,
// parallel), compiled to C and run, agrees with the reference evaluator.
//
// Tolerance: the kernels accumulate in float32, in another order than the float64
// reference; |got - ref| <= 1e-5 + 1e-4 * |ref| elementwise (these reductions are at
// most a few hundred terms of values in [0, 1)). Winograd kernels are checked as the
// measurer checks them (verify.ts WINOGRAD_TOLERANCE: the absolute part relative to the
// largest output, which the transforms' cancellations call for).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { compute, placeholder, type Tensor } from '../ir/tensor';
import { call, div, f32, load, mul } from '../ir/expr';
import { uniform } from '../runtime/random';
import { defaultSchedule } from '../schedule/defaults';
import { WINOGRAD_TOLERANCE, compareOutput, type Tolerance } from '../measure/verify';
import { State } from '../schedule/state';
import type { Step } from '../schedule/steps';
import { binary, relu } from '../topi/elemwise';
import { conv2dNCHW, conv2dNHWC, dense, depthwiseConv2dNHWC, pool2d, softmax } from '../topi/nn';
import { layerNorm } from '../topi/normalization';
import { transpose } from '../topi/transform';
import { conv2dWinogradNHWC } from '../topi/winograd';
import { renderKernel } from './c';
import { blockedShape, packBlocked, unpackBlocked } from './layout';
import { lower } from './lower';
import { runKernel } from './run-c';

function check(dag: ComputeDAG, steps: readonly Step[], what: string, vectorLanes = 16, packable: readonly string[] = [], tolerance?: Tolerance): string {
  const kernel = lower(State.replay(dag, steps), 'kernel', { packable: new Set(packable) });
  const inputs = dag.inputs.map((t, i) => uniform(t.shape.reduce((a, b) => a * b, 1), 7, i));
  // Inputs the kernel reads in a blocked layout get their data packed, as compile does for weights.
  const fed = inputs.map((x, i) => {
    const l = kernel.layouts.find((y) => y.input === i);
    return l ? packBlocked(x, dag.inputs[i].shape, l.axis, l.block) : x;
  });
  const got = runKernel(kernel, fed, undefined, { vectorLanes });
  const ref = evaluate(dag, new Map(dag.inputs.map((t, i) => [t, inputs[i]] as const)));
  dag.outputs.forEach((out, o) => {
    const want = ref.get(out.name)!;
    assert.is(got[o].length, want.length, `${what}: output size`);
    if (tolerance) {
      const c = compareOutput(got[o], want, tolerance);
      assert.ok(c.ok, `${what}: ${c.ok ? '' : c.message}`);
      return;
    }
    for (let i = 0; i < want.length; i++) {
      const tol = 1e-5 + 1e-4 * Math.abs(want[i]);
      if (!(Math.abs(got[o][i] - want[i]) <= tol)) assert.unreachable(`${what}: ${out.name}[${i}] = ${got[o][i]}, reference ${want[i]}`);
    }
  });
  return renderKernel(kernel, { vectorLanes });
}

const conv = (h: number, ci: number, co: number, k: number, stride: number, pad: number): ComputeDAG => {
  const data = placeholder('data', [1, h, h, ci]);
  const weight = placeholder('weight', [k, k, ci, co]);
  const bias = placeholder('bias', [1, 1, 1, co]);
  const c = conv2dNHWC(data, weight, { strides: [stride, stride], padding: [pad, pad, pad, pad], dilation: [1, 1] });
  return new ComputeDAG([relu(binary('add', c, bias))]);
};

const dflt = (dag: ComputeDAG, lanes = 16): Step[] => defaultSchedule(dag, { vectorLanes: lanes });

test('conv2d NHWC + bias + relu, default schedule, 16 and 8 lanes', () => {
  const dag = conv(9, 8, 32, 3, 1, 1);
  const code = check(dag, dflt(dag), 'conv 3x3');
  assert.match(code, /tt_v16_load/, 'the inner tile is rendered as vector code');
  assert.match(code, /conv2d_nhwc_v0/, 'the accumulator tile lives in named vector variables');
  check(dag, dflt(dag, 8), 'conv 3x3, 8 lanes', 8);
});

const inlined = (steps: readonly Step[], stage: string): boolean => steps.some((s) => s.s === 'compute_inline' && s.stage === stage);

test('default: a padded conv writes its padding once at root, so no bounds test is left in the reduction', () => {
  const dag = conv(16, 16, 32, 3, 1, 1);
  const steps = dflt(dag);
  assert.not.ok(inlined(steps, 'pad_temp'));
  assert.ok(steps.some((s) => s.s === 'annotate' && s.stage === 'pad_temp' && s.ann === 'parallel'), 'the copy runs in parallel');
  const code = check(dag, steps, 'conv 3x3, padding at root');
  const reduction = code.slice(code.indexOf('for (int32_t ry'));
  assert.not.match(reduction.slice(0, reduction.indexOf('tt_v16_store(&T_relu')), /\?/, 'no select between the reduce loops and the epilogue');
  // A 1x1 conv's identity padding and a depthwise conv's padding stay inlined.
  assert.ok(inlined(dflt(conv(5, 12, 20, 1, 1, 0)), 'pad_temp'));
  const data = placeholder('data', [1, 10, 10, 24]);
  const dw = new ComputeDAG([relu(depthwiseConv2dNHWC(data, placeholder('w', [3, 3, 24, 1]), { strides: [1, 1], padding: [1, 1, 1, 1], dilation: [1, 1] }))]);
  assert.ok(inlined(dflt(dw), 'PaddedInput'));
});

test('default: where the weights outweigh the input, the channel tile loop goes outermost and joins the parallel loop', () => {
  const dag = conv(7, 64, 96, 3, 1, 1);
  const steps = dflt(dag);
  const parallel = steps.find((s) => s.s === 'annotate' && s.ann === 'parallel' && s.stage === 'T_relu');
  assert.ok(parallel && parallel.s === 'annotate' && parallel.iter.startsWith('ax3.0@'), JSON.stringify(parallel));
  const code = check(dag, steps, 'conv 3x3, channels outer');
  assert.match(code, /conv2d_nhwc_v0/, 'the accumulator tile still lives in named vector variables');
  // An early layer (input larger than the weights) keeps its channel loop inside.
  const early = dflt(conv(16, 16, 32, 3, 1, 1)).find((s) => s.s === 'annotate' && s.ann === 'parallel' && s.stage === 'T_relu');
  assert.ok(early && early.s === 'annotate' && !early.iter.includes('ax3'), JSON.stringify(early));
});

test('conv2d NHWC, stride 2, three input channels (a first layer)', () => {
  const dag = conv(15, 3, 16, 3, 2, 1);
  check(dag, dflt(dag), 'strided conv');
});

test('default: padding read inline (depthwise convs, a conv over 3 channels) is versioned: whole tiles read the input with no bounds test, border tiles keep theirs', () => {
  // The kernel's two versions of the tile: whole (its loop body's first `if`) and the border's (`if ((!(`).
  const versions = (c: string): [string, string] => {
    const body = c.slice(c.search(/static void \w+_par\d+\(/));
    const border = body.indexOf('if ((!(');
    return [body.slice(body.indexOf('if ('), border), border < 0 ? '' : body.slice(border)];
  };
  const depthwise = (h: number, c: number, stride: number): ComputeDAG => new ComputeDAG([relu(depthwiseConv2dNHWC(
    placeholder('data', [1, h, h, c]), placeholder('w', [3, 3, c, 1]), { strides: [stride, stride], padding: [1, 1, 1, 1], dilation: [1, 1] }))]);
  // [what, dag]: depthwise at stride 1 and 2, and an image conv (3 channels, 3x3 stride 2:
  // its padding is inlined, and its tiles of 6 positions wrap from one row to the next).
  const cases: [string, ComputeDAG][] = [
    ['depthwise 3x3 stride 1, 12x12x32', depthwise(12, 32, 1)],
    ['depthwise 3x3 stride 2, 13x13x16', depthwise(13, 16, 2)],
    ['3x3 stride 2 conv, 20x20x3 -> 16', conv(20, 3, 16, 3, 2, 1)],
  ];
  for (const [name, dag] of cases) {
    const steps = dflt(dag, 8);
    assert.ok(steps.some((st) => st.s === 'compute_inline' && /^(pad_temp|PaddedInput)$/.test(st.stage)), `${name}: padding inlined`);
    const [whole, border] = versions(check(dag, steps, `${name}, 8 lanes`, 8, ['weight']));
    assert.match(whole, /\bdata\[/, `${name}: the whole version reads the input`);
    assert.not.match(whole, /\?/, `${name}: no bounds test in the whole tiles`);
    assert.match(border, /\? (tt_v8_load\(&)?data\[/, `${name}: the border tiles keep theirs`);
  }
  // A conv over 3 channels that does much work per padded element (ResNet's 7x7 first conv) keeps the copy.
  assert.not.ok(dflt(conv(32, 3, 64, 7, 2, 3), 8).some((st) => st.s === 'compute_inline' && st.stage === 'pad_temp'), '7x7 image conv: padding at root');
});

test('1x1 conv with an extent the vector width does not divide', () => {
  const dag = conv(5, 12, 20, 1, 1, 0);
  check(dag, dflt(dag), '1x1 conv, 20 channels');
});

test('default: a conv at 8 lanes tiles 6 output positions of the fused rows and columns; neither the whole tiles nor the short last one test guards in the reduction', () => {
  // [image, in channels, out channels, kernel, stride, padding]: 1x1 convs at stride 1 and 2,
  // 3x3 convs at stride 1 and 2 (their padding written at root). A 5x5 output has 25
  // positions: four whole tiles of 6 and one of 1; 32 channels: 2 vectors.
  const cases = [[5, 24, 32, 1, 1, 0], [7, 24, 48, 1, 1, 0], [14, 24, 16, 1, 1, 0], [10, 24, 32, 1, 2, 0], [7, 16, 32, 3, 1, 1], [15, 8, 16, 3, 2, 1]] as const;
  for (const [h, ci, co, k, stride, pad] of cases) {
    const name = `${k}x${k} stride ${stride} conv, ${h}x${h}x${ci} -> ${co}`;
    const dag = conv(h, ci, co, k, stride, pad);
    const steps = dflt(dag, 8);
    assert.ok(steps.some((s) => s.s === 'fuse' && s.stage === 'T_relu' && s.iters.join() === 'ax1,ax2'), `${name}: rows and columns fused`);
    assert.ok(steps.some((s) => s.s === 'split' && s.iter === 'ax1@ax2' && s.lengths[0] === 6), `${name}: a run of 6 positions`);
    const c = check(dag, steps, `${name}, 8 lanes`, 8, ['weight']);
    // The tile's 6 x 2 accumulators live in registers (not a local buffer of two whole rows).
    assert.not.match(c, /float conv2d_nhwc\[/, `${name}: no local array`);
    assert.match(c, /conv2d_nhwc_v11\b/);
    // Two versions of the tile: whole and the tail. The tail is one tile (the last), so it
    // runs at that tile's index and its guards fold away: no test in the reduction loop of
    // either. Each position's row and column (floordiv, floormod of its index) are named
    // once per tile, outside the reduction loops.
    const loops = c.split(/for \(int32_t r[xyc]_\d+ = 0;/).slice(1).map((rest) => rest.slice(0, rest.indexOf('tt_v8_store(&T_relu')));
    assert.ok(loops.length >= 2, `${name}: whole and tail versions of the reduction`);
    for (const l of loops) {
      assert.not.match(l, /if \(/, `${name}: the whole tiles and the tail run without guards`);
      assert.not.match(l, /tt_floor(div|mod)/, `${name}: no index division inside the reduction`);
    }
  }
  // Not for a depthwise conv (its own tile).
  const dw = new ComputeDAG([relu(depthwiseConv2dNHWC(placeholder('data', [1, 7, 7, 32]), placeholder('w', [3, 3, 32, 1]), { strides: [1, 1], padding: [1, 1, 1, 1], dilation: [1, 1] }))]);
  assert.not.ok(dflt(dw, 8).some((s) => s.s === 'fuse' && s.iters.length === 2 && s.iters.join().endsWith('ax2')), 'depthwise');
});

test('default: at 16 lanes a stride-1 conv over 16 or more channels tiles 14 positions; a strided one, or one over 3 channels, keeps the columns of a row, by 4 vectors where they divide its channels', () => {
  const fused = (steps: readonly Step[]): boolean => steps.some((s) => s.s === 'fuse' && s.stage === 'T_relu' && s.iters.join() === 'ax1,ax2');
  // A 7x7 output: 49 positions, three whole tiles of 14 and one of 7; a 3x3 conv's padding at root.
  for (const [h, ci, co, k, stride, pad] of [[7, 24, 32, 1, 1, 0], [14, 16, 64, 3, 1, 1]] as const) {
    const name = `${k}x${k} stride ${stride} conv, ${h}x${h}x${ci} -> ${co}`;
    const dag = conv(h, ci, co, k, stride, pad);
    const steps = dflt(dag, 16);
    assert.ok(fused(steps), `${name}: rows and columns fused`);
    assert.ok(steps.some((s) => s.s === 'split' && s.iter === 'ax1@ax2' && s.lengths[0] === 14), `${name}: a run of 14 positions`);
    const c = check(dag, steps, `${name}, 16 lanes`, 16, ['weight']);
    assert.not.match(c, /float conv2d_nhwc\[/, `${name}: no local array`);
    assert.match(c, /conv2d_nhwc_v27\b/, `${name}: 14 x 2 accumulators in variables`);
  }
  for (const [h, ci, co, k, stride, pad, why] of [[14, 24, 32, 1, 2, 0, 'stride 2'], [16, 3, 32, 3, 1, 1, '3 input channels']] as const) {
    const dag = conv(h, ci, co, k, stride, pad);
    const steps = dflt(dag, 16);
    assert.not.ok(fused(steps), why);
    check(dag, steps, `${why}, 16 lanes`, 16, ['weight']);
  }
  // Those with output channels in fours of vectors: 7 columns by 4 vectors (rowTileOf).
  for (const [h, ci, co, k, stride, pad, why] of [[28, 24, 128, 1, 2, 0, 'stride 2'], [14, 3, 64, 3, 1, 1, '3 input channels']] as const) {
    const dag = conv(h, ci, co, k, stride, pad);
    const steps = dflt(dag, 16);
    assert.not.ok(fused(steps), why);
    const split = (iter: string, n: number): boolean => steps.some((s) => s.s === 'split' && s.stage === 'T_relu' && s.iter === iter && s.lengths[0] === n);
    assert.ok(split('ax3', 64) && split('ax2', 7), `${why}: 7 columns by 64 channels`);
    const c = check(dag, steps, `${why}, 4 vectors, 16 lanes`, 16, ['weight']);
    assert.match(c, /conv2d_nhwc_v27\b/, `${why}: 7 x 4 accumulators in variables`);
  }
  // A 3x3 stride-1 conv over 28x28 or more with 64 channels: 7 positions by 4 vectors
  // (positionTile4Of); a 1x1 conv there keeps 14 by 2.
  for (const [k, pad, rows, vec] of [[3, 1, 7, 64], [1, 0, 14, 32]] as const) {
    const dag = conv(28, 16, 64, k, 1, pad);
    const steps = dflt(dag, 16);
    const split = (iter: string, n: number): boolean => steps.some((s) => s.s === 'split' && s.stage === 'T_relu' && s.iter === iter && s.lengths[0] === n);
    assert.ok(fused(steps) && split('ax1@ax2', rows) && split('ax3', vec), `${k}x${k} over 28x28: ${rows} positions by ${vec} channels`);
    const c = check(dag, steps, `${k}x${k} 28x28x16 -> 64, 16 lanes`, 16, ['weight']);
    assert.match(c, /conv2d_nhwc_v27\b/, `${k}x${k}: 28 accumulators in variables`);
  }
  // Winograd's batched product takes the same tile: 16 tiles of F(4x4) over a 14x14 output (14 and 2).
  const data = placeholder('data', [1, 14, 14, 16]), bias = placeholder('bias', [1, 1, 1, 32]);
  const wdag = new ComputeDAG([relu(binary('add', conv2dWinogradNHWC(data, placeholder('weight', [6, 6, 16, 32]), { padding: [1, 1, 1, 1], tileSize: 4 }), bias))]);
  const wsteps = dflt(wdag, 16);
  assert.ok(wsteps.some((s) => s.s === 'split' && s.stage.includes('bgemm') && s.lengths[0] === 14), 'Winograd: 14 tiles per block');
  check(wdag, wsteps, 'Winograd F(4) 14x14, 16 lanes', 16, [], WINOGRAD_TOLERANCE);
});

test('default: at 16 lanes a 7x7 conv whose 64-channel weight slice fits in 512 KB tiles one row of 7 positions by 4 vectors; a 3x3 conv over 512 channels keeps 14 positions, a 1x1 over 1024 takes 7 by 4', () => {
  const split = (steps: readonly Step[], iter: string, n: number): boolean => steps.some((s) => s.s === 'split' && s.stage === 'T_relu' && s.iter === iter && s.lengths[0] === n);
  // 1x1 over 48 channels to 64, and 3x3 over 32 to 128 (its padding at root): 7 columns x 64 channels.
  for (const [ci, co, k, pad] of [[48, 64, 1, 0], [32, 128, 3, 1]] as const) {
    const name = `${k}x${k} conv, 7x7x${ci} -> ${co}`;
    const dag = conv(7, ci, co, k, 1, pad);
    const steps = dflt(dag, 16);
    assert.ok(split(steps, 'ax3', 64) && split(steps, 'ax2', 7), `${name}: 7 columns by 64 channels`);
    assert.not.ok(steps.some((s) => s.s === 'fuse' && s.iters.join() === 'ax1,ax2'), `${name}: positions not fused`);
    const c = check(dag, steps, `${name}, 16 lanes`, 16, ['weight']);
    assert.match(c, /conv2d_nhwc_v27\b/, `${name}: 7 x 4 accumulators in variables`);
    assert.not.match(c, /float conv2d_nhwc\[/, `${name}: no local array`);
  }
  // 3x3 over 512 channels: 9 x 512 x 64 floats is 1.2 MB; a 14x14 output is whole tiles of 14.
  assert.ok(split(dflt(conv(7, 512, 64, 3, 1, 1), 16), 'ax1@ax2', 14), '3x3 7x7x512: 14 positions');
  assert.ok(split(dflt(conv(14, 48, 64, 1, 1, 0), 16), 'ax1@ax2', 14), '1x1 14x14: 14 positions');
  // 1x1 over 1024 channels: a position's inputs 4 KB apart, so 14 of them would share one set
  // of the L1; 7 positions by 4 vectors instead (positionTile4Of).
  const deep = conv(14, 1024, 64, 1, 1, 0);
  const deepSteps = dflt(deep, 16);
  assert.ok(split(deepSteps, 'ax1@ax2', 7) && split(deepSteps, 'ax3', 64), '1x1 14x14x1024: 7 positions by 64 channels');
  assert.match(check(deep, deepSteps, '1x1 14x14x1024 -> 64, 16 lanes', 16, ['weight']), /conv2d_nhwc_v27\b/, '1x1 14x14x1024: 28 accumulators in variables');
  assert.ok(split(dflt(conv(14, 512, 64, 1, 1, 0), 16), 'ax1@ax2', 14), '1x1 14x14x512 (2 KB apart): 14 positions');
});

test('default: a transpose whose own last axis is short (NCHW image to NHWC) runs by rows of pixels, loading whole vectors; an elementwise op over the same short axis does not', () => {
  const img = placeholder('img', [1, 3, 6, 32]);
  const dag = new ComputeDAG([transpose(img, [0, 2, 3, 1])]);
  const steps = dflt(dag, 16);
  assert.ok(steps.some((s) => s.s === 'split' && s.iter === 'ax2' && s.lengths[0] === 16), 'the width axis by vectors');
  assert.ok(steps.some((s) => s.s === 'reorder' && s.order.join() === 'ax0,ax1,ax3,ax2.0,ax2.1'), 'the channels outside it');
  assert.ok(steps.some((s) => s.s === 'annotate' && s.iter === 'ax2.1' && s.ann === 'vectorize'));
  check(dag, steps, 'transpose NCHW -> NHWC, 16 lanes');
  check(dag, dflt(dag, 8), 'transpose NCHW -> NHWC, 8 lanes');
  const same = new ComputeDAG([relu(placeholder('x', [1, 6, 32, 3]))]);
  assert.not.ok(dflt(same, 16).some((s) => s.s === 'split'), 'reads along its own last axis: left as it was');
});

test('default: a transpose of a long last axis (keys split from a fused qkv projection) runs in tiles of a vector of it by the axis read contiguously', () => {
  // 37 tokens by 2 heads of 32 -> 2 heads x 32 x 37 tokens: 37 is two whole vectors of 16 and a tail of 5.
  const x = placeholder('x', [1, 37, 2, 32]);
  const dag = new ComputeDAG([transpose(x, [0, 2, 3, 1])]);
  for (const lanes of [16, 8]) {
    const steps = dflt(dag, lanes);
    assert.ok(steps.some((s) => s.s === 'split' && s.iter === 'ax3' && s.lengths[0] === lanes), `${lanes} lanes: the tokens by vectors`);
    assert.ok(steps.some((s) => s.s === 'reorder' && s.order.join() === 'ax0,ax1,ax3.0,ax2,ax3.1'), `${lanes} lanes: the head's 32 inside each vector of tokens`);
    assert.ok(steps.some((s) => s.s === 'annotate' && s.iter === 'ax3.1' && s.ann === 'vectorize'), `${lanes} lanes: the vector of tokens innermost`);
    check(dag, steps, `transpose 1x37x2x32 -> 1x2x32x37, ${lanes} lanes`, lanes);
  }
  // A matrix turned over: no axis outside the tiles, so the vector loop of its last axis is the parallel one.
  const matrix = new ComputeDAG([transpose(placeholder('m', [128, 64]), [1, 0])]);
  const matrixSteps = dflt(matrix, 16);
  assert.ok(matrixSteps.some((s) => s.s === 'reorder' && s.order.join() === 'ax1.0,ax0,ax1.1'), 'the matrix in tiles of 16 of its last axis by its 128');
  assert.ok(matrixSteps.some((s) => s.s === 'annotate' && s.iter === 'ax1.0' && s.ann === 'parallel'));
  check(matrix, matrixSteps, 'transpose 128x64 -> 64x128, 16 lanes');
});

test('default: a transpose that holds a pool keeps the pool in its tile', () => {
  // max pool 2x2 over 1x8x64x32 (NHWC) to 1x4x32x32, its last two axes swapped: the
  // output's last axis is long and it reads the pool along its width, which alone would
  // tile it as a transpose and leave the pool it holds without its loops.
  const pool = pool2d(placeholder('img', [1, 8, 64, 32]), { kind: 'max', kernel: [2, 2], strides: [2, 2], padding: [0, 0, 0, 0], layout: 'NHWC' });
  const dag = new ComputeDAG([transpose(pool, [0, 1, 3, 2])]);
  const steps = dflt(dag, 16);
  assert.ok(steps.some((s) => s.s === 'compute_at' && s.stage === pool.name), 'the pool computed inside the output\'s tile');
  check(dag, steps, 'max pool, then its last two axes swapped, 16 lanes');
});

test('default: a Winograd conv\'s batched product at 8 lanes tiles 6 tiles x 2 vectors, the last block short', () => {
  // 9x9 with F(2x2): 25 tiles (4 blocks of 6 and 1); 14x14 with F(4x4): 16 tiles (6, 6, 4).
  for (const [m, h] of [[2, 9], [4, 14]] as const) {
    const data = placeholder('data', [1, h, h, 16]), bias = placeholder('bias', [1, 1, 1, 32]);
    const dag = new ComputeDAG([relu(binary('add', conv2dWinogradNHWC(data, placeholder('weight', [m + 2, m + 2, 16, 32]), { padding: [1, 1, 1, 1], tileSize: m }), bias))]);
    const steps = dflt(dag, 8);
    assert.ok(steps.some((s) => s.s === 'split' && s.stage.includes('bgemm') && s.lengths[0] === 6), `F(${m}) ${h}x${h}: 6 tiles per block`);
    check(dag, steps, `Winograd F(${m}) ${h}x${h}, 8 lanes`, 8, [], WINOGRAD_TOLERANCE);
  }
});

test('depthwise conv NHWC, stride 2', () => {
  const data = placeholder('data', [1, 10, 10, 24]);
  const w = placeholder('w', [3, 3, 24, 1]);
  const dag = new ComputeDAG([relu(depthwiseConv2dNHWC(data, w, { strides: [2, 2], padding: [1, 1, 1, 1], dilation: [1, 1] }))]);
  check(dag, dflt(dag), 'depthwise');
});

test('default: a depthwise conv keeps its channel tiles inside the spatial loops, in a tile of at most 8 accumulators of up to 4 vectors', () => {
  const dw = (h: number, c: number, stride: number): ComputeDAG => new ComputeDAG([relu(depthwiseConv2dNHWC(
    placeholder('data', [1, h, h, c]), placeholder('w', [3, 3, c, 1]), { strides: [stride, stride], padding: [1, 1, 1, 1], dilation: [1, 1] }))]);
  const tile = (steps: readonly Step[]): number[] => steps.flatMap((s) => (s.s === 'split' && s.stage === 'T_relu' ? s.lengths : []));
  const parallelIter = (steps: readonly Step[]): string => {
    const p = steps.find((s) => s.s === 'annotate' && s.ann === 'parallel');
    return p && p.s === 'annotate' ? p.iter : '';
  };
  // 64 channels at 8 lanes: 4 vectors (32 channels) by 2 columns; at 16 lanes: 4 vectors (64) by 2.
  const s8 = dflt(dw(16, 64, 2), 8);
  assert.equal(tile(s8), [32, 2]);
  assert.not.match(parallelIter(s8), /ax3/, 'the input is slid over, not weights: the channel tiles stay inside');
  check(dw(16, 64, 2), s8, 'depthwise, stride 2, 8 lanes', 8);
  assert.equal(tile(dflt(dw(16, 64, 2), 16)), [64, 2]);
  // 24 channels at 8 lanes: 3 vectors, 2 columns; a 7-wide output: 1 column.
  assert.equal(tile(dflt(dw(10, 24, 1), 8)), [24, 2]);
  assert.equal(tile(dflt(dw(7, 64, 1), 8)), [32, 1]);
  check(dw(10, 24, 1), dflt(dw(10, 24, 1), 8), 'depthwise, 24 channels, 8 lanes', 8);
});

test('default: a reduction runs in parallel by its multiply-adds, not its outputs (a classifier\'s dense layer)', () => {
  const fc = new ComputeDAG([binary('add', dense(placeholder('x', [1, 1024]), placeholder('w', [1000, 1024])), placeholder('b', [1, 1000]))]);
  assert.ok(dflt(fc, 8).some((s) => s.s === 'annotate' && s.ann === 'parallel'), '1000 outputs, 1M multiply-adds');
  const small = new ComputeDAG([binary('add', dense(placeholder('x', [1, 16]), placeholder('w', [32, 16])), placeholder('b', [1, 32]))]);
  assert.not.ok(dflt(small, 8).some((s) => s.s === 'annotate' && s.ann === 'parallel'), '512 multiply-adds: not worth a fork');
});

test('conv2d NCHW, default schedule', () => {
  const data = placeholder('data', [1, 6, 8, 8]);
  const w = placeholder('w', [10, 6, 3, 3]);
  const dag = new ComputeDAG([conv2dNCHW(data, w, { strides: [1, 1], padding: [1, 1, 1, 1], dilation: [1, 1] })]);
  check(dag, dflt(dag), 'conv NCHW');
});

test('dense + bias, pooling, softmax: default schedules', () => {
  const x = placeholder('x', [2, 40]);
  const w = placeholder('w', [24, 40]);
  const b = placeholder('b', [1, 24]);
  check(new ComputeDAG([binary('add', dense(x, w), b)]), dflt(new ComputeDAG([binary('add', dense(x, w), b)])), 'dense');
  const img = placeholder('img', [1, 9, 9, 20]);
  for (const kind of ['max', 'avg'] as const) {
    const dag = new ComputeDAG([pool2d(img, { kind, kernel: [3, 3], strides: [2, 2], padding: [1, 1, 1, 1], layout: 'NHWC', countIncludePad: false })]);
    check(dag, dflt(dag), `${kind} pool`);
  }
  const logits = placeholder('logits', [1, 37]);
  const sm = new ComputeDAG([softmax(logits)]);
  check(sm, dflt(sm), 'softmax');
  const a = placeholder('a', [3, 5, 7]);
  const c = placeholder('c', [3, 5, 7]);
  const ew = new ComputeDAG([relu(binary('multiply', a, c))]);
  check(ew, dflt(ew), 'elementwise');
});

test('default: a pool read only by its fused epilogue is reduced in registers inside the epilogue\'s tile of 4 vectors, its small window unrolled, the border versioned', () => {
  const img = placeholder('img', [1, 12, 12, 32]);
  const scale = placeholder('scale', [1, 1, 1, 32]);
  for (const kind of ['max', 'avg'] as const) {
    const pool = pool2d(img, { kind, kernel: [3, 3], strides: [2, 2], padding: [1, 1, 1, 1], layout: 'NHWC', countIncludePad: false });
    const dag = new ComputeDAG([relu(binary('multiply', pool, scale))]);
    const steps = dflt(dag, 8);
    const held = steps.find((st) => st.s === 'compute_at');
    assert.ok(held && held.s === 'compute_at' && held.target === 'T_relu', `${kind}: ${JSON.stringify(steps)}`);
    const src = check(dag, steps, `${kind} pool + epilogue`, 8);
    assert.not.match(src, /aligned_alloc/, `${kind}: no temporary for the pool`);
    assert.match(src, /tt_v8 pool_(max|sum)_v0, pool_\1_v1, pool_\1_v2, pool_\1_v3;/, `${kind}: the window is reduced in 4 vector registers`);
    assert.not.match(src, /for \(int32_t rv0/, `${kind}: the 3x3 window is unrolled`);
    // Inside the image, the taps load without a bounds test.
    assert.match(src, /pool_(max|sum)_v0 = (tt_v8_max\(pool_\1_v0, |\(pool_\1_v0 \+ )tt_v8_load/, `${kind}: a border-free tile body`);
  }
});

test('hand-written conv schedules: non-dividing splits, reorder, compute_at, unroll, vectorize, parallel', () => {
  const dag = conv(7, 6, 20, 3, 1, 1);
  const base: Step[] = [{ s: 'compute_inline', stage: 'pad_temp' }, { s: 'compute_inline', stage: 'T_add' }];
  // Output tile: ff split by 8 (20 = 8+8+4: the last tile shifted back to 12..20), xx by 3
  // (7: the tile loop is fused into the parallel loop, so its tail is guarded).
  const tiled: Step[] = [
    ...base,
    { s: 'split', stage: 'T_relu', iter: 'ax3', lengths: [8] },
    { s: 'split', stage: 'T_relu', iter: 'ax2', lengths: [3] },
    { s: 'reorder', stage: 'T_relu', order: ['ax0', 'ax1', 'ax2.0', 'ax3.0', 'ax2.1', 'ax3.1'] },
    { s: 'fuse', stage: 'T_relu', iters: ['ax0', 'ax1', 'ax2.0'] },
    { s: 'annotate', stage: 'T_relu', iter: 'ax0@ax1@ax2.0', ann: 'parallel' },
    { s: 'annotate', stage: 'T_relu', iter: 'ax3.1', ann: 'vectorize' },
    { s: 'compute_at', stage: 'conv2d_nhwc', target: 'T_relu', iter: 'ax3.0' },
  ];
  check(dag, [
    ...tiled,
    { s: 'reorder', stage: 'conv2d_nhwc', order: ['nn', 'yy', 'ry', 'rx', 'rc', 'xx', 'ff'] },
    { s: 'annotate', stage: 'conv2d_nhwc', iter: 'xx', ann: 'unroll' },
    { s: 'annotate', stage: 'conv2d_nhwc', iter: 'ff', ann: 'vectorize' },
  ], 'tiled, guarded, vectorised');
  // The reduction split by a non-divisor and the tile order changed.
  check(dag, [
    ...tiled,
    { s: 'split', stage: 'conv2d_nhwc', iter: 'rc', lengths: [4] },
    { s: 'reorder', stage: 'conv2d_nhwc', order: ['nn', 'rc.0', 'yy', 'ry', 'rx', 'xx', 'rc.1', 'ff'] },
    { s: 'annotate', stage: 'conv2d_nhwc', iter: 'ff', ann: 'vectorize' },
    { s: 'pragma', stage: 'conv2d_nhwc', iter: 'nn', pragma: 'auto_unroll_max_step', value: 16 },
  ], 'reduction split by 4 of 6');
  // cache_write: the conv computed into a local stage, copied out.
  check(dag, [
    { s: 'compute_inline', stage: 'pad_temp' },
    { s: 'cache_write', stage: 'conv2d_nhwc' },
    { s: 'split', stage: 'conv2d_nhwc', iter: 'ff', lengths: [16] },
    { s: 'annotate', stage: 'conv2d_nhwc', iter: 'ff.1', ann: 'vectorize' },
    { s: 'compute_at', stage: 'conv2d_nhwc.local', target: 'conv2d_nhwc', iter: 'ff.0' },
    { s: 'annotate', stage: 'conv2d_nhwc.local', iter: 'ff', ann: 'vectorize' },
  ], 'cache_write');
});

test('a reduction split by a non-divisor with an unrolled inner part; a reduce loop cannot run in parallel', () => {
  const x = placeholder('x', [3, 50]);
  const w = placeholder('w', [5, 50]);
  const dag = new ComputeDAG([dense(x, w)]);
  check(dag, [
    { s: 'split', stage: 'T_matmul_NT', iter: 'k', lengths: [16] },
    { s: 'annotate', stage: 'T_matmul_NT', iter: 'k.1', ann: 'unroll' },
    { s: 'annotate', stage: 'T_matmul_NT', iter: 'i', ann: 'parallel' },
  ], 'dense, k split by 16 of 50');
  assert.throws(() => State.replay(dag, [
    { s: 'split', stage: 'T_matmul_NT', iter: 'k', lengths: [16] },
    { s: 'annotate', stage: 'T_matmul_NT', iter: 'k.0', ann: 'parallel' },
  ]), /reduce loop can only be unrolled or vectorized/);
});

test('a vectorised reduce loop runs on vector accumulators (sum and max, whole vectors and a scalar tail) and equals the reference', () => {
  const x = placeholder('x', [3, 50]);
  const w = placeholder('w', [5, 50]);
  const dag = new ComputeDAG([dense(x, w)]);
  for (const lanes of [8, 16]) {
    const code = check(dag, [{ s: 'annotate', stage: 'T_matmul_NT', iter: 'k', ann: 'vectorize' }], `dense, k vectorised at ${lanes} lanes`, lanes);
    assert.match(code, new RegExp(`tt_v${lanes}_reduce_add\\(`), 'the products are summed across lanes once per output');
    assert.match(code, /for \(int32_t k\w* = 48; k\w* < 50;/, 'the last 2 of 50 in a scalar tail');
  }
  // Softmax over rows of 37 (4 vectors of 8 and a tail): the default schedule vectorises its max and sum.
  const soft = new ComputeDAG([softmax(placeholder('s', [5, 37]))]);
  const code = check(soft, dflt(soft, 8), 'softmax over 37 columns', 8);
  assert.match(code, /tt_v8_reduce_max\(/);
  assert.match(code, /tt_v8_reduce_add\(/);
  assert.match(code, /tt_v8_exp\(/);
  // The exps (one row, local) and the quotients store plain values into buffers they do not
  // read: their last vector runs over 29..36, overlapping the one before it, with no scalar
  // tail (no libm expf per element); the max and the sum accumulate, so they keep theirs.
  assert.match(code, /tt_v8_store\(&T_softmax_exp\[29\], tt_v8_exp\(/);
  assert.match(code, /tt_v8_store\(&T_softmax_norm\[\(\(\w+ \* 37\) \+ 29\)\]/);
  // The quotients are the exps times the sum's reciprocal (lowering's timesReciprocal): no
  // vector divided by the sum, and the result within check's tolerance of the reference.
  assert.match(code, /tt_v8_load\(&T_softmax_exp\[\d+\]\) \* \(1\.0f \/ T_softmax_expsum/);
  assert.not.match(code, /T_softmax_exp\[\d+\]\) \/ /, 'no vector divided by the sum');
  assert.not.match(code, /expf\(\(s\[/, 'no scalar exp of an input');
  assert.is(code.match(/= 32; \w+ < 37;/g)?.length, 2, 'the max and the sum end in scalar tails');
  // A split reduce loop that the vector does not divide keeps its guard inside: it runs serially, and right.
  check(dag, [
    { s: 'split', stage: 'T_matmul_NT', iter: 'k', lengths: [16] },
    { s: 'annotate', stage: 'T_matmul_NT', iter: 'k.1', ann: 'vectorize' },
  ], 'dense, k split by 16 of 50, k.1 vectorised');
});

test('a tile loop that does not divide its axis runs its last tile shifted back, whole, where that only recomputes; guarded where it would not', () => {
  // 197 outputs by tiles of 16: 12 whole tiles and 5 left. The register tile (computed at
  // the tile loop, its reduction inside it) recomputes columns 181..191 in the last tile.
  const x = placeholder('x', [6, 40]);
  const w = placeholder('w', [197, 40]);
  const b = placeholder('b', [1, 197]);
  const dag = new ComputeDAG([binary('add', dense(x, w), b)]);
  const tile = (fused: boolean): Step[] => [
    { s: 'split', stage: 'T_add', iter: 'ax1', lengths: [16] },
    { s: 'reorder', stage: 'T_add', order: ['ax0', 'ax1.0', 'ax1.1'] },
    ...(fused ? [{ s: 'fuse', stage: 'T_add', iters: ['ax0', 'ax1.0'] } as Step, { s: 'annotate', stage: 'T_add', iter: 'ax0@ax1.0', ann: 'parallel' } as Step] : []),
    { s: 'annotate', stage: 'T_add', iter: 'ax1.1', ann: 'vectorize' },
    { s: 'compute_at', stage: 'T_matmul_NT', target: 'T_add', iter: fused ? 'ax0@ax1.0' : 'ax1.0' },
    { s: 'reorder', stage: 'T_matmul_NT', order: ['i', 'k', 'j'] },
    { s: 'annotate', stage: 'T_matmul_NT', iter: 'j', ann: 'vectorize' },
  ];
  const shifted = check(dag, tile(false), 'dense over 197 outputs, last tile shifted');
  assert.match(shifted, /tt_mini\(\(\w+ \* 16\), 181\)/, 'the last tile starts at 197 - 16');
  assert.not.match(shifted, /< 197\)/, 'no guard on the 197 outputs');
  // The tile loop shared among threads: two threads would write the same columns, so the tail is guarded.
  assert.match(check(dag, tile(true), 'dense over 197 outputs, tile loop parallel'), /< 197\)/);
  // A reduction at root whose reduce loop runs outside its tile loop accumulates across
  // tiles: recomputing would add twice, so its tail is guarded too.
  const root = new ComputeDAG([dense(x, w)]);
  const outside = check(root, [
    { s: 'split', stage: 'T_matmul_NT', iter: 'j', lengths: [16] },
    { s: 'reorder', stage: 'T_matmul_NT', order: ['i', 'k', 'j.0', 'j.1'] },
    { s: 'annotate', stage: 'T_matmul_NT', iter: 'j.1', ann: 'vectorize' },
  ], 'dense, reduce loop outside the tile loop');
  assert.match(outside, /< 197\)/);
  // Shorter than a tile: nothing to shift back into.
  const narrow = new ComputeDAG([binary('add', dense(x, placeholder('w', [12, 40])), placeholder('b', [1, 12]))]);
  check(narrow, tile(false), 'dense over 12 outputs by a tile of 16');
});

test('stages computed at one loop of their reader may read one another there: a softmax row by row, its max, exps and sum in registers', () => {
  const dag = new ComputeDAG([softmax(placeholder('s', [2, 5, 37]))]);
  const at = (stage: string): Step => ({ s: 'compute_at', stage, target: 'T_softmax_norm', iter: 'i0@i1' });
  const rows: Step[] = [
    { s: 'fuse', stage: 'T_softmax_norm', iters: ['i0', 'i1'] },
    { s: 'annotate', stage: 'T_softmax_norm', iter: 'i0@i1', ann: 'parallel' },
    { s: 'annotate', stage: 'T_softmax_norm', iter: 'i2', ann: 'vectorize' },
    at('T_softmax_maxelem'), { s: 'annotate', stage: 'T_softmax_maxelem', iter: 'k', ann: 'vectorize' },
    at('T_softmax_exp'), { s: 'annotate', stage: 'T_softmax_exp', iter: 'i2', ann: 'vectorize' },
    at('T_softmax_expsum'), { s: 'annotate', stage: 'T_softmax_expsum', iter: 'k', ann: 'vectorize' },
  ];
  const code = check(dag, rows, 'softmax, every stage at the row loop', 8);
  assert.match(code, /float T_softmax_exp\[37\]/, 'one row of exps, local');
  assert.not.match(code, /aligned_alloc/, 'no temporary of the whole tensor');
  // The row max is read by the exps: with the exps at root, the row loop cannot hold it.
  assert.throws(() => State.replay(dag, [...rows.slice(0, 3), at('T_softmax_maxelem'), at('T_softmax_expsum')]).validate(), /compute_at T_softmax_maxelem: only its readers can hold it, all of them at T_softmax_norm\.i0@i1 \(read by T_softmax_exp\)/);
});

test('default: a softmax or a layer norm runs row by row, its reductions and exps computed inside the output\'s row loop', () => {
  const soft = new ComputeDAG([softmax(placeholder('s', [2, 6, 197]))]);
  const steps = dflt(soft);
  for (const stage of ['T_softmax_maxelem', 'T_softmax_exp', 'T_softmax_expsum']) {
    assert.ok(steps.some((st) => st.s === 'compute_at' && st.stage === stage && st.target === 'T_softmax_norm' && st.iter === 'i0@i1'), stage);
  }
  const code = check(soft, steps, 'softmax over rows of 197, row by row');
  assert.match(code, /float T_softmax_exp\[197\]/, 'one row of exps');
  assert.not.match(code, /aligned_alloc/);
  const x = placeholder('x', [3, 50, 40]);
  const ln = new ComputeDAG([layerNorm(x, placeholder('g', [40]), placeholder('b', [40]), -1, 1e-5)]);
  const lnSteps = dflt(ln, 8);
  assert.ok(lnSteps.some((st) => st.s === 'compute_at'), 'the moments inside the row loop');
  check(ln, lnSteps, 'layer norm over rows of 40, row by row', 8);
  // A row reduction read by a stage of another shape is not a row chain: as before.
  const col = new ComputeDAG([softmax(placeholder('t', [4, 37]), 0)]);
  assert.not.ok(dflt(col, 8).some((st) => st.s === 'compute_at'), 'softmax over the first axis');
  check(col, dflt(col, 8), 'softmax over the first axis', 8);
});

test('blocked layouts: pack and unpack are inverse; the shape puts the block innermost', () => {
  const shape = [3, 2, 8, 6];
  const x = uniform(3 * 2 * 8 * 6, 1, 0);
  assert.equal(blockedShape(shape, 3, 3), [2, 3, 2, 8, 3]);
  const packed = packBlocked(x, shape, 3, 3);
  assert.is(packed[1], x[1], 'element [0,0,0,1] stays in block 0, lane 1');
  assert.is(packed[3], x[6], 'element [0,0,1,0] follows lane 2 of [0,0,0,*]');
  assert.equal(Array.from(unpackBlocked(packed, shape, 3, 3)), Array.from(x));
});

test('weight layout rewrite: conv and dense weights blocked by the tile width, read contiguously, same results', () => {
  const dag = conv(9, 8, 128, 3, 1, 1);
  const code = check(dag, dflt(dag), 'conv, blocked weight', 16, ['p1', 'weight']);
  assert.match(code, /tt_v16_load\(&weight\[/, 'the blocked weight is read with vector loads');
  const kernel = lower(State.replay(dag, dflt(dag)), 'k', { packable: new Set(['weight']) });
  // 8 input channels, fewer than a vector: the default keeps a row's columns by 4 vectors of channels (rowTileOf), 64 of 128.
  assert.equal(kernel.layouts, [{ input: 1, axis: 3, block: 64 }]);
  // A tile (16) that is not the whole extent of a dividing axis, on a hand-written schedule.
  check(dag, [
    { s: 'compute_inline', stage: 'pad_temp' },
    { s: 'compute_inline', stage: 'T_add' },
    { s: 'split', stage: 'T_relu', iter: 'ax3', lengths: [16] },
    { s: 'reorder', stage: 'T_relu', order: ['ax0', 'ax1', 'ax3.0', 'ax2', 'ax3.1'] },
    { s: 'annotate', stage: 'T_relu', iter: 'ax3.1', ann: 'vectorize' },
    { s: 'compute_at', stage: 'conv2d_nhwc', target: 'T_relu', iter: 'ax2' },
    { s: 'annotate', stage: 'conv2d_nhwc', iter: 'ff', ann: 'vectorize' },
  ], 'conv, blocked by 16 at a non-innermost attach point', 16, ['weight']);
  const x = placeholder('x', [2, 40]);
  const w = placeholder('w', [48, 40]);
  const dense48 = new ComputeDAG([dense(x, w)]);
  check(dense48, [
    { s: 'split', stage: 'T_matmul_NT', iter: 'j', lengths: [16] },
    { s: 'reorder', stage: 'T_matmul_NT', order: ['i', 'j.0', 'k', 'j.1'] },
    { s: 'annotate', stage: 'T_matmul_NT', iter: 'j.1', ann: 'vectorize' },
  ], 'dense, weight blocked on j', 16, ['w']);
  assert.equal(lower(State.replay(dense48, [
    { s: 'split', stage: 'T_matmul_NT', iter: 'j', lengths: [16] },
    { s: 'reorder', stage: 'T_matmul_NT', order: ['i', 'j.0', 'k', 'j.1'] },
  ]), 'k', { packable: new Set(['w']) }).layouts, [{ input: 1, axis: 0, block: 16 }]);
});

test('weight panel prefetch: a channels-outer conv asks for its share of the next panel, and computes the same', () => {
  // 7x7x64 -> 256, 1x1, AVX2 lanes: the weights (16K) outweigh the input (3K), so the channel
  // tiles (16 panels of 64 x 16 floats, 64 lines each) run outermost, 9 tiles of positions
  // each: every iteration prefetches ceil(64 / 9) = 8 lines of the next panel.
  const pw = conv(7, 64, 256, 1, 1, 0);
  const code = check(pw, dflt(pw, 8), 'pointwise conv, channels outer, blocked weight', 8, ['weight']);
  assert.match(code, /if \(\(\(\(\w+ \+ 1\) < 16\) && \(\(\w+ \* 8\) < 64\)\)\) \{\n\s+for \(int32_t tt_line = 0; tt_line < 8; \+\+tt_line\) __builtin_prefetch\(\(const char\*\)&weight\[\(\(\(\w+ \+ 1\) \* 1024\) \+ \(\w+ \* 128\)\)\]/);
  // No blocked layout (weights in their own layout): nothing to prefetch by panel.
  assert.not.match(check(pw, dflt(pw, 8), 'pointwise conv, plain weight', 8), /__builtin_prefetch/);
  // Positions outermost (the input outweighs the weights): each tile reads every panel.
  const early = conv(14, 32, 32, 1, 1, 0);
  assert.not.match(check(early, dflt(early, 8), 'pointwise conv, positions outer', 8, ['weight']), /__builtin_prefetch/);
});

test('trickle prefetch: a share of the next panel too long for a burst is spread through the reduction, and computes the same', () => {
  // 512-line panels over 9 tiles (57 lines each, more than MAX_LINES_PER_ITERATION), and two
  // panels beside the 7x7x512 input fit TRICKLE_L2_BYTES: no burst at the top of the parallel
  // loop; the reduction over 512 channels asks for one line of the share every 8 steps
  // (8 x 57 <= 512 < 16 x 57).
  const wide = conv(7, 512, 64, 1, 1, 0);
  const code = check(wide, dflt(wide, 8), 'pointwise conv, long panels', 8, ['weight']);
  assert.match(code, /for \(int32_t (\w+) = 0; \1 < 512; \+\+\1\) \{\n\s+const int32_t (\w+) = tt_floormod\(\1, 8\);\n\s+const int32_t (\w+) = tt_floordiv\(\1, 8\);\n\s+if \(\(\(\(\(\w+ \+ 1\) < 4\) && \(\(\w+ \* 57\) < 512\)\) && \(\(\2 == 0\) && \(\3 < 57\)\)\)\) \{\n\s+for \(int32_t tt_line = 0; tt_line < 1; \+\+tt_line\) __builtin_prefetch\(\(const char\*\)&weight\[\(\(\(\(\w+ \+ 1\) \* 8192\) \+ \(\w+ \* 912\)\) \+ \(\3 \* 16\)\)\]/);
  assert.not.match(code, /__builtin_prefetch\(.*\+ 2048\)\]/);
  // Those panels are 32 KB, within NEAR_L1_BYTES: the reduction does not stream its own panel.
  assert.not.match(code, /__builtin_prefetch\(.*\+ 512\)\]/);
  // A 48x768 by 768x128 dense at AVX2 lanes: 48 KB panels of 16 columns, each re-read by 8
  // tiles of 6 rows. Beside the trickle, each step of the reduction asks for the line of its
  // own panel NEAR_AHEAD_FLOATS on, which the tile after the first reads from the L2.
  const gemm = new ComputeDAG([dense(placeholder('x', [48, 768]), placeholder('w', [128, 768]))]);
  const gemmCode = check(gemm, dflt(gemm, 8), 'dense, panels larger than the L1', 8, ['w']);
  assert.match(gemmCode, /for \(int32_t (\w+) = 0; \1 < 768; \+\+\1\) \{\n(?:\s+const int32_t \w+ = [^\n]*\n)*\s+for \(int32_t tt_line = 0; tt_line < 1; \+\+tt_line\) __builtin_prefetch\(\(const char\*\)&w\[\(\(\(\w+ \* 12288\) \+ \(\1 \* 16\)\) \+ 512\)\]/);
  assert.match(gemmCode, /__builtin_prefetch\(\(const char\*\)&w\[\(\(\(\(\w+ \+ 1\) \* 12288\)/, 'the trickle of the next panel stays');
});

test('stream prefetch: a panel too long for a burst is prefetched 8 KB ahead of the reduction that walks it, and computes the same', () => {
  // A 64x4096 input (1 MB) leaves no room in TRICKLE_L2_BYTES for the next panel beside it:
  // each step of the reduction over K (a line of weights per step at 16 columns a tile, AVX2)
  // asks for the line STREAM_AHEAD_FLOATS on instead.
  const a = placeholder('x', [64, 4096]);
  const b = placeholder('w', [128, 4096]);
  const big = new ComputeDAG([dense(a, b)]);
  const code = check(big, dflt(big, 8), 'dense, input too large for the trickle', 8, ['w']);
  assert.match(code, /for \(int32_t (\w+) = 0; \1 < 4096; \+\+\1\) \{\n\s+for \(int32_t tt_line = 0; tt_line < 1; \+\+tt_line\) __builtin_prefetch\(\(const char\*\)&w\[\(.*\1 \* 16\)\) \+ 2048\)\]/);
  // 61 rows leave a short tile after the whole ones, behind a guard: its reduction streams the panel too.
  const ragged = new ComputeDAG([dense(placeholder('x', [61, 4096]), b)]);
  const raggedCode = check(ragged, dflt(ragged, 8), 'dense, 61 rows', 8, ['w']);
  const reductions = raggedCode.match(/for \(int32_t (\w+) = 0; \1 < 4096; \+\+\1\) \{\n\s+for \(int32_t tt_line = 0; tt_line < 1; \+\+tt_line\) __builtin_prefetch/g) ?? [];
  assert.is(reductions.length, 2, 'the whole tiles\' reduction and the short tile\'s each stream the panel');
  // A dense layer of one row (a classifier's, DCGAN's projection), whose parallel loop gives
  // each iteration a panel of its own: two lines per step of K at 32 channels per tile.
  const x = placeholder('x', [1, 128]);
  const w = placeholder('w', [4096, 128]);
  const fc = new ComputeDAG([dense(x, w)]);
  const fcCode = check(fc, dflt(fc, 16), 'dense, panel per iteration', 16, ['w']);
  assert.match(fcCode, /tt_line < 2; \+\+tt_line\) __builtin_prefetch\(\(const char\*\)&w\[\(.* \+ 2048\)\]/);
  // An innermost reduction shorter than the distance ahead (3 channels per tap of an 8x8
  // patch) prefetches nothing, and neither does the tap loop around it.
  const patch = conv(16, 3, 64, 8, 8, 0);
  assert.not.match(check(patch, dflt(patch, 8), 'patch conv, short innermost reduction', 8, ['weight']), /__builtin_prefetch/);
});

test('erf of a quotient by a lane-uniform value (GELU\'s x / sqrt 2) multiplies by its reciprocal, and stays within erf\'s bound', () => {
  const x = placeholder('x', [64]);
  const c = placeholder('c', [1]);
  const out = compute('T_erf', [64], ['i'], (i) => call('erf', div(load(x, [i]), load(c, [0]))));
  const dag = new ComputeDAG([out]);
  const steps: Step[] = [{ s: 'annotate', stage: 'T_erf', iter: 'i', ann: 'vectorize' }];
  const kernel = lower(State.replay(dag, steps), 'kernel');
  const code = renderKernel(kernel, { vectorLanes: 16 });
  assert.match(code, /tt_v16_erf\(\(tt_v16_load\(&x\[\d+\]\) \* \(1\.0f \/ c\[0\]\)\)\)/);
  assert.not.match(code, /tt_v16_erf\([^\n]*\/ c\[0\]\)\)[;,]/);
  const xs = Float32Array.from({ length: 64 }, (_, i) => (i - 32) / 8);
  const [got] = runKernel(kernel, [xs, Float32Array.of(Math.SQRT2)], undefined, { vectorLanes: 16 });
  const ref = evaluate(dag, new Map([[x, xs], [c, Float32Array.of(Math.SQRT2)]] as const)).get('T_erf')!;
  // vector erf's stated bound (4e-7, vector-math.ts) and the argument's one-ulp move times erf's slope (<= 1.13).
  got.forEach((y, i) => assert.ok(Math.abs(y - ref[i]) <= 4e-7 + 1.13 * 2 ** -23 * Math.abs(xs[i] / Math.SQRT2) + 1e-7, `erf(${xs[i]} / sqrt 2): ${y}, reference ${ref[i]}`));
  // A divide elsewhere (no erf around it) stays a divide.
  const q = compute('T_div', [64], ['i'], (i) => div(load(x, [i]), load(c, [0])));
  const qk = lower(State.replay(new ComputeDAG([q]), [{ s: 'annotate', stage: 'T_div', iter: 'i', ann: 'vectorize' }]), 'kernel');
  assert.match(renderKernel(qk, { vectorLanes: 16 }), /\/ c\[0\]/);
});

function namesOf(t: Tensor): string { return t.name; }
test('stage names used above exist', () => {
  assert.equal(conv(5, 4, 4, 3, 1, 1).computeStages.map(namesOf), ['pad_temp', 'conv2d_nhwc', 'T_add', 'T_relu']);
});

test('a float constant -0 keeps its sign in C: x * -0 is -0 for positive x, +0 for negative', () => {
  const x = placeholder('x', [16]);
  const out = compute('T_mul', [16], ['i'], (i) => mul(load(x, [i]), f32(-0)));
  const kernel = lower(State.replay(new ComputeDAG([out]), []), 'kernel');
  assert.match(renderKernel(kernel), /\(-0\.0f\)/);
  const xs = Float32Array.from({ length: 16 }, (_, i) => (i % 2 ? -1 : 1) * (i + 1));
  const [got] = runKernel(kernel, [xs]);
  got.forEach((y, i) => assert.ok(Object.is(y, i % 2 ? 0 : -0), `${xs[i]} * -0: ${Object.is(y, -0) ? '-0' : y}`));
});

test.run();
