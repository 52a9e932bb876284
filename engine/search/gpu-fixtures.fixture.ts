// Tasks and GPU targets shared by the GPU search tests: ResNet-50's last 3x3 conv
// (7x7x512 -> 512, padding 1, + bias + relu, NHWC, batch 1; the benches tune it
// too: bench/tune-conv.ts), a depthwise conv, dense layers, an element-wise op and a softmax.

import { NetBuilder } from '../frontend/builder';
import { getNetwork } from '../frontend/networks';
import { extractTasks, type Task } from '../graph/extract';
import { ComputeDAG } from '../ir/dag';
import { placeholder } from '../ir/tensor';
import { parseTarget, type Target } from '../target';
import { binary, relu } from '../topi/elemwise';
import { conv2dNHWC } from '../topi/nn';

/** `opencl` with its threads and shared memory given (so no device is asked) and 4 vthreads, to exercise them. */
export const OPENCL: Target = parseTarget('opencl -max_threads_per_block=256 -max_shared_memory_per_block=49152 -max_vthread_extent=4');
/** `opencl -device=mali`: TVM's fixed Mali parameters. */
export const MALI: Target = parseTarget('opencl -device=mali');

/** The seed's conv2d_layer(1, 7, 7, 512, 512, 3, 3, (1, 1), (1, 1)), in NHWC. */
export function resnet50LastConv(): Task {
  const b = new NetBuilder({ batch: 1, layout: 'NHWC', imageSize: 7, seed: 0, randomStats: false, weights: 'zeros' });
  const x = b.input(512);
  const y = b.relu(b.bias(b.conv2d(x, 'conv', { channels: 512, kernel: [3, 3], padding: [1, 1] }), 'conv_bias'));
  b.graph.outputs = [y];
  const tasks = extractTasks(b.graph);
  if (tasks.length !== 1) throw new Error(`expected one task, got ${tasks.length}`);
  return tasks[0];
}

const mobilenet = (imageSize: number): Task[] => extractTasks(getNetwork('mobilenet', { weights: 'zeros', imageSize }).graph);

/** A task of mobilenet (at `imageSize`) whose description starts with `prefix`. */
export function mobilenetTask(prefix: string, imageSize = 224): Task {
  const t = mobilenet(imageSize).find((x) => x.desc.startsWith(prefix));
  if (!t) throw new Error(`no mobilenet task ${prefix}`);
  return t;
}

/** A bare task around a DAG (the tests need its dag and desc only). */
export function taskOf(dag: ComputeDAG, desc: string): Task {
  return { dag, desc, key: desc, weight: 1, flops: dag.flops } as unknown as Task;
}

/** An NHWC conv with no epilogue (its output is the DAG's output: the cache_write sketch). */
export function bareConv(c = 32, f = 64, size = 14): Task {
  const data = placeholder('data', [1, size, size, c]);
  const weight = placeholder('weight', [3, 3, c, f]);
  return taskOf(new ComputeDAG([conv2dNHWC(data, weight, { strides: [1, 1], padding: [1, 1, 1, 1], dilation: [1, 1] })]), 'conv alone');
}

/** relu(x + y) on a 1x56x56x64 tensor: element-wise only. */
export function elementwise(): Task {
  const x = placeholder('x', [1, 56, 56, 64]), y = placeholder('y', [1, 56, 56, 64]);
  return taskOf(new ComputeDAG([relu(binary('add', x, y))]), 'relu(x + y)');
}
