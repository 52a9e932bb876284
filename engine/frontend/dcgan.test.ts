// The DCGAN generator (relay.testing.dcgan): shapes and parameter count as TVM's, both
// layouts computing the same image, its tasks (four deconvs, each as one conv2d over its
// output phases), and the exported ONNX model: ONNX Runtime's output against the reference
// evaluator (|ours - ORT| <= 1e-5 * (1 + |ORT|)), and the same tasks once imported back.
// The numeric checks use a generator 16x narrower (ngf 8), so the reference runs take a second.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openOrtSession, tryLoadOnnxRuntime } from '../compare/ort';
import { extractTasks } from '../graph/extract';
import { convertLayout } from '../graph/passes';
import { runGraph } from '../graph/run';
import { permute } from '../ir/tensor';
import { uniform } from '../runtime/random';
import { skip } from '../skip.fixture';
import type { Layout } from '../topi/nn';
import { NetBuilder } from './builder';
import { dcgan } from './dcgan';
import { countParams, getNetwork } from './networks';
import { exportOnnx } from './onnx/export';
import { cancelTransposes, importOnnx } from './onnx/import';

const ort = tryLoadOnnxRuntime();
const TOL = 1e-5;

function small(layout: Layout, batch = 2): NetBuilder {
  const b = new NetBuilder({ batch, layout, imageSize: 64, seed: 3, randomStats: true, weights: 'random' });
  b.graph.outputs = [dcgan(b, 8)];
  return b;
}

function close(got: ArrayLike<number>, want: ArrayLike<number>, what: string): void {
  assert.is(got.length, want.length, `${what}: size`);
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= TOL * (1 + Math.abs(want[i])))) assert.unreachable(`${what}[${i}] = ${got[i]}, expected ${want[i]}`);
  }
}

test('dcgan: TVM\'s shapes and parameters, batch 1 and 16, both layouts', () => {
  const nchw = getNetwork('dcgan', { weights: 'zeros', layout: 'NCHW' });
  assert.equal(nchw.inputs, [{ name: 'data', shape: [1, 100], dtype: 'float32' }]);
  assert.equal(nchw.outputShape, [1, 3, 64, 64]);
  assert.equal(getNetwork('dcgan', { weights: 'zeros', batch: 16 }).outputShape, [16, 64, 64, 3]);
  // dense 16384x100, deconvs 1024x512, 512x256, 256x128, 128x3 (4x4), three scale-free batch norms.
  assert.is(countParams(nchw.graph), 16384 * 100 + 16 * (1024 * 512 + 512 * 256 + 256 * 128 + 128 * 3) + 4 * (512 + 256 + 128));
  assert.throws(() => getNetwork('dcgan', { imageSize: 64 }), /imageSize does not apply/);
});

test('dcgan: its tasks, by TVM\'s fusion rules', () => {
  // (The reshape to the 4x4 map has no reduction: a kernel, not a tuning task.) Each 4x4
  // stride-2 deconv runs as one conv2d per output phase over exactly its positions
  // (graph/passes/conv-transpose-as-conv.ts): four convs of one shape, one task of weight 4
  // (their paddings differ by phase; the workload key, as TVM's, leaves them out); the last,
  // to 3 channels, one conv of all 12 phase channels. The interleave and the batch norm +
  // ReLU (tanh) after it are one injective kernel each.
  assert.equal(extractTasks(getNetwork('dcgan', { weights: 'zeros' }).graph).map((t) => [t.desc, t.weight]), [
    ['dense+relu 1x100 -> 1x16384', 1],
    ['conv2d_nhwc 1x4x4x1024 -> 1x4x4x512', 4],
    ['conv2d_nhwc 1x8x8x512 -> 1x8x8x256', 4],
    ['conv2d_nhwc 1x16x16x256 -> 1x16x16x128', 4],
    ['conv2d_nhwc 1x32x32x128 -> 1x33x33x12', 1],
  ]);
});

test('dcgan (narrow): NHWC and NCHW compute the same image', () => {
  const code = uniform(200, 1, 0).map((u) => 2 * u - 1);
  const feeds = new Map([['data', code]]);
  const [nchw] = runGraph(small('NCHW').graph, feeds);
  const [nhwc] = runGraph(small('NHWC').graph, feeds);
  close(permute(nhwc as Float32Array, [2, 64, 64, 3], [0, 3, 1, 2]), nchw, 'NHWC vs NCHW');
});

test('dcgan (narrow): the exported ONNX model imports back and matches ONNX Runtime', async () => {
  const g = small('NCHW').graph;
  const bytes = exportOnnx(g);
  const code = uniform(200, 2, 0).map((u) => 2 * u - 1);
  const [want] = runGraph(g, new Map([['data', code]]));
  const back = importOnnx(bytes, 'dcgan.onnx');
  close(runGraph(cancelTransposes(convertLayout(back.graph, 'NHWC')), new Map([['data', code]]))[0], want, 'imported, NHWC');
  if (!ort.module) { skip('dcgan: the comparison with ONNX Runtime', ort.error); return; }
  const session = await openOrtSession(bytes, 1, [[2, 100]]);
  const [got] = await session.run([code]);
  await session.release();
  close(got, want, 'ONNX Runtime vs the reference evaluator');
});

test.run();
