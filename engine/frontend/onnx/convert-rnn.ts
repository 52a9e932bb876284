// Converters of ONNX's recurrent operators (LSTM, GRU, RNN) at a sequence length known at
// import: the recurrence is unrolled into graph ops. The input projection of every time
// step (and both directions) is one dense over X; each step then slices its part out,
// adds the recurrent projection (a dense of the previous hidden state), and applies the
// gates elementwise; Y is the concatenation of the steps' hidden states.
//
// Supported: direction forward/reverse/bidirectional, layout 0 and 1 (opset 14+), the
// optional B, initial_h, initial_c and P (peepholes), clip, LSTM's input_forget, GRU's
// linear_before_reset, the activations Sigmoid, Tanh, Relu, LeakyRelu, HardSigmoid,
// Affine and ScaledTanh with activation_alpha/beta. sequence_lens must be absent or
// static and equal to the sequence length everywhere (shorter sequences are refused).

import { UnsupportedError, staticValue, type NodeView, type Value } from './context';
import { applyOp, reshapeValue, type Converter } from './convert-tensor';
import { floatTensor } from './static';

type Kind = 'LSTM' | 'GRU' | 'RNN';

/** Gates per direction and activations per direction. */
const GATES: Record<Kind, number> = { LSTM: 4, GRU: 3, RNN: 1 };
const DEFAULT_ACTIVATIONS: Record<Kind, string[]> = { LSTM: ['Sigmoid', 'Tanh', 'Tanh'], GRU: ['Sigmoid', 'Tanh'], RNN: ['Tanh'] };

/** ONNX's default alpha/beta of the activations that take them (as their operators define them). */
const ACTIVATION_PARAMS: Record<string, { alpha?: number; beta?: number }> = {
  Sigmoid: {}, Tanh: {}, Relu: {},
  LeakyRelu: { alpha: 0.01 },
  HardSigmoid: { alpha: 0.2, beta: 0.5 },
  Affine: { alpha: 1, beta: 0 },
  ScaledTanh: { alpha: 1, beta: 1 },
};

interface Activation { readonly name: string; readonly alpha: number; readonly beta: number }

const scalar = (x: number): Value => staticValue(floatTensor([1], Float32Array.of(x)));

/** The activations of every direction, alpha/beta taken in order by those that use them. */
function activations(n: NodeView, kind: Kind, dirs: number): Activation[] {
  const perDir = DEFAULT_ACTIVATIONS[kind].length;
  let names = n.attr.strings('activations') ?? [];
  if (names.length === 0) names = Array.from({ length: dirs }, () => DEFAULT_ACTIVATIONS[kind]).flat();
  else if (names.length === perDir && dirs === 2) names = [...names, ...names];
  if (names.length !== perDir * dirs) throw new Error(`${names.length} activations; ${kind} with ${dirs} direction(s) takes ${perDir * dirs}`);
  const alphas = n.attr.floats('activation_alpha') ?? [], betas = n.attr.floats('activation_beta') ?? [];
  let ia = 0, ib = 0;
  return names.map((raw) => {
    const name = Object.keys(ACTIVATION_PARAMS).find((k) => k.toLowerCase() === raw.toLowerCase());
    if (!name) throw new UnsupportedError(`activation '${raw}' (supported: ${Object.keys(ACTIVATION_PARAMS).join(', ')})`);
    const p = ACTIVATION_PARAMS[name];
    const alpha = p.alpha === undefined ? 0 : ia < alphas.length ? alphas[ia++] : p.alpha;
    const beta = p.beta === undefined ? 0 : ib < betas.length ? betas[ib++] : p.beta;
    return { name, alpha, beta };
  });
}

/** Builds the unrolled graph of one node. */
class Unroller {
  private count = 0;
  constructor(readonly n: NodeView) {}

  private sfx(tag: string): string { return `_${tag}${this.count++}`; }

