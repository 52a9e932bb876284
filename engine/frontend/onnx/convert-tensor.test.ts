// The data-movement converters against ONNX Runtime (ort-agree.fixture.ts: NCHW, NHWC
// after convertLayout, and ORT, |ours - ORT| <= 1e-5 * (1 + |ORT|); data movement itself
// is exact, the tolerance is the conv's before it): Split (attribute, input, num_outputs,
// uneven last chunk), Slice of computed tensors (attributes before 10, negative steps),
// Expand, Tile, DepthToSpace (DCR, CRD), SpaceToDepth, Pad (constant with negative pads,
// reflect, edge, wrap, axes), Trilu, ReverseSequence, EyeLike, and the opset 7-13 forms of
// Squeeze/Unsqueeze/Reshape/Flatten; shape computations through them fold at import.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isOpNode } from '../../graph/graph';
import { agreesWithOrt, importError, rand } from './ort-agree.fixture';
import { OnnxModelBuilder } from './model-builder';
import { DataType } from './schema';

const INT64_MAX = 9223372036854775807;

/** A builder with input x [1, 4, 6, 5] through a 1x1 conv to 'c' [1, 6, 6, 5] (channels move in the NHWC run). */
function convModel(opset: number): OnnxModelBuilder {
  return new OnnxModelBuilder(opset).input('x', [1, 4, 6, 5]).float('w', [6, 4, 1, 1], rand(24, 3)).node('Conv', ['x', 'w'], ['c']);
}

const opsOf = (m: { graph: { nodes: readonly { op: string }[] } }): string[] => m.graph.nodes.map((n) => n.op);

test('Split: attribute (opset 11), input (13), equal parts, num_outputs with an uneven last chunk (18), negative axis', async () => {
  await agreesWithOrt('split-11', convModel(11).node('Split', ['c'], ['a', 'b', 'd'], { axis: 1, split: [1, 2, 3] }).output('a').output('b').output('d').build());
  await agreesWithOrt('split-13', convModel(13).int64('s', [4, 2]).node('Split', ['c', 's'], ['a', 'b'], { axis: 2 }).output('a').output('b').build());
  await agreesWithOrt('split-13 equal', convModel(13).node('Split', ['c'], ['a', 'b', 'd'], { axis: 1 }).output('a').output('b').output('d').build());
  const m = await agreesWithOrt('split-18 uneven', convModel(18).node('Split', ['c'], ['a', 'b'], { axis: -1, num_outputs: 2 }).output('a').output('b').build());
  assert.equal(m.graph.outputs.map((o) => m.graph.node(o).shape), [[1, 6, 6, 3], [1, 6, 6, 2]]);
  await agreesWithOrt('split-18 input', convModel(18).int64('s', [1, 5]).node('Split', ['c', 's'], ['a', 'b'], { axis: 1 }).output('a').output('b').build());
  assert.match(importError(convModel(13).node('Split', ['c'], ['a', 'b'], { axis: 3 }).output('a').output('b').build()), /Split 'a': Split: axis 3 of 5 does not split evenly into 2/);
});

test('Slice of a computed tensor: attributes (opset 9), inputs with negative steps, clamped ends, negative axes', async () => {
  await agreesWithOrt('slice-9', convModel(9).node('Slice', ['c'], ['y'], { starts: [1, -4], ends: [5, INT64_MAX], axes: [1, 3] }).output('y').build());
  const b = convModel(13).int64('st', [-1, 4, 0]).int64('en', [-INT64_MAX, 0, 3]).int64('ax', [3, 2, -3]).int64('sp', [-2, -1, 2])
    .node('Slice', ['c', 'st', 'en', 'ax', 'sp'], ['y']).output('y');
  const m = await agreesWithOrt('slice-13', b.build());
  assert.equal(m.graph.node(m.graph.outputs[0]).shape, [1, 2, 4, 3]);
  assert.match(importError(convModel(13).int64('st', [3]).int64('en', [3]).node('Slice', ['c', 'st', 'en'], ['y']).output('y').build()), /Slice 'y': unsupported: an empty result/);
});

