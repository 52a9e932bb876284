// Converters of ONNX operators that current exporters and the node conformance suite use,
// composed from the graph's ops where a composition is as good as a new compute:
//  - IsNaN, IsInf (detect_negative / detect_positive): bool tensors (topi/extra.ts);
//  - Attention (opset 23/24): 3-D [B, S, heads * head] (q_num_heads / kv_num_heads) and 4-D
//    [B, heads, S, head] forms, grouped-query heads (a kv head serves q_heads / kv_heads
//    query heads, read by batch broadcasting, never repeated), past_key / past_value
//    (concatenated: the present outputs), nonpad_kv_seqlen (an external cache: keys past each
//    batch's length masked, causal aligned to it), attn_mask bool or additive float (a
//    shorter one padded with masked keys), is_causal (bottom-right aligned past the cache),
//    left/right_window_size (opset 25: sliding windows, aligned as is_causal), scale,
//    softcap, qk_matmul_output in its four modes;
//    the softmax gives fully masked rows 0 as ONNX defines (safe_softmax);
//  - RMSNormalization (opset 23): axis, epsilon (stash_type float only);
//  - RotaryEmbedding (opset 23): 3-D and 4-D inputs, interleaved, rotary_embedding_dim,
//    num_heads, position_ids;
//  - NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: reduction none / sum / mean,
//    ignore_index, weights, int targets as graph values (SoftmaxCrossEntropyLoss's log_prob
//    output is log_softmax over the class axis);
//  - Swish (alpha), SwiGLU, Shrink (lambd, bias); BitShift of int8/16/32/64 and uint8/16 carried as
//    int32 (uint32/uint64 refused: the carrier cannot hold their values; LEFT of int64
//    refused); BitwiseAnd/Or/Xor/Not of the same types (bit by bit); Compress with a constant condition (a take of the selected indices);
//  - CenterCropPad (a constant shape: crop and zero pad, centered); MaxUnpool (a scatter into
//    zeros; an output_shape other than the inferred refused: ONNX Runtime and the reference differ); CumProd (exclusive,
//    reverse; float or int data), LpNormalization (p 1 or 2; a zero
//    norm gives 0);
//  - Bernoulli, RandomNormal/Uniform(Like), Multinomial: refused (non-deterministic).

import { operandView } from './convert-matmul';
import { gridSample } from './convert-grid-sample';
import { UnsupportedError, nodeValue, type NodeView, type Value } from './context';
import { applyOp, roundingOf } from './convert-logic';
import { reshapeValue, type Converter } from './convert-tensor';
import { floatTensor, intTensor } from './static';
import { ONNX_ELEMENT_TYPE, ONNX_INPUT_TYPE, staticValue } from './context';
import { DataType } from './schema';
import { dataTypeName } from './tensor';
import { NARROW_ROUNDING, narrowFloat } from './narrow';
import type { IntType } from '../../topi/extra';

const idOf = (v: Value): number => (v as { id: number }).id;

function floatInput(n: NodeView, i: number, what: string): void {
  const t = n.dtype(i);
  if (t !== 'float32') throw new UnsupportedError(`${what} of type ${t} (float32 only)`);
}

const isNaN_: Converter = {
  attrs: [],
  convert(n) {
    floatInput(n, 0, 'IsNaN input');
    return [applyOp(n, 'is_nan', [n.input(0)], {})];
  },
};

const isInf: Converter = {
  attrs: ['detect_negative', 'detect_positive'],
  convert(n) {
    floatInput(n, 0, 'IsInf input');
    return [applyOp(n, 'is_inf', [n.input(0)], { positive: n.attr.int('detect_positive', 1) !== 0, negative: n.attr.int('detect_negative', 1) !== 0 })];
  },
};

const rmsNormalization: Converter = {
  attrs: ['axis', 'epsilon', 'stash_type'],
  convert(n) {
    const stash = n.attr.int('stash_type', 1);
    if (stash !== 1) throw new UnsupportedError(`stash_type ${stash} (only 1, float32 statistics)`);
    floatInput(n, 0, 'X');
    floatInput(n, 1, 'scale');
    const rank = n.shape(0).length;
    const axis = n.attr.int('axis', -1);
    if (axis < -rank || axis >= rank) throw new Error(`axis ${axis} out of range for rank ${rank}`);
    return [n.op('rms_norm', [n.node(0), n.node(1)], { axis: axis < 0 ? axis + rank : axis, epsilon: n.attr.float('epsilon', 1e-5) })];
  },
};

