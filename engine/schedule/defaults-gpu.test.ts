// The first-generation GPU schedule is valid for every task of our networks (mobilenet and
// resnet-18, NHWC and NCHW) and of ONNX models using every kind of operator the importer
// takes: its steps pass the step schema, replay, and lower for the device (lowerGpu); on an
// OpenCL device (PoCL in CI) one task of each kind also runs and matches the reference.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { lowerGpu } from '../codegen/gpu';
import { getNetwork } from '../frontend/networks';
import { importOnnx } from '../frontend/onnx/import';
import { OnnxModelBuilder } from '../frontend/onnx/model-builder';
import { extractTasks, type Task } from '../graph/extract';
import type { Graph } from '../graph/graph';
import { LocalMeasurer } from '../measure/measurer';
import { openclAvailable } from '../native/opencl';
import { uniform } from '../runtime/random';
import { skip } from '../skip.fixture';
import { parseTarget, type Target } from '../target';
import { defaultOptionsOf, defaultSchedule } from './defaults';
import { DEFAULT_GPU_THREADS } from './defaults-gpu';
import { State } from './state';
import { checkSteps } from './validate-steps';

const OPENCL = parseTarget('opencl -max_threads_per_block=256 -max_shared_memory_per_block=49152');
const MALI = parseTarget('opencl -device=mali');
const FEW_THREADS = parseTarget('opencl -max_threads_per_block=32 -max_shared_memory_per_block=16384');

const rand = (n: number, seed: number): number[] => Array.from(uniform(n, seed, 0), (u) => u - 0.5);

/** ONNX models with the operators the importer's tests use (grouped and depthwise convs, BN, pools, Pad, Gemm, ReduceMean, Transpose, Concat, MatMul, Softmax). */
function onnxGraphs(): { name: string; graph: Graph }[] {
  const conv = new OnnxModelBuilder(13).input('x', [1, 4, 11, 11])
    .float('w1', [6, 2, 3, 3], rand(108, 1)).float('b1', [6], rand(6, 2))
    .float('g', [6], rand(6, 3).map((x) => x + 1)).float('be', [6], rand(6, 4)).float('m', [6], rand(6, 5)).float('v', [6], rand(6, 6).map((x) => x + 1))
    .float('w2', [12, 1, 3, 3], rand(108, 7))
    .node('Conv', ['x', 'w1', 'b1'], ['c1'], { group: 2, dilations: [2, 1], strides: [1, 2], pads: [1, 0, 2, 1], kernel_shape: [3, 3] })
    .node('BatchNormalization', ['c1', 'g', 'be', 'm', 'v'], ['bn'], { epsilon: 1e-3 })
    .node('LeakyRelu', ['bn'], ['lr'], { alpha: 0.1 })
    .node('Conv', ['lr', 'w2'], ['c2'], { group: 6, strides: [2, 2], auto_pad: 'SAME_LOWER' })
    .node('HardSigmoid', ['c2'], ['hs'], { alpha: 0.3, beta: 0.4 })
    .node('MaxPool', ['hs'], ['y'], { kernel_shape: [2, 2], strides: [2, 2], ceil_mode: 1 })
    .output('y').build();
  const pools = new OnnxModelBuilder(11).input('x', [1, 3, 9, 9])
    .float('w', [4, 3, 3, 3], rand(108, 8)).float('lo', [], [0]).float('hi', [], [0.5])
    .int64('pads', [0, 0, 1, 2, 0, 0, 0, 1]).float('pv', [], [0.25])
    .float('fc', [4, 5], rand(20, 9)).float('fcb', [1, 5], rand(5, 10))
    .node('Conv', ['x', 'w'], ['c'], { auto_pad: 'SAME_UPPER', strides: [2, 2] })
    .node('Clip', ['c', 'lo', 'hi'], ['cl'])
    .node('AveragePool', ['cl'], ['p1'], { kernel_shape: [3, 3], pads: [1, 1, 1, 1], count_include_pad: 1 })
    .node('Sigmoid', ['p1'], ['s'])
    .node('AveragePool', ['s'], ['p2'], { kernel_shape: [3, 3], pads: [1, 1, 1, 1], strides: [2, 2] })
    .node('Tanh', ['p2'], ['t'])
    .node('Pad', ['t', 'pads', 'pv'], ['pd'], { mode: 'constant' })
    .node('HardSigmoid', ['pd'], ['hw'])
    .node('GlobalAveragePool', ['hw'], ['gp'])
    .node('Flatten', ['gp'], ['flat'])
    .node('Gemm', ['flat', 'fc', 'fcb'], ['g'], { alpha: 0.5, beta: 1.5 })
    .node('Softmax', ['g'], ['y'], { axis: 1 })
    .output('y').build();
  const misc = new OnnxModelBuilder(13).input('x', [2, 3, 4, 5])
    .int64('ax1', [1]).float('w', [5, 3], rand(15, 12))
    .node('ReduceMean', ['x'], ['m1'], { axes: [2, 3], keepdims: 0 })
    .node('ReduceMean', ['x'], ['m2'], { axes: [1], keepdims: 1 })
    .node('Sub', ['x', 'm2'], ['d'])
    .node('Transpose', ['d'], ['dt'], { perm: [0, 2, 3, 1] })
    .node('Flatten', ['dt'], ['fl'], { axis: 2 })
    .node('MatMul', ['x', 'w'], ['mm'])
    .node('ReduceMean', ['mm'], ['mmr'], { axes: [1, 2], keepdims: 0 })
    .node('Concat', ['m1', 'mmr'], ['cat'], { axis: 1 })
    .node('Softmax', ['cat'], ['y'], { axis: 0 })
    .output('y').output('fl').build();
  return [['conv', conv], ['pools', pools], ['misc', misc]].map(([name, bytes]) => ({ name: name as string, graph: importOnnx(bytes as Uint8Array, `${name as string}.onnx`).graph }));
}

