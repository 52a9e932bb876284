// Converters of ONNX's matrix products: MatMul (numpy's matmul: any ranks, 1-D operands
// promoted and squeezed, batch axes broadcast), Gemm (transA/transB, alpha, beta, C
// broadcast to [M, N]) and Einsum in its matmul-shaped forms (any batch, free and contracted
// letters, each operand's free and contracted ones flattened into one axis; single-operand
// transposes).
//
// A linear layer (MatMul by a constant [K, N]) becomes `dense` over the whole [..., K]
// input, so no reshape separates it from its bias and activation. Every other product is
// a `batch_matmul` whose operands are read through the transposes and head-splitting
// reshapes that produce them (attention's Q, K^T, V): `operandView` folds such a chain
// into the access pattern (nn.OperandView), leaving the chain's nodes dead, except where
// that would make B's rows strided (K^T: see rowsContiguous).

import { isOpNode, type Graph } from '../../graph/graph';
import { permute } from '../../ir/tensor';
import { broadcastBatch, splitGroups, type OperandView } from '../../topi/nn';
import { UnsupportedError, staticValue, type NodeView, type Value } from './context';
import { reshapeValue, type Converter } from './convert-tensor';
import { floatTensor, transposeStatic } from './static';
import { floatData } from './tensor';

const idOf = (v: Value): number => (v as { id: number }).id;
const isStatic = (v: Value): v is Extract<Value, { kind: 'static' }> => v.kind === 'static';
const iota = (n: number): number[] => Array.from({ length: n }, (_, i) => i);
const same = (a: readonly number[], b: readonly number[]): boolean => a.length === b.length && a.every((x, i) => x === b[i]);

/** `view` followed by a transpose of its logical axes by `perm`. */
export function transposeView(view: OperandView, perm: readonly number[]): OperandView {
  return { ...view, perm: perm.map((p) => view.perm[p]) };
}

/** `view` followed by a reshape of its logical shape to `to`, when that only splits axes; else undefined. */
export function reshapeView(view: OperandView, to: readonly number[]): OperandView | undefined {
  const logical = view.perm.map((p) => view.shape[p]);
  const groups = splitGroups(logical, to);
  if (!groups) return undefined;
  // Inner axis a holds logical axis c with perm[c] = a; it splits into the new axes groups[c].
  const owner = new Array<number>(view.shape.length);
  view.perm.forEach((a, c) => { owner[a] = c; });
  const shape: number[] = [];
  const position = new Array<number>(to.length);
  for (let a = 0; a < view.shape.length; a++) {
    for (const t of groups[owner[a]]) { position[t] = shape.length; shape.push(to[t]); }
  }
  return { ...view, shape, perm: iota(to.length).map((t) => position[t]) };
}

export interface FoldedOperand {
  /** The node actually read. */
  readonly id: number;
  /** Its logical operand is the node with its last two axes swapped (and no other view). */
  readonly swapped: boolean;
  readonly view?: OperandView;
}

/**
 * The node a batch_matmul operand reads, through the chain of transposes, axis-splitting
 * reshapes and (first) a unit-step slice, a part of a Split, that produce `id` (the
 * chain's nodes are not read any more).
 */
export function operandView(g: Graph, id: number): FoldedOperand {
  const chain: number[] = [];
  let cur = id;
  for (;;) {
    const node = g.node(cur);
    const unitSlice = isOpNode(node) && node.op === 'strided_slice' && (node.attrs.step as number[]).every((st) => st === 1);
    if (!isOpNode(node) || (node.op !== 'transpose' && node.op !== 'reshape' && !unitSlice)) break;
    chain.push(cur);
    cur = node.inputs[0];
  }
  let base = cur;
  let view: OperandView = { shape: g.node(base).shape, perm: iota(g.node(base).shape.length) };
  for (let i = chain.length - 1; i >= 0; i--) {
    const node = g.node(chain[i]);
    const attrs = isOpNode(node) ? node.attrs : {};
    // A slice (one part of a Split) is a region of the stored tensor: only first in the chain.
    const region = (): OperandView | undefined => (i === chain.length - 1
      ? { begin: [...(attrs.begin as number[])], box: [...node.shape], shape: node.shape, perm: iota(node.shape.length) } : undefined);
    const next = node.op === 'transpose' ? transposeView(view, attrs.axes as number[]) : node.op === 'strided_slice' ? region() : reshapeView(view, node.shape);
    if (next) view = next;
    else {
      base = chain[i];
      view = { shape: node.shape, perm: iota(node.shape.length) };
    }
  }
  const stored = g.node(base).shape;
  const r = view.perm.length;
  if (view.box) return { id: base, swapped: false, view };
  if (same(view.shape, stored) && same(view.perm, iota(r))) return { id: base, swapped: false };
  if (r >= 2 && same(view.shape, stored) && same(view.perm, [...iota(r - 2), r - 1, r - 2])) return { id: base, swapped: true };
  return { id: base, swapped: false, view };
}