const rotaryEmbedding: Converter = {
  attrs: ['interleaved', 'rotary_embedding_dim', 'num_heads'],
  convert(n) {
    floatInput(n, 0, 'X');
    floatInput(n, 1, 'cos_cache');
    floatInput(n, 2, 'sin_cache');
    const x = n.shape(0);
    const numHeads = n.attr.int('num_heads', 0);
    if (x.length === 3 && numHeads <= 0) throw new Error('a 3-D input needs num_heads');
    if (x.length !== 3 && x.length !== 4) throw new Error(`input of rank ${x.length} (3 or 4)`);
    const inputs = [n.node(0), n.node(1), n.node(2)];
    if (n.optional(3)) {
      if (n.dtype(3) !== 'int32') throw new Error(`position_ids of type ${n.dtype(3)}`);
      inputs.push(n.node(3));
    }
    return [n.op('rotary_embedding', inputs, { interleaved: n.attr.int('interleaved', 0) !== 0, rotaryDim: n.attr.int('rotary_embedding_dim', 0), numHeads })];
  },
};

/** A batch_matmul of logical a [..., M, K] by b [..., K, N], reading transposes and head-splitting reshapes in place (as MatMul's converter does). */
function matmul(n: NodeView, a: number, b: number, suffix: string): number {
  const fa = operandView(n.graph, a), folded = operandView(n.graph, b);
  const last = folded.view ? folded.view.shape.length - 1 : 0;
  const contiguous = !folded.swapped && (!folded.view || folded.view.perm[last] === last);
  const fb = contiguous ? folded : { id: b, swapped: false };
  const attrs: Record<string, unknown> = { transB: fb.swapped };
  if (fa.swapped) attrs.transA = true;
  if (fa.view) attrs.viewA = fa.view;
  if (fb.view) attrs.viewB = fb.view;
  return idOf(n.op('batch_matmul', [fa.id, fb.id], attrs, suffix));
}

const reshape = (n: NodeView, id: number, shape: readonly number[], suffix: string): number => idOf(reshapeValue(n, nodeValue(id), shape, suffix));
const transpose = (n: NodeView, id: number, axes: readonly number[], suffix: string): number => idOf(n.op('transpose', [id], { axes: [...axes] }, suffix));
const scalar = (x: number): Value => staticValue(floatTensor([], Float32Array.of(x)));

