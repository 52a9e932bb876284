// GridSample against ONNX Runtime, compiled natively (default schedules, NHWC inside) and in
// the reference evaluator in both layouts: every mode x padding_mode x align_corners at
// opset 20 (4-D) and 22 (5-D, where ONNX Runtime has no cubic: that one against the
// evaluator alone, itself checked against a plain reference in topi/grid-sample.test.ts),
// the opset 16 names (bilinear, bicubic), and GridSample after a Conv (the layout pass
// runs the conv channels last and hands GridSample NCHW) with a grid computed from another
// conv (a flow field: Conv -> Transpose -> scaled past [-1, 1]). The grids hold the borders
// (-1, 1), points outside (to +-7.375: several reflections), nearest's exact halves (an axis
// of 4 pixels with align_corners 0 and of 5 with align_corners 1) and seeded random ones.
// The special values are multiples of 1/16, so their unnormalised coordinates are exact in
// float32 and float64 alike: the evaluator computes in float64, the kernels and ONNX Runtime
// in float32, and a coordinate a rounding away from a half rounds differently in each.
// Every float32 output within 1e-5 absolute of ONNX Runtime's (and of the evaluator's).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openOrtSession, tryLoadOnnxRuntime } from '../../compare/ort';
import { compileModel } from '../../compile/model';
import { readManifest } from '../../compile/manifest';
import { isOpNode } from '../../graph/graph';
import { convertLayout } from '../../graph/passes';
import { runGraph } from '../../graph/run';
import { runBench } from '../../native/bench';
import { outputFileName } from '../../runtime/abi';
import { readFloat32File, writeFloat32File } from '../../runtime/rawfile';
import { skip } from '../../skip.fixture';
import { parseTarget } from '../../target';
import { cancelTransposes, importOnnx } from './import';
import { OnnxModelBuilder } from './model-builder';
import { importError, rand } from './ort-agree.fixture';
import { DataType } from './schema';

const TOL = 1e-5;
const ort = tryLoadOnnxRuntime();
const size = (s: readonly number[]): number => s.reduce((a, b) => a * b, 1);

const SPECIAL = [-1, 1, 0, -0.5, 0.5, -0.25, 0.25, -0.75, 0.75, 1.5, -1.5, 1.0625, -1.0625, 2.25, -3.125, 4.625, -7.375, 7.375, -0.125, 0.375];

/** A grid of shape `gs`: its first points cycle through SPECIAL in every component, the rest seeded in [-1.6, 1.6). */
function grid(gs: readonly number[], seed: number): Float32Array {
  const g = rand(size(gs), seed, -1.6, 1.6);
  const r = gs[gs.length - 1];
  for (let p = 0; p * r < Math.min(g.length, SPECIAL.length * r * 2); p++) {
    for (let k = 0; k < r; k++) g[p * r + k] = SPECIAL[(p + 7 * k) % SPECIAL.length];
  }
  return g;
}

function compare(what: string, got: readonly ArrayLike<number>[], want: readonly ArrayLike<number>[], against: string): void {
  assert.is(got.length, want.length, `${what}: number of outputs`);
  want.forEach((w, k) => {
    assert.is(got[k].length, w.length, `${what}: output ${k} size (${against})`);
    for (let i = 0; i < w.length; i++) {
      if (!(Math.abs(got[k][i] - w[i]) <= TOL)) assert.unreachable(`${what}: output ${k}[${i}] = ${got[k][i]}, ${against} ${w[i]}`);
    }
  });
}

/**
 * Import `bytes`; the evaluator's NCHW and NHWC results agree, the native build agrees with
 * them and, with `withOrt`, all with ONNX Runtime. Returns the imported model.
 */
