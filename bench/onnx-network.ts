// What the ONNX Runtime comparisons (compare-ort.ts, contention.ts) compile: a builtin
// network (batch 1 unless asked) with random weights and non-trivial batch-norm (and
// layer-norm) statistics, its logits (no softmax), exported to ONNX (opset 14 unless asked;
// bert-base's LayerNormalization needs 17, or 13 for its decomposed form).

import path from 'node:path';
import { withoutSoftmax } from '../engine/compare/compare';
import { getNetwork, NO_IMAGE_NETWORKS } from '../engine/frontend/networks';
import { writeOnnxFile } from '../engine/frontend/onnx/export';

/** The networks written at opset 17 unless asked otherwise (their LayerNormalization). */
const TRANSFORMERS = ['vit-s16', 'bert-base'];

/** The opset a bench writes `name` at: `flag` when given, else 17 for the transformers and the exporter's default for the rest. */
export const benchOpset = (name: string, flag?: number): number | undefined => flag ?? (TRANSFORMERS.includes(name) ? 17 : undefined);

/** How a bench run names its input size: `--image-size N`, or each network's own. */
export const inputSizeText = (imageSize: number | undefined): string => (imageSize ? `${imageSize}x${imageSize} images` : "each network's own input size");

/** Writes the network `name` to `dir`/<name>.onnx and returns that path; without `imageSize`, the network's own input size (224, or 112 for resnet3d-18's frames). */
export function writeNetworkOnnx(dir: string, name: string, imageSize: number | undefined, opts: { batch?: number; opset?: number } = {}): string {
  const net = getNetwork(name, { layout: 'NCHW', ...(NO_IMAGE_NETWORKS.includes(name) || imageSize === undefined ? {} : { imageSize }), randomStats: true, batch: opts.batch ?? 1 });
  const onnx = path.join(dir, `${name}${opts.batch && opts.batch > 1 ? `-b${opts.batch}` : ''}${opts.opset ? `-opset${opts.opset}` : ''}.onnx`);
  writeOnnxFile(onnx, withoutSoftmax(net.graph), { name, opset: opts.opset });
  return onnx;
}