  op(op: string, values: readonly Value[], attrs: Record<string, unknown> = {}, tag = op): Value {
    return applyOp(this.n, op, values, attrs, this.sfx(tag));
  }
  add(a: Value, b: Value): Value { return this.op('add', [a, b]); }
  sub(a: Value, b: Value): Value { return this.op('subtract', [a, b]); }
  mul(a: Value, b: Value): Value { return this.op('multiply', [a, b]); }
  dense(x: Value, w: Value): Value { return this.op('dense', [x, w]); }
  reshape(v: Value, shape: readonly number[]): Value { return reshapeValue(this.n, v, shape, this.sfx('reshape')); }

  shape(v: Value): readonly number[] { return v.kind === 'node' ? this.n.graph.node(v.id).shape : v.t.shape; }

  /** `v[.., begin : begin + len, ..]` on `axis`. */
  slice(v: Value, axis: number, begin: number, len: number): Value {
    const s = this.shape(v);
    if (begin === 0 && len === s[axis]) return v;
    const b = s.map((_, i) => (i === axis ? begin : 0)), shape = s.map((d, i) => (i === axis ? len : d));
    return this.op('strided_slice', [v], { begin: b, step: s.map(() => 1), shape }, 'slice');
  }

  /** `v[.., index, ..]` on `axis`, the axis dropped. */
  pick(v: Value, axis: number, index: number): Value {
    const s = this.shape(v);
    return this.reshape(this.slice(v, axis, index, 1), s.filter((_, i) => i !== axis));
  }

  concat(vs: readonly Value[], axis: number): Value {
    return vs.length === 1 ? vs[0] : this.op('concatenate', vs, { axis }, 'concat');
  }

  clip(v: Value, c: number | undefined): Value {
    return c === undefined ? v : this.op('clip', [v], { min: -c, max: c });
  }

  activate(v: Value, a: Activation, clip: number | undefined): Value {
    const x = this.clip(v, clip);
    switch (a.name) {
      case 'Sigmoid': return this.op('sigmoid', [x]);
      case 'Tanh': return this.op('tanh', [x]);
      case 'Relu': return this.op('relu', [x]);
      case 'LeakyRelu': return this.op('leaky_relu', [x], { alpha: a.alpha });
      case 'HardSigmoid': return this.op('hard_sigmoid', [x], { alpha: a.alpha, beta: a.beta });
      case 'Affine': return this.add(this.mul(x, scalar(a.alpha)), scalar(a.beta));
      case 'ScaledTanh': return this.mul(this.op('tanh', [this.mul(x, scalar(a.beta))]), scalar(a.alpha));
      default: throw new UnsupportedError(`activation '${a.name}'`);
    }
  }
}