/** batch_matmul attributes and inputs for logical operands a [..., M, K] and b [..., K, N] (graph nodes). */
/**
 * Whether B read through `f` keeps its rows contiguous: the output's last axis (the one
 * the default schedule and the sketches vectorise) steps through memory one element at a
 * time. Folding attention's K^T the other way round (TOPI's NT form, y[b, j, k]) made
 * each vector of outputs a gather: bert-base's q k^T ran at 3% of peak (47 ms of 290 at
 * batch 1), against 55% for the products whose rows stay contiguous.
 */
const rowsContiguous = (f: FoldedOperand): boolean => !f.swapped && (!f.view || f.view.perm[f.view.perm.length - 1] === f.view.shape.length - 1);

function batchMatmulOf(n: NodeView, a: number, b: number, suffix: string): Value {
  const fa = operandView(n.graph, a), folded = operandView(n.graph, b);
  // A transposed K stays a copy (a transpose kernel) where reading it in place would make the rows strided.
  const fb = rowsContiguous(folded) ? folded : { id: b, swapped: false };
  const attrs: Record<string, unknown> = { transB: fb.swapped };
  if (fa.swapped) attrs.transA = true;
  if (fa.view) attrs.viewA = fa.view;
  if (fb.view) attrs.viewB = fb.view;
  return n.op('batch_matmul', [fa.id, fb.id], attrs, suffix);
}

/** dense(a [..., K], constant B [K, N]): the weight stored [N, K] as TVM's dense reads it. */
function denseOf(n: NodeView, a: number, b: Extract<Value, { kind: 'static' }>, suffix: string, alpha = 1): Value {
  const [k, m] = b.t.shape;
  const data = permute(floatData(b.t), [k, m], [1, 0]);
  if (alpha !== 1) for (let i = 0; i < data.length; i++) data[i] *= alpha;
  return n.op('dense', [a, n.constant('_weight', [m, k], data)], {}, suffix);
}

/** numpy's matmul of two values. */
function matmulValue(n: NodeView, a: Value, b: Value): Value {
  const as0 = a.kind === 'node' ? n.graph.node(a.id).shape : a.t.shape;
  const bs0 = b.kind === 'node' ? n.graph.node(b.id).shape : b.t.shape;
  if (as0.length === 0 || bs0.length === 0) throw new Error('MatMul of a scalar');
  const as = as0.length === 1 ? [1, as0[0]] : [...as0];
  const bs = bs0.length === 1 ? [bs0[0], 1] : [...bs0];
  const k = as[as.length - 1];
  if (bs[bs.length - 2] !== k) throw new Error(`MatMul: [${as0.join(', ')}] x [${bs0.join(', ')}]: K ${k} vs ${bs[bs.length - 2]}`);
  const batch = broadcastBatch(as.slice(0, -2), bs.slice(0, -2), 'MatMul');
  const final = [...batch, ...(as0.length === 1 ? [] : [as[as.length - 2]]), ...(bs0.length === 1 ? [] : [bs[bs.length - 1]])];
  const squeeze = as0.length === 1 || bs0.length === 1;
  const suffix = squeeze ? '_matmul' : '';
  const av = as0.length === 1 ? reshapeValue(n, a, as, '_a') : a;
  const bv = bs0.length === 1 ? reshapeValue(n, b, bs, '_b') : b;
  let y: Value;
  if (isStatic(bv) && bs.length === 2) y = denseOf(n, n.nodeOf(av, '_a'), bv, suffix);
  else y = batchMatmulOf(n, n.nodeOf(av, '_a'), n.nodeOf(bv, '_b'), suffix);
  return squeeze ? reshapeValue(n, y, final) : y;
}

const matmul: Converter = {
  attrs: [],
  convert: (n) => [matmulValue(n, n.input(0), n.input(1))],
};

function scaledNode(n: NodeView, v: Value, factor: number, suffix: string): number {
  if (factor === 1) return n.nodeOf(v, suffix);
  if (isStatic(v)) return n.nodeOf(staticValue(floatTensor(v.t.shape, Float32Array.from(floatData(v.t), (x) => x * factor))), suffix);
  return idOf(n.op('multiply', [v.id, n.constant(`${suffix}_scale`, [], Float32Array.of(factor))], {}, suffix));
}

