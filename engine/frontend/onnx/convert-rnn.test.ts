// LSTM, GRU and RNN, unrolled at import, against ONNX Runtime (ort-agree.fixture.ts:
// |ours - ORT| <= 1e-5 * (1 + |ORT|), NCHW and NHWC runs of the reference evaluator):
// each direction, layout 0 and 1, biases, initial states, peepholes, clip, input_forget,
// linear_before_reset, activations with alpha/beta, every output and a subset; a
// silero-VAD-style model (If on a constant condition around two LSTMs, an int64 `sr`
// input); refusals of a run-time or short sequence_lens. One LSTM also compiles natively.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { agreesWithOrt, importError, rand } from './ort-agree.fixture';
import { agreesTyped, randFloats } from './typed-ort.fixture';
import { OnnxModelBuilder } from './model-builder';
import { AttributeType, DataType, decodeModel, encodeModel, type TensorMessage } from './schema';
import { importOnnx, type OnnxModel } from './import';
import { runGraph } from '../../graph/run';

/** Add a STRINGS attribute to node `node` of a built model (the builder writes no STRINGS). */
function withStrings(bytes: Uint8Array, node: string, name: string, values: string[]): Uint8Array {
  const m = decodeModel(bytes);
  const nd = m.graph!.node!.find((x) => x.name === node)!;
  nd.attribute = [...(nd.attribute ?? []), { name, type: AttributeType.STRINGS, strings: values.map((s) => new TextEncoder().encode(s)) }];
  return encodeModel(m);
}

interface Case { kind: 'LSTM' | 'GRU' | 'RNN'; dirs: 1 | 2; direction?: string; layout?: 0 | 1; bias?: boolean; init?: boolean; peep?: boolean; attrs?: Record<string, number | { floats: number[] }>; acts?: string[]; outs?: string[] }

/**
 * The model of a case. `emulate`: a layout-1 case written as layout 0 between transposes
 * (ONNX Runtime 1.30 refuses layout 1), the same inputs and outputs.
 */
function model(c: Case, seq = 4, batch = 3, input = 5, hidden = 6, emulate = false): Uint8Array {
  const g = { LSTM: 4, GRU: 3, RNN: 1 }[c.kind];
  const layout = c.layout ?? 0;
  const t = emulate && layout === 1 ? (v: string): string => `${v}_t` : (v: string): string => v;
  const b = new OnnxModelBuilder(c.layout !== undefined ? 14 : 13).input('x', layout === 0 ? [seq, batch, input] : [batch, seq, input])
    .float('w', [c.dirs, g * hidden, input], rand(c.dirs * g * hidden * input, 1, -0.6, 0.6))
    .float('r', [c.dirs, g * hidden, hidden], rand(c.dirs * g * hidden * hidden, 2, -0.6, 0.6));
  const ins = [t('x'), 'w', 'r', '', '', '', '', ''];
  if (c.bias) { b.float('b', [c.dirs, 2 * g * hidden], rand(c.dirs * 2 * g * hidden, 3, -0.5, 0.5)); ins[3] = 'b'; }
  if (c.init) {
    b.input('h0', layout === 0 ? [c.dirs, batch, hidden] : [batch, c.dirs, hidden]);
    ins[5] = t('h0');
    if (c.kind === 'LSTM') { b.float('c0', layout === 0 ? [c.dirs, batch, hidden] : [batch, c.dirs, hidden], rand(c.dirs * batch * hidden, 4)); ins[6] = t('c0'); }
  }
  if (c.peep) { b.float('p', [c.dirs, 3 * hidden], rand(c.dirs * 3 * hidden, 5)); ins[7] = 'p'; }
  while (ins[ins.length - 1] === '') ins.pop();
  const outs = c.outs ?? (c.kind === 'LSTM' ? ['y', 'yh', 'yc'] : ['y', 'yh']);
  const attrs: Record<string, number | string | { floats: number[] }> = { hidden_size: hidden, ...(c.attrs ?? {}) };
  if (c.direction) attrs.direction = c.direction;
  if (c.layout !== undefined && !(emulate && layout === 1)) attrs.layout = c.layout;
  for (const v of ['x', 'h0', 'c0']) if (ins.includes(t(v)) && t(v) !== v) b.node('Transpose', [v], [t(v)], { perm: [1, 0, 2] });
  b.node(c.kind, ins, outs.map(t), attrs, 'rnn');
  outs.forEach((o, k) => { if (o && t(o) !== o) b.node('Transpose', [t(o)], [o], { perm: k === 0 ? [2, 0, 1, 3] : [1, 0, 2] }); });
  for (const o of outs) if (o) b.output(o);
  const bytes = b.build();
  return c.acts ? withStrings(bytes, 'rnn', 'activations', c.acts) : bytes;
}