test('Expand (bidirectional, a shorter shape), Tile', async () => {
  const b = new OnnxModelBuilder(13).input('x', [3, 1]).int64('s', [2, 1, 4]).int64('one', [1])
    .node('Expand', ['x', 's'], ['y']).node('Expand', ['x', 'one'], ['z']).output('y').output('z');
  const m = await agreesWithOrt('expand', b.build());
  assert.equal(m.graph.outputs.map((o) => m.graph.node(o).shape), [[2, 3, 4], [3, 1]]);
  await agreesWithOrt('expand conv', convModel(13).node('ReduceMean', ['c'], ['r'], { axes: [2], keepdims: 1 }).int64('s', [2, 6, 3, 5]).node('Expand', ['r', 's'], ['y']).output('y').build());
  await agreesWithOrt('tile', convModel(13).int64('r', [2, 1, 3, 1]).node('Tile', ['c', 'r'], ['y']).output('y').build());
});

test('DepthToSpace DCR (opset 9, and 13 default) and CRD; SpaceToDepth', async () => {
  const b = new OnnxModelBuilder(13).input('x', [1, 2, 3, 4]).float('w', [8, 2, 1, 1], rand(16, 4)).node('Conv', ['x', 'w'], ['c'])
    .node('DepthToSpace', ['c'], ['dcr'], { blocksize: 2 }).node('DepthToSpace', ['c'], ['crd'], { blocksize: 2, mode: 'CRD' })
    .node('SpaceToDepth', ['dcr'], ['back'], { blocksize: 2 }).output('dcr').output('crd').output('back');
  await agreesWithOrt('depth_to_space', b.build());
  const b9 = new OnnxModelBuilder(9).input('x', [1, 8, 2, 3]).node('DepthToSpace', ['x'], ['y'], { blocksize: 2 }).node('SpaceToDepth', ['x'], ['z'], { blocksize: 2 }).output('y');
  assert.match(importError(b9.build()), /SpaceToDepth 'z': SpaceToDepth: \[1, 8, 2, 3\] with blocksize 2/);
  await agreesWithOrt('depth_to_space-9', new OnnxModelBuilder(9).input('x', [1, 8, 2, 3]).node('DepthToSpace', ['x'], ['y'], { blocksize: 2 }).output('y').build());
});

test('Pad: reflect, edge, wrap (19), constant with negative pads (cropping), axes (18), the pads attribute (opset 9)', async () => {
  for (const mode of ['reflect', 'edge']) {
    await agreesWithOrt(`pad ${mode}`, convModel(13).int64('p', [0, 0, 2, 1, 0, 0, 3, 4]).node('Pad', ['c', 'p'], ['y'], { mode }).output('y').build());
  }
  await agreesWithOrt('pad wrap', convModel(19).int64('p', [0, 1, 2, 0, 0, 2, 3, 4]).node('Pad', ['c', 'p'], ['y'], { mode: 'wrap' }).output('y').build());
  await agreesWithOrt('pad crop', convModel(13).int64('p', [0, -1, 2, -2, 0, 2, -3, 1]).float('v', [], [1.5]).node('Pad', ['c', 'p', 'v'], ['y']).output('y').build());
  await agreesWithOrt('pad axes', convModel(18).int64('p', [1, 2, 0, 3]).int64('ax', [-1, 1]).node('Pad', ['c', 'p', '', 'ax'], ['y'], { mode: 'edge' }).output('y').build());
  await agreesWithOrt('pad-9', convModel(9).node('Pad', ['c'], ['y'], { pads: [0, 0, 1, 2, 0, 0, 2, 1], value: -0.5 }).output('y').build());
  assert.match(importError(convModel(13).int64('p', [0, 0, 0, 1, 0, 0, 0, 2]).node('Pad', ['c', 'p'], ['y'], { mode: 'wrap' }).output('y').build()), /Pad 'y': unsupported: Pad mode 'wrap' before opset 19/);
  assert.match(importError(convModel(13).int64('p', [0, 0, 0, -1, 0, 0, 0, 2]).node('Pad', ['c', 'p'], ['y'], { mode: 'edge' }).output('y').build()), /Pad 'y': unsupported: Pad mode 'edge' with negative pads/);
});