const attention: Converter = {
  attrs: ['is_causal', 'kv_num_heads', 'q_num_heads', 'qk_matmul_output_mode', 'scale', 'softcap', 'softmax_precision', 'left_window_size', 'right_window_size'],
  convert(n) {
    const left = n.attr.int('left_window_size', -1), right = n.attr.int('right_window_size', -1);
    if (left < -1 || right < -1) throw new Error(`window sizes ${left}, ${right} (-1 or nonnegative)`);
    // Of float16 / bfloat16 inputs, Attention computes in their type (narrow.ts): each step
    // that ONNX's function body and reference compute in the type is rounded to it, the
    // softmax too unless softmax_precision names float32 (then it is rounded once after).
    const type = narrowFloat(n.onnxType(0));
    const precision = n.attr.has('softmax_precision') ? n.attr.int('softmax_precision', DataType.FLOAT) : undefined;
    if (precision !== undefined && precision !== DataType.FLOAT && !(type && precision === n.onnxType(0))) {
      throw new UnsupportedError(`softmax_precision ${precision} (the softmax runs in float32${type ? ` or in ${type}` : ''})`);
    }
    const softmaxType = precision === DataType.FLOAT ? undefined : type;
    const rounded = (id: number, suffix: string): number => (type ? idOf(n.op(NARROW_ROUNDING[type], [id], {}, suffix)) : id);
    const mode = n.attr.int('qk_matmul_output_mode', 0);
    if (mode < 0 || mode > 3) throw new Error(`qk_matmul_output_mode ${mode} (0 to 3)`);
    const softcap = n.attr.float('softcap', 0);
    if (softcap < 0) throw new UnsupportedError(`softcap ${softcap} (0 or positive)`);
    if (mode === 0 && softcap > 0 && n.outputs[3]) {
      // The spec says the product before softcap; the ONNX reference returns it softcapped.
      throw new UnsupportedError('qk_matmul_output of mode 0 with softcap (the spec and the ONNX reference disagree)');
    }
    for (let i = 0; i < 6; i++) if (i !== 3 && n.optional(i)) floatInput(n, i, ['Q', 'K', 'V', '', 'past_key', 'past_value'][i]);
    const rank = n.shape(0).length;
    if (rank !== 3 && rank !== 4) throw new Error(`Q of rank ${rank} (3 or 4)`);
    if (n.shape(1).length !== rank || n.shape(2).length !== rank) throw new Error('Q, K and V of different ranks');
    let q = n.node(0), k = n.node(1), v = n.node(2);
    let qh: number, kvh: number;
    if (rank === 3) {
      qh = n.attr.int('q_num_heads', 0);
      kvh = n.attr.int('kv_num_heads', 0);
      if (qh <= 0 || kvh <= 0) throw new Error('3-D inputs need q_num_heads and kv_num_heads');
      const heads = (id: number, h: number, what: string, suffix: string): number => {
        const [b, s, hidden] = n.graph.node(id).shape;
        if (hidden % h !== 0) throw new Error(`${what} hidden size ${hidden} is not a multiple of ${h} heads`);
        return transpose(n, reshape(n, id, [b, s, h, hidden / h], `${suffix}_heads`), [0, 2, 1, 3], `${suffix}_bhsd`);
      };
      q = heads(q, qh, 'Q', '_q');
      k = heads(k, kvh, 'K', '_k');
      v = heads(v, kvh, 'V', '_v');
    } else {
      qh = n.shape(0)[1];
      kvh = n.shape(1)[1];
      if (n.shape(2)[1] !== kvh) throw new Error(`K has ${kvh} heads, V ${n.shape(2)[1]}`);
    }
    const past = [n.optional(4), n.optional(5)];
    if (!past[0] !== !past[1]) throw new Error('past_key and past_value must be given together');
    const nonpad = n.optional(6);
    if (nonpad && past[0]) throw new Error('nonpad_kv_seqlen with past_key/past_value');
    if (nonpad && n.dtype(6) !== 'int32') throw new Error(`nonpad_kv_seqlen of type ${n.dtype(6)}`);
    const pastLength = past[0] ? n.shape(4)[2] : 0;
    if (past[0]) {
      k = idOf(n.op('concatenate', [n.node(4), k], { axis: 2 }, '_present_key'));
      v = idOf(n.op('concatenate', [n.node(5), v], { axis: 2 }, '_present_value'));
    }
    const [b, , s, d] = n.graph.node(q).shape;
    const [kb, , l, kd] = n.graph.node(k).shape;
    const [vb, , vl, dv] = n.graph.node(v).shape;
    if (kb !== b || vb !== b) throw new Error('Q, K and V of different batch sizes');
    if (kd !== d) throw new Error(`Q's head size ${d} differs from K's ${kd}`);
    if (vl !== l) throw new Error(`K's sequence length ${l} differs from V's ${vl}`);
    if (qh % kvh !== 0) throw new Error(`${qh} query heads are not a multiple of ${kvh} kv heads`);
    const g = qh / kvh;

    // scores [B, qh, S, L]; grouped heads as [B, kvh, g, S, L] with K broadcast over g.
    const scale = n.attr.has('scale') ? n.attr.float('scale', 1) : 1 / Math.sqrt(d);
    // In a narrow type, Q and K are each scaled by the scale's square root in the type
    // (the function body's Sqrt, Cast to T, two Muls), and their product rounded; in
    // float32 the product is scaled.
    const inType = roundingOf(n.onnxType(0))?.f ?? ((x: number): number => x);
    const scaleRoot = type ? inType(Math.sqrt(scale)) : 1;
    const scaled = (id: number, suffix: string): number => rounded(idOf(n.op('multiply', [id, n.nodeOf(scalar(scaleRoot), '_scale_sqrt')], {}, suffix)), `${suffix}_rounded`);
    const qs = type ? scaled(q, '_q_scaled') : q;
    const kt = transpose(n, type ? scaled(k, '_k_scaled') : k, [0, 1, 3, 2], '_kt');
    let qk = g === 1 ? matmul(n, qs, kt, '_qk')
      : reshape(n, matmul(n, reshape(n, qs, [b, kvh, g, s, d], '_q_groups'), reshape(n, kt, [b, kvh, 1, d, l], '_kt_groups'), '_qk'), [b, qh, s, l], '_qk_heads');
    qk = type ? rounded(qk, '_qk_rounded') : idOf(n.op('multiply', [qk, n.nodeOf(scalar(scale), '_scale')], {}, '_scaled'));
    let scores = qk;
    if (softcap > 0) {
      const cap = type ? inType(softcap) : softcap;
      const t = rounded(idOf(n.op('tanh', [rounded(idOf(n.op('divide', [scores, n.nodeOf(scalar(cap), '_softcap')], {}, '_capped')), '_capped_rounded')], {}, '_tanh')), '_tanh_rounded');
      scores = rounded(idOf(n.op('multiply', [t, n.nodeOf(scalar(cap), '_softcap2')], {}, '_softcapped')), '_softcapped_rounded');
    }
    const afterSoftcap = scores;

    // The additive bias: the mask (bool: 0 where true, -inf where false) plus the causal mask.
    let bias: Value | undefined;
    const mask = n.optional(3);
    if (mask) {
      const ms = n.shape(3);
      if (ms.length > 4) throw new Error(`attn_mask of rank ${ms.length}`);
      const keys = ms[ms.length - 1];
      if (keys > l) throw new Error(`attn_mask of ${keys} keys for ${l}`);
      const t = n.dtype(3);
      if (t === 'bool') bias = applyOp(n, 'where', [mask, scalar(0), scalar(-Infinity)], {}, '_mask_bias');
      else if (t === 'float32') bias = mask;
      else throw new UnsupportedError(`attn_mask of type ${t} (bool or float)`);
      // A mask shorter than the keys (past + new) masks the rest, as ONNX pads it.
      if (keys < l) {
        const zeros = ms.map(() => 0);
        bias = applyOp(n, 'pad', [bias], { before: zeros, after: [...zeros.slice(1), l - keys], value: -Infinity }, '_mask_padded');
      }
    }
    const causal = n.attr.int('is_causal', 0) !== 0;
    const lengths = nonpad ? reshape(n, n.node(6), [b, 1, 1, 1], '_nonpad') : undefined;
    const masked = (allowed: Value, suffix: string): Value => applyOp(n, 'where', [allowed, scalar(0), scalar(-Infinity)], {}, suffix);
    const addBias = (extra: Value, suffix: string): void => { bias = bias ? applyOp(n, 'add', [bias, extra], {}, suffix) : extra; };
    if (causal && lengths !== undefined) {
      // Bottom-right aligned per batch: key j is allowed for query i iff j <= i + nonpad[b] - S, i.e. j - i + S - 1 < nonpad[b].
      const d = Array.from({ length: s * l }, (_, k) => (k % l) - Math.floor(k / l) + s - 1);
      addBias(masked(applyOp(n, 'less', [staticValue(intTensor([s, l], d)), nodeValue(lengths)], {}, '_causal_allowed'), '_causal'), '_causal_bias');
    } else if (causal) {
      const data = new Float32Array(s * l);
      for (let i = 0; i < s; i++) for (let j = 0; j < l; j++) data[i * l + j] = j <= i + pastLength ? 0 : -Infinity;
      addBias(staticValue(floatTensor([s, l], data)), '_causal_bias');
    }
    if (left >= 0 || right >= 0) {
      // A sliding window around each query's absolute position p = i + offset: p - left <= j <= p + right.
      if (lengths !== undefined) {
        // offset = nonpad[b] - S: j - i + S + left >= nonpad[b] and j - i + S - right <= nonpad[b].
        const rel = (k: number): number => (k % l) - Math.floor(k / l) + s;
        const conds: Value[] = [];
        if (left >= 0) conds.push(applyOp(n, 'less', [nodeValue(lengths), staticValue(intTensor([s, l], Array.from({ length: s * l }, (_, k) => rel(k) + left + 1)))], {}, '_window_left'));
        if (right >= 0) conds.push(applyOp(n, 'less', [staticValue(intTensor([s, l], Array.from({ length: s * l }, (_, k) => rel(k) - right - 1))), nodeValue(lengths)], {}, '_window_right'));
        const allowed = conds.length === 2 ? applyOp(n, 'logical_and', conds, {}, '_window_allowed') : conds[0];
        addBias(masked(allowed, '_window'), '_window_bias');
      } else {
        const data = new Float32Array(s * l);
        for (let i = 0; i < s; i++) {
          for (let j = 0; j < l; j++) {
            const diff = i + pastLength - j;
            data[i * l + j] = (left < 0 || diff <= left) && (right < 0 || -diff <= right) ? 0 : -Infinity;
          }
        }
        addBias(staticValue(floatTensor([s, l], data)), '_window_bias');
      }
    }
    if (lengths !== undefined) {
      // Keys at and past nonpad_kv_seqlen[b] are padding.
      const iota = staticValue(intTensor([l], Array.from({ length: l }, (_, j) => j)));
      addBias(masked(applyOp(n, 'less', [iota, nodeValue(lengths)], {}, '_pad_allowed'), '_pad'), '_pad_bias');
    }
    if (bias) scores = rounded(idOf(n.op('add', [scores, n.nodeOf(bias, '_bias')], {}, '_biased')), '_biased_rounded');
    const probs = softmaxType ? idOf(n.op('narrow_softmax', [scores], { axis: -1, type: softmaxType, safe: true }, '_softmax'))
      : rounded(idOf(n.op('safe_softmax', [scores], {}, '_softmax')), '_softmax_rounded');

    let y = g === 1 ? matmul(n, probs, v, '_pv')
      : reshape(n, matmul(n, reshape(n, probs, [b, kvh, g, s, l], '_p_groups'), reshape(n, v, [b, kvh, 1, l, dv], '_v_groups'), '_pv'), [b, qh, s, dv], '_y_heads');
    if (rank === 3) y = reshape(n, transpose(n, y, [0, 2, 1, 3], '_y_bshd'), [b, s, qh * dv], '_y');
    const qkOut = [qk, afterSoftcap, scores, probs][mode];
    return [nodeValue(y), past[0] ? nodeValue(k) : undefined, past[0] ? nodeValue(v) : undefined, n.outputs[3] ? nodeValue(qkOut) : undefined];
  },
};