async function agrees(what: string, bytes: Uint8Array, inputs: readonly Float32Array[], withOrt = true): Promise<ReturnType<typeof importOnnx>> {
  const model = importOnnx(bytes, `${what}.onnx`);
  const feeds = new Map(model.inputs.map((inp, i) => [inp.name, inputs[i]]));
  const nchw = runGraph(model.graph, feeds);
  const graph = cancelTransposes(convertLayout(model.graph, 'NHWC'));
  compare(`${what} (NHWC)`, runGraph(graph, feeds), nchw, 'NCHW');

  const work = mkdtempSync(path.join(tmpdir(), 'tt-grid-sample-test-'));
  let native: Float32Array[];
  try {
    const outDir = path.join(work, 'out');
    const result = await compileModel({ name: 'm', graph, target: parseTarget('llvm'), outDir, cacheDir: path.join(work, 'cache') });
    const files: Record<string, string> = {};
    for (const [i, inp] of model.inputs.entries()) {
      files[inp.name] = path.join(work, `in${i}.bin`);
      await writeFloat32File(files[inp.name], inputs[i]);
    }
    await runBench({ model: result.library, params: result.params, repeat: 1, number: 1, minRepeatMs: 0, threads: 1, inputs: files, saveOutputs: path.join(work, 'y') });
    native = await Promise.all(readManifest(outDir).outputs.map((o) => readFloat32File(path.join(work, 'y', o.file ?? `${outputFileName(o.name)}.bin`))));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  compare(`${what} (native)`, native, nchw, 'the evaluator');

  if (!withOrt) return model;
  if (!ort.module) { skip(`${what}: the comparison with ONNX Runtime`, ort.error); return model; }
  const session = await openOrtSession(bytes, 1, model.inputs.map((i) => i.shape));
  const want = await session.run(inputs);
  await session.release();
  compare(what, nchw, want, 'ONNX Runtime');
  compare(`${what} (native)`, native, want, 'ONNX Runtime');
  return model;
}

interface Variant { mode: string; padding_mode: string; align_corners: number }

function variants(modes: readonly string[]): Variant[] {
  return modes.flatMap((mode) => ['zeros', 'border', 'reflection'].flatMap((padding_mode) => [0, 1].map((align_corners) => ({ mode, padding_mode, align_corners }))));
}

/** x, grid -> one GridSample per variant, each an output. */
function samplers(opset: number, xs: readonly number[], gs: readonly number[], vs: readonly Variant[]): Uint8Array {
  const b = new OnnxModelBuilder(opset).input('x', xs).input('grid', gs);
  vs.forEach((v, i) => b.node('GridSample', ['x', 'grid'], [`y${i}`], { ...v }).output(`y${i}`));
  return b.build();
}

test('opset 20, 4-D: every mode, padding_mode and align_corners (axes of 4 and 5 pixels)', async () => {
  const xs = [2, 3, 4, 5], gs = [2, 6, 7, 2];
  const vs = variants(['nearest', 'linear', 'cubic']);
  const m = await agrees('gridsample-4d', samplers(20, xs, gs, vs), [rand(size(xs), 3), grid(gs, 4)]);
  assert.is(m.graph.nodes.filter((n) => isOpNode(n) && n.op === 'grid_sample').length, vs.length);
  // An axis of 2 pixels and one of 1 (align_corners 1 with reflection folds over a single pixel).
  await agrees('gridsample-4d-small', samplers(20, [1, 2, 2, 1], [1, 5, 8, 2], vs), [rand(4, 5), grid([1, 5, 8, 2], 6)]);
});

test('opset 22, 5-D: nearest and linear against ONNX Runtime; cubic against the evaluator (ONNX Runtime has no 5-D cubic)', async () => {
  const xs = [1, 2, 3, 4, 5], gs = [1, 2, 5, 6, 3];
  const inputs = [rand(size(xs), 7), grid(gs, 8)];
  await agrees('gridsample-5d', samplers(22, xs, gs, variants(['nearest', 'linear'])), inputs);
  await agrees('gridsample-5d-cubic', samplers(22, xs, gs, variants(['cubic'])), inputs, false);
});

test('opset 16 (bilinear, nearest, bicubic) after a Conv, with a grid computed from a conv (Transpose to [N, H, W, 2])', async () => {
  const b = new OnnxModelBuilder(16).input('x', [1, 3, 6, 7]).input('grid', [1, 5, 8, 2])
    .float('w', [4, 3, 3, 3], rand(108, 21, -0.3, 0.3)).float('wf', [2, 3, 3, 3], rand(54, 22, -0.4, 0.4)).float('s', [1], [1.3])
    .node('Conv', ['x', 'w'], ['c'], { pads: [1, 1, 1, 1] })
    .node('Conv', ['x', 'wf'], ['f'], { pads: [1, 1, 1, 1] }).node('Transpose', ['f'], ['ft'], { perm: [0, 2, 3, 1] })
    .node('Tanh', ['ft'], ['fn']).node('Mul', ['fn', 's'], ['flow'])
    .node('GridSample', ['c', 'grid'], ['g1'], { mode: 'bilinear', padding_mode: 'border' }).node('Relu', ['g1'], ['y1'])
    .node('GridSample', ['c', 'flow'], ['y2'], { mode: 'bicubic', padding_mode: 'reflection', align_corners: 1 })
    .node('GridSample', ['c', 'flow'], ['y3'], { mode: 'nearest' })
    .node('GridSample', ['c', 'grid'], ['y4'])
    .output('y1').output('y2').output('y3').output('y4');
  const m = await agrees('gridsample-after-conv', b.build(), [rand(3 * 6 * 7, 23), grid([1, 5, 8, 2], 24)]);
  // The convs run channels last; GridSample reads NCHW (the layout pass transposes back).
  const nhwc = cancelTransposes(convertLayout(m.graph, 'NHWC'));
  const convs = nhwc.nodes.filter((n) => isOpNode(n) && n.op === 'conv2d');
  assert.ok(convs.length === 2 && convs.every((n) => isOpNode(n) && n.attrs.layout === 'NHWC'));
  for (const n of nhwc.nodes) if (isOpNode(n) && n.op === 'grid_sample') assert.equal(nhwc.node(n.inputs[0]).shape, [1, 4, 6, 7]);
});

test('refusals and bad models in one line', () => {
  const model = (opset: number, xs: number[], gs: number[], attrs: Record<string, string | number> = {}, gridType: number = DataType.FLOAT): Uint8Array =>
    new OnnxModelBuilder(opset).input('x', xs).typedInput('grid', gridType, gs).node('GridSample', ['x', 'grid'], ['y'], attrs).output('y').build();
  assert.match(importError(model(20, [1, 1, 3, 3], [1, 2, 2, 2], { mode: 'bilinear' })), /GridSample 'y': mode 'bilinear' \(opset 20: linear, nearest, cubic\)/);
  assert.match(importError(model(16, [1, 1, 3, 3], [1, 2, 2, 2], { mode: 'cubic' })), /GridSample 'y': mode 'cubic' \(opset 16: bilinear, nearest, bicubic\)/);
  assert.match(importError(model(20, [1, 1, 3, 3], [1, 2, 2, 2], { padding_mode: 'wrap' })), /padding_mode 'wrap' \(zeros, border, reflection\)/);
  assert.match(importError(model(20, [1, 1, 3, 3], [1, 2, 2, 2], { align_corners: 2 })), /align_corners 2 \(0 or 1\)/);
  assert.match(importError(model(16, [1, 1, 2, 3, 3], [1, 2, 2, 2, 3])), /X of rank 5 \(opset 16 takes 4-D X \[N, C, H, W\]; 5-D from opset 20\)/);
  assert.match(importError(model(20, [1, 1, 3], [1, 2, 1])), /GridSample 'y': unsupported: X of rank 3 \(4-D \[N, C, H, W\] or 5-D \[N, C, D, H, W\]\)/);
  assert.match(importError(model(20, [1, 1, 3, 3], [1, 2, 2, 3])), /grid \[1, 2, 2, 3\] for X \[1, 1, 3, 3\] \(expected \[1, H_out, W_out, 2\]\)/);
  assert.match(importError(model(20, [2, 1, 3, 3], [1, 2, 2, 2])), /grid \[1, 2, 2, 2\] for X \[2, 1, 3, 3\]/);
  assert.match(importError(model(20, [1, 1, 3, 3], [1, 2, 2, 2], {}, DataType.INT64)), /GridSample 'y': unsupported: grid of type int32 \(float only\)/);
  assert.match(importError(model(13, [1, 1, 3, 3], [1, 2, 2, 2])), /GridSample is defined from opset 16 \(this model's opset is 13\)/);
});

test.run();