const CASES: [string, Case][] = [
  ['LSTM forward, defaults', { kind: 'LSTM', dirs: 1 }],
  ['LSTM reverse, bias, initial h/c, peepholes', { kind: 'LSTM', dirs: 1, direction: 'reverse', bias: true, init: true, peep: true }],
  ['LSTM bidirectional, layout 1, bias, initial states, peepholes', { kind: 'LSTM', dirs: 2, direction: 'bidirectional', layout: 1, bias: true, init: true, peep: true }],
  ['LSTM clip 0.3, input_forget', { kind: 'LSTM', dirs: 1, bias: true, init: true, attrs: { clip: 0.3, input_forget: 1 } }],
  ['LSTM activations HardSigmoid/LeakyRelu/Tanh with alpha, beta', { kind: 'LSTM', dirs: 1, bias: true, acts: ['HardSigmoid', 'LeakyRelu', 'Tanh'], attrs: { activation_alpha: { floats: [0.3, 0.05] }, activation_beta: { floats: [0.4] } } }],
  ['LSTM only Y_h', { kind: 'LSTM', dirs: 1, bias: true, outs: ['', 'yh'] }],
  ['LSTM only Y_c, bidirectional layout 0', { kind: 'LSTM', dirs: 2, direction: 'bidirectional', outs: ['', '', 'yc'] }],
  ['GRU forward, bias, initial h', { kind: 'GRU', dirs: 1, bias: true, init: true }],
  ['GRU linear_before_reset, bidirectional, layout 1', { kind: 'GRU', dirs: 2, direction: 'bidirectional', layout: 1, bias: true, init: true, attrs: { linear_before_reset: 1 } }],
  ['GRU reverse, linear_before_reset, clip 0.5', { kind: 'GRU', dirs: 1, direction: 'reverse', bias: true, attrs: { linear_before_reset: 1, clip: 0.5 } }],
  ['GRU activations Sigmoid/Affine and ScaledTanh/Relu', { kind: 'GRU', dirs: 2, direction: 'bidirectional', bias: true, acts: ['Sigmoid', 'Affine', 'HardSigmoid', 'ScaledTanh'], attrs: { activation_alpha: { floats: [0.5, 0.3, 0.9] }, activation_beta: { floats: [0.1, 0.6, 1.2] } } }],
  ['RNN forward, defaults', { kind: 'RNN', dirs: 1 }],
  ['RNN bidirectional, layout 1, bias, initial h, Relu/Tanh', { kind: 'RNN', dirs: 2, direction: 'bidirectional', layout: 1, bias: true, init: true, acts: ['Relu', 'Tanh'] }],
  ['RNN reverse, clip 0.4', { kind: 'RNN', dirs: 1, direction: 'reverse', bias: true, attrs: { clip: 0.4 } }],
];

/** Our layout-1 import against the same recurrence at layout 0 between transposes (checked against ONNX Runtime). */
async function layout1Agrees(what: string, c: Case, seq?: number, batch?: number, input?: number, hidden?: number): Promise<OnnxModel> {
  const range: [number, number] = [-1.5, 1.5];
  const emulated = await agreesWithOrt(`${what} (as layout 0)`, model(c, seq, batch, input, hidden, true), { range });
  const ours = importOnnx(model(c, seq, batch, input, hidden), `${what}.onnx`);
  const feeds = new Map(ours.inputs.map((inp, i) => [inp.name, rand(inp.shape.reduce((a, d) => a * d, 1), 11 + i, ...range)]));
  const want = runGraph(emulated.graph, feeds), got = runGraph(ours.graph, feeds);
  want.forEach((w, k) => w.forEach((x, i) => {
    if (Math.abs(got[k][i] - x) > 1e-5 * (1 + Math.abs(x))) assert.unreachable(`${what}: output ${k}[${i}] = ${got[k][i]}, at layout 0 ${x}`);
  }));
  return ours;
}

for (const [what, c] of CASES) {
  test(`${what} agrees with ONNX Runtime`, async () => {
    if (c.layout === 1) await layout1Agrees(what, c);
    else await agreesWithOrt(what, model(c), { range: [-1.5, 1.5] });
  });
}

test('LSTM output shapes: Y [seq, dirs, batch, H] (layout 1: [batch, seq, dirs, H]), Y_h and Y_c [dirs, batch, H] ([batch, dirs, H])', async () => {
  const m0 = await agreesWithOrt('shapes 0', model({ kind: 'LSTM', dirs: 2, direction: 'bidirectional' }, 7, 2, 3, 4));
  assert.equal(m0.graph.outputs.map((o) => m0.graph.node(o).shape), [[7, 2, 2, 4], [2, 2, 4], [2, 2, 4]]);
  const m1 = await layout1Agrees('shapes 1', { kind: 'LSTM', dirs: 2, direction: 'bidirectional', layout: 1 }, 7, 2, 3, 4);
  assert.equal(m1.graph.outputs.map((o) => m1.graph.node(o).shape), [[2, 7, 2, 4], [2, 2, 4], [2, 2, 4]]);
});

