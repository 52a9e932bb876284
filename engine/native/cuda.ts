// The CUDA GPU this machine offers, as `nvidia-smi` describes it: its name, driver version
// and compute capability. The `cuda` target takes its default -arch from it and names it in
// the hardware fingerprint. nvidia-smi ships with the driver, so a machine without a driver
// (a CI runner with only nvcc) has none: the answer is then an error, never an exception.
//
// Synchronous on purpose, as opencl.ts: the target's hardware fingerprint is synchronous.
// The answer is memoised per process, per device selection (TT_CUDA_DEVICE, the index the
// runtime native/cuda/tt_cuda.c opens, default 0) and per PATH (where nvidia-smi is found).

import { spawnSync } from 'node:child_process';

export interface CudaDevice {
  /** 'NVIDIA H100 80GB HBM3'. */
  name: string;
  driverVersion: string;
  /** `sm_90` for compute capability 9.0. */
  arch: string;
  /** The index of the device among those nvidia-smi lists. */
  index: number;
}

export type CudaAnswer = { device: CudaDevice } | { error: string };

/** Time limit of one nvidia-smi run. */
const SMI_TIMEOUT_MS = 30_000;

/**
 * The device index the runtime opens: $TT_CUDA_DEVICE, decimal digits, default 0 (unset or
 * empty). Anything else is refused, here and by tt_cuda.c, with the same message.
 */
export function cudaDeviceIndex(env: NodeJS.ProcessEnv = process.env): number | { error: string } {
  const text = env.TT_CUDA_DEVICE;
  if (!text) return 0;
  return /^\d{1,6}$/.test(text) ? Number(text) : { error: `TT_CUDA_DEVICE='${text}': expected a device index (0, 1, ...)` };
}

/** Parses `nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader` lines. */
export function parseNvidiaSmi(stdout: string): CudaDevice[] {
  return stdout.split('\n').map((l) => l.trim()).filter((l) => l !== '').flatMap((line, index) => {
    const parts = line.split(',').map((p) => p.trim());
    const cap = /^(\d+)\.(\d+)$/.exec(parts[parts.length - 1] ?? '');
    if (parts.length < 3 || !cap) return [];
    // A GPU name may hold commas: the last two fields are the driver and the capability.
    const name = parts.slice(0, parts.length - 2).join(', ');
    return [{ name, driverVersion: parts[parts.length - 2], arch: `sm_${cap[1]}${cap[2]}`, index }];
  });
}

const answers = new Map<string, CudaAnswer>();

/** The CUDA device this process would run on, or why there is none (no nvidia-smi, no GPU). */
export function cudaDeviceSync(): CudaAnswer {
  const index = cudaDeviceIndex();
  if (typeof index !== 'number') return index;
  const key = `${index}\0${process.env.PATH ?? ''}`;
  const known = answers.get(key);
  if (known) return known;
  const r = spawnSync('nvidia-smi', ['--query-gpu=name,driver_version,compute_cap', '--format=csv,noheader'], { encoding: 'utf8', timeout: SMI_TIMEOUT_MS });
  let answer: CudaAnswer;
  if (r.error || r.status !== 0) {
    const code = (r.error as NodeJS.ErrnoException | undefined)?.code;
    answer = { error: code === 'ENOENT' ? 'nvidia-smi not found (no NVIDIA driver on this machine)' : `nvidia-smi failed: ${(r.stderr || r.stdout || r.error?.message || '').trim().split('\n')[0]}` };
  } else {
    const devices = parseNvidiaSmi(r.stdout);
    const device = devices[index];
    answer = device ? { device } : { error: devices.length === 0 ? 'nvidia-smi lists no GPU' : `TT_CUDA_DEVICE=${index}, but nvidia-smi lists ${devices.length} GPU(s)` };
  }
  answers.set(key, answer);
  return answer;
}