type Reduction = 'none' | 'sum' | 'mean';

function reductionOf(n: NodeView): Reduction {
  const r = n.attr.string('reduction', 'mean');
  if (r !== 'none' && r !== 'sum' && r !== 'mean') throw new Error(`reduction '${r}' (none, sum or mean)`);
  return r;
}

/** The NLL loss of log-probabilities `x` [N, C, d...] (a graph node) at int targets (input `ti`), weights (input `wi`, optional), reduced. */
function nll(n: NodeView, x: number, ti: number, wi: number, suffix: string): Value {
  if (n.dtype(ti) !== 'int32') throw new Error(`target of type ${n.dtype(ti)} (an integer tensor)`);
  const inputs = [x, n.node(ti)];
  if (n.optional(wi)) {
    floatInput(n, wi, 'weight');
    inputs.push(n.node(wi));
  }
  const attrs = n.attr.has('ignore_index') ? { ignoreIndex: n.attr.int('ignore_index', 0) } : {};
  const loss = idOf(n.op('nll_loss', inputs, attrs, `${suffix}_loss`));
  const reduction = reductionOf(n);
  if (reduction === 'none') return nodeValue(loss);
  const shape = n.graph.node(loss).shape;
  const axes = shape.map((_, i) => i);
  const total = idOf(n.op('reduce_sum', [loss], { axes, keepdims: false }, `${suffix}_sum`));
  if (reduction === 'sum') return nodeValue(total);
  // Without weights or ignore_index every element weighs 1: the mean divides by their count.
  const count = inputs.length === 2 && !n.attr.has('ignore_index')
    ? n.nodeOf(scalar(shape.reduce((p, d) => p * d, 1)), `${suffix}_count`)
    : idOf(n.op('reduce_sum', [idOf(n.op('nll_weight', inputs.slice(1), { ...attrs, classes: n.graph.node(x).shape[1] }, `${suffix}_weight`))],
      { axes, keepdims: false }, `${suffix}_weight_sum`));
  return n.op('divide', [total, count], {}, `${suffix}_mean`);
}

