// The first-generation GPU schedule: what a task gets on a GPU target before (or without)
// tuning. Plain and always valid, the baseline tuned GPU schedules are compared with:
//  - every stage without a reduction that is not an output is inlined into its readers
//    (padding, bias, activations; TVM inlines them all on GPUs);
//  - every other stage is one launch: its spatial loops fused, split by a thread count
//    (min(64, max threads per block), less when the stage has fewer outputs) and bound to
//    blockIdx.x / threadIdx.x; a reduction runs serially inside each thread.
// No shared memory and no vthread, so it fits every device the limits describe.

import type { ComputeDAG } from '../ir/dag';
import { numElements } from '../ir/tensor';
import { State } from './state';
import type { Step } from './steps';

/** Threads per block of a default GPU launch (at most the device's limit). */
export const DEFAULT_GPU_THREADS = 64;

/** What the default needs of a GPU's limits (target.ts GpuParams has it). */
export interface DefaultGpuLimits {
  readonly maxThreadsPerBlock: number;
}

export function defaultGpuSchedule(dag: ComputeDAG, gpu: DefaultGpuLimits): Step[] {
  const steps: Step[] = [];
  const state = new State(dag);
  const apply = (st: Step): void => { state.apply(st); steps.push(st); };
  for (const s of [...state.stages]) {
    if (!s.isOutput && s.reduceAxes.length === 0) apply({ s: 'compute_inline', stage: s.name });
  }
  for (const s of state.stages) {
    if (s.attach.k !== 'root') continue;
    const axes = s.axes.map((a) => a.name);
    // A stage with no spatial axis (a scalar, e.g. ReduceMean over all axes without
    // keepdims) has no loop a thread index can take: left unbound, lowerGpu refuses it
    // with its reason rather than this function failing a whole network.
    if (axes.length === 0) continue;
    const fused = axes.join('@');
    if (axes.length > 1) apply({ s: 'fuse', stage: s.name, iters: axes });
    const threads = Math.max(1, Math.min(DEFAULT_GPU_THREADS, gpu.maxThreadsPerBlock, numElements(s.axes.map((a) => a.extent))));
    apply({ s: 'split', stage: s.name, iter: fused, lengths: [threads] });
    apply({ s: 'bind', stage: s.name, iter: `${fused}.0`, thread: 'blockIdx.x' });
    apply({ s: 'bind', stage: s.name, iter: `${fused}.1`, thread: 'threadIdx.x' });
  }
  state.validate();
  return steps;
}