function convertRecurrent(kind: Kind, n: NodeView): (Value | undefined)[] {
  const u = new Unroller(n);
  const layout = n.opset >= 14 ? n.attr.int('layout', 0) : 0;
  if (layout !== 0 && layout !== 1) throw new Error(`layout ${layout}`);
  const direction = n.attr.string('direction', 'forward');
  if (!['forward', 'reverse', 'bidirectional'].includes(direction)) throw new Error(`direction '${direction}'`);
  const dirs = direction === 'bidirectional' ? 2 : 1;
  const x = n.shape(0);
  if (x.length !== 3) throw new Error(`X of rank ${x.length} (expected [seq, batch, input] or [batch, seq, input])`);
  const seq = layout === 0 ? x[0] : x[1], batch = layout === 0 ? x[1] : x[0], inSize = x[2];
  const w = n.shape(1);
  const gates = GATES[kind];
  const hidden = n.attr.int('hidden_size', w[1] / gates);
  if (w.length !== 3 || w[0] !== dirs || w[1] !== gates * hidden || w[2] !== inSize) {
    throw new Error(`W [${w.join(', ')}] for ${dirs} direction(s), ${gates} gate(s) of hidden_size ${hidden} and input size ${inSize}`);
  }
  const r = n.shape(2);
  if (r.length !== 3 || r[0] !== dirs || r[1] !== gates * hidden || r[2] !== hidden) throw new Error(`R [${r.join(', ')}] (expected [${dirs}, ${gates * hidden}, ${hidden}])`);
  const clipAttr = n.attr.has('clip') ? n.attr.float('clip', 0) : undefined;
  if (clipAttr !== undefined && !(clipAttr > 0)) throw new Error(`clip ${clipAttr} (must be positive)`);
  const inputForget = kind === 'LSTM' && n.attr.int('input_forget', 0) !== 0;
  const lbr = kind === 'GRU' && n.attr.int('linear_before_reset', 0) !== 0;
  const acts = activations(n, kind, dirs);
  const perDir = DEFAULT_ACTIVATIONS[kind].length;

  const lens = n.optional(4);
  if (lens) {
    if (lens.kind !== 'static') throw new UnsupportedError('sequence_lens computed at run time (only a static sequence_lens equal to the sequence length is supported)');
    if (lens.t.data.length !== batch || [...lens.t.data].some((l) => l !== seq)) {
      throw new UnsupportedError(`sequence_lens [${[...lens.t.data].join(', ')}] shorter than the sequence length ${seq} (only full-length sequences are supported)`);
    }
  }
  const stateOf = (i: number, what: string, d: number): Value | undefined => {
    const v = n.optional(i);
    if (!v) return undefined;
    const s = u.shape(v), want = layout === 0 ? [dirs, batch, hidden] : [batch, dirs, hidden];
    if (s.length !== 3 || s.some((e, k) => e !== want[k])) throw new Error(`${what} [${s.join(', ')}] (expected [${want.join(', ')}])`);
    return u.pick(v, layout === 0 ? 0 : 1, d);
  };

  // The input projection of every step and direction: one dense of X by W as [dirs * G * H, I].
  const gh = gates * hidden;
  const wAll = u.reshape(n.input(1, 'W'), [dirs * gh, inSize]);
  let proj = u.dense(n.input(0, 'X'), wAll); // [seq, batch, dirs*G*H] (layout 1: [batch, seq, ...])
  const bias = n.optional(3);
  if (bias) {
    const bs = u.shape(bias);
    if (bs.length !== 2 || bs[0] !== dirs || bs[1] !== 2 * gh) throw new Error(`B [${bs.join(', ')}] (expected [${dirs}, ${2 * gh}])`);
  }
  // Biases folded into the projection: Wb + Rb, except GRU's Rb of the hidden gate with linear_before_reset.
  const rbH: (Value | undefined)[] = [];
  if (bias) {
    const perDirBias: Value[] = [];
    for (let d = 0; d < dirs; d++) {
      const b = u.pick(bias, 0, d);
      const wb = u.slice(b, 0, 0, gh), rb = u.slice(b, 0, gh, gh);
      if (lbr) {
        perDirBias.push(u.add(wb, u.concat([u.slice(rb, 0, 0, 2 * hidden), staticValue(floatTensor([hidden], new Float32Array(hidden)))], 0)));
        rbH.push(u.slice(rb, 0, 2 * hidden, hidden));
      } else perDirBias.push(u.add(wb, rb));
    }
    proj = u.add(proj, u.concat(perDirBias, 0));
  }
  const timeAxis = layout === 0 ? 0 : 1;

  const ys: Value[][] = [], lastH: Value[] = [], lastC: Value[] = [];
  for (let d = 0; d < dirs; d++) {
    const reverse = direction === 'reverse' || d === 1;
    const a = acts.slice(d * perDir, (d + 1) * perDir);
    const rd = u.pick(n.input(2, 'R'), 0, d); // [G*H, H]
    const zeros = staticValue(floatTensor([batch, hidden], new Float32Array(batch * hidden)));
    let h = stateOf(5, 'initial_h', d) ?? zeros;
    let c = kind === 'LSTM' ? stateOf(6, 'initial_c', d) ?? zeros : undefined;
    let peep: Value[] | undefined;
    const pv = kind === 'LSTM' ? n.optional(7) : undefined;
    if (pv) {
      const ps = u.shape(pv);
      if (ps.length !== 2 || ps[0] !== dirs || ps[1] !== 3 * hidden) throw new Error(`P [${ps.join(', ')}] (expected [${dirs}, ${3 * hidden}])`);
      const p = u.pick(pv, 0, d);
      peep = [0, 1, 2].map((k) => u.slice(p, 0, k * hidden, hidden)); // i, o, f
    }
    const hs = new Array<Value>(seq);
    for (let step = 0; step < seq; step++) {
      const t = reverse ? seq - 1 - step : step;
      const xt = u.reshape(u.slice(u.slice(proj, timeAxis, t, 1), 2, d * gh, gh), [batch, gh]);
      const gate = (v: Value, k: number): Value => u.slice(v, 1, k * hidden, hidden);
      if (kind === 'RNN') {
        h = u.activate(u.add(xt, u.dense(h, rd)), a[0], clipAttr);
      } else if (kind === 'LSTM') {
        const g = u.add(xt, u.dense(h, rd));
        let iPre = gate(g, 0), fPre = gate(g, 2);
        if (peep) { iPre = u.add(iPre, u.mul(peep[0], c!)); fPre = u.add(fPre, u.mul(peep[2], c!)); }
        const i = u.activate(iPre, a[0], clipAttr);
        const f = inputForget ? u.sub(scalar(1), i) : u.activate(fPre, a[0], clipAttr);
        const cand = u.activate(gate(g, 3), a[1], clipAttr);
        c = u.add(u.mul(f, c!), u.mul(i, cand));
        let oPre = gate(g, 1);
        if (peep) oPre = u.add(oPre, u.mul(peep[1], c));
        const o = u.activate(oPre, a[0], clipAttr);
        h = u.mul(o, u.activate(c, a[2], undefined));
      } else {
        const rZr = u.slice(rd, 0, 0, 2 * hidden), rH = u.slice(rd, 0, 2 * hidden, hidden);
        const zr = u.add(u.slice(xt, 1, 0, 2 * hidden), u.dense(h, rZr));
        const z = u.activate(gate(zr, 0), a[0], clipAttr), rg = u.activate(gate(zr, 1), a[0], clipAttr);
        const xh = gate(xt, 2);
        let recH: Value;
        if (lbr) {
          let hr = u.dense(h, rH);
          if (rbH[d]) hr = u.add(hr, rbH[d]!);
          recH = u.mul(rg, hr);
        } else recH = u.dense(u.mul(rg, h), rH);
        const cand = u.activate(u.add(xh, recH), a[1], clipAttr);
        h = u.add(cand, u.mul(z, u.sub(h, cand))); // (1 - z) * cand + z * h
      }
      hs[t] = h;
    }
    ys.push(hs);
    lastH.push(h);
    if (c) lastC.push(c);
  }

  const outs: (Value | undefined)[] = [];
  if (n.outputs[0]) {
    // Y: [seq, dirs, batch, H] (layout 1: [batch, seq, dirs, H]).
    const steps = Array.from({ length: seq }, (_, t) => {
      const per = ys.map((hs) => u.reshape(hs[t], layout === 0 ? [1, 1, batch, hidden] : [batch, 1, 1, hidden]));
      return u.concat(per, layout === 0 ? 1 : 2);
    });
    outs.push(u.concat(steps, layout === 0 ? 0 : 1));
  } else outs.push(undefined);
  const states = (vs: Value[]): Value => u.concat(vs.map((v) => u.reshape(v, layout === 0 ? [1, batch, hidden] : [batch, 1, hidden])), layout === 0 ? 0 : 1);
  outs.push(n.outputs[1] ? states(lastH) : undefined);
  if (kind === 'LSTM') outs.push(n.outputs[2] ? states(lastC) : undefined);
  return outs;
}

const COMMON = ['activation_alpha', 'activation_beta', 'activations', 'clip', 'direction', 'hidden_size', 'layout'];

export const RNN_CONVERTERS: Record<string, Converter> = {
  LSTM: { attrs: [...COMMON, 'input_forget'], convert: (n) => convertRecurrent('LSTM', n) },
  GRU: { attrs: [...COMMON, 'linear_before_reset'], convert: (n) => convertRecurrent('GRU', n) },
  RNN: { attrs: COMMON, convert: (n) => convertRecurrent('RNN', n) },
};
