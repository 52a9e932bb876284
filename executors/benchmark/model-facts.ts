// The facts of a compiled model the report states beside its timings: its inputs' names
// and shapes, the floating-point work of one run (each kernel's FLOPs times the fused
// groups that call it, as compile counted them) and its parameter count, from the
// manifest. Throughput per second follows from these and the median (report.ts).

import type { Manifest, ManifestTensor } from '../../engine/compile/manifest';

export interface ModelFacts {
  inputs: ManifestTensor[];
  outputs: ManifestTensor[];
  /** FLOPs of one run, over the kernels with a reduction or elementwise work that compile counted. */
  flops: number;
  /** Weights and biases (the manifest's params_count). */
  params: number;
  /** The first input's leading dimension: images (or sequences) per run. */
  batch: number;
}

export function modelFacts(m: Manifest): ModelFacts {
  return {
    inputs: m.inputs.map(({ name, shape, dtype }) => ({ name, shape, dtype })),
    outputs: m.outputs.map(({ name, shape, dtype }) => ({ name, shape, dtype })),
    flops: m.kernels.reduce((a, k) => a + k.flops * Math.max(k.groups.length, 1), 0),
    params: m.params_count,
    batch: m.inputs[0]?.shape[0] ?? 1,
  };
}
