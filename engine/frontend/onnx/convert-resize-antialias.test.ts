// Resize with antialias=1 (opset 18+) against ONNX Runtime (ort-agree.fixture.ts: the NCHW
// graph, the graph after convertLayout to NHWC, and ORT, |ours - ORT| <= 1e-5 * (1 + |ORT|);
// the inputs pass through a 1x1 conv first, so the NHWC run resizes moved axes): linear and
// cubic downsampling by whole and fractional scales and by sizes, every coordinate mode,
// cubic_coeff_a and exclude_outside, axes and keep_aspect_ratio_policy, tf_crop_and_resize;
// upsampling, where the filter is the plain one (the plain resize at the same tolerance);
// the tables themselves on a case worked by hand; the compiled kernel against the reference.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isOpNode } from '../../graph/graph';
import { runGraph } from '../../graph/run';
import { antialiasTables, antialiasTaps, MAX_ANTIALIAS_TAPS, type ResizeOptions } from './convert-resize';
import { importOnnx } from './import';
import { compiledAgrees } from './native-agree.fixture';
import { agreesWithOrt, importError, rand } from './ort-agree.fixture';
import { OnnxModelBuilder, type AttrValue } from './model-builder';

const X = [1, 2, 12, 10];

interface Case {
  opset?: number;
  attrs: Record<string, AttrValue>;
  scales?: number[];
  sizes?: number[];
  roi?: number[];
  shape?: number[];
}

/** x -> 1x1 conv (3 channels) -> Resize; roi, scales, sizes as initializers. */
function model(c: Case): Uint8Array {
  const shape = c.shape ?? X;
  const b = new OnnxModelBuilder(c.opset ?? 19).input('x', shape);
  b.float('w', [3, shape[1], 1, 1], rand(3 * shape[1], 2)).node('Conv', ['x', 'w'], ['c']);
  const inputs = ['c'];
  if (c.roi) b.float('roi', [c.roi.length], c.roi);
  inputs.push(c.roi ? 'roi' : '');
  if (c.scales) { b.float('scales', [c.scales.length], c.scales); inputs.push('scales'); } else inputs.push('');
  if (c.sizes) { b.int64('sizes', c.sizes); inputs.push('sizes'); }
  return b.node('Resize', inputs, ['y'], c.attrs).output('y').build();
}

const DOWN = [[1, 1, 0.6, 0.8], [1, 1, 0.5, 0.5], [1, 1, 0.25, 0.7], [1, 1, 0.3, 1]];
const COORDS = ['half_pixel', 'asymmetric', 'pytorch_half_pixel', 'half_pixel_symmetric', 'tf_half_pixel_for_nn'];

for (const coordinate of COORDS) {
  test(`linear antialias downsampling, ${coordinate}: scales and sizes`, async () => {
    const attrs = { mode: 'linear', antialias: 1, coordinate_transformation_mode: coordinate };
    for (const scales of DOWN) await agreesWithOrt(`linear aa ${coordinate} [${scales}]`, model({ attrs, scales }));
    for (const sizes of [[1, 3, 5, 3], [1, 3, 1, 7]]) await agreesWithOrt(`linear aa ${coordinate} sizes [${sizes}]`, model({ attrs, sizes }));
  });
  test(`cubic antialias downsampling, ${coordinate}: a = -0.75, -0.5; exclude_outside 0 and 1`, async () => {
    for (const exclude_outside of [0, 1]) {
      for (const cubic_coeff_a of [-0.75, -0.5]) {
        const attrs = { mode: 'cubic', antialias: 1, coordinate_transformation_mode: coordinate, exclude_outside, cubic_coeff_a };
        const what = `cubic aa ${coordinate} a=${cubic_coeff_a} exclude=${exclude_outside}`;
        for (const scales of DOWN) await agreesWithOrt(`${what} [${scales}]`, model({ attrs, scales }));
        await agreesWithOrt(`${what} sizes`, model({ attrs, sizes: [1, 3, 5, 3] }));
      }
    }
  });
}

test('align_corners: sizes, and scales whose output lengths are whole', async () => {
  for (const mode of ['linear', 'cubic']) {
    for (const exclude_outside of mode === 'cubic' ? [0, 1] : [0]) {
      const attrs = { mode, antialias: 1, coordinate_transformation_mode: 'align_corners', exclude_outside };
      for (const sizes of [[1, 3, 5, 3], [1, 3, 7, 1], [1, 3, 2, 9]]) await agreesWithOrt(`${mode} aa align_corners ${exclude_outside} [${sizes}]`, model({ attrs, sizes }));
      await agreesWithOrt(`${mode} aa align_corners scales`, model({ attrs, scales: [1, 1, 0.5, 0.6] }));
    }
  }
});

