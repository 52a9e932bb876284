// fuseLayerNorm: every written-out form exporters use becomes one layer_norm computing the
// same function (reference evaluator), forms with an intermediate read elsewhere or with
// statistics layer_norm cannot take are left alone, and a decomposed ONNX model compiled
// natively (the pipeline runs the pass) agrees with ONNX Runtime and with the unfused
// reference evaluation. Tolerance everywhere: |got - want| <= 1e-4 + 1e-4 * |want| (the
// fused form computes rsqrt(v + eps) where the written-out one divides by sqrt(v + eps)).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openOrtSession, tryLoadOnnxRuntime } from '../../compare/ort';
import { compileModel } from '../../compile/model';
import { readManifest } from '../../compile/manifest';
import { cancelTransposes, importOnnx } from '../../frontend/onnx/import';
import { OnnxModelBuilder } from '../../frontend/onnx/model-builder';
import type { TensorData } from '../../ir/tensor';
import { runBench } from '../../native/bench';
import { uniform } from '../../runtime/random';
import { readFloat32File, writeFloat32File } from '../../runtime/rawfile';
import { skip } from '../../skip.fixture';
import { parseTarget } from '../../target';
import { Graph, isOpNode, type OpNode } from '../graph';
import { runGraph } from '../run';
import { convertLayout, fuseLayerNorm, optimize } from './index';

const ATOL = 1e-4, RTOL = 1e-4;
const rand = (n: number, seed: number, lo = -1, hi = 1): Float32Array => uniform(n, seed, 0).map((u) => lo + (hi - lo) * u);
const size = (s: readonly number[]): number => s.reduce((a, b) => a * b, 1);
const ops = (g: Graph): string[] => g.nodes.filter(isOpNode).map((n) => n.op);
const opNodes = (g: Graph, op: string): OpNode[] => g.nodes.filter((n): n is OpNode => isOpNode(n) && n.op === op);

function assertClose(what: string, got: readonly TensorData[], want: readonly TensorData[]): void {
  assert.is(got.length, want.length, `${what}: number of outputs`);
  want.forEach((w, k) => {
    assert.is(got[k].length, w.length, `${what}: output ${k} size`);
    for (let i = 0; i < w.length; i++) {
      if (!(Math.abs(got[k][i] - w[i]) <= ATOL + RTOL * Math.abs(w[i]))) assert.unreachable(`${what}: output ${k}[${i}] = ${got[k][i]}, expected ${w[i]}`);
    }
  });
}

function assertSameFunction(before: Graph, after: Graph, what: string): void {
  const feeds = new Map(before.nodes.filter((n) => n.op === 'input').map((n, i) => [n.name, rand(size(n.shape), 31 + i, -3, 3)]));
  assertClose(what, runGraph(after, feeds), runGraph(before, feeds));
}

interface Form {
  square: 'pow' | 'mul';
  norm: 'div' | 'reciprocal' | 'reciprocal-first';
  epsFirst: boolean;
  gamma: 'none' | 'after' | 'before';
  beta: 'none' | 'after' | 'before';
}

interface Built { g: Graph; nodes: Record<'m' | 'd' | 'v' | 's' | 'y', number> }

