// Resize and Upsample against ONNX Runtime (ort-agree.fixture.ts: the NCHW graph, the
// graph after convertLayout to NHWC, and ORT, |ours - ORT| <= 1e-5 * (1 + |ORT|); the
// inputs pass through a 1x1 conv first, so the NHWC run resizes moved axes). Every mode,
// nearest_mode and coordinate_transformation_mode, scales and sizes, roi with
// extrapolation, cubic_coeff_a and exclude_outside, axes and keep_aspect_ratio_policy at
// 18, the opset 10 and Upsample forms. Scales of 2 make nearest coordinates land on exact
// halves, where the nearest modes differ. The forms we refuse say so in one line.
// antialias=1 has its own file (convert-resize-antialias.test.ts).

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { compileModel } from '../../compile/model';
import { readManifest } from '../../compile/manifest';
import { isOpNode } from '../../graph/graph';
import { runGraph } from '../../graph/run';
import { runBench } from '../../native/bench';
import { outputFileName } from '../../runtime/abi';
import { readFloat32File, writeFloat32File } from '../../runtime/rawfile';
import { parseTarget } from '../../target';
import { affineFit } from './convert-resize';
import { loadOnnx } from './import';
import { agreesWithOrt, importError, rand } from './ort-agree.fixture';
import { OnnxModelBuilder, type AttrValue } from './model-builder';

const X = [1, 2, 5, 7];

interface Case {
  opset?: number;
  attrs?: Record<string, AttrValue>;
  scales?: number[];
  sizes?: number[];
  roi?: number[];
  shape?: number[];
  conv?: boolean;
}

/** x -> (1x1 conv) -> Resize with the given inputs; roi, scales, sizes as initializers (or '' when absent). */
function resizeModel(c: Case): Uint8Array {
  const opset = c.opset ?? 19;
  const shape = c.shape ?? X;
  const b = new OnnxModelBuilder(opset).input('x', shape);
  let src = 'x';
  if (c.conv ?? shape.length === 4) {
    b.float('w', [3, shape[1], 1, 1], rand(3 * shape[1], 2)).node('Conv', ['x', 'w'], ['c']);
    src = 'c';
  }
  const inputs = [src];
  if (opset >= 11) {
    if (c.roi) b.float('roi', [c.roi.length], c.roi);
    else if (opset < 13) b.float('roi', [0], []);
    inputs.push(c.roi || opset < 13 ? 'roi' : '');
  }
  if (c.scales) { b.float('scales', [c.scales.length], c.scales); inputs.push('scales'); } else if (opset >= 11 && opset < 13) { b.float('scales', [0], []); inputs.push('scales'); } else if (opset >= 11) inputs.push('');
  if (c.sizes) { b.int64('sizes', c.sizes); inputs.push('sizes'); }
  while (inputs[inputs.length - 1] === '') inputs.pop();
  return b.node('Resize', inputs, ['y'], c.attrs ?? {}).output('y').build();
}

const SCALES = [[1, 1, 2, 0.6], [1, 1, 1.5, 3], [1, 1, 0.5, 0.75]];
const COORDS = ['half_pixel', 'asymmetric', 'pytorch_half_pixel', 'tf_half_pixel_for_nn', 'half_pixel_symmetric'];

for (const coordinate of COORDS) {
  test(`nearest, every nearest_mode, ${coordinate}: scales and sizes`, async () => {
    for (const nearest of ['round_prefer_floor', 'round_prefer_ceil', 'floor', 'ceil']) {
      const attrs = { mode: 'nearest', coordinate_transformation_mode: coordinate, nearest_mode: nearest };
      for (const scales of SCALES) await agreesWithOrt(`nearest ${nearest} ${coordinate} [${scales}]`, resizeModel({ attrs, scales }));
      await agreesWithOrt(`nearest ${nearest} ${coordinate} sizes`, resizeModel({ attrs, sizes: [1, 3, 9, 4] }));
    }
  });
  test(`linear and cubic (a = -0.75, -0.5 with exclude_outside), ${coordinate}`, async () => {
    for (const scales of SCALES) {
      await agreesWithOrt(`linear ${coordinate} [${scales}]`, resizeModel({ attrs: { mode: 'linear', coordinate_transformation_mode: coordinate }, scales }));
      await agreesWithOrt(`cubic ${coordinate} [${scales}]`, resizeModel({ attrs: { mode: 'cubic', coordinate_transformation_mode: coordinate }, scales }));
      await agreesWithOrt(`cubic A-0.5 exclude ${coordinate} [${scales}]`, resizeModel({
        attrs: { mode: 'cubic', coordinate_transformation_mode: coordinate, cubic_coeff_a: -0.5, exclude_outside: 1 }, scales,
      }));
    }
    await agreesWithOrt(`linear ${coordinate} sizes`, resizeModel({ attrs: { mode: 'linear', coordinate_transformation_mode: coordinate }, sizes: [1, 3, 3, 11] }));
  });
}

