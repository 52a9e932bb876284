// The cuda target a test runs its candidates or models on: this machine's GPU architecture
// where nvidia-smi finds a GPU (a cubin runs only on the architecture it was built for: an
// sm_80 cubin is refused by an H100), else `fallback`, which compiles here without a GPU.

import { cudaDeviceSync } from './cuda';

export function cudaTestTarget(fallback = 'sm_80'): string {
  const found = cudaDeviceSync();
  return `cuda -arch=${'device' in found ? found.device.arch : fallback}`;
}
