// docs/onnx-operators.md, generated from the importer's own table of converters (the
// operators it knows and the attributes each reads), so the page cannot drift from the
// code: `npm run docs:ops` rewrites it, and engine/frontend/onnx/operators-doc.test.ts
// fails while the committed page differs from what this prints.

import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { CONVERTERS, MAX_OPSET, MIN_OPSET, SUPPORTED_OPS } from '../engine/frontend/onnx/import';

export const DOC_FILE = path.resolve(__dirname, '..', 'docs', 'onnx-operators.md');

/** What a converter refuses beyond unknown attributes (its UnsupportedError cases), in a few words. */
export const LIMITS: Readonly<Record<string, string>> = {
  AveragePool: '1-D, 2-D and 3-D windows; no negative pads',
  BatchNormalization: 'inference only (`training_mode=0`, no running mean/var outputs)',
  Cast: 'to float, and float16/bfloat16 (rounded to their precision, half to even) and double (as float32), the float8 types and float4 e2m1 (as float32, rounded to the type, `saturate` honoured), the integer types (as int32; int8/16, uint8/16, int4/uint4 and int2/uint2 wrap, floats truncated first) and bool; no float8e8m0 (`round_mode`), string or (from signed values) uint32/uint64',
  CastLike: 'as Cast, to the ONNX type of input 1 where the importer knows it (a graph input, an initializer or Constant: a float16 one rounds), else the type it runs as (int64/int32/... as int32: no wrapping)',
  Clip: '`min`/`max` inputs must be constant scalars',
  ConstantOfShape: 'a constant, non-empty shape',
  Constant: 'numeric values only (no strings, no sparse tensors)',
  Conv: '1-D, 2-D and 3-D images (rank 3 to 5); no negative pads',
  ConvTranspose: '1-D, 2-D and 3-D images (rank 3 to 5); no negative pads; `auto_pad` SAME without `output_shape` only where the convolution gives at least input x stride',
  LpPool: '1-D, 2-D and 3-D windows; no negative pads; `p` from 1 to 16',
  GlobalLpPool: '1-D, 2-D and 3-D images (rank 3 to 5); `p` from 1 to 16',
  Dropout: 'inference only (`training_mode` false): the identity; the mask all true (as ONNX Runtime: all false before opset 12)',
  Gather: 'integer indices, computed or constant (out-of-range ones clamped)',
  GatherElements: 'integer indices (out-of-range ones clamped)',
  GatherND: 'integer indices (out-of-range ones clamped)',
  Mod: 'floats: `fmod=0` from opset 28 only (ONNX Runtime refuses it below)',
  Range: 'constant `start`, `limit`, `delta`; a non-empty result',
  NonZero: 'of a constant tensor only',
  Unique: 'of a constant tensor only',
  ScatterElements: 'at most 2^26 steps (data elements x the updates\' axis length)',
  Scatter: 'as ScatterElements',
  ScatterND: 'at most 2^26 steps (data elements x the index tuples)',
  TopK: 'constant `K` (1 to the axis length); at most 2^26 steps (the elements x the axis length); always sorted',
  OneHot: 'constant `depth` and `values`',
  CumSum: 'constant `axis`; float or integer data; at most 2^28 steps (the elements x the axis length)',
  If: 'a condition known at import (constant, or folded from shapes): the taken branch is inlined',
  Shape: 'a non-empty result',
  ...Object.fromEntries(['Not', 'And', 'Or', 'Xor'].map((op) => [op, 'bool data'])),
  MatMul: 'A of rank >= 2 with a 2-D B, or two 3-D batches',
  MaxPool: '1-D, 2-D and 3-D windows; no negative pads; no Indices output',
  GlobalAveragePool: 'rank >= 3',
  GlobalMaxPool: 'rank >= 3',
  Pad: 'constant `pads`, `constant_value`, `axes`; negative pads (cropping) in mode `constant` only; `wrap` from opset 19',
  Slice: 'constant `starts`, `ends`, `axes`, `steps`; a non-empty result',
  Split: 'constant `split`; no empty outputs',
  Expand: 'a constant `shape`',
  Tile: 'constant `repeats` >= 1',
  DepthToSpace: '4-D (NCHW) data',
  SpaceToDepth: '4-D (NCHW) data',
  Trilu: 'a constant `k`',
  GridSample: 'float data; 4-D X (5-D from opset 20); cubic with border padding clamps each tap (as ONNX Runtime and PyTorch do; the ONNX reference clamps the coordinate)',
  Resize: 'constant `roi`, `scales`, `sizes`; `antialias` (opset 18+) up to 129 taps per axis (downscales to 1/64 linear, 1/32 cubic); `align_corners` with `scales` only where scale * length is whole (else give `sizes`); linear and cubic of float data',
  Upsample: 'opsets 7-9 (deprecated from 10: use Resize); constant `scales`',
  ...Object.fromEntries(['ReduceSum', 'ReduceProd', 'ReduceSumSquare'].map((op) => [op, 'constant `axes`; no bool data'])),
  ...Object.fromEntries(['ReduceMax', 'ReduceMin'].map((op) => [op, 'constant `axes`'])),
  ...Object.fromEntries(['ReduceMean', 'ReduceL1', 'ReduceL2', 'ReduceLogSum', 'ReduceLogSumExp'].map((op) => [op, 'constant `axes`; float data'])),
  LayerNormalization: 'float data; `stash_type=1`',
  GroupNormalization: 'float data; `stash_type=1`',
  InstanceNormalization: 'float data of rank >= 3',
  MeanVarianceNormalization: 'float data',
  LRN: 'float data; `bias > 0`, `alpha >= 0`',
  LSTM: 'sequence length fixed at import; `sequence_lens` absent or all equal to it; activations Sigmoid, Tanh, Relu, LeakyRelu, HardSigmoid, Affine, ScaledTanh',
  GRU: 'as LSTM; `linear_before_reset` both ways',
  RNN: 'as LSTM',
  QuantizeLinear: 'per tensor or per axis; uint8/int8/uint16/int16/uint4/int4/uint2/int2; no `block_size`',
  DequantizeLinear: 'per tensor or per axis; uint8/int8/uint16/int16/uint4/int4/uint2/int2/int32; no `block_size`',
  QLinearConv: 'per-tensor input scale; per-tensor or per-channel weight scale',
  QLinearMatMul: 'per-tensor scale and zero point of A',
  Attention: '`softmax_precision` float only',
  RMSNormalization: '`stash_type` 1',
  BitShift: 'not uint32/uint64 (values beyond int32); no LEFT of int64',
  BitwiseAnd: 'not uint32/uint64', BitwiseOr: 'not uint32/uint64', BitwiseXor: 'not uint32/uint64', BitwiseNot: 'not uint32/uint64',
  Compress: 'constant condition',
  LpNormalization: '`p` 1 or 2',
  MaxUnpool: '`output_shape` only as inferred',
  Bernoulli: 'refused: non-deterministic', RandomNormal: 'refused: non-deterministic', RandomNormalLike: 'refused: non-deterministic',
  RandomUniform: 'refused: non-deterministic', RandomUniformLike: 'refused: non-deterministic', Multinomial: 'refused: non-deterministic',
  Pow: 'float32 base',
  Celu: '`alpha` not 0',
  Gelu: '`approximate` none or tanh',
  Sum: 'equal shapes at opset 7', Max: 'equal shapes at opset 7', Min: 'equal shapes at opset 7', Mean: 'equal shapes at opset 7',
  Softmax: 'opsets below 13 coerce to 2-D at `axis`, as ONNX defines',
  LogSoftmax: 'float data',
  Hardmax: 'float data',
};