test('align_corners with sizes (every mode), and with scales whose output length is whole', async () => {
  for (const mode of ['nearest', 'linear', 'cubic']) {
    for (const sizes of [[1, 3, 9, 4], [1, 3, 1, 13]]) {
      await agreesWithOrt(`${mode} align_corners [${sizes}]`, resizeModel({ attrs: { mode, coordinate_transformation_mode: 'align_corners' }, sizes }));
    }
    await agreesWithOrt(`${mode} align_corners scales`, resizeModel({ attrs: { mode, coordinate_transformation_mode: 'align_corners' }, scales: [1, 1, 2, 3] }));
  }
});

test('tf_crop_and_resize: roi, extrapolation_value, every mode', async () => {
  const roi = [0, 0, -0.2, 0.3, 1, 1, 0.9, 1.4];
  for (const mode of ['nearest', 'linear', 'cubic']) {
    for (const sizes of [[1, 3, 6, 5], [1, 3, 1, 9]]) {
      for (const extrapolation_value of [0.5, -2.5]) {
        await agreesWithOrt(`${mode} tf_crop_and_resize [${sizes}] ${extrapolation_value}`, resizeModel({
          attrs: { mode, coordinate_transformation_mode: 'tf_crop_and_resize', extrapolation_value }, roi, sizes,
        }));
      }
    }
  }
});

test('opset 18: axes (either order, with roi), keep_aspect_ratio_policy', async () => {
  for (const axes of [[2, 3], [3, 2], [-1, -2]]) {
    const swap = axes[0] === 3 || axes[0] === -1;
    await agreesWithOrt(`axes [${axes}] scales`, resizeModel({ opset: 18, attrs: { mode: 'linear', axes }, scales: swap ? [0.6, 2] : [2, 0.6] }));
    await agreesWithOrt(`axes [${axes}] sizes`, resizeModel({ opset: 18, attrs: { mode: 'nearest', axes }, sizes: swap ? [4, 9] : [9, 4] }));
    await agreesWithOrt(`axes [${axes}] crop`, resizeModel({
      opset: 18, attrs: { mode: 'nearest', axes, coordinate_transformation_mode: 'tf_crop_and_resize' }, roi: [0.1, 0.2, 0.8, 1.1], sizes: [4, 9],
    }));
  }
  for (const policy of ['not_larger', 'not_smaller']) {
    for (const sizes of [[8, 8], [3, 20]]) {
      await agreesWithOrt(`${policy} [${sizes}]`, resizeModel({ opset: 18, attrs: { mode: 'nearest', axes: [2, 3], keep_aspect_ratio_policy: policy }, sizes }));
    }
  }
});

test('opsets 10, 11, 13: scales input (opset 10: asymmetric, truncate up / ceil down), roi and scales inputs', async () => {
  for (const scales of SCALES) {
    await agreesWithOrt(`opset 10 nearest [${scales}]`, resizeModel({ opset: 10, attrs: { mode: 'nearest' }, scales }));
    await agreesWithOrt(`opset 10 linear [${scales}]`, resizeModel({ opset: 10, attrs: { mode: 'linear' }, scales }));
    await agreesWithOrt(`opset 11 cubic [${scales}]`, resizeModel({ opset: 11, attrs: { mode: 'cubic' }, scales }));
    await agreesWithOrt(`opset 13 nearest [${scales}]`, resizeModel({ opset: 13, attrs: { mode: 'nearest' }, scales }));
  }
  await agreesWithOrt('opset 11 sizes', resizeModel({ opset: 11, attrs: { mode: 'linear' }, sizes: [1, 3, 9, 4] }));
});

