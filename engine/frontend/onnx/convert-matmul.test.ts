// MatMul (any ranks, broadcasting), Gemm (transA/transB/alpha/beta, C broadcast) and
// Einsum's matmul-shaped forms: imported, run with the reference evaluator (runGraph) and
// compared with ONNX Runtime on seeded inputs (|ours - ORT| <= 1e-5 * (1 + |ORT|));
// attention's transposes and head-splitting reshapes are folded into batch_matmul's access
// pattern; the forms we refuse say so in one line.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openOrtSession, tryLoadOnnxRuntime } from '../../compare/ort';
import { extractTasks } from '../../graph/extract';
import { Graph, liveNodes } from '../../graph/graph';
import { OPS } from '../../graph/ops';
import { runGraph } from '../../graph/run';
import { uniform } from '../../runtime/random';
import { skip } from '../../skip.fixture';
import { operandView } from './convert-matmul';
import { importOnnx } from './import';
import { OnnxModelBuilder } from './model-builder';

const ort = tryLoadOnnxRuntime();
const rand = (n: number, seed: number, lo = -1, hi = 1): Float32Array => uniform(n, seed, 0).map((u) => lo + (hi - lo) * u);
const size = (s: readonly number[]): number => s.reduce((a, b) => a * b, 1);
const TOL = 1e-5;

/** Import, run, compare every output with ONNX Runtime; returns the imported model. */
async function agrees(what: string, bytes: Uint8Array): Promise<ReturnType<typeof importOnnx>> {
  const model = importOnnx(bytes, `${what}.onnx`);
  const inputs = model.inputs.map((inp, i) => rand(size(inp.shape), 21 + i));
  const got = runGraph(model.graph, new Map(model.inputs.map((inp, i) => [inp.name, inputs[i]])));
  if (!ort.module) { skip(`${what}: the comparison with ONNX Runtime`, ort.error); return model; }
  const session = await openOrtSession(bytes, 1, model.inputs.map((i) => i.shape));
  const want = await session.run(inputs);
  await session.release();
  assert.is(want.length, got.length, `${what}: outputs`);
  want.forEach((w, k) => {
    assert.is(got[k].length, w.length, `${what}: output ${k} size`);
    for (let i = 0; i < w.length; i++) {
      if (!(Math.abs(got[k][i] - w[i]) <= TOL * (1 + Math.abs(w[i])))) assert.unreachable(`${what}: output ${k}[${i}] = ${got[k][i]}, ONNX Runtime ${w[i]}`);
    }
  });
  return model;
}

const liveOps = (m: ReturnType<typeof importOnnx>): string[] => [...liveNodes(m.graph)].map((id) => m.graph.node(id).op);

test('MatMul: N-D by a constant (dense, no reshape), 1-D operands, broadcast batches, computed operands', async () => {
  const cases: { a: number[]; b: number[]; constB?: boolean }[] = [
    { a: [2, 3, 4, 5], b: [5, 6], constB: true },
    { a: [5], b: [5, 6], constB: true },
    { a: [2, 3, 4], b: [4], constB: true },
    { a: [2, 1, 3, 4], b: [5, 4, 6] },
    { a: [3, 4], b: [2, 4, 5] },
    { a: [4], b: [2, 4, 5] },
    { a: [2, 3, 4], b: [4] },
    { a: [3, 4], b: [4, 2] },
  ];
  for (const [i, c] of cases.entries()) {
    const b = new OnnxModelBuilder(13).input('a', c.a);
    if (c.constB) b.float('b', c.b, rand(size(c.b), 40 + i)); else b.input('b', c.b);
    b.node('MatMul', ['a', 'b'], ['y']).output('y');
    const m = await agrees(`matmul [${c.a}] x [${c.b}]`, b.build());
    if (c.constB && c.b.length === 2 && c.a.length > 1) assert.equal(liveOps(m).filter((o) => o !== 'input' && o !== 'constant'), ['dense']);
  }
});

