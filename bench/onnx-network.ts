// What the ONNX Runtime comparisons (compare-ort.ts, contention.ts) compile: a builtin
// network at batch 1 with random weights and non-trivial batch-norm statistics, its
// logits (no softmax), exported to ONNX.

import path from 'node:path';
import { withoutSoftmax } from '../engine/compare/compare';
import { getNetwork } from '../engine/frontend/networks';
import { writeOnnxFile } from '../engine/frontend/onnx/export';

/** Writes the network `name` to `dir`/<name>.onnx and returns that path. */
export function writeNetworkOnnx(dir: string, name: string, imageSize: number): string {
  const net = getNetwork(name, { layout: 'NCHW', imageSize, randomStats: true });
  const onnx = path.join(dir, `${name}.onnx`);
  writeOnnxFile(onnx, withoutSoftmax(net.graph), { name });
  return onnx;
}