/** The written-out layer norm of a [2, 5, 8] input over `axes` (default the last) in `form`. */
function writtenOut(form: Form, opts: { axes?: number[]; eps?: Float32Array; epsInput?: boolean; gammaShape?: number[] } = {}): Built {
  const g = new Graph();
  const shape = [2, 5, 8];
  const axes = opts.axes ?? [2];
  const x = g.input('x', shape);
  const m = g.op('mean', [x], { axes, keepdims: true });
  const d = g.op('subtract', [x, m]);
  const sq = form.square === 'pow' ? g.op('power_scalar', [d], { exponent: 2 }) : g.op('multiply', [d, d]);
  const v = g.op('mean', [sq], { axes, keepdims: true });
  const eps = opts.epsInput ? g.input('eps', []) : g.constant('eps', [], opts.eps ?? Float32Array.of(1e-5));
  const s = g.op('sqrt', [g.op('add', form.epsFirst ? [eps, v] : [v, eps])]);
  let y: number;
  if (form.norm === 'div') y = g.op('divide', [d, s]);
  else {
    const r = g.op('reciprocal', [s]);
    y = g.op('multiply', form.norm === 'reciprocal' ? [d, r] : [r, d]);
  }
  let out = y;
  const gShape = opts.gammaShape ?? shape.slice(axes[0]);
  if (form.gamma !== 'none') {
    const gamma = g.constant('gamma', gShape, rand(size(gShape), 5, 0.5, 1.5));
    out = g.op('multiply', form.gamma === 'after' ? [out, gamma] : [gamma, out]);
  }
  if (form.beta !== 'none') {
    const beta = g.constant('beta', gShape, rand(size(gShape), 6, -0.5, 0.5));
    out = g.op('add', form.beta === 'after' ? [out, beta] : [beta, out]);
  }
  g.outputs = [out];
  return { g, nodes: { m, d, v, s, y } };
}

const BASE: Form = { square: 'pow', norm: 'div', epsFirst: false, gamma: 'after', beta: 'after' };

const FORMS: Form[] = [];
for (const square of ['pow', 'mul'] as const) {
  for (const norm of ['div', 'reciprocal', 'reciprocal-first'] as const) {
    for (const epsFirst of [false, true]) {
      for (const [gamma, beta] of [['after', 'after'], ['before', 'before'], ['after', 'none'], ['none', 'before'], ['none', 'none']] as const) {
        FORMS.push({ square, norm, epsFirst, gamma, beta });
      }
    }
  }
}

test(`each of the ${FORMS.length} written-out forms becomes one layer_norm computing the same function`, () => {
  for (const form of FORMS) {
    const what = JSON.stringify(form);
    const { g } = writtenOut(form);
    const fused = fuseLayerNorm(g);
    assert.equal(ops(fused), ['layer_norm'], what);
    const [ln] = opNodes(fused, 'layer_norm');
    assert.equal(ln.attrs, { axis: 2, epsilon: Math.fround(1e-5) }, what);
    // gamma, or ones when there is none; beta only when there is one.
    assert.is(ln.inputs.length, form.beta === 'none' ? 2 : 3, `${what}: inputs`);
    if (form.gamma === 'none') assert.equal(Array.from(fused.node(ln.inputs[1]).shape), [8], `${what}: ones' shape`);
    assertSameFunction(g, fused, what);
  }
});

test('a reader of m, d, v or s outside the pattern, or one of them a graph output, leaves the pattern as it is', () => {
  for (const key of ['m', 'd', 'v', 's'] as const) {
    const extra = writtenOut(BASE);
    extra.g.outputs = [...extra.g.outputs, extra.g.op('negative', [extra.nodes[key]])];
    assert.ok(ops(fuseLayerNorm(extra.g)).includes('subtract'), `extra reader of ${key}`);
    const out = writtenOut(BASE);
    out.g.outputs = [...out.g.outputs, out.nodes[key]];
    assert.ok(ops(fuseLayerNorm(out.g)).includes('subtract'), `${key} a graph output`);
  }
});

test('y read elsewhere or a graph output: layer_norm (gamma ones) stands for y, the affine part stays', () => {
  for (const asOutput of [false, true]) {
    const { g, nodes } = writtenOut(BASE);
    g.outputs = [...g.outputs, asOutput ? nodes.y : g.op('negative', [nodes.y])];
    const fused = fuseLayerNorm(g);
    assert.equal(ops(fused), asOutput ? ['layer_norm', 'multiply', 'add'] : ['layer_norm', 'multiply', 'add', 'negative']);
    assert.is(opNodes(fused, 'layer_norm')[0].inputs.length, 2);
    assertSameFunction(g, fused, asOutput ? 'y an output' : 'y read elsewhere');
  }
});