test('attention: Q and V read through the head split in place (folded into batch_matmul); K^T stays a copy', async () => {
  const [B, S, H, D] = [2, 5, 2, 4], C = H * D;
  const b = new OnnxModelBuilder(13).input('x', [B, S, C])
    .float('wq', [C, C], rand(C * C, 1)).float('wk', [C, C], rand(C * C, 2)).float('wv', [C, C], rand(C * C, 3))
    .float('scale', [], [Math.sqrt(D)])
    .int64('heads', [B, S, H, D]).int64('merged', [B, S, C])
    .node('MatMul', ['x', 'wq'], ['q']).node('Reshape', ['q', 'heads'], ['q4']).node('Transpose', ['q4'], ['qt'], { perm: [0, 2, 1, 3] })
    .node('MatMul', ['x', 'wk'], ['k']).node('Reshape', ['k', 'heads'], ['k4']).node('Transpose', ['k4'], ['kt'], { perm: [0, 2, 3, 1] })
    .node('MatMul', ['x', 'wv'], ['v']).node('Reshape', ['v', 'heads'], ['v4']).node('Transpose', ['v4'], ['vt'], { perm: [0, 2, 1, 3] })
    .node('MatMul', ['qt', 'kt'], ['s']).node('Div', ['s', 'scale'], ['ss']).node('Softmax', ['ss'], ['p'], { axis: -1 })
    .node('MatMul', ['p', 'vt'], ['ctx']).node('Transpose', ['ctx'], ['ct'], { perm: [0, 2, 1, 3] }).node('Reshape', ['ct', 'merged'], ['y'])
    .output('y');
  const m = await agrees('attention', b.build());
  const ops = liveOps(m);
  assert.is(ops.filter((o) => o === 'batch_matmul').length, 2);
  // Q and V are read in place; K^T stays one copy (reshape + transpose: read in place, its rows
  // would be strided), and the context's transpose back to [B, S, H*D] is the other.
  assert.is(ops.filter((o) => o === 'transpose').length, 2, ops.join(' '));
  assert.is(ops.filter((o) => o === 'reshape').length, 2, ops.join(' '));
  const views = m.graph.nodes.filter((x) => x.op === 'batch_matmul').map((x) => ('attrs' in x ? [x.attrs.viewA !== undefined, x.attrs.viewB !== undefined] : []));
  assert.equal(views, [[true, false], [false, true]]);
  // A plain K^T (a transpose of the last two axes) as B is read from its copy, in the NN form;
  // as A, the transpose is read in place (transA).
  const nt = new OnnxModelBuilder(13).input('q', [3, 4, 5]).input('k', [3, 6, 5])
    .node('Transpose', ['k'], ['kt'], { perm: [0, 2, 1] }).node('MatMul', ['q', 'kt'], ['y'])
    .node('Transpose', ['q'], ['qt'], { perm: [0, 2, 1] }).node('MatMul', ['qt', 'q'], ['z']).output('y').output('z');
  const mt = await agrees('q k^T', nt.build());
  const [bm, am] = mt.graph.nodes.filter((x) => x.op === 'batch_matmul');
  assert.equal(bm.inputs.map((i) => mt.graph.node(i).name), ['q', 'kt']);
  assert.ok('attrs' in bm && bm.attrs.transB === false && bm.attrs.viewB === undefined);
  assert.equal(am.inputs.map((i) => mt.graph.node(i).name), ['q', 'q']);
  assert.ok('attrs' in am && am.attrs.transA === true);
});

test('a product of a tensor with itself (x^T x) is one task reading one placeholder', async () => {
  const b = new OnnxModelBuilder(13).input('x', [2, 3, 4])
    .node('Einsum', ['x', 'x'], ['y'], { equation: 'bki,bkj->bij' }).output('y');
  const m = await agrees('x^T x', b.build());
  const tasks = extractTasks(m.graph);
  assert.is(tasks.length, 1);
  assert.is(tasks[0].dag.inputs.length, 1);
});

test('Gemm: transA/transB, alpha/beta, C of shapes [N], [M, 1], [] and [M, N], constant and computed B', async () => {
  const [M, K, N] = [3, 4, 5];
  let i = 0;
  for (const transA of [0, 1]) for (const transB of [0, 1]) for (const constB of [true, false]) for (const c of [[N], [M, 1], [], [M, N]]) {
    const as = transA ? [K, M] : [M, K], bs = transB ? [N, K] : [K, N];
    const b = new OnnxModelBuilder(13).input('a', as);
    if (constB) b.float('b', bs, rand(size(bs), 60 + i)); else b.input('b', bs);
    b.float('c', c, rand(size(c), 80 + i++));
    b.node('Gemm', ['a', 'b', 'c'], ['y'], { transA, transB, alpha: 0.75, beta: 1.5 }).output('y');
    await agrees(`gemm transA=${transA} transB=${transB} ${constB ? 'const' : 'computed'} B, C [${c}]`, b.build());
  }
  const noC = new OnnxModelBuilder(13).input('a', [M, K]).float('b', [K, N], rand(K * N, 99))
    .node('Gemm', ['a', 'b'], ['y']).output('y');
  await agrees('gemm without C', noC.build());
});

