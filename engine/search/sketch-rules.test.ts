// The sketch rules as tables: named, in the order of TVM's sketch_rules (CPU, GPU, Mali;
// TVM's cache-read rule is folded into the GPU tiling plans, so it has no row), and the
// Winograd transforms taken by a rule of their own, which unrolls their constant axes.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { placeholder } from '../ir/tensor';
import { ScheduleError } from '../schedule/state';
import { binary, relu } from '../topi/elemwise';
import { CONST_INDEXED_TAGS, conv2dWinogradNHWC } from '../topi/winograd';
import { buildState, RandomSource } from './annotate';
import { Rng } from './rng';
import { CPU_SKETCH_RULES, generateSketches } from './sketch';
import { GPU_SKETCH_RULES, MALI_SKETCH_RULES } from './sketch-gpu';

test('the rule tables name TVM\'s rules in TVM\'s order', () => {
  assert.equal(CPU_SKETCH_RULES.map((r) => r.name), [
    'always-inline', 'simplify-compute-with-const-tensor', 'add-rfactor', 'add-cache-write', 'multi-level-tiling-with-fusion', 'multi-level-tiling', 'skip-stage',
  ]);
  assert.equal(GPU_SKETCH_RULES.map((r) => r.name), ['always-inline', 'cross-thread-reduction', 'add-cache-write', 'multi-level-tiling-with-fusion', 'skip-stage']);
  assert.equal(MALI_SKETCH_RULES.map((r) => r.name), ['always-inline', 'add-rfactor', 'add-cache-write', 'multi-level-tiling-with-fusion', 'skip-stage']);
});

test('a Winograd conv\'s transforms get the const-tensor plan, whose steps unroll their two constant axes', () => {
  const data = placeholder('p0', [1, 14, 14, 16]);
  const kernel = placeholder('p1', [6, 6, 16, 32]);
  const bias = placeholder('p2', [1, 1, 1, 32]);
  const dag = new ComputeDAG([relu(binary('add', conv2dWinogradNHWC(data, kernel, { padding: [1, 1, 1, 1], tileSize: 4 }), bias))]);
  const transforms = dag.computeStages.filter((t) => CONST_INDEXED_TAGS.has(t.op.tag)).map((t) => t.name);
  assert.is(transforms.length, 2);
  const sketches = generateSketches(dag, { numCores: 2 });
  assert.ok(sketches.length > 0);
  for (const sketch of sketches) {
    for (const x of transforms) assert.is(sketch.plans.get(x)!.k, 'const-tensor', `${sketch.name}: ${x}`);
  }
  // A random annotation may be invalid (too little parallelism, say): the first seed that builds.
  const built = Array.from({ length: 50 }, (_, seed) => {
    try { return buildState(dag, sketches, 0, new RandomSource(new Rng(seed), 8)); } catch (e) { if (e instanceof ScheduleError) return undefined; throw e; }
  }).find((b) => b !== undefined)!;
  assert.ok(built, 'no seed builds');
  for (const x of transforms) {
    const [t0, t1] = dag.computeStages.find((t) => t.name === x)!.op.axes;
    const unrolled = built.steps.filter((s) => s.s === 'annotate' && s.stage === x && s.ann === 'unroll').map((s) => (s as { iter: string }).iter);
    assert.equal(unrolled, [`${t0.name}.1`, `${t1.name}.1`], x);
  }
});

test.run();
