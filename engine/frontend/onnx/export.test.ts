// The writer: a builtin network exported to ONNX and imported back gives the same tasks
// (workload keys and weights, via extractTasks) and the same outputs (reference
// evaluator) as the builtin network; ONNX Runtime computes the same outputs from the
// exported file. Small images (32x32) keep the reference runs fast.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openOrtSession, tryLoadOnnxRuntime } from '../../compare/ort';
import { extractTasks } from '../../graph/extract';
import type { Graph } from '../../graph/graph';
import { runGraph } from '../../graph/run';
import { uniform } from '../../runtime/random';
import type { Layout } from '../../topi/nn';
import { skip } from '../../skip.fixture';
import { getNetwork } from '../networks';
import { exportOnnx } from './export';
import { cancelTransposes, importOnnx } from './import';
import { convertLayout } from '../../graph/passes';

const ort = tryLoadOnnxRuntime();
const IMAGE = 32;

const taskList = (g: Graph): string[] => extractTasks(g).map((t) => `${t.key} x${t.weight} ${t.desc}`);
const imported = (bytes: Uint8Array, layout: Layout): Graph => {
  const g = importOnnx(bytes, 'exported.onnx').graph;
  return layout === 'NCHW' ? g : cancelTransposes(convertLayout(g, layout));
};

function assertClose(got: Float32Array, want: Float32Array, what: string, tol = 1e-6): void {
  assert.is(got.length, want.length, `${what}: size`);
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= tol * (1 + Math.abs(want[i])))) assert.unreachable(`${what}[${i}] = ${got[i]}, expected ${want[i]}`);
  }
}

for (const name of ['mobilenet', 'resnet-18', 'squeezenet_v1.1']) {
  test(`${name}: export (NCHW) -> import (NHWC) gives the builtin NHWC network's tasks`, () => {
    const bytes = exportOnnx(getNetwork(name, { layout: 'NCHW', imageSize: IMAGE }).graph);
    const want = taskList(getNetwork(name, { layout: 'NHWC', imageSize: IMAGE, weights: 'zeros' }).graph);
    assert.equal(taskList(imported(bytes, 'NHWC')), want);
    assert.equal(taskList(imported(bytes, 'NCHW')), taskList(getNetwork(name, { layout: 'NCHW', imageSize: IMAGE, weights: 'zeros' }).graph));
  });
}

for (const [name, layout] of [['mobilenet', 'NCHW'], ['mobilenet', 'NHWC'], ['resnet-18', 'NHWC']] as const) {
  // resnet-18 NHWC: its first op is a batch norm on the input (the writer needs it in NCHW).
  test(`${name} (${layout} input, random BN statistics): export -> import computes the builtin network's outputs; so does ONNX Runtime`, async () => {
    const net = getNetwork(name, { layout, imageSize: IMAGE, randomStats: true });
    const bytes = exportOnnx(net.graph);
    const model = importOnnx(bytes, 'exported.onnx');
    assert.equal(model.inputs, [{ name: 'data', shape: [...net.inputShape], dtype: 'float32' }]);
    const x = uniform(net.inputShape.reduce((a, b) => a * b, 1), 3, 0);
    const feeds = new Map([['data', x]]);
    const [want] = runGraph(net.graph, feeds) as Float32Array[];
    assertClose(runGraph(model.graph, feeds)[0] as Float32Array, want, 'imported NCHW');
    assertClose(runGraph(imported(bytes, 'NHWC'), feeds)[0] as Float32Array, want, 'imported NHWC');
    if (!ort.module) { skip(`${name} ${layout} export: the comparison with ONNX Runtime`, ort.error); return; }
    const session = await openOrtSession(bytes, 1, [net.inputShape]);
    const [got] = await session.run([x]);
    await session.release();
    assertClose(got as Float32Array, want, 'ONNX Runtime', 1e-4);
  });
}

test.run();
