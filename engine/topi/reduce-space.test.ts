// The search space over the new reductions is correct: random annotated states of every
// sketch (rfactor of each reduction among them, a product's too), compiled to C and run,
// agree with the reference evaluator (|got - want| <= 1e-4 * (1 + |want|)).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { lower } from '../codegen/lower';
import { runKernel } from '../codegen/run-c';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { numElements, placeholder } from '../ir/tensor';
import { uniform } from '../runtime/random';
import { buildState, RandomSource } from '../search/annotate';
import { Rng } from '../search/rng';
import { generateSketches } from '../search/sketch';
import { hardmax, layerNorm, lrn } from './normalization';
import { reduce } from './reduce';

const CFLAGS = ['-O1', '-fopenmp'];

function check(dag: ComputeDAG, label: string, rng: Rng, lo = 0, hi = 1): string[] {
  const inputs = dag.inputs.map((t, i) => uniform(numElements(t.shape), 3, i).map((u) => lo + (hi - lo) * u));
  const want = evaluate(dag, new Map(dag.inputs.map((t, i) => [t, inputs[i]])));
  const sketches = generateSketches(dag, { numCores: 4 });
  sketches.forEach((sk, i) => {
    let done = false;
    for (let attempt = 0; attempt < 30 && !done; attempt++) {
      let kernel;
      try {
        kernel = lower(buildState(dag, sketches, i, new RandomSource(rng)).state, 'kernel');
      } catch {
        continue;
      }
      const got = runKernel(kernel, inputs, CFLAGS);
      dag.outputs.forEach((out, o) => {
        const ref = want.get(out.name)!;
        for (let j = 0; j < ref.length; j++) {
          if (!(Math.abs(got[o][j] - ref[j]) <= 1e-4 * (1 + Math.abs(ref[j])))) assert.unreachable(`${label} / ${sk.name}: [${j}] ${got[o][j]}, want ${ref[j]}`);
        }
      });
      done = true;
    }
    assert.ok(done, `${label} / ${sk.name}: no valid state`);
  });
  return sketches.map((s) => s.name);
}

test('reduce_prod (a product rfactored) and log-sum-exp over the last axis', () => {
  const x = placeholder('x', [4, 64]);
  const names = check(new ComputeDAG([reduce(x, 'prod', [1], true)]), 'prod', new Rng(1), 0.9, 1.1);
  assert.ok(names.some((n) => n.includes('rfactor')), `prod sketches: ${names.join(', ')}`);
  check(new ComputeDAG([reduce(x, 'log_sum_exp', [1], false)]), 'log_sum_exp', new Rng(2), -3, 3);
});

test('layer_norm over 64 channels, LRN, hardmax', () => {
  const x = placeholder('x', [8, 64]), g = placeholder('g', [64]), b = placeholder('b', [64]);
  const names = check(new ComputeDAG([layerNorm(x, g, b, -1, 1e-5)]), 'layer_norm', new Rng(3), -2, 2);
  assert.ok(names.some((n) => n.includes('rfactor')), `layer_norm sketches: ${names.join(', ')}`);
  check(new ComputeDAG([lrn(placeholder('y', [1, 8, 4, 4]), 5, 1e-2, 0.75, 1)]), 'lrn', new Rng(4), -2, 2);
  check(new ComputeDAG([hardmax(placeholder('h', [6, 16]), -1)]), 'hardmax', new Rng(5), -2, 2);
});

test.run();
