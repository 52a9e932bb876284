// What a parsed target string is: the fields every target kind fills (engine/targets/kind.ts
// says how a kind parses, builds and runs them) and the GPU hardware parameters of the GPU
// kinds.

/**
 * The hardware parameters of a GPU target: TVM's HardwareParams (include/tvm/auto_scheduler/
 * search_task.h) less num_cores. Sizes are in bytes where TVM's are.
 */
export interface GpuParams {
  /** Bytes of shared memory (OpenCL `__local`) one block (work-group) may use. */
  maxSharedMemoryPerBlock: number;
  /** Bytes of local memory (registers, OpenCL `__private`) one block may use. */
  maxLocalMemoryPerBlock: number;
  /** Threads (work-items) per block. */
  maxThreadsPerBlock: number;
  /** Largest product of the extents bound to vthread. */
  maxVthreadExtent: number;
  /** Threads that execute in lockstep; a thread extent below it wastes lanes. */
  warpSize: number;
  /** Bytes of one vector register (16: float4). */
  vectorUnitBytes: number;
  cacheLineBytes: number;
}

/** What a `cuda` target adds to its GpuParams: the architecture and the register limits ptxas reports against. */
export interface CudaParams {
  /** `sm_80`. */
  readonly arch: string;
  /** 32-bit registers one block may use (registers per thread × threads). */
  readonly maxRegistersPerBlock: number;
  /** 32-bit registers one thread may use (255 on every architecture nvcc 11+ targets). */
  readonly maxRegistersPerThread: number;
}

export interface Target {
  /** The string as given, normalised: single spaces; for GPU kinds, options in a fixed order. */
  readonly text: string;
  /** The name of its kind's record (engine/targets/registry.ts): 'llvm', 'opencl', 'cuda', ... */
  readonly kind: string;
  /** `-device=`: for opencl 'mali' or absent; for llvm accepted and not used. */
  readonly device?: string;
  readonly mcpu?: string;
  readonly mattr: readonly string[];
  readonly mtriple?: string;
  /** float32 lanes of the vector unit the schedules target (GPU: vectorUnitBytes / 4). */
  readonly vectorLanes: number;
  /** Flags of the C compiler; for a GPU target, the host's (the host library is C for the host). */
  readonly cflags: readonly string[];
  /** Cross compiler prefix from -mtriple (e.g. `aarch64-linux-gnu-`), if any; for a GPU target, the host's. */
  readonly ccPrefix?: string;
  /** GPU targets: the hardware parameters the search keeps within. */
  readonly gpu?: GpuParams;
  /** GPU targets: the CPU side (TVM's target_host), `llvm` (this machine) unless given. */
  readonly host?: Target;
  /** CUDA targets: the architecture nvcc compiles for, and the register file. */
  readonly cuda?: CudaParams;
}

/** A GPU target: it has hardware parameters and a host. */
export type GpuTarget = Target & { readonly gpu: GpuParams; readonly host: Target };
