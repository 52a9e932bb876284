// Target strings, as in TVM: `llvm -mcpu=native`, `llvm -mattr=+avx2,+fma`,
// `llvm -mtriple=aarch64-linux-gnu`, `opencl`, `opencl -device=mali`, `cuda -arch=sm_80`.
// Each kind is one record in engine/targets/ (llvm.ts, opencl.ts, cuda.ts), registered in
// engine/targets/registry.ts; this module is the engine's entry to them: parsing, the
// hardware fingerprint, and the types.

export type { CudaParams, GpuParams, GpuTarget, Target } from './targets/types';
export type { CudaProbe, OpenclProbe, TargetKind } from './targets/kind';
export {
  checkRunsHere, gpuParams, hardwareFingerprint, isGpu, kindOf, parseTarget, registerTargetKind, targetKinds, withHardwareParams,
} from './targets/registry';
export { cpuModel } from './targets/host';
export { MALI_GPU_PARAMS, NO_OPENCL_DEVICE, OPENCL_DEVICES, OPENCL_GPU_PARAMS, openclDevice, openclGpuParams, openclIdentity } from './targets/opencl';
export { CUDA_GPU_PARAMS, cudaDevice, NO_CUDA_DEVICE } from './targets/cuda';
