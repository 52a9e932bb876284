// The e2e suite's network: a tiny ONNX CNN (conv+relu, conv+relu, global average pool,
// dense) built with the engine's ONNX model builder, so tuning it takes seconds. The
// second conv's kernel size is the "one layer" the suite changes.

import { writeFileSync } from 'node:fs';
import { OnnxModelBuilder } from '../engine/frontend/onnx/model-builder';

function weights(n: number, seed: number): number[] {
  // Small deterministic values (a linear congruential sequence), enough for a runnable model.
  let x = seed >>> 0;
  return Array.from({ length: n }, () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return (x / 2 ** 32 - 0.5) * 0.2;
  });
}

export function writeTinyModel(file: string, secondKernel: 1 | 3): void {
  const c = 8;
  const k = secondKernel;
  const pad = (k - 1) / 2;
  const bytes = new OnnxModelBuilder(13)
    .input('image', [1, 3, 16, 16])
    .float('w1', [c, 3, 3, 3], weights(c * 27, 1)).float('b1', [c], weights(c, 2))
    .float('w2', [c, c, k, k], weights(c * c * k * k, 3)).float('b2', [c], weights(c, 4))
    .float('w3', [4, c], weights(4 * c, 5)).float('b3', [4], weights(4, 6))
    .node('Conv', ['image', 'w1', 'b1'], ['c1'], { kernel_shape: [3, 3], pads: [1, 1, 1, 1] })
    .node('Relu', ['c1'], ['r1'])
    .node('Conv', ['r1', 'w2', 'b2'], ['c2'], { kernel_shape: [k, k], pads: [pad, pad, pad, pad] })
    .node('Relu', ['c2'], ['r2'])
    .node('GlobalAveragePool', ['r2'], ['g'])
    .node('Flatten', ['g'], ['f'])
    .node('Gemm', ['f', 'w3', 'b3'], ['logits'], { transB: 1 })
    .output('logits')
    .build();
  writeFileSync(file, bytes);
}