const nllLoss: Converter = {
  attrs: ['reduction', 'ignore_index'],
  convert(n) {
    floatInput(n, 0, 'input');
    if (n.shape(0).length < 2) throw new Error(`input of rank ${n.shape(0).length} (at least [N, C])`);
    return [nll(n, n.node(0), 1, 2, '')];
  },
};

const softmaxCrossEntropyLoss: Converter = {
  attrs: ['reduction', 'ignore_index'],
  convert(n) {
    floatInput(n, 0, 'scores');
    if (n.shape(0).length < 2) throw new Error(`scores of rank ${n.shape(0).length} (at least [N, C])`);
    const logProb = idOf(n.op('log_softmax', [n.node(0)], { axis: 1 }, '_log_prob'));
    return [nll(n, logProb, 1, 2, ''), n.outputs[1] ? nodeValue(logProb) : undefined];
  },
};

const swish: Converter = {
  attrs: ['alpha'],
  convert(n) {
    floatInput(n, 0, 'X');
    return [n.op('swish', [n.node(0)], { alpha: n.attr.float('alpha', 1) })];
  },
};

/** SwiGLU (opset 28): Swish_alpha(A) * B, A and B of one shape. */
const swiglu: Converter = {
  attrs: ['alpha'],
  convert(n) {
    floatInput(n, 0, 'A');
    floatInput(n, 1, 'B');
    const a = n.shape(0), b = n.shape(1);
    if (a.length !== b.length || a.some((d, i) => d !== b[i])) throw new Error(`A [${a.join(', ')}] and B [${b.join(', ')}] of different shapes`);
    const gate = idOf(n.op('swish', [n.node(0)], { alpha: n.attr.float('alpha', 1) }, '_swish'));
    return [n.op('multiply', [gate, n.node(1)])];
  },
};