test('sequence_lens: equal to the sequence length is accepted; shorter, or computed at run time, is refused', async () => {
  const base = (lens: () => OnnxModelBuilder): OnnxModelBuilder => lens()
    .float('w', [1, 8, 3], rand(24, 1)).float('r', [1, 8, 2], rand(16, 2))
    .node('LSTM', ['x', 'w', 'r', '', 'lens'], ['y'], { hidden_size: 2 }).output('y');
  const lens = (v: number[]): TensorMessage => ({ name: 'lens', dims: [2], data_type: DataType.INT32, int32_data: v });
  await agreesWithOrt('full lens', base(() => new OnnxModelBuilder(13).input('x', [5, 2, 3]).tensor(lens([5, 5]))).build());
  assert.match(importError(base(() => new OnnxModelBuilder(13).input('x', [5, 2, 3]).tensor(lens([5, 3]))).build()), /LSTM 'y': unsupported: sequence_lens \[5, 3\] shorter than the sequence length 5/);
  const computed = base(() => new OnnxModelBuilder(13).input('x', [5, 2, 3]).typedInput('lens', DataType.INT32, [2])).build();
  assert.match(importError(computed), /LSTM 'y': unsupported: sequence_lens computed at run time/);
});

test('an activation we do not implement is refused in one line', () => {
  const bytes = model({ kind: 'RNN', dirs: 1, acts: ['Softsign'] });
  assert.match(importError(bytes), /RNN 'rnn': unsupported: activation 'Softsign'/);
});

test('a silero-VAD-style model: If on a constant condition picks one of two LSTM branches; an int64 sr input', async () => {
  // The 16 kHz branch (taken) and the 8 kHz one each run a conv front end and an LSTM over
  // its frames with the incoming state; sr is an input the graph only passes through an Equal.
  const hidden = 4, frames = 6;
  const branch = (tag: string, seed: number): OnnxModelBuilder => new OnnxModelBuilder(16)
    .float(`cw_${tag}`, [8, 1, 4], rand(32, seed, -0.5, 0.5))
    .float(`w_${tag}`, [1, 4 * hidden, 8], rand(4 * hidden * 8, seed + 1, -0.5, 0.5))
    .float(`r_${tag}`, [1, 4 * hidden, hidden], rand(4 * hidden * hidden, seed + 2, -0.5, 0.5))
    .float(`b_${tag}`, [1, 8 * hidden], rand(8 * hidden, seed + 3, -0.3, 0.3))
    .node('Conv', ['x', `cw_${tag}`], [`c_${tag}`], { strides: [4] }) // [1, 8, frames]
    .node('Relu', [`c_${tag}`], [`a_${tag}`])
    .node('Transpose', [`a_${tag}`], [`t_${tag}`], { perm: [2, 0, 1] }) // [frames, 1, 8]
    .node('LSTM', [`t_${tag}`, `w_${tag}`, `r_${tag}`, `b_${tag}`, '', 'h', 'c'], [`y_${tag}`, `hn_${tag}`, `cn_${tag}`], { hidden_size: hidden }, `lstm_${tag}`)
    .node('ReduceMean', [`y_${tag}`], [`out_${tag}`], { axes: [0, 1], keepdims: 0 })
    .output(`out_${tag}`).output(`hn_${tag}`).output(`cn_${tag}`);
  const then = branch('16k', 10).subgraph('then');
  const other = branch('8k', 20).subgraph('else');
  const b = new OnnxModelBuilder(16).input('x', [1, 1, 4 * frames]).typedInput('sr', DataType.INT64, [])
    .input('h', [1, 1, hidden]).input('c', [1, 1, hidden])
    .int64('k16', [16000], []).int64('sr16', [16000], [])
    .node('Equal', ['k16', 'sr16'], ['is16'])
    .node('If', ['is16'], ['out', 'hn', 'cn'], { then_branch: { graph: then }, else_branch: { graph: other } })
    .node('Equal', ['sr', 'sr16'], ['sr_is16'])
    .node('Cast', ['sr_is16'], ['sr_f'], { to: DataType.FLOAT })
    .node('Add', ['out', 'sr_f'], ['prob'])
    .output('prob').output('hn').output('cn');
  const { model: m } = await agreesTyped('silero-style', b.build(), [
    randFloats(4 * frames, 1), Int32Array.of(16000), randFloats(hidden, 2), randFloats(hidden, 3),
  ]);
  assert.equal(m.graph.outputs.map((o) => m.graph.node(o).shape), [[1, hidden], [1, 1, hidden], [1, 1, hidden]]);
});

test.run();
