// The small conv task the measurement tests run (measurer.test.ts, remote/remote.test.ts):
// a plain (not depthwise) conv with a small output (conv2d_nhwc+add+relu 1x16x16x32 ->
// 1x16x16x64 or the like), its default steps rendered, and three bad kernels: one that
// crashes, one that hangs and one that is correct everywhere but one element.

import { getNetwork } from '../frontend/networks';
import { extractTasks, type Task } from '../graph/extract';
import { defaultSchedule } from '../schedule/defaults';
import type { Target } from '../target';
import { renderCandidate, wrapKernel } from './builder';

export function convKernels(target: Target) {
  const tasks = extractTasks(getNetwork('mobilenet', { imageSize: 32, weights: 'zeros' }).graph);
  // Not the first conv (3 input channels): at 16 lanes its weights stay unpacked.
  const conv: Task = tasks.find((t) => t.desc.startsWith('conv2d_nhwc') && t.dag.inputs[0].shape[3] > 3 && t.dag.flops < 5e6)!;
  const defaults = defaultSchedule(conv.dag, { vectorLanes: target.vectorLanes });
  const nargs = conv.dag.inputs.length + conv.dag.outputs.length;
  const params = Array.from({ length: nargs }, (_, i) => `float* a${i}`).join(', ');
  const outSize = conv.dag.outputs[0].shape.reduce((a, b) => a * b, 1);
  const crashing = wrapKernel(`int32_t tt_candidate_kernel(${params}) { volatile float* volatile p = 0; p[(int)a0[0]] = 1.0f; return 0; }`, nargs);
  const hanging = wrapKernel(`int32_t tt_candidate_kernel(${params}) { volatile int spin = 1; while (spin) a${nargs - 1}[0] = 0.0f; return 0; }`, nargs);
  const good = renderCandidate(conv.dag, defaults, target);
  if (!good.ok) throw new Error(good.message);
  const wrong = good.code.replace(/return tt_candidate_kernel\(([^)]*)\);/, (_, args: string) =>
    `int r = tt_candidate_kernel(${args}); args[${nargs - 1}][${outSize >> 1}] += 0.5f; return r;`);
  return { tasks, conv, defaults, outSize, good, crashing, hanging, wrong };
}