function allTasks(imageSize?: number): { label: string; task: Task }[] {
  const out: { label: string; task: Task }[] = [];
  for (const net of ['mobilenet', 'resnet-18']) {
    for (const layout of ['NHWC', 'NCHW'] as const) {
      const tasks = extractTasks(getNetwork(net, { weights: 'zeros', layout, ...(imageSize ? { imageSize } : {}) }).graph);
      out.push(...tasks.map((task) => ({ label: `${net} ${layout}`, task })));
    }
  }
  for (const { name, graph } of onnxGraphs()) {
    for (const layout of ['NCHW', 'NHWC'] as const) out.push(...extractTasks(graph, { layout }).map((task) => ({ label: `${name}.onnx ${layout}`, task })));
  }
  return out;
}

test('every task of mobilenet, resnet-18 and the ONNX models: the default GPU schedule validates, replays and lowers for the device', () => {
  const tasks = allTasks();
  assert.ok(tasks.length > 80, `${tasks.length} tasks`);
  const kinds = new Set<string>();
  for (const target of [OPENCL, MALI, FEW_THREADS]) {
    const gpu = target.gpu!;
    for (const { label, task } of tasks) {
      const what = `${target.text} / ${label} / ${task.desc}`;
      const steps = defaultSchedule(task.dag, defaultOptionsOf(target));
      assert.ok(checkSteps(steps).ok, what);
      const program = lowerGpu(State.replay(task.dag, steps), 'k', gpu);
      for (const k of program.kernels) {
        assert.ok(k.block[0] <= Math.min(DEFAULT_GPU_THREADS, gpu.maxThreadsPerBlock), `${what}: ${k.block[0]} threads`);
        assert.is(k.shared.length, 0, what);
      }
      task.dag.computeStages.forEach((t) => kinds.add(t.op.tag));
    }
  }
  for (const kind of ['conv2d_nhwc', 'conv2d_nchw', 'depthwise_conv2d_nhwc', 'depthwise_conv2d_nchw', 'dense', 'pool', 'softmax', 'injective', 'broadcast', 'elemwise']) {
    assert.ok(kinds.has(kind), `no task with a ${kind} stage (${[...kinds].join(', ')})`);
  }
});

test('a CPU target keeps the CPU default', () => {
  const [task] = extractTasks(getNetwork('mobilenet', { weights: 'zeros', imageSize: 32 }).graph);
  const cpu = parseTarget('llvm -mcpu=skylake-avx512');
  assert.equal(defaultOptionsOf(cpu), { vectorLanes: cpu.vectorLanes });
  assert.equal(defaultSchedule(task.dag, defaultOptionsOf(cpu)), defaultSchedule(task.dag, { vectorLanes: cpu.vectorLanes }));
  assert.not.ok(defaultSchedule(task.dag, defaultOptionsOf(cpu)).some((s) => s.s === 'bind'));
});

test('on the OpenCL device the default of one task of each kind runs and matches the reference', async () => {
  const why = openclAvailable();
  if (why) { skip('default GPU schedules on the OpenCL device', why); return; }
  const byKind = new Map<string, Task>();
  for (const { task } of allTasks(32)) {
    const kind = task.desc.split(' ')[0];
    if (!byKind.has(kind)) byKind.set(kind, task);
  }
  const run = async (target: Target): Promise<void> => {
    const measurer = new LocalMeasurer(target, { threads: 1, number: 1, repeat: 1, minRepeatMs: 0 });
    try {
      for (const task of byKind.values()) {
        const [o] = await measurer.measure(task, [defaultSchedule(task.dag, defaultOptionsOf(target))]);
        assert.is(o.error, null, `${target.text} / ${task.desc}: ${o.error}: ${o.message ?? ''}`);
      }
    } finally {
      await measurer.close();
    }
  };
  await run(OPENCL);
});

test.run();
