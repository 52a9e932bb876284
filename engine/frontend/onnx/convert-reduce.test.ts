// Every Reduce* converter against ONNX Runtime (ort-agree.fixture.ts: NCHW, NHWC after
// convertLayout, and ORT, |ours - ORT| <= 1e-5 * (1 + |ORT|)): axes as an attribute (before
// opset 13 for ReduceSum, 18 for the others) and as an input (from then on), keepdims,
// negative axes, no axes (every axis), noop_with_empty_axes; after a conv, so that the
// NHWC run reduces a moved channel axis. The forms we refuse say so in one line.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { agreesWithOrt, importError, rand } from './ort-agree.fixture';
import { OnnxModelBuilder } from './model-builder';
import { DataType, decodeModel, encodeModel } from './schema';

const OPS = ['ReduceSum', 'ReduceMean', 'ReduceMax', 'ReduceMin', 'ReduceProd', 'ReduceSumSquare', 'ReduceL1', 'ReduceL2', 'ReduceLogSum', 'ReduceLogSumExp'];
const inputFrom = (op: string): number => (op === 'ReduceSum' ? 13 : 18);
/** Inputs in [0.2, 1.2): log-sum needs positive sums, and products of 24 such numbers stay O(1). */
const RANGE: [number, number] = [0.2, 1.2];

/** A node of `op` reducing `axes` (undefined: none given), as the opset defines its axes. */
function reduceNode(b: OnnxModelBuilder, op: string, opset: number, x: string, y: string, axes: number[] | undefined, attrs: Record<string, number> = {}): OnnxModelBuilder {
  if (opset >= inputFrom(op)) {
    if (axes === undefined) return b.node(op, [x], [y], attrs);
    b.int64(`${y}_axes`, axes);
    return b.node(op, [x, `${y}_axes`], [y], attrs);
  }
  return b.node(op, [x], [y], axes === undefined ? attrs : { ...attrs, axes });
}

for (const op of OPS) {
  for (const opset of [11, inputFrom(op), 21]) {
    test(`${op} opset ${opset}: axes, keepdims, negative axes, every axis, after a conv (NCHW and NHWC)`, async () => {
      const b = new OnnxModelBuilder(opset).input('x', [2, 3, 4, 5])
        .float('w', [4, 3, 1, 1], rand(12, 3, 0.1, 0.5))
        .node('Conv', ['x', 'w'], ['c']);
      // Over the (moving) channel axis, kept: a 4-d result the NHWC graph must get right.
      reduceNode(b, op, opset, 'c', 'y1', [1]);
      reduceNode(b, op, opset, 'c', 'y2', [-1, 2], { keepdims: 0 });
      reduceNode(b, op, opset, 'x', 'y3', [0, 3]);
      reduceNode(b, op, opset, 'c', 'y4', undefined, { keepdims: 0 });
      reduceNode(b, op, opset, 'x', 'y5', undefined);
      ['y1', 'y2', 'y3', 'y4', 'y5'].forEach((o) => b.output(o));
      const m = await agreesWithOrt(`${op}${opset}`, b.build(), { range: RANGE });
      assert.equal(m.graph.outputs.map((id) => m.graph.node(id).shape), [[2, 1, 4, 5], [2, 4], [1, 3, 4, 1], [], [1, 1, 1, 1]]);
    });
  }
  test(`${op} opset 18: noop_with_empty_axes with no axes and with an empty axes input (the elementwise part)`, async () => {
    const b = new OnnxModelBuilder(18).input('x', [2, 3]).int64('none', [])
      .node(op, ['x'], ['y1'], { noop_with_empty_axes: 1 })
      .node(op, ['x', 'none'], ['y2'], { noop_with_empty_axes: 1 })
      .node(op, ['x', 'none'], ['y3'], { noop_with_empty_axes: 0, keepdims: 0 })
      .output('y1').output('y2').output('y3');
    await agreesWithOrt(`${op} noop`, b.build(), { range: RANGE });
  });
}

test('ReduceMax/ReduceMin/ReduceSum over signed data, ReduceLogSumExp of large values', async () => {
  const b = new OnnxModelBuilder(13).input('x', [3, 4, 5])
    .int64('ax', [1])
    .node('ReduceMax', ['x'], ['mx'], { axes: [2] })
    .node('ReduceMin', ['x'], ['mn'], { axes: [0, 1], keepdims: 0 })
    .node('ReduceSum', ['x', 'ax'], ['s'], { keepdims: 0 })
    .float('big', [], [80])
    .node('Mul', ['x', 'big'], ['xb'])
    .node('ReduceLogSumExp', ['xb'], ['lse'], { axes: [2] })
    .output('mx').output('mn').output('s').output('lse');
  await agreesWithOrt('signed', b.build(), { range: [-1, 1] });
});

test('Reduce* refusals: axes computed at run time', () => {
  const model = decodeModel(new OnnxModelBuilder(18).input('x', [2, 3]).node('ReduceMax', ['x', 'a'], ['y']).output('y').build());
  model.graph!.input!.push({ name: 'a', type: { tensor_type: { elem_type: DataType.INT64, shape: { dim: [{ dim_value: 1 }] } } } });
  assert.match(importError(encodeModel(model)), /ReduceMax 'y': unsupported: axes must be a constant/);
});

test.run();