// ONNX Runtime 1.30 fails (narrowing_error) where a linear window lies wholly outside the
// input (a roi reaching far past it); those outputs are the extrapolation value here.
test('tf_crop_and_resize: roi partly outside the input, extrapolation_value', async () => {
  const cases: [number[], number[][]][] = [[[0, 0, -0.2, 0.1, 1, 1, 0.9, 1.3], [[1, 3, 4, 3]]], [[0, 0, 0.2, 0, 1, 1, 0.7, 1], [[1, 3, 1, 6], [1, 3, 5, 7]]]];
  for (const mode of ['linear', 'cubic']) {
    for (const [roi, sizeList] of cases) {
      for (const sizes of sizeList) {
        await agreesWithOrt(`${mode} aa crop [${roi}] [${sizes}]`, model({ attrs: { mode, antialias: 1, coordinate_transformation_mode: 'tf_crop_and_resize', extrapolation_value: -1.5 }, roi, sizes }));
      }
    }
  }
  await agreesWithOrt('cubic aa crop far', model({ attrs: { mode: 'cubic', antialias: 1, coordinate_transformation_mode: 'tf_crop_and_resize' }, roi: [0, 0, -0.2, 0.1, 1, 1, 0.9, 1.3], sizes: [1, 3, 5, 7] }));
});

test('opset 18: axes and keep_aspect_ratio_policy', async () => {
  for (const axes of [[2, 3], [3, 2], [-1]]) {
    const scales = axes.length === 1 ? [0.45] : axes[0] === 3 ? [0.7, 0.4] : [0.4, 0.7];
    await agreesWithOrt(`aa axes [${axes}]`, model({ opset: 18, attrs: { mode: 'linear', antialias: 1, axes }, scales }));
  }
  for (const keep_aspect_ratio_policy of ['not_larger', 'not_smaller']) {
    await agreesWithOrt(`aa ${keep_aspect_ratio_policy}`, model({ opset: 18, attrs: { mode: 'cubic', antialias: 1, axes: [2, 3], keep_aspect_ratio_policy }, sizes: [5, 7] }));
  }
});

test('a strong downscale (rank-4 and rank-3 data), and one axis up with the other down', async () => {
  await agreesWithOrt('linear aa 1/8', model({ shape: [1, 1, 32, 24], attrs: { mode: 'linear', antialias: 1 }, scales: [1, 1, 0.125, 0.2] }));
  await agreesWithOrt('cubic aa 1/8', model({ shape: [1, 1, 32, 24], attrs: { mode: 'cubic', antialias: 1 }, scales: [1, 1, 0.125, 0.2] }));
  // The ONNX conformance cases' form (their scales are a graph input there, which the importer refuses).
  for (const mode of ['linear', 'cubic']) await agreesWithOrt(`${mode} aa 4x4 by 0.6`, model({ shape: [1, 1, 4, 4], attrs: { mode, antialias: 1 }, scales: [1, 1, 0.6, 0.6] }));
  for (const mode of ['linear', 'cubic']) await agreesWithOrt(`${mode} aa up and down`, model({ attrs: { mode, antialias: 1 }, scales: [1, 1, 1.7, 0.45] }));
});

/** The model's output with the reference evaluator. */
function reference(bytes: Uint8Array): Float32Array {
  const m = importOnnx(bytes, 'm.onnx');
  return runGraph(m.graph, new Map([['x', rand(X.reduce((a, b) => a * b, 1), 11)]]))[0] as Float32Array;
}

test('upsampling: antialias changes nothing (equal to the plain resize within 1e-5 * (1 + |plain|), and to ORT)', async () => {
  for (const coordinate of ['half_pixel', 'asymmetric', 'pytorch_half_pixel', 'align_corners']) {
    for (const [mode, extra] of [['linear', {}], ['cubic', {}], ['cubic', { exclude_outside: 1, cubic_coeff_a: -0.5 }]] as const) {
      const base = { mode, coordinate_transformation_mode: coordinate, ...extra };
      const c = coordinate === 'align_corners' ? { sizes: [1, 3, 19, 25] } : { scales: [1, 1, 1.6, 2.5] };
      const what = `${mode} ${coordinate} ${JSON.stringify(extra)} up`;
      const aa = model({ attrs: { ...base, antialias: 1 }, ...c });
      await agreesWithOrt(`aa ${what}`, aa);
      const got = reference(aa), want = reference(model({ attrs: base, ...c }));
      assert.is(got.length, want.length);
      for (let i = 0; i < got.length; i++) {
        if (!(Math.abs(got[i] - want[i]) <= 1e-5 * (1 + Math.abs(want[i])))) assert.unreachable(`${what}[${i}]: antialias ${got[i]}, plain ${want[i]}`);
      }
    }
  }
});