test('Upsample: opset 7 scales attribute, opset 9 scales input (nearest, bilinear)', async () => {
  for (const mode of ['nearest', 'linear']) {
    const s = [1, 1, 2, 1.5];
    const b7 = new OnnxModelBuilder(7).input('x', X).node('Upsample', ['x'], ['y'], { mode, scales: { floats: s } }).output('y');
    await agreesWithOrt(`Upsample-7 ${mode}`, b7.build());
    const b9 = new OnnxModelBuilder(9).input('x', X).float('s', [4], s).node('Upsample', ['x', 's'], ['y'], { mode }).output('y');
    await agreesWithOrt(`Upsample-9 ${mode}`, b9.build());
  }
});

test('linear over 2 and 3 axes of rank-2 and rank-3 data (bilinear, trilinear); nearest over every axis of rank 5', async () => {
  await agreesWithOrt('2-D linear', resizeModel({ shape: [5, 6], attrs: { mode: 'linear' }, scales: [1.6, 0.5] }));
  await agreesWithOrt('3-D linear', resizeModel({ shape: [3, 5, 6], attrs: { mode: 'linear', coordinate_transformation_mode: 'align_corners' }, sizes: [5, 2, 9] }));
  await agreesWithOrt('5-D nearest', resizeModel({ shape: [2, 3, 2, 3, 4], conv: false, attrs: { mode: 'nearest' }, scales: [1, 2, 1.5, 1, 0.5] }));
});

test('identity resizes are the input; a scale-1 axis is copied, not transformed', async () => {
  const m = await agreesWithOrt('same sizes', resizeModel({ attrs: { mode: 'linear', coordinate_transformation_mode: 'tf_crop_and_resize' }, roi: [0, 0, 0.2, 0.2, 1, 1, 0.5, 0.5], sizes: [1, 3, 5, 7] }));
  assert.not.ok(m.graph.nodes.some((n) => isOpNode(n) && n.op === 'resize'));
  // Scale 1.1 on an axis of 5 keeps its length 5 but moves its coordinates; the other axis changes.
  const r = await agreesWithOrt('scale 1.1', resizeModel({ attrs: { mode: 'linear' }, scales: [1, 1, 1.1, 2] }));
  const node = r.graph.nodes.find((n) => isOpNode(n) && n.op === 'resize');
  assert.equal(node && isOpNode(node) ? node.attrs.axes : undefined, [2, 3]);
});

test('nearest tables of step form become floor((a*o + b) / c): no index table; others keep theirs', async () => {
  assert.equal(affineFit(Int32Array.of(0, 0, 1, 1, 2, 2)), [1, 0, 2]);
  assert.equal(affineFit(Int32Array.of(0, 1, 3, 4, 6)), [3, 0, 2]); // 5 -> ... scale 2/3, floor(1.5 * o)
  assert.equal(affineFit(Int32Array.of(4)), [0, 4, 1]);
  assert.is(affineFit(Int32Array.of(0, 5, 1)), undefined);
  const m = await agreesWithOrt('2x nearest', resizeModel({ attrs: { mode: 'nearest' }, scales: [1, 1, 2, 3] }));
  assert.not.ok(m.graph.nodes.some((n) => n.op === 'constant' && n.dtype === 'int32'));
  const node = m.graph.nodes.find((n) => isOpNode(n) && n.op === 'resize');
  assert.ok(node && isOpNode(node) && (node.attrs.affine as unknown[]).every((f) => f !== null));
  // tf_crop_and_resize keeps its tables (the inside flags).
  const crop = await agreesWithOrt('crop tables', resizeModel({ attrs: { mode: 'nearest', coordinate_transformation_mode: 'tf_crop_and_resize' }, roi: [0, 0, 0, 0, 1, 1, 1, 1], sizes: [1, 3, 10, 14] }));
  assert.ok(crop.graph.nodes.some((n) => n.op === 'constant' && n.dtype === 'int32'));
});

test('refusals in one line', () => {
  assert.match(importError(resizeModel({ attrs: { mode: 'linear', coordinate_transformation_mode: 'align_corners' }, scales: [1, 1, 0.6, 0.6] })),
    /Resize 'y': unsupported: align_corners with scale 0\.6\d* on an axis of 7 \(a fractional output length; ONNX Runtime and the ONNX reference disagree there: give sizes\)/);
  assert.match(importError(resizeModel({ attrs: { mode: 'area' }, scales: [1, 1, 2, 2] })), /Resize 'y': unsupported: mode 'area'/);
  assert.match(importError(resizeModel({ opset: 10, attrs: { mode: 'cubic' }, scales: [1, 1, 2, 2] })), /Resize 'y': unsupported: mode 'cubic'/);
  assert.match(importError(resizeModel({ attrs: { mode: 'nearest', coordinate_transformation_mode: 'diagonal' }, scales: [1, 1, 2, 2] })), /unsupported: coordinate_transformation_mode 'diagonal'/);
  const up10 = new OnnxModelBuilder(10).input('x', X).float('s', [4], [1, 1, 2, 2]).node('Upsample', ['x', 's'], ['y']).output('y');
  assert.match(importError(up10.build()), /Upsample 'y': unsupported: Upsample is deprecated from opset 10 \(use Resize\)/);
  // Scales computed at run time.
  const dyn = new OnnxModelBuilder(13).input('x', X).input('s', [4]).node('Resize', ['x', '', 's'], ['y']).output('y');
  assert.match(importError(dyn.build()), /Resize 'y': unsupported: scales must be a constant/);
});