const gemm: Converter = {
  attrs: ['alpha', 'beta', 'transA', 'transB', 'broadcast'],
  convert(n) {
    const alpha = n.attr.float('alpha', 1), beta = n.attr.float('beta', 1);
    if (n.shape(0).length !== 2 || n.shape(1).length !== 2) throw new Error(`Gemm needs 2-D A and B, got [${n.shape(0).join(', ')}] and [${n.shape(1).join(', ')}]`);
    const transA = n.attr.int('transA', 0) === 1, transB = n.attr.int('transB', 0) === 1;
    const [m, ka] = transA ? [n.shape(0)[1], n.shape(0)[0]] : n.shape(0);
    const [kb, cols] = transB ? [n.shape(1)[1], n.shape(1)[0]] : n.shape(1);
    if (ka !== kb) throw new Error(`Gemm: A gives K=${ka}, B gives K=${kb}`);
    let a = n.input(0);
    if (transA) a = isStatic(a) ? staticValue(transposeStatic(a.t, [1, 0])) : n.op('transpose', [a.id], { axes: [1, 0] }, '_a_t');
    const b = n.input(1);
    let y: Value;
    if (isStatic(b)) {
      // alpha goes into the constant weight.
      const w = transB ? staticValue(transposeStatic(b.t, [1, 0])) : b;
      y = denseOf(n, n.nodeOf(a, '_a'), w as Extract<Value, { kind: 'static' }>, '_gemm', alpha);
    } else {
      y = n.op('batch_matmul', [n.nodeOf(a, '_a'), b.id], { transB }, '_gemm');
      if (alpha !== 1) y = n.op('multiply', [idOf(y), n.constant('_alpha', [], Float32Array.of(alpha))], {}, '_alpha');
    }
    const c = n.optional(2);
    if (c && beta !== 0) {
      const cs = c.kind === 'node' ? n.graph.node(c.id).shape : c.t.shape;
      const out = broadcastBatch(cs, [m, cols], 'Gemm C');
      if (!same(out, [m, cols])) throw new Error(`Gemm: C of shape [${cs.join(', ')}] does not broadcast to [${m}, ${cols}]`);
      y = n.op('add', [idOf(y), scaledNode(n, c, beta, '_c')], {}, '_add');
    }
    return [y];
  },
};

// ---------------------------------------------------------------- Einsum

/** Letters of each operand and of the output, ellipses expanded (numpy's rules: aligned on the right). */
function parseEinsum(equation: string, ranks: readonly number[]): { terms: string[][]; out: string[] } {
  const eq = equation.replace(/\s+/g, '');
  const [lhs, rhs] = eq.includes('->') ? eq.split('->') : [eq, undefined];
  const raw = lhs.split(',');
  if (raw.length !== ranks.length) throw new Error(`Einsum '${equation}': ${raw.length} operand terms for ${ranks.length} inputs`);
  const bad = (t: string): boolean => !/^[a-zA-Z]*(\.\.\.)?[a-zA-Z]*$/.test(t);
  if (raw.some(bad) || (rhs !== undefined && bad(rhs))) throw new UnsupportedError(`Einsum equation '${equation}' (letters and one ellipsis per term only)`);
  let ellipsis = 0;
  const expand = (t: string, rank: number): string[] => {
    const letters = t.replace('...', '').split('');
    if (!t.includes('...')) {
      if (letters.length !== rank) throw new Error(`Einsum '${equation}': term '${t}' for an input of rank ${rank}`);
      return letters;
    }
    const e = rank - letters.length;
    if (e < 0) throw new Error(`Einsum '${equation}': term '${t}' for an input of rank ${rank}`);
    ellipsis = Math.max(ellipsis, e);
    const [pre, post] = t.split('...');
    // Ellipsis axes are named by digits, which no letter can be; the rightmost is '0'.
    return [...pre.split('').filter(Boolean), ...Array.from({ length: e }, (_, i) => String(e - 1 - i)), ...post.split('').filter(Boolean)];
  };
  const terms = raw.map((t, i) => expand(t, ranks[i]));
  const dots = Array.from({ length: ellipsis }, (_, i) => String(ellipsis - 1 - i));
  let out: string[];
  if (rhs === undefined) {
    const count = new Map<string, number>();
    for (const t of terms) for (const l of t) if (!/\d/.test(l)) count.set(l, (count.get(l) ?? 0) + 1);
    out = [...dots, ...[...count.keys()].filter((l) => count.get(l) === 1).sort()];
  } else {
    const [pre, post] = rhs.includes('...') ? rhs.split('...') : [rhs, undefined];
    out = post === undefined ? pre.split('').filter(Boolean) : [...pre.split('').filter(Boolean), ...dots, ...post.split('').filter(Boolean)];
  }
  for (const t of [...terms, out]) if (new Set(t).size !== t.length) throw new UnsupportedError(`Einsum '${equation}': a letter repeated within one term (diagonals)`);
  return { terms, out };
}

