// The space is correct: random annotated states of small tasks (every sketch, so fused
// tiles, cache_write, rfactor, placed padding), compiled to C and run, agree with the
// reference evaluator.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { lower } from '../codegen/lower';
import { runKernel } from '../codegen/run-c';
import { getNetwork } from '../frontend/networks';
import { extractTasks } from '../graph/extract';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { numElements } from '../ir/tensor';
import { uniform } from '../runtime/random';
import type { Task } from '../graph/extract';
import { buildState, RandomSource } from './annotate';
import { Rng } from './rng';
import { generateSketches } from './sketch';

// Fast compiles: the point is the values, not the speed.
const CFLAGS = ['-O1', '-fopenmp'];

const tasks = extractTasks(getNetwork('mobilenet', { weights: 'zeros', imageSize: 32 }).graph);

function check(dag: ComputeDAG, label: string, perSketch: number, rng: Rng): number {
  const inputs = dag.inputs.map((t, i) => uniform(numElements(t.shape), 3, i));
  const want = evaluate(dag, new Map(dag.inputs.map((t, i) => [t, inputs[i]])));
  const sketches = generateSketches(dag, { numCores: 4 });
  let checked = 0;
  sketches.forEach((sk, i) => {
    let done = 0;
    for (let attempt = 0; attempt < 30 && done < perSketch; attempt++) {
      let kernel;
      try {
        kernel = lower(buildState(dag, sketches, i, new RandomSource(rng)).state, 'kernel');
      } catch {
        continue;
      }
      const got = runKernel(kernel, inputs, CFLAGS);
      dag.outputs.forEach((out, o) => {
        const ref = want.get(out.name)!;
        let worst = 0;
        for (let j = 0; j < ref.length; j++) worst = Math.max(worst, Math.abs(got[o][j] - ref[j]) / (1 + Math.abs(ref[j])));
        assert.ok(worst < 1e-4, `${label} / ${sk.name}: max relative error ${worst}`);
      });
      done++;
      checked++;
    }
    assert.ok(done > 0, `${label} / ${sk.name}: no valid state`);
  });
  return checked;
}

const byDesc = (prefix: string): Task => {
  const t = tasks.find((x) => x.desc.startsWith(prefix));
  if (!t) throw new Error(`no task ${prefix}: ${tasks.map((x) => x.desc).join('; ')}`);
  return t;
};

test('conv 3x3 stride 2 with padding, bias and relu', () => {
  assert.ok(check(byDesc('conv2d_nhwc+add+relu 1x32x32x3').dag, 'conv', 1, new Rng(1)) >= 3);
});

test('depthwise conv and a 1x1 conv', () => {
  check(byDesc('depthwise_conv2d_nhwc+add+relu 1x16x16x32').dag, 'depthwise', 1, new Rng(2));
  check(byDesc('conv2d_nhwc+add+relu 1x16x16x32').dag, 'pointwise', 1, new Rng(3));
});

test('dense (alone: cache_write sketches) and softmax / global pool (rfactor sketches)', () => {
  const dense = byDesc('dense+add').dag;
  const matmul = new ComputeDAG([dense.computeStages.find((t) => t.name === 'T_matmul_NT')!]);
  check(matmul, 'matmul', 1, new Rng(4));
  check(byDesc('softmax').dag, 'softmax', 1, new Rng(5));
  check(byDesc('global_avg_pool2d').dag, 'pool', 1, new Rng(6));
});

test.run();
