// mobilenet_v2: its architecture (blocks, residual adds, depthwise convs), its tasks
// (engine/graph/TASKS.md), and its numbers: the exported ONNX file run by ONNX Runtime
// against the reference evaluator on our graph, at a small image (|ours - ORT| <= 1e-4 +
// 1e-4 * |ORT| on the logits, the tolerance).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openOrtSession, tryLoadOnnxRuntime } from '../compare/ort';
import { withoutSoftmax } from '../compare/compare';
import { extractTasks } from '../graph/extract';
import type { OpNode } from '../graph/graph';
import { runGraph } from '../graph/run';
import { uniform } from '../runtime/random';
import { skip } from '../skip.fixture';
import { getNetwork } from './networks';
import { exportOnnx } from './onnx/export';

const ort = tryLoadOnnxRuntime();

test('mobilenet_v2: 17 inverted-residual blocks, 10 residual adds, 17 depthwise convs, ReLU6 as clip', () => {
  const g = getNetwork('mobilenet_v2', { weights: 'zeros' }).graph;
  const ops = (op: string): OpNode[] => g.nodes.filter((n): n is OpNode => n.op === op);
  assert.is(ops('conv2d').filter((n) => (n.attrs.groups as number) > 1).length, 17);
  assert.is(ops('conv2d').length, 52);
  // The convs have no bias (batch norms follow): the adds are the 10 residual ones and fc's bias.
  assert.is(ops('add').length, 10 + 1);
  assert.ok(ops('clip').every((n) => n.attrs.min === 0 && n.attrs.max === 6));
  assert.is(ops('clip').length, 35);
});

test('mobilenet_v2 tasks: 33, sum of weights 55 (TASKS.md)', () => {
  const tasks = extractTasks(getNetwork('mobilenet_v2', { weights: 'zeros' }).graph);
  assert.is(tasks.length, 33);
  assert.is(tasks.reduce((a, t) => a + t.weight, 0), 55);
});

test('mobilenet_v2 exported to ONNX: ONNX Runtime agrees with the reference evaluator (32x32, batch 2)', async () => {
  const net = getNetwork('mobilenet_v2', { layout: 'NCHW', imageSize: 32, batch: 2, randomStats: true });
  const g = withoutSoftmax(net.graph);
  const x = uniform(2 * 3 * 32 * 32, 5, 0);
  const [want] = runGraph(g, new Map([['data', x]])) as Float32Array[];
  if (!ort.module) { skip('mobilenet_v2 against ONNX Runtime', ort.error); return; }
  const session = await openOrtSession(exportOnnx(g), 1, [[2, 3, 32, 32]]);
  const [got] = (await session.run([x])) as Float32Array[];
  await session.release();
  assert.is(got.length, 2000);
  for (let i = 0; i < got.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= 1e-4 + 1e-4 * Math.abs(got[i]))) assert.unreachable(`logit ${i}: ours ${want[i]}, ONNX Runtime ${got[i]}`);
  }
});

test.run();