test('Trilu (upper, lower, k), ReverseSequence, EyeLike (k, dtype)', async () => {
  const b = convModel(14).int64('k1', [1], []).int64('km', [-2], [])
    .node('Trilu', ['c'], ['u']).node('Trilu', ['c', 'k1'], ['u1']).node('Trilu', ['c', 'km'], ['l'], { upper: 0 })
    .output('u').output('u1').output('l');
  await agreesWithOrt('trilu', b.build());
  const rs = new OnnxModelBuilder(13).input('x', [4, 3, 2]).int64('lens', [4, 1, 3])
    .node('ReverseSequence', ['x', 'lens'], ['y'], { time_axis: 0, batch_axis: 1 }).output('y');
  await agreesWithOrt('reverse_sequence', rs.build());
  const rs2 = new OnnxModelBuilder(13).input('x', [3, 5]).int64('lens', [5, 2, 1])
    .node('ReverseSequence', ['x', 'lens'], ['y'], { time_axis: 1, batch_axis: 0 }).output('y');
  await agreesWithOrt('reverse_sequence batch 0', rs2.build());
  const eye = new OnnxModelBuilder(13).input('x', [3, 4]).node('EyeLike', ['x'], ['e'], { k: 1 }).node('Add', ['x', 'e'], ['y'])
    .node('EyeLike', ['x'], ['e2'], { k: -1, dtype: DataType.FLOAT }).node('Mul', ['y', 'e2'], ['z']).output('y').output('z');
  await agreesWithOrt('eye_like', eye.build());
});

test('opset 7-13 forms: Squeeze/Unsqueeze axes attribute (11) and input (13), Reshape allowzero (14), Flatten (9) of computed tensors', async () => {
  const b11 = convModel(11).node('ReduceMean', ['c'], ['r'], { axes: [2], keepdims: 1 }).node('Squeeze', ['r'], ['s'], { axes: [2] })
    .node('Unsqueeze', ['s'], ['u'], { axes: [0, -1] }).output('u');
  await agreesWithOrt('squeeze-11', b11.build());
  const b13 = convModel(13).node('ReduceMean', ['c'], ['r'], { axes: [2], keepdims: 1 }).int64('a', [2]).int64('b', [0, -1])
    .node('Squeeze', ['r', 'a'], ['s']).node('Unsqueeze', ['s', 'b'], ['u']).output('u');
  await agreesWithOrt('squeeze-13', b13.build());
  await agreesWithOrt('reshape-14', convModel(14).int64('s', [6, -1, 1]).node('Reshape', ['c', 's'], ['y'], { allowzero: 1 }).output('y').build());
  await agreesWithOrt('flatten-9', convModel(9).node('Flatten', ['c'], ['y'], { axis: 3 }).output('y').build());
});

test('shape computations through Split, Slice, Tile, Expand fold at import (no kernels for them)', async () => {
  // x [2, 3, 4, 4] -> Shape -> Split [2, 2] -> Concat(second, first) = [4, 4, 2, 3] -> Reshape.
  const b = new OnnxModelBuilder(13).input('x', [2, 3, 4, 4]).int64('two', [2, 2]).int64('st', [3]).int64('en', [4]).int64('r', [2])
    .node('Shape', ['x'], ['sh']).node('Split', ['sh', 'two'], ['p', 'q'])
    .node('Concat', ['q', 'p'], ['t'], { axis: 0 }).node('Reshape', ['x', 't'], ['y'])
    // The last dim [4] tiled twice, after an Expand of [-1]: Reshape to [-1, 4, 4].
    .node('Slice', ['sh', 'st', 'en'], ['last']).node('Tile', ['last', 'r'], ['ll']).int64('m1', [-1]).int64('one', [1])
    .node('Expand', ['m1', 'one'], ['m'])
    .node('Concat', ['m', 'll'], ['t2'], { axis: 0 }).node('Reshape', ['x', 't2'], ['z'])
    .output('y').output('z');
  const m = await agreesWithOrt('folded shapes', b.build());
  assert.equal(m.graph.outputs.map((o) => m.graph.node(o).shape), [[4, 4, 2, 3], [6, 4, 4]]);
  assert.not.ok(opsOf(m).some((op) => ['strided_slice', 'tile', 'broadcast_to'].includes(op)), opsOf(m).join(', '));
  assert.ok(m.graph.nodes.filter(isOpNode).every((n) => n.op === 'reshape'));
});

test('static int64 values past int32 (an INT64_MAX end) slice and split at import', async () => {
  // ends = Split([INT64_MAX, 2])[0] = [INT64_MAX], then Slice(x, [1], ends) on axis 1.
  const b = new OnnxModelBuilder(13).input('x', [2, 5]).int64('both', [INT64_MAX, 2]).int64('ones', [1, 1]).int64('st', [1]).int64('ax', [1])
    .node('Split', ['both', 'ones'], ['en', 'unused']).node('Slice', ['x', 'st', 'en', 'ax'], ['y']).output('y');
  const m = await agreesWithOrt('int64 max', b.build());
  assert.equal(m.graph.node(m.graph.outputs[0]).shape, [2, 4]);
});

test.run();
