// The hardware parameters a GPU target string may give (TVM's HardwareParams names) and
// their ranges.

import type { GpuParams } from './types';

export const INT32_MAX = 2147483647;

/** The hardware-parameter options of a GPU target string, in the order normalised text lists them (by name). */
export const GPU_OPTIONS: readonly { key: keyof GpuParams; option: string; min: number; max: number; pow2?: true }[] = [
  { key: 'cacheLineBytes', option: 'cache_line_bytes', min: 4, max: 4096, pow2: true },
  { key: 'maxLocalMemoryPerBlock', option: 'max_local_memory_per_block', min: 1, max: INT32_MAX },
  { key: 'maxSharedMemoryPerBlock', option: 'max_shared_memory_per_block', min: 1, max: INT32_MAX },
  { key: 'maxThreadsPerBlock', option: 'max_threads_per_block', min: 1, max: 16384 },
  { key: 'maxVthreadExtent', option: 'max_vthread_extent', min: 1, max: 1024 },
  { key: 'warpSize', option: 'thread_warp_size', min: 1, max: 1024 },
  { key: 'vectorUnitBytes', option: 'vector_unit_bytes', min: 4, max: 256, pow2: true },
];

export const gpuOptionsList = (): string => GPU_OPTIONS.map((o) => `-${o.option}=N`).join(', ');

/** What is wrong with `value` for one hardware parameter, or undefined. */
export function paramProblem(spec: (typeof GPU_OPTIONS)[number], value: number): string | undefined {
  const ok = Number.isSafeInteger(value) && value >= spec.min && value <= spec.max && (!spec.pow2 || (value & (value - 1)) === 0);
  if (ok) return undefined;
  return spec.pow2 ? `expected a power of two from ${spec.min} to ${spec.max}` : `expected an integer from ${spec.min} to ${spec.max}`;
}