test('nearest and opsets before 18 ignore antialias; an unchanged length is copied; the graph has one resize per changed axis', async () => {
  for (const [opset, mode] of [[19, 'nearest'], [13, 'linear']] as const) {
    const plain = importOnnx(model({ opset, attrs: { mode }, scales: [1, 1, 0.6, 0.5] }), 'p.onnx');
    const aa = importOnnx(model({ opset, attrs: { mode, antialias: 1 }, scales: [1, 1, 0.6, 0.5] }), 'a.onnx');
    assert.equal(aa.graph.nodes.map((n) => [n.op, n.shape]), plain.graph.nodes.map((n) => [n.op, n.shape]), `${mode} at opset ${opset}`);
  }
  // Scale 1.1 keeps the length 5 of H: ONNX Runtime's antialias kernel copies H.
  const m = await agreesWithOrt('aa scale 1.1', model({ shape: [1, 2, 5, 10], attrs: { mode: 'linear', antialias: 1 }, scales: [1, 1, 1.1, 0.5] }));
  const resizes = m.graph.nodes.filter((n) => isOpNode(n) && n.op === 'resize');
  assert.equal(resizes.map((n) => isOpNode(n) && [n.attrs.axes, n.attrs.taps]), [[[3], antialiasTaps('linear', 0.5)]]);
  const two = importOnnx(model({ attrs: { mode: 'cubic', antialias: 1 }, scales: [1, 1, 0.6, 0.25] }), 'two.onnx');
  const steps = two.graph.nodes.filter((n) => isOpNode(n) && n.op === 'resize').map((n) => isOpNode(n) && [n.attrs.axes, n.attrs.taps, n.shape]);
  assert.equal(steps, [[[3], 17, [1, 3, 12, 2]], [[2], 9, [1, 3, 7, 2]]]);
});

const options = (o: Partial<ResizeOptions>): ResizeOptions => ({ method: 'linear', coordinate: 'half_pixel', nearest: 'round_prefer_floor', cubicA: -0.75, excludeOutside: false, extrapolate: false, ...o });

test('tables: a 2x linear downscale worked by hand (half_pixel), edge pixels repeated or left out', () => {
  // Output 0 lies at input 0.5: pixels -1..2 at distances 1.5, 0.5, 0.5, 1.5 weigh
  // 1 - d/2 = 1/4, 3/4, 3/4, 1/4 (sum 2). Pixel -1 repeats pixel 0, or is left out.
  const axis = { inLen: 6, outLen: 3, scale: 0.5, roiStart: 0, roiEnd: 1 };
  const t = antialiasTables(axis, options({}));
  assert.is(t.taps, 5);
  assert.equal([...t.index.slice(0, 5)], [0, 1, 2, 0, 0]);
  assert.equal([...t.weight!.slice(0, 5)], [0.5, 0.375, 0.125, 0, 0]);
  // Output 1 at input 2.5: pixels 1..4, all inside.
  assert.equal([...t.index.slice(5, 10)], [1, 2, 3, 4, 1]);
  assert.equal([...t.weight!.slice(5, 10)], [0.125, 0.375, 0.375, 0.125, 0]);
  const e = antialiasTables(axis, options({ method: 'cubic', excludeOutside: true }));
  assert.is(e.taps, 9);
  for (let x = 0; x < 3; x++) {
    const row = [...e.weight!.slice(x * 9, x * 9 + 9)];
    assert.ok(Math.abs(row.reduce((a, b) => a + b, 0) - 1) < 1e-6, `row ${x} sums to 1`);
  }
  const ex = antialiasTables(axis, options({ excludeOutside: true }));
  assert.equal([...ex.weight!.slice(0, 3)].map((w) => Math.round(w * 7e6) / 1e6), [3, 3, 1]); // 3/4, 3/4, 1/4 over 7/4
  // Taps: ceil(support / scale) * 2 + 1 when downsampling, the plain support when not.
  assert.equal([antialiasTaps('linear', 0.6), antialiasTaps('cubic', 0.6), antialiasTaps('linear', 2), antialiasTaps('cubic', 3)], [5, 9, 3, 5]);
});

test('refusals in one line', () => {
  const big = model({ shape: [1, 1, 4, 400], attrs: { mode: 'cubic', antialias: 1 }, sizes: [1, 3, 4, 1] });
  assert.match(importError(big), new RegExp(`Resize 'y': unsupported: antialias over 1601 taps on axis 3 \\(scale 0\\.00249\\d*; at most ${MAX_ANTIALIAS_TAPS}: resize in steps\\)`));
});

test('compiled with default schedules: linear and cubic antialias (with extrapolation) equal the reference', async () => {
  const b = new OnnxModelBuilder(19).input('x', [1, 3, 16, 16])
    .float('w1', [8, 3, 3, 3], rand(216, 1, -0.2, 0.2))
    .float('s1', [4], [1, 1, 0.6, 0.4]).int64('z2', [1, 8, 5, 7]).float('roi', [8], [0, 0, 0.1, -0.1, 1, 1, 0.8, 1.2])
    .node('Conv', ['x', 'w1'], ['c1'], { pads: [1, 1, 1, 1] }).node('Relu', ['c1'], ['r1'])
    .node('Resize', ['r1', '', 's1'], ['lin'], { mode: 'linear', antialias: 1 })
    .node('Resize', ['r1', 'roi', '', 'z2'], ['cub'], { mode: 'cubic', antialias: 1, coordinate_transformation_mode: 'tf_crop_and_resize', extrapolation_value: 0.25 })
    .output('lin').output('cub');
  const work = mkdtempSync(path.join(tmpdir(), 'tt-resize-aa-test-'));
  try {
    await compiledAgrees(work, 'm', b.build(), [rand(3 * 16 * 16, 7)]);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

test.run();