const shrink: Converter = {
  attrs: ['lambd', 'bias'],
  convert(n) {
    floatInput(n, 0, 'input');
    return [n.op('shrink', [n.node(0)], { lambd: n.attr.float('lambd', 0.5), bias: n.attr.float('bias', 0) })];
  },
};

/** The ONNX integer type of input `i`: a graph input's or initializer's declared type, or a narrowing Cast's; else undefined. */
function intTypeOf(n: NodeView, i: number): number | undefined {
  const v = n.input(i);
  if (v.kind === 'static') return ONNX_ELEMENT_TYPE.get(v.t);
  const node = n.graph.node(v.id);
  if (node.op === 'input') return ONNX_INPUT_TYPE.get(n.graph)?.get(v.id);
  if (node.op === 'cast' && 'attrs' in node && node.attrs.bits !== undefined) {
    return DataType[`${node.attrs.signed ? 'INT' : 'UINT'}${node.attrs.bits as number}` as keyof typeof DataType];
  }
  return undefined;
}

const INT_TYPES: Partial<Record<number, IntType>> = {
  [DataType.INT8]: { bits: 8, signed: true }, [DataType.INT16]: { bits: 16, signed: true },
  [DataType.INT32]: { bits: 32, signed: true }, [DataType.INT64]: { bits: 64, signed: true },
  [DataType.UINT8]: { bits: 8, signed: false }, [DataType.UINT16]: { bits: 16, signed: false },
};

const bitShift: Converter = {
  attrs: ['direction'],
  convert(n) {
    const direction = n.attr.string('direction', '');
    if (direction !== 'LEFT' && direction !== 'RIGHT') throw new Error(`direction '${direction}' (LEFT or RIGHT)`);
    const code = intTypeOf(n, 0) ?? intTypeOf(n, 1);
    if (code === undefined) throw new UnsupportedError('BitShift of a computed tensor whose integer type is not known here');
    if (code === DataType.UINT32 || code === DataType.UINT64) throw new UnsupportedError(`BitShift of ${dataTypeName(code)} (values above 2^31 do not fit the int32 carrier)`);
    const t = INT_TYPES[code];
    if (!t) throw new UnsupportedError(`BitShift of ${dataTypeName(code)}`);
    if (direction === 'LEFT' && t.bits === 64) throw new UnsupportedError('a LEFT BitShift of int64 (the result does not fit the int32 carrier)');
    return [applyOp(n, 'bit_shift', [n.input(0), n.input(1)], { left: direction === 'LEFT', bits: t.bits, signed: t.signed })];
  },
};

/** The integer type of a bitwise operator's operands (the first known of `inputs`), or an UnsupportedError. */
function knownIntType(n: NodeView, inputs: readonly number[]): IntType {
  const code = inputs.map((i) => intTypeOf(n, i)).find((c) => c !== undefined);
  if (code === undefined) throw new UnsupportedError(`${n.opType} of a computed tensor whose integer type is not known here`);
  if (code === DataType.UINT32 || code === DataType.UINT64) throw new UnsupportedError(`${n.opType} of ${dataTypeName(code)} (values above 2^31 do not fit the int32 carrier)`);
  const t = INT_TYPES[code];
  if (!t) throw new UnsupportedError(`${n.opType} of ${dataTypeName(code)}`);
  return t;
}

function bitwise(kind: 'and' | 'or' | 'xor'): Converter {
  return {
    attrs: [],
    convert(n) {
      const t = knownIntType(n, [0, 1]);
      return [applyOp(n, `bitwise_${kind}`, [n.input(0), n.input(1)], { bits: t.bits, signed: t.signed })];
    },
  };
}

const bitwiseNot: Converter = {
  attrs: [],
  convert(n) {
    const t = knownIntType(n, [0]);
    return [applyOp(n, 'bitwise_not', [n.input(0)], { bits: t.bits, signed: t.signed })];
  },
};