test('compiled with default schedules: Split, Resize (nearest, linear, cubic), DepthToSpace, Expand, Pad reflect, Tile, Slice, Trilu, SpaceToDepth equal the reference', async () => {
  const b = new OnnxModelBuilder(14).input('x', [1, 3, 16, 16])
    .float('w1', [16, 3, 3, 3], rand(432, 1, -0.2, 0.2)).float('w2', [8, 8, 3, 3], rand(576, 2, -0.1, 0.1))
    .int64('split', [8, 8]).float('sc', [4], [1, 1, 2, 2]).float('sc2', [4], [1, 1, 0.75, 1.5]).int64('exp', [1, 2, 4, 4])
    .int64('pads', [0, 0, 1, 2, 0, 0, 2, 1]).int64('tile', [1, 1, 1, 2]).int64('st', [1]).int64('en', [-1]).int64('ax', [3])
    .node('Conv', ['x', 'w1'], ['c1'], { pads: [1, 1, 1, 1] }).node('Relu', ['c1'], ['r1'])
    .node('Split', ['r1', 'split'], ['s1', 's2'], { axis: 1 })
    .node('Resize', ['s1', '', 'sc'], ['up'], { mode: 'nearest' })
    .node('Resize', ['s2', '', 'sc'], ['upl'], { mode: 'linear' })
    .node('Add', ['up', 'upl'], ['a']).node('Conv', ['a', 'w2'], ['c2'], { pads: [1, 1, 1, 1] })
    .node('DepthToSpace', ['c2'], ['d2s'], { blocksize: 2, mode: 'CRD' })
    .node('ReduceMean', ['d2s'], ['m'], { axes: [2, 3], keepdims: 1 }).node('Expand', ['m', 'exp'], ['e'])
    .node('Resize', ['e', '', 'sc2'], ['cub'], { mode: 'cubic' })
    .node('Pad', ['d2s', 'pads'], ['p'], { mode: 'reflect' }).node('Tile', ['p', 'tile'], ['t'])
    .node('Slice', ['t', 'st', 'en', 'ax'], ['sl']).node('Trilu', ['sl'], ['tri'], { upper: 0 })
    .node('SpaceToDepth', ['d2s'], ['s2d'], { blocksize: 2 })
    .output('tri').output('cub').output('s2d');
  const work = mkdtempSync(path.join(tmpdir(), 'tt-resize-test-'));
  try {
    const file = path.join(work, 'm.onnx');
    writeFileSync(file, b.build());
    const m = loadOnnx(file);
    const outDir = path.join(work, 'out');
    const result = await compileModel({ name: 'm', graph: m.graph, target: parseTarget('llvm'), outDir, cacheDir: path.join(work, 'cache') });
    const x = rand(3 * 16 * 16, 7);
    await writeFloat32File(path.join(work, 'x.bin'), x);
    await runBench({ model: result.library, params: result.params, repeat: 1, number: 1, minRepeatMs: 0, threads: 1, inputs: { x: path.join(work, 'x.bin') }, saveOutputs: path.join(work, 'y') });
    const want = runGraph(m.graph, new Map([['x', x]]));
    const outs = readManifest(outDir).outputs;
    for (let k = 0; k < outs.length; k++) {
      const got = await readFloat32File(path.join(work, 'y', outs[k].file ?? `${outputFileName(outs[k].name)}.bin`));
      assert.is(got.length, want[k].length, outs[k].name);
      for (let i = 0; i < got.length; i++) {
        if (!(Math.abs(got[i] - want[k][i]) <= 1e-5 * (1 + Math.abs(want[k][i])))) assert.unreachable(`${outs[k].name}[${i}] = ${got[i]}, reference ${want[k][i]}`);
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

test.run();