test('Einsum: matmul-shaped forms and transposes agree with ONNX Runtime; other forms are refused in one line', async () => {
  const forms: { eq: string; shapes: number[][] }[] = [
    { eq: 'bij,bjk->bik', shapes: [[2, 3, 4], [2, 4, 5]] },
    { eq: 'bhid,bhjd->bhij', shapes: [[2, 3, 4, 5], [2, 3, 6, 5]] },
    { eq: 'ij,jk', shapes: [[3, 4], [4, 5]] },
    { eq: 'ij,kj->ik', shapes: [[3, 4], [5, 4]] },
    { eq: 'ij->ji', shapes: [[3, 4]] },
    { eq: 'bij,bj->bi', shapes: [[2, 3, 4], [2, 4]] },
    { eq: 'bhij,bhjd->bihd', shapes: [[2, 3, 4, 5], [2, 3, 5, 6]] },
    { eq: '...ij,...jk->...ik', shapes: [[2, 3, 4], [2, 4, 5]] },
    { eq: 'ji,jk->ki', shapes: [[4, 3], [4, 5]] },
    // Several free letters in an operand (a linear layer over [b, n, c]), several contracted ones.
    { eq: 'bnc,cd->bnd', shapes: [[2, 5, 8], [8, 6]] },
    { eq: 'ijk,jkl->il', shapes: [[2, 3, 4], [3, 4, 5]] },
    { eq: 'bqhd,bkhd->bhqk', shapes: [[2, 4, 3, 5], [2, 6, 3, 5]] },
    { eq: 'abc,cde->abde', shapes: [[2, 3, 4], [4, 2, 3]] },
  ];
  for (const f of forms) {
    const b = new OnnxModelBuilder(13);
    f.shapes.forEach((s, k) => b.input(`x${k}`, s));
    b.node('Einsum', f.shapes.map((_, k) => `x${k}`), ['y'], { equation: f.eq }).output('y');
    await agrees(`einsum ${f.eq}`, b.build());
  }
  const refused: { eq: string; shapes: number[][]; why: RegExp }[] = [
    { eq: 'ii->i', shapes: [[3, 3]], why: /Einsum 'e': unsupported: Einsum 'ii->i': .*repeated/ },
    { eq: 'ij->i', shapes: [[3, 4]], why: /Einsum 'e': unsupported: Einsum 'ij->i': a sum over axes/ },
    { eq: 'ij,jk,kl->il', shapes: [[2, 3], [3, 4], [4, 5]], why: /unsupported: .*3 operands/ },
    { eq: 'i,j->ij', shapes: [[3], [4]], why: /unsupported: .*no contracted letter/ },
  ];
  for (const r of refused) {
    const b = new OnnxModelBuilder(13);
    r.shapes.forEach((s, k) => b.input(`x${k}`, s));
    b.node('Einsum', r.shapes.map((_, k) => `x${k}`), ['y'], { equation: r.eq }, 'e').output('y');
    assert.throws(() => importOnnx(b.build(), 'e.onnx'), (e: Error) => r.why.test(e.message), r.eq);
  }
});

test('operandView: a unit-step slice (one part of a Split) under a head split is a region of the stored tensor', () => {
  if (!('strided_slice' in OPS)) { skip('operandView of a slice', 'no strided_slice operator yet'); return; }
  const g = new Graph();
  const qkv = g.input('qkv', [2, 5, 24]);
  const k = g.op('strided_slice', [qkv], { begin: [0, 0, 8], step: [1, 1, 1], shape: [2, 5, 8] });
  const t = g.op('transpose', [g.op('reshape', [k], { newShape: [2, 5, 2, 4] })], { axes: [0, 2, 1, 3] });
  assert.equal(operandView(g, t), { id: qkv, swapped: false, view: { begin: [0, 0, 8], box: [2, 5, 8], shape: [2, 5, 2, 4], perm: [0, 2, 1, 3] } });
  // A slice after the head split is not a region of the stored tensor: the chain starts there.
  const late = g.op('strided_slice', [g.op('reshape', [qkv], { newShape: [2, 5, 6, 4] })], { begin: [0, 0, 2, 0], step: [1, 1, 1, 1], shape: [2, 5, 2, 4] });
  assert.equal(operandView(g, late).id, late);
});

test.run();