const compress: Converter = {
  attrs: ['axis'],
  convert(n) {
    const cond = n.input(1);
    if (cond.kind !== 'static') throw new UnsupportedError('a condition computed at run time (the output shape depends on it)');
    let data = n.input(0);
    let shape = n.shape(0);
    let axis: number;
    if (n.attr.has('axis')) {
      axis = n.attr.int('axis', 0);
      if (axis < -shape.length || axis >= shape.length) throw new Error(`axis ${axis} out of range for rank ${shape.length}`);
      if (axis < 0) axis += shape.length;
    } else {
      shape = [shape.reduce((p, d) => p * d, 1)];
      data = reshapeValue(n, data, shape, '_flat');
      axis = 0;
    }
    const flags = [...cond.t.data];
    if (flags.length > shape[axis]) throw new Error(`condition of ${flags.length} values for an axis of ${shape[axis]}`);
    const picked = flags.flatMap((f, i) => (f ? [i] : []));
    if (!picked.length) throw new UnsupportedError('a condition selecting nothing (an empty result)');
    return [applyOp(n, 'take', [data, staticValue(intTensor([picked.length], picked))], { axis })];
  },
};

/** Steps above which a CumProd (quadratic in its axis, as CumSum) is refused. */
const MAX_CUMPROD_STEPS = 1 << 28;

const cumprod: Converter = {
  attrs: ['exclusive', 'reverse'],
  convert(n) {
    const shape = n.shape(0);
    const a = n.ints(1, 'axis');
    if (a.length !== 1) throw new Error(`axis has ${a.length} values, expected one`);
    if (n.dtype(0) === 'bool') throw new Error('CumProd of a bool tensor');
    const axis = a[0] < 0 ? a[0] + shape.length : a[0];
    if (axis < 0 || axis >= shape.length) throw new Error(`axis ${a[0]} out of range for rank ${shape.length}`);
    const steps = shape.reduce((p, d) => p * d, 1) * shape[axis];
    if (steps > MAX_CUMPROD_STEPS) throw new UnsupportedError(`CumProd of ${steps} steps (the elements x the axis length; at most ${MAX_CUMPROD_STEPS})`);
    return [applyOp(n, 'cumprod', [n.input(0)], { axis, exclusive: n.attr.int('exclusive', 0) === 1, reverse: n.attr.int('reverse', 0) === 1 })];
  },
};

const lpNormalization: Converter = {
  attrs: ['axis', 'p'],
  convert(n) {
    floatInput(n, 0, 'input');
    const p = n.attr.int('p', 2);
    if (p !== 1 && p !== 2) throw new UnsupportedError(`p = ${p} (1 or 2)`);
    const rank = n.shape(0).length;
    const axis = n.attr.int('axis', -1);
    if (axis < -rank || axis >= rank) throw new Error(`axis ${axis} out of range for rank ${rank}`);
    return [n.op('lp_normalize', [n.node(0)], { axis: axis < 0 ? axis + rank : axis, p })];
  },
};

/** CenterCropPad (opset 18) to a constant `shape` along `axes`: a centered crop (strided_slice) where smaller, centered zero padding where larger. */
const centerCropPad: Converter = {
  attrs: ['axes'],
  convert(n) {
    const dims = n.shape(0);
    const target = n.ints(1, 'shape');
    const axes = (n.attr.ints('axes') ?? dims.map((_, i) => i)).map((a) => (a < 0 ? a + dims.length : a));
    if (axes.length !== target.length) throw new Error(`shape has ${target.length} values for ${axes.length} axes`);
    if (axes.some((a) => a < 0 || a >= dims.length)) throw new Error(`axes out of range for rank ${dims.length}`);
    if (target.some((t) => t < 1)) throw new UnsupportedError('an empty result');
    const begin = dims.map(() => 0), cropped = [...dims], before = dims.map(() => 0), after = dims.map(() => 0);
    axes.forEach((a, k) => {
      const t = target[k], d = dims[a];
      if (t < d) { begin[a] = Math.floor((d - t) / 2); cropped[a] = t; }
      if (t > d) { before[a] = Math.floor((t - d) / 2); after[a] = t - d - before[a]; }
    });
    let v = n.input(0);
    if (cropped.some((c, i) => c !== dims[i])) v = applyOp(n, 'strided_slice', [v], { begin, step: dims.map(() => 1), shape: cropped }, '_crop');
    if (before.some((x) => x) || after.some((x) => x)) v = applyOp(n, 'pad', [v], { before, after, value: 0 }, '_pad');
    return [v];
  },
};

