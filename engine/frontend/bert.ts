// BERT-base (the BERT row of the Ansor paper's end-to-end table), as Hugging Face's
// BertModel computes it and torch.onnx exports it: token, position and token-type
// embeddings (Gather) summed and layer-normed, 12 encoder layers (separate q, k, v linear
// layers, 12 heads of 64, scores / 8 plus the mask term (1 - mask) * -10000, softmax, the
// context merged back, output linear + residual + LayerNorm, FFN 768 -> 3072 -> 768 with
// GELU as x * 0.5 * (1 + erf(x / sqrt 2)), residual + LayerNorm; eps 1e-12). Inputs:
// `input_ids` and `attention_mask`, [batch, 128] int32 (int64 in the ONNX file); output: the
// last hidden state [batch, 128, 768] (no pooler). 108,891,648 weights.
//
// The transformer pieces (linear layers over [..., K], LayerNorm, GELU, multi-head
// attention reading its operands through batch_matmul views) are shared with vit.ts.

import type { NetBuilder } from './builder';
import { fillUniform, streamSeed, xavierWeight } from './init';
import type { OperandView } from '../topi/nn';

export interface BertConfig {
  readonly layers: number;
  readonly hidden: number;
  readonly heads: number;
  readonly ffn: number;
  readonly vocab: number;
  readonly seq: number;
  /** Rows of the position table (>= seq). */
  readonly maxPositions: number;
}

export const BERT_BASE: BertConfig = { layers: 12, hidden: 768, heads: 12, ffn: 3072, vocab: 30522, seq: 128, maxPositions: 512 };

const LN_EPS = 1e-12;

/** A float parameter: `make` draws it, unless the network is built with zero weights. */
export function param(b: NetBuilder, name: string, shape: readonly number[], make: () => Float32Array): number {
  const data = b.opts.weights === 'zeros' ? new Float32Array(shape.reduce((x, y) => x * y, 1)) : make();
  return b.graph.constant(name, shape, data);
}

const filled = (n: number, v: number) => (): Float32Array => new Float32Array(n).fill(v);

/** A scalar float constant. */
export const scalar = (b: NetBuilder, name: string, v: number): number => b.graph.constant(name, [], Float32Array.of(v));

/** A linear layer over the last axis: dense by `<name>_weight` [units, K] (Xavier) + `<name>_bias` [units] (zeros). */
export function linear(b: NetBuilder, x: number, name: string, units: number): number {
  const k = b.shape(x)[b.shape(x).length - 1];
  const w = param(b, `${name}_weight`, [units, k], () => xavierWeight(b.opts.seed, `${name}_weight`, [units, k]));
  const y = b.graph.op('dense', [x, w], {}, name);
  return b.graph.op('add', [y, param(b, `${name}_bias`, [units], filled(units, 0))], {}, `${name}_bias_add`);
}

/** LayerNorm over the last axis: `<name>_gamma` (1) and `<name>_beta` (0), or random ones with randomStats. */
export function layerNorm(b: NetBuilder, x: number, name: string, eps: number): number {
  const c = b.shape(x)[b.shape(x).length - 1];
  const random = b.opts.randomStats;
  const vec = (suffix: string, fixed: number, lo: number, hi: number): number =>
    param(b, `${name}_${suffix}`, [c], random ? () => fillUniform(new Float32Array(c), streamSeed(b.opts.seed, `${name}_${suffix}`), lo, hi) : filled(c, fixed));
  return b.graph.op('layer_norm', [x, vec('gamma', 1, 0.5, 1.5), vec('beta', 0, -0.5, 0.5)], { axis: -1, epsilon: eps }, name);
}

/** GELU as exporters write it: x * 0.5 * (1 + erf(x / sqrt 2)). */
export function gelu(b: NetBuilder, x: number, name: string): number {
  const g = b.graph;
  const e = g.op('erf', [g.op('divide', [x, scalar(b, `${name}_sqrt2`, Math.SQRT2)])]);
  return g.op('multiply', [g.op('multiply', [x, g.op('add', [e, scalar(b, `${name}_one`, 1)])]), scalar(b, `${name}_half`, 0.5)], {}, name);
}

/** The heads of q, k and v: each [B, S, heads*d] read as [B, heads, S, d] (k as [B, heads, d, S]), optionally a region of a fused qkv. */
export interface AttentionInputs {
  readonly q: number; readonly k: number; readonly v: number;
  /** Where q, k, v start on the last axis of their tensors (a fused qkv: 0, C, 2C). */
  readonly offsets?: readonly [number, number, number];
}

/**
 * Multi-head attention, softmax(q k^T * scale + mask) v, merged back to [B, S, C]. The head
 * split (Reshape [B, S, H, D] + Transpose) of q and v is read in place by batch_matmul
 * views, which the ONNX writer writes back as Reshape + Transpose (+ Split for a fused qkv).
 */
