// 3-D ResNet-18 (relay.testing.resnet_3d): shapes and parameter count as TVM's, its tasks
// (conv3d with TVM's fusion rules), both layouts computing the same output, and the
// exported ONNX model against ONNX Runtime (|ours - ORT| <= 1e-5 * (1 + |ORT|)) and imported
// back. Numeric checks use a narrow, short variant (2 frames, 8 channels at the stem, 29 px:
// TVM's small-image stem) so the reference evaluator runs in seconds.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openOrtSession, tryLoadOnnxRuntime } from '../compare/ort';
import { extractTasks } from '../graph/extract';
import { isOpNode } from '../graph/graph';
import { convertLayout } from '../graph/passes';
import { runGraph } from '../graph/run';
import { permute } from '../ir/tensor';
import { uniform } from '../runtime/random';
import { skip } from '../skip.fixture';
import type { Layout } from '../topi/nn';
import { NetBuilder } from './builder';
import { countParams, getNetwork } from './networks';
import { exportOnnx } from './onnx/export';
import { cancelTransposes, importOnnx } from './onnx/import';
import { resnet3d18 } from './resnet3d';

const ort = tryLoadOnnxRuntime();
const TOL = 1e-5;
const SHAPE = [1, 3, 2, 29, 29];

function small(layout: Layout, imageSize = 29): NetBuilder {
  const b = new NetBuilder({ batch: 1, layout, imageSize, seed: 5, randomStats: true, weights: 'random' });
  b.graph.outputs = [resnet3d18(b, 2, 8)];
  return b;
}

function close(got: ArrayLike<number>, want: ArrayLike<number>, what: string): void {
  assert.is(got.length, want.length, `${what}: size`);
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= TOL * (1 + Math.abs(want[i])))) assert.unreachable(`${what}[${i}] = ${got[i]}, expected ${want[i]}`);
  }
}

test('resnet3d-18: TVM\'s shapes and parameters, both layouts', () => {
  const nchw = getNetwork('resnet3d-18', { weights: 'zeros', layout: 'NCHW' });
  assert.equal(nchw.inputShape, [1, 3, 16, 112, 112]);
  assert.equal(nchw.outputShape, [1, 1000]);
  assert.equal(getNetwork('resnet3d-18', { weights: 'zeros', batch: 16 }).inputShape, [16, 16, 112, 112, 3]);
  assert.is(countParams(nchw.graph), 33689652);
  const ops = nchw.graph.nodes.filter(isOpNode);
  assert.is(ops.filter((n) => n.op === 'conv3d').length, 21); // the stem, 16 in the units, 4 projections
  assert.ok(ops.every((n) => n.op !== 'max_pool3d'), 'no max pool (commented out in TVM)');
  assert.throws(() => getNetwork('resnet3d-18', { imageSize: 28 }), /imageSize must be an integer >= 29/);
});

test('resnet3d-18: 23 tasks, the 3-D convs fused as TVM fuses conv2d', () => {
  const tasks = extractTasks(getNetwork('resnet3d-18', { weights: 'zeros' }).graph);
  assert.is(tasks.length, 23);
  const desc = tasks.map((t) => t.desc);
  assert.ok(desc.includes('conv3d+multiply+add+relu+multiply+add+relu 1x16x112x112x3 -> 1x16x56x56x64'), desc.join('\n'));
  assert.ok(desc.includes('conv3d+add+multiply+add+relu 1x16x56x56x64 -> 1x16x56x56x64'), desc.join('\n'));
  assert.ok(desc.includes('global_avg_pool3d 1x2x7x7x512 -> 1x1x1x1x512'), desc.join('\n'));
});

test('resnet3d-18 (narrow, short): NHWC (NDHWC) and NCHW (NCDHW) compute the same output; the 224-style stem too', () => {
  for (const size of [29, 33]) {
    const x = uniform(3 * 2 * size * size, 1, 0).map((u) => 2 * u - 1);
    const [nchw] = runGraph(small('NCHW', size).graph, new Map([['data', x]]));
    const [nhwc] = runGraph(small('NHWC', size).graph, new Map([['data', permute(x, [1, 3, 2, size, size], [0, 2, 3, 4, 1])]]));
    close(nhwc, nchw, `NDHWC vs NCDHW at ${size} px`);
  }
});

test('resnet3d-18 (narrow, short): the exported ONNX model imports back and matches ONNX Runtime', async () => {
  const g = small('NCHW').graph;
  const bytes = exportOnnx(g);
  const x = uniform(3 * 2 * 29 * 29, 2, 0).map((u) => 2 * u - 1);
  const [want] = runGraph(g, new Map([['data', x]]));
  const back = cancelTransposes(convertLayout(importOnnx(bytes, 'resnet3d.onnx').graph, 'NHWC'));
  assert.ok(back.nodes.filter(isOpNode).filter((n) => n.op === 'conv3d').every((n) => n.attrs.layout === 'NDHWC'));
  close(runGraph(back, new Map([['data', x]]))[0], want, 'imported, NDHWC');
  if (!ort.module) { skip('resnet3d-18: the comparison with ONNX Runtime', ort.error); return; }
  const session = await openOrtSession(bytes, 1, [SHAPE]);
  const [got] = await session.run([x]);
  await session.release();
  close(got, want, 'ONNX Runtime vs the reference evaluator');
});

test.run();
