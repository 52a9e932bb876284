// Test helpers of the GPU model tests (model-opencl.test.ts, model-cuda.test.ts): the
// tensortune command run in this process with its output captured, and the top-1 class.

import { main } from '../cli';

export async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '', err = '';
  const code = await main(args, { out: (t) => { out += t; }, err: (t) => { err += t; } });
  return { code, out, err };
}

export const argmax = (xs: ArrayLike<number>): number => {
  let best = 0;
  for (let i = 1; i < xs.length; i++) if (xs[i] > xs[best]) best = i;
  return best;
};