export function operatorsMarkdown(): string {
  const rows = SUPPORTED_OPS.map((op) => {
    const attrs = CONVERTERS[op].attrs.length ? CONVERTERS[op].attrs.map((a) => `\`${a}\``).join(', ') : '(none)';
    return `| ${op} | ${attrs} | ${LIMITS[op] ?? ''} |`;
  });
  return `# Supported ONNX operators

<!-- Generated by \`npm run docs:ops\` (scripts/onnx-operators.ts) from the importer's table
     of converters; edit the script, not this page. -->

\`tensortune tasks|tune|compile model.onnx\` and \`networks.<name>.model: model.onnx\` in the config
import ONNX models of opsets ${MIN_OPSET} to ${MAX_OPSET}, default domain (\`ai.onnx\`); tensors of float32,
float16, bfloat16 and double (run as float32: [onnx.md](onnx.md#what-imports)), the integer types (run as int32) and bool. These
${SUPPORTED_OPS.length} operators are converted; a node with any other operator, another domain or an
attribute not listed for its operator is refused, and one error names the file and lists every
such node at once. Shape arithmetic (Shape, Gather, Slice, Concat, Cast, Reshape ... over
constants) is computed at import time, so the shape patterns exporters write disappear.

| Operator | Attributes it reads | Limits |
|---|---|---|
${rows.join('\n')}
`;
}

if (require.main === module) {
  writeFileSync(DOC_FILE, operatorsMarkdown());
  process.stdout.write(`wrote ${path.relative(process.cwd(), DOC_FILE)} (${SUPPORTED_OPS.length} operators)\n`);
}