test('y * gamma read elsewhere: layer_norm takes gamma, the shift stays an add', () => {
  const { g } = writtenOut(BASE);
  const add = g.node(g.outputs[0]) as OpNode;
  g.outputs = [add.id, g.op('negative', [add.inputs[0]])];
  const fused = fuseLayerNorm(g);
  assert.equal(ops(fused), ['layer_norm', 'add', 'negative']);
  assert.is(opNodes(fused, 'layer_norm')[0].inputs.length, 2);
  assertSameFunction(g, fused, 'shared y * gamma');
});

test('epsilon and the trailing reduced axes are carried; other axes or an eps that is no constant are refused; a per-row gamma is taken', () => {
  const wide = writtenOut(BASE, { axes: [1, 2], eps: Float32Array.of(1e-3) });
  const fused = fuseLayerNorm(wide.g);
  assert.equal(ops(fused), ['layer_norm']);
  assert.equal(opNodes(fused, 'layer_norm')[0].attrs, { axis: 1, epsilon: Math.fround(1e-3) });
  assertSameFunction(wide.g, fused, 'axes [1, 2], eps 1e-3');

  const negative = writtenOut({ ...BASE, gamma: 'none', beta: 'none' }, { axes: [-2, -1] });
  assert.equal(opNodes(fuseLayerNorm(negative.g), 'layer_norm')[0].attrs.axis, 1);

  // gamma [5, 8] varies over rows too: layer_norm broadcasts it the same way.
  const perRow = writtenOut(BASE, { gammaShape: [5, 8] });
  assertSameFunction(perRow.g, fuseLayerNorm(perRow.g), 'gamma [5, 8]');
  assert.equal(ops(fuseLayerNorm(perRow.g)), ['layer_norm']);

  for (const [what, built] of [
    ['axes [1] (not trailing)', writtenOut(BASE, { axes: [1] })],
    ['axes [0, 2] (not contiguous)', writtenOut(BASE, { axes: [0, 2] })],
  ] as const) assert.ok(ops(fuseLayerNorm(built.g)).includes('subtract'), what);

  // eps a model input: not a constant layer_norm could carry.
  const epsInput = writtenOut(BASE, { epsInput: true });
  assert.ok(ops(fuseLayerNorm(epsInput.g)).includes('subtract'), 'eps an input');
});

test('statistics over H and W of an NCHW map (ReduceMean [2, 3] imports as global_avg_pool2d) become layer_norm axis 2', () => {
  const g = new Graph();
  const x = g.input('x', [2, 3, 4, 5]);
  const pool = (id: number): number => g.op('global_avg_pool2d', [id], { layout: 'NCHW' });
  const d = g.op('subtract', [x, pool(x)]);
  const v = pool(g.op('power_scalar', [d], { exponent: 2 }));
  const y = g.op('divide', [d, g.op('sqrt', [g.op('add', [v, g.constant('eps', [1, 1, 1, 1], Float32Array.of(1e-5))])])]);
  g.outputs = [g.op('add', [g.op('multiply', [y, g.constant('gamma', [4, 5], rand(20, 3, 0.5, 1.5))]), g.constant('beta', [1, 5], rand(5, 4))])];
  const fused = fuseLayerNorm(g);
  assert.equal(ops(fused), ['layer_norm']);
  assert.equal(opNodes(fused, 'layer_norm')[0].attrs, { axis: 2, epsilon: Math.fround(1e-5) });
  assertSameFunction(g, fused, 'over H and W');
});

// ---- An ONNX model of the opset-14 form, compiled ----

const [B, S, C] = [2, 7, 24];

