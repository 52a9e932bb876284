// The ONNX writer on a transformer block (a linear layer over [B, S, C], a fused qkv
// projection read through batch_matmul views, softmax, layer norm), at opset 17
// (LayerNormalization) and 13 (decomposed): ONNX Runtime runs the file and agrees with the
// reference evaluator on our graph (|ours - ORT| <= 1e-5 * (1 + |ORT|)); the file has the
// exporters' shape (MatMul, one Split of qkv, Reshape/Transpose per head split); the
// importer reads it back to the same numbers.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openOrtSession, tryLoadOnnxRuntime } from '../../compare/ort';
import { Graph } from '../../graph/graph';
import { runGraph } from '../../graph/run';
import { uniform } from '../../runtime/random';
import type { OperandView } from '../../topi/nn';
import { skip } from '../../skip.fixture';
import { exportOnnx } from './export';
import { importOnnx, SUPPORTED_OPS } from './import';
import { decodeModel } from './schema';

const ort = tryLoadOnnxRuntime();
const rand = (n: number, seed: number, lo = -1, hi = 1): Float32Array => uniform(n, seed, 0).map((u) => lo + (hi - lo) * u);
const TOL = 1e-5;

function block(): Graph {
  const [B, S, H, D] = [2, 5, 2, 4], C = H * D;
  const g = new Graph();
  const x = g.input('x', [B, S, C]);
  const qkv = g.op('add', [g.op('dense', [x, g.constant('w_qkv', [3 * C, C], rand(3 * C * C, 1))]), g.constant('b_qkv', [3 * C], rand(3 * C, 2))]);
  const part = (p: number, perm: number[]): OperandView => ({ begin: [0, 0, p * C], box: [B, S, C], shape: [B, S, H, D], perm });
  const s = g.op('batch_matmul', [qkv, qkv], { transB: false, viewA: part(0, [0, 2, 1, 3]), viewB: part(1, [0, 2, 3, 1]) });
  const p = g.op('softmax', [g.op('multiply', [s, g.constant('scale', [], Float32Array.of(0.5))])], { axis: -1 });
  const ctx = g.op('batch_matmul', [p, qkv], { transB: false, viewB: part(2, [0, 2, 1, 3]) });
  const merged = g.op('reshape', [g.op('transpose', [ctx], { axes: [0, 2, 1, 3] })], { newShape: [B, S, C] });
  const y = g.op('add', [x, g.op('dense', [merged, g.constant('w_o', [C, C], rand(C * C, 3))])]);
  g.outputs = [g.op('layer_norm', [y, g.constant('gamma', [C], rand(C, 4, 0.5, 1.5)), g.constant('beta', [C], rand(C, 5))], { axis: -1, epsilon: 1e-5 })];
  return g;
}

function close(got: ArrayLike<number>, want: ArrayLike<number>, what: string): void {
  assert.is(got.length, want.length, `${what}: size`);
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= TOL * (1 + Math.abs(want[i])))) assert.unreachable(`${what}: [${i}] ${got[i]} vs ${want[i]}`);
  }
}

for (const opset of [17, 13]) {
  test(`a transformer block written at opset ${opset}: ONNX Runtime agrees, exporters' node shapes, read back`, async () => {
    const g = block();
    const x = rand(2 * 5 * 8, 9);
    const [want] = runGraph(g, new Map([['x', x]])) as Float32Array[];
    const bytes = exportOnnx(g, { opset });
    const model = decodeModel(bytes);
    assert.is(model.opset_import?.[0].version, opset);
    const types = (model.graph?.node ?? []).map((n) => n.op_type ?? '');
    const count = (t: string): number => types.filter((o) => o === t).length;
    assert.is(count('Split'), 1, types.join(' '));
    assert.is(count('MatMul'), 4, types.join(' '));
    assert.is(count('LayerNormalization'), opset >= 17 ? 1 : 0);
    assert.is(count('Pow'), opset >= 17 ? 0 : 1);
    if (!ort.module) { skip(`opset ${opset}: ONNX Runtime`, ort.error); return; }
    const session = await openOrtSession(bytes, 1, [[2, 5, 8]]);
    const [got] = (await session.run([x])) as Float32Array[];
    await session.release();
    close(want, got, `opset ${opset} vs ONNX Runtime`);
    const missing = [...new Set(types)].filter((t) => !SUPPORTED_OPS.includes(t));
    if (missing.length) { skip(`opset ${opset}: reading it back`, `no converter for ${missing.join(', ')} yet`); return; }
    assert.not.ok(types.includes('Slice'));
    const back = importOnnx(bytes, 'block.onnx');
    const [again] = runGraph(back.graph, new Map([['x', x]])) as Float32Array[];
    close(again, got, `opset ${opset} read back`);
  });
}

test.run();
