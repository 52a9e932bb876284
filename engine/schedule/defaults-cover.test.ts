// The CPU default schedule applies to every shape it is given: where one of its steps does
// not apply, defaultSchedule falls back to the plain schedule (every stage at root), which is
// correct but slow, and reports it (compile warns, tune logs). These tests ask for no fallback
// over a wide class of DAGs, at AVX-512's 16 lanes and AVX2's 8: every fused kernel of every
// builtin network, transposes of every permutation of shapes with short, long and ragged axes,
// and GEMMs, batched matmuls, softmaxes and layer norms of odd sizes. The steps must also
// replay (State.replay validates each one).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { getNetwork, NETWORK_NAMES } from '../frontend/networks';
import { describeGroup } from '../graph/extract';
import { partition } from '../graph/fuse';
import { optimize } from '../graph/passes';
import { ComputeDAG } from '../ir/dag';
import { placeholder } from '../ir/tensor';
import { binary, gelu } from '../topi/elemwise';
import { batchMatmul, dense, softmax } from '../topi/nn';
import { layerNorm } from '../topi/normalization';
import { transpose } from '../topi/transform';
import { defaultSchedule } from './defaults';
import { State } from './state';

const LANES = [16, 8] as const;

/** The messages of every fallback, for `what` at both lane counts. */
function fallbacks(dag: ComputeDAG, what: string): string[] {
  const out: string[] = [];
  for (const vectorLanes of LANES) {
    const steps = defaultSchedule(dag, { vectorLanes }, (e) => out.push(`${what}, ${vectorLanes} lanes: ${e.message}`));
    State.replay(dag, steps);
  }
  return out;
}

function permutations(n: number): number[][] {
  if (n === 1) return [[0]];
  return permutations(n - 1).flatMap((p) => Array.from({ length: n }, (_, i) => [...p.slice(0, i), n - 1, ...p.slice(i)]));
}

test('every fused kernel of every builtin network gets its default schedule, not the plain fallback', () => {
  const failed: string[] = [];
  for (const name of NETWORK_NAMES) {
    const graph = optimize(getNetwork(name, { weights: 'zeros' }).graph, {});
    const seen = new Set<string>();
    for (const group of partition(graph)) {
      if (seen.has(group.dag.workloadKey)) continue;
      seen.add(group.dag.workloadKey);
      failed.push(...fallbacks(group.dag, `${name}: ${describeGroup(graph, group)}`));
    }
  }
  assert.equal(failed, []);
});

test('transposes of every permutation (short, long, ragged and unit axes) get their default schedule', () => {
  const shapes = [[128, 64], [5, 37], [1, 37, 2, 32], [1, 197, 6, 64], [3, 4, 5], [2, 17, 1, 40], [1, 8, 16, 3], [4, 1, 33, 2, 9]];
  const failed: string[] = [];
  for (const shape of shapes) {
    for (const perm of permutations(shape.length)) {
      const dag = new ComputeDAG([transpose(placeholder('x', shape), perm)]);
      failed.push(...fallbacks(dag, `transpose ${shape.join('x')} by [${perm.join(',')}]`));
    }
  }
  assert.equal(failed, []);
});

test('GEMMs, batched matmuls, softmaxes and layer norms of odd sizes get their default schedule', () => {
  const failed: string[] = [];
  for (const [m, k, n] of [[1, 1, 1], [1, 768, 3], [3, 5, 7], [17, 33, 65], [128, 768, 3072], [197, 384, 1152], [1000, 2, 19]]) {
    const x = placeholder('x', [m, k]), w = placeholder('w', [n, k]), b = placeholder('b', [n]);
    failed.push(...fallbacks(new ComputeDAG([gelu(binary('add', dense(x, w), b), 'none')]), `dense ${m}x${k} by ${n}, + bias, GELU`));
  }
  for (const [batch, m, k, n] of [[12, 128, 64, 128], [6, 197, 197, 64], [1, 1, 9, 1], [5, 3, 31, 17]]) {
    const a = placeholder('a', [batch, m, k]), bt = placeholder('b', [batch, k, n]);
    failed.push(...fallbacks(new ComputeDAG([batchMatmul(a, bt, { transB: false })]), `batch matmul ${batch}x${m}x${k} by ${k}x${n}`));
  }
  for (const shape of [[1, 12, 128, 128], [1, 6, 197, 197], [7], [3, 1, 5], [2, 1000]]) {
    const x = placeholder('x', shape);
    failed.push(...fallbacks(new ComputeDAG([softmax(x, shape.length - 1)]), `softmax over ${shape.join('x')}`));
    const gamma = placeholder('gamma', [shape[shape.length - 1]]), beta = placeholder('beta', [shape[shape.length - 1]]);
    failed.push(...fallbacks(new ComputeDAG([layerNorm(x, gamma, beta, -1, 1e-5)]), `layer norm over ${shape.join('x')}`));
  }
  assert.equal(failed, []);
});

test.run();