/** torch.onnx's nn.LayerNorm below opset 17 (Pow, Div), then a second one written with Mul(d, d) and Reciprocal, no beta. */
function decomposedModel(): Uint8Array {
  const m = new OnnxModelBuilder(14).input('x', [B, S, C])
    .float('two', [], [2]).float('eps', [], [1e-5]).float('eps2', [], [1e-3])
    .float('gamma', [C], rand(C, 1, 0.5, 1.5)).float('beta', [C], rand(C, 2, -0.5, 0.5)).float('gamma2', [C], rand(C, 3, 0.5, 1.5));
  m.node('ReduceMean', ['x'], ['m'], { axes: [-1], keepdims: 1 }).node('Sub', ['x', 'm'], ['d'])
    .node('Pow', ['d', 'two'], ['sq']).node('ReduceMean', ['sq'], ['v'], { axes: [-1], keepdims: 1 })
    .node('Add', ['v', 'eps'], ['ve']).node('Sqrt', ['ve'], ['s']).node('Div', ['d', 's'], ['y'])
    .node('Mul', ['y', 'gamma'], ['yg']).node('Add', ['yg', 'beta'], ['ln1']);
  m.node('ReduceMean', ['ln1'], ['m2'], { axes: [2], keepdims: 1 }).node('Sub', ['ln1', 'm2'], ['d2'])
    .node('Mul', ['d2', 'd2'], ['sq2']).node('ReduceMean', ['sq2'], ['v2'], { axes: [2], keepdims: 1 })
    .node('Add', ['eps2', 'v2'], ['ve2']).node('Sqrt', ['ve2'], ['s2']).node('Reciprocal', ['s2'], ['r2'])
    .node('Mul', ['r2', 'd2'], ['y2']).node('Mul', ['gamma2', 'y2'], ['out']).output('out');
  return m.build();
}

test('the opset-14 ONNX form: optimize gives two layer_norms, same function as the unfused graph and ONNX Runtime', async () => {
  const bytes = decomposedModel();
  const model = importOnnx(bytes, 'layer-norm-14.onnx');
  const optimized = optimize(model.graph);
  assert.equal(ops(optimized).filter((op) => op === 'layer_norm').length, 2);
  assert.not.ok(ops(optimized).some((op) => op === 'mean' || op === 'sqrt'));
  const inputs = [rand(B * S * C, 9, -4, 4)];
  const feeds = new Map([['x', inputs[0]]]);
  const unfused = runGraph(model.graph, feeds);
  assertClose('optimized vs unfused', runGraph(optimized, feeds), unfused);
  const ort = tryLoadOnnxRuntime();
  if (!ort.module) { skip('layer norm: the comparison with ONNX Runtime', ort.error); return; }
  const session = await openOrtSession(bytes, 1, [[B, S, C]]);
  const want = await session.run(inputs);
  await session.release();
  assertClose('optimized vs ONNX Runtime', runGraph(optimized, feeds), want);
});

const work = mkdtempSync(path.join(tmpdir(), 'tt-fuse-layer-norm-'));
test.after(() => rmSync(work, { recursive: true, force: true }));

test('the opset-14 ONNX form compiled (the pipeline fuses it) agrees with the unfused reference and ONNX Runtime', async () => {
  const bytes = decomposedModel();
  const model = importOnnx(bytes, 'layer-norm-14.onnx');
  const graph = cancelTransposes(convertLayout(model.graph, 'NHWC'));
  const outDir = path.join(work, 'ln');
  const result = await compileModel({ name: 'ln', graph, target: parseTarget('llvm'), outDir, cacheDir: path.join(work, 'cache') });
  const inputs = [rand(B * S * C, 10, -4, 4)];
  const inFile = path.join(work, 'ln-x.bin');
  await writeFloat32File(inFile, inputs[0]);
  const saved = path.join(work, 'ln-out');
  await runBench({ model: result.library, params: result.params, repeat: 1, number: 1, minRepeatMs: 0, threads: 1, inputs: { x: inFile }, saveOutputs: saved });
  const [out] = readManifest(outDir).outputs;
  if (out.file === undefined) throw new Error('the manifest names no file for the output');
  const got = [await readFloat32File(path.join(saved, out.file))];
  assertClose('compiled vs unfused reference', got, runGraph(model.graph, new Map([['x', inputs[0]]])));
  const ort = tryLoadOnnxRuntime();
  if (!ort.module) { skip('compiled layer norm: the comparison with ONNX Runtime', ort.error); return; }
  const session = await openOrtSession(bytes, 1, [[B, S, C]]);
  const want = await session.run(inputs);
  await session.release();
  assertClose('compiled vs ONNX Runtime', got, want);
});

test.run();