/** A value permuted by `perm` (a static tensor here, a node through a transpose). */
function transposed(n: NodeView, v: Value, perm: readonly number[], suffix: string): Value {
  if (same(perm, iota(perm.length))) return v;
  if (isStatic(v)) return staticValue(transposeStatic(v.t, perm));
  return n.op('transpose', [v.id], { axes: [...perm] }, suffix);
}

const einsum: Converter = {
  attrs: ['equation'],
  convert(n) {
    const equation = n.attr.string('equation', '');
    const values = n.inputs.map((_, i) => n.input(i));
    const shapes = values.map((v) => (v.kind === 'node' ? n.graph.node(v.id).shape : v.t.shape));
    const { terms, out } = parseEinsum(equation, shapes.map((s) => s.length));
    const refuse = (why: string): never => { throw new UnsupportedError(`Einsum '${equation}': ${why} (only transposes and matmul-shaped products)`); };
    if (terms.length === 1) {
      const [t] = terms;
      if (out.length !== t.length || out.some((l) => !t.includes(l))) refuse('a sum over axes or a new axis');
      return [transposed(n, values[0], out.map((l) => t.indexOf(l)), '')];
    }
    if (terms.length !== 2) refuse(`${terms.length} operands`);
    const [ta, tb] = terms;
    if (out.some((l) => !ta.includes(l) && !tb.includes(l))) refuse('an output letter no operand has');
    const batch = out.filter((l) => ta.includes(l) && tb.includes(l));
    const contract = ta.filter((l) => tb.includes(l) && !out.includes(l));
    const mOnly = ta.filter((l) => !tb.includes(l));
    const nOnly = tb.filter((l) => !ta.includes(l));
    if (mOnly.some((l) => !out.includes(l)) || nOnly.some((l) => !out.includes(l))) refuse('a letter summed within one operand');
    if (contract.length === 0) refuse('no contracted letter (an outer product)');
    const extent = (l: string): number => {
      const e = [ta.indexOf(l) >= 0 ? shapes[0][ta.indexOf(l)] : 1, tb.indexOf(l) >= 0 ? shapes[1][tb.indexOf(l)] : 1];
      if (e[0] !== e[1] && e[0] !== 1 && e[1] !== 1) throw new Error(`Einsum '${equation}': letter '${l}' has extents ${e[0]} and ${e[1]}`);
      return Math.max(...e);
    };
    out.forEach(extent);
    for (const l of contract) {
      if (shapes[0][ta.indexOf(l)] !== shapes[1][tb.indexOf(l)]) throw new Error(`Einsum '${equation}': contracted letter '${l}' has extents ${shapes[0][ta.indexOf(l)]} and ${shapes[1][tb.indexOf(l)]}`);
    }
    // Each operand as [batch..., M, K] / [batch..., K, N]: its free letters flattened into one
    // axis, its contracted letters into another (a missing free axis has extent 1), so that
    // 'bnc,cd->bnd' or 'bhqd,bhkd->bhqk' is one matmul.
    const size = (ls: readonly string[]): number => ls.reduce((acc, l) => acc * extent(l), 1);
    const arrange = (v: Value, t: string[], groups: readonly (readonly string[])[], suffix: string): Value => {
      const order = groups.flat();
      const pv = transposed(n, v, order.map((l) => t.indexOf(l)), `${suffix}_t`);
      const own = (l: string): number => shapes[terms.indexOf(t)][t.indexOf(l)];
      const shape = [...groups[0].map(own), ...groups.slice(1).map((g) => g.reduce((acc, l) => acc * own(l), 1))];
      return reshapeValue(n, pv, shape, `${suffix}_r`);
    };
    const a = arrange(values[0], ta, [batch, mOnly, contract], '_a');
    const b = arrange(values[1], tb, [batch, contract, nOnly], '_b');
    const product = matmulValue(n, a, b);
    // The product [batch..., M, N] unflattened to its letters, then in the output's order.
    const kept = [...batch, ...mOnly, ...nOnly];
    const unflat = reshapeValue(n, product, kept.map(extent), '_sq');
    if (size(kept) !== size(out)) throw new Error(`Einsum '${equation}': the output's letters do not cover the product`);
    const perm = out.map((l) => kept.indexOf(l));
    return [transposed(n, unflat, perm, '_out')];
  },
};

export const MATMUL_CONVERTERS: Record<string, Converter> = { MatMul: matmul, Gemm: gemm, Einsum: einsum };