/** Steps above which MaxUnpool's scatter (the output elements x the input elements, as ScatterElements) is refused. */
const MAX_UNPOOL_STEPS = 1 << 26;

/**
 * MaxUnpool: X's values written at their flat positions `I` (MaxPool's indices) of a zero
 * tensor of the inferred shape ((in - 1) * stride - pads + kernel); a scatter_elements over
 * the flattened tensors. An output_shape other than the inferred one is refused.
 */
const maxUnpool: Converter = {
  attrs: ['kernel_shape', 'pads', 'strides'],
  convert(n) {
    floatInput(n, 0, 'X');
    if (n.dtype(1) !== 'int32') throw new Error(`indices of type ${n.dtype(1)}`);
    const x = n.shape(0);
    const spatial = x.length - 2;
    const kernel = n.attr.ints('kernel_shape');
    if (!kernel || kernel.length !== spatial) throw new Error(`kernel_shape must have ${spatial} values`);
    const strides = n.attr.ints('strides') ?? kernel.map(() => 1);
    const pads = n.attr.ints('pads') ?? [...kernel, ...kernel].map(() => 0);
    const inferred = [x[0], x[1], ...kernel.map((k, d) => (x[d + 2] - 1) * strides[d] - (pads[d] + pads[spatial + d]) + k)];
    const total = inferred.reduce((p, d) => p * d, 1), count = x.reduce((p, d) => p * d, 1);
    if (n.shape(1).reduce((p, d) => p * d, 1) !== count) throw new Error('indices and X of different sizes');
    if (total * count > MAX_UNPOOL_STEPS) throw new UnsupportedError(`MaxUnpool of ${total * count} steps (output x input elements; at most ${MAX_UNPOOL_STEPS})`);
    const out = n.optional(2) ? n.ints(2, 'output_shape') : inferred;
    if (out.length !== x.length) throw new Error(`output_shape of ${out.length} values for rank ${x.length}`);
    if (out.some((d, i) => d !== inferred[i])) {
      // ONNX Runtime reads the indices in output_shape's flat space, the ONNX reference (and its test) in the inferred shape's.
      throw new UnsupportedError(`output_shape [${out.join(', ')}] other than the inferred [${inferred.join(', ')}] (ONNX Runtime and the ONNX reference disagree)`);
    }
    const zeros = staticValue(floatTensor([total], new Float32Array(total)));
    const flat = (i: number, suffix: string): Value => reshapeValue(n, n.input(i), [count], suffix);
    const y = applyOp(n, 'scatter_elements', [zeros, flat(1, '_flat_indices'), flat(0, '_flat_x')], { axis: 0, reduction: 'none' }, '_scatter');
    return [reshapeValue(n, y, inferred, '_unflat')];
  },
};

/** Random generators and samplers: results that differ from run to run (and from ONNX Runtime's) are refused. */
const random = (attrs: string[]): Converter => ({
  attrs,
  convert(n) { throw new UnsupportedError(`${n.opType} draws random numbers (non-deterministic; no result to compare)`); },
});

export const EXTRA_CONVERTERS: Record<string, Converter> = {
  Swish: swish,
  SwiGLU: swiglu,
  Shrink: shrink,
  BitShift: bitShift,
  BitwiseAnd: bitwise('and'),
  BitwiseOr: bitwise('or'),
  BitwiseXor: bitwise('xor'),
  BitwiseNot: bitwiseNot,
  Compress: compress,
  CumProd: cumprod,
  CenterCropPad: centerCropPad,
  MaxUnpool: maxUnpool,
  LpNormalization: lpNormalization,
  Bernoulli: random(['dtype', 'seed']),
  RandomNormal: random(['shape', 'dtype', 'seed', 'scale', 'mean']),
  RandomUniform: random(['shape', 'dtype', 'seed', 'high', 'low']),
  RandomNormalLike: random(['dtype', 'seed', 'scale', 'mean']),
  RandomUniformLike: random(['dtype', 'seed', 'high', 'low']),
  Multinomial: random(['dtype', 'seed', 'sample_size']),
  IsNaN: isNaN_,
  IsInf: isInf,
  Attention: attention,
  RMSNormalization: rmsNormalization,
  RotaryEmbedding: rotaryEmbedding,
  NegativeLogLikelihoodLoss: nllLoss,
  SoftmaxCrossEntropyLoss: softmaxCrossEntropyLoss,
  GridSample: gridSample,
};