export function attention(b: NetBuilder, x: AttentionInputs, heads: number, name: string, scale: { divide?: number; multiply?: number }, mask?: number): number {
  const g = b.graph;
  const [B, S] = b.shape(x.q);
  const C = x.offsets ? b.shape(x.q)[2] / 3 : b.shape(x.q)[2];
  const D = C / heads;
  const view = (part: number, perm: number[]): OperandView => {
    const head = { shape: [B, S, heads, D], perm };
    return x.offsets ? { begin: [0, 0, x.offsets[part]], box: [B, S, C], ...head } : head;
  };
  // K^T is one copy (Reshape + Transpose, of k's part of a fused qkv), so the scores' rows
  // read it contiguously (convert-matmul.ts, rowsContiguous: read in place, bert-base's ran
  // at 3% of peak); the writer makes k's slice one output of the qkv Split.
  const k = x.offsets ? g.op('strided_slice', [x.k], { begin: [0, 0, x.offsets[1]], step: [1, 1, 1], shape: [B, S, C] }, `${name}_key`) : x.k;
  const kT = g.op('transpose', [g.op('reshape', [k], { newShape: [B, S, heads, D] })], { axes: [0, 2, 3, 1] }, `${name}_key_t`);
  let s = g.op('batch_matmul', [x.q, kT], { transB: false, viewA: view(0, [0, 2, 1, 3]) }, `${name}_scores`);
  if (scale.divide !== undefined) s = g.op('divide', [s, scalar(b, `${name}_scale`, scale.divide)]);
  if (scale.multiply !== undefined) s = g.op('multiply', [s, scalar(b, `${name}_scale`, scale.multiply)]);
  if (mask !== undefined) s = g.op('add', [s, mask]);
  const p = g.op('softmax', [s], { axis: -1 }, `${name}_probs`);
  const ctx = g.op('batch_matmul', [p, x.v], { transB: false, viewB: view(2, [0, 2, 1, 3]) }, `${name}_context`);
  return g.op('reshape', [g.op('transpose', [ctx], { axes: [0, 2, 1, 3] })], { newShape: [B, S, C] }, `${name}_merged`);
}

/** The additive attention mask of HF's BERT: (1 - mask[:, None, None, :]) * -10000, as float. */
function maskTerm(b: NetBuilder, mask: number): number {
  const g = b.graph;
  const [B, S] = b.shape(mask);
  const m = g.op('cast', [g.op('reshape', [mask], { newShape: [B, 1, 1, S] })], { dtype: 'float32' });
  return g.op('multiply', [g.op('subtract', [scalar(b, 'mask_one', 1), m]), scalar(b, 'mask_min', -10000)], {}, 'extended_attention_mask');
}

export function bert(b: NetBuilder, cfg: BertConfig = BERT_BASE): number {
  const g = b.graph;
  const B = b.opts.batch, { seq: S, hidden: C } = cfg;
  const ids = g.input('input_ids', [B, S], 'int32');
  const mask = g.input('attention_mask', [B, S], 'int32');
  const table = (name: string, rows: number): number => param(b, name, [rows, C], () => xavierWeight(b.opts.seed, name, [rows, C]));
  const words = g.op('take', [table('embeddings_word_embeddings', cfg.vocab), ids], { axis: 0 }, 'embeddings_words');
  const positions = g.op('take', [table('embeddings_position_embeddings', cfg.maxPositions),
    g.constant('position_ids', [1, S], Int32Array.from({ length: S }, (_, i) => i))], { axis: 0 }, 'embeddings_positions');
  const types = g.op('take', [table('embeddings_token_type_embeddings', 2), g.constant('token_type_ids', [1, S], new Int32Array(S))], { axis: 0 }, 'embeddings_token_types');
  let x = layerNorm(b, g.op('add', [g.op('add', [words, types]), positions]), 'embeddings_LayerNorm', LN_EPS);
  const ext = maskTerm(b, mask);
  for (let l = 0; l < cfg.layers; l++) {
    const p = `encoder_layer_${l}`;
    const q = linear(b, x, `${p}_attention_self_query`, C);
    const k = linear(b, x, `${p}_attention_self_key`, C);
    const v = linear(b, x, `${p}_attention_self_value`, C);
    const ctx = attention(b, { q, k, v }, cfg.heads, `${p}_attention_self`, { divide: Math.sqrt(C / cfg.heads) }, ext);
    x = layerNorm(b, g.op('add', [linear(b, ctx, `${p}_attention_output_dense`, C), x]), `${p}_attention_output_LayerNorm`, LN_EPS);
    const h = gelu(b, linear(b, x, `${p}_intermediate_dense`, cfg.ffn), `${p}_intermediate_gelu`);
    x = layerNorm(b, g.op('add', [linear(b, h, `${p}_output_dense`, C), x]), `${p}_output_LayerNorm`, LN_EPS);
  }
  return x;
}
