// A Winograd candidate builds, runs in the measurement worker and verifies against its
// DAG's reference under the Winograd bound (WINOGRAD_TOLERANCE, which toleranceFor gives
// Winograd tasks); both tile sizes, an output that 4 does not divide, the kernel a constant
// input the lowering may re-lay out.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { placeholder } from '../ir/tensor';
import { defaultSchedule } from '../schedule/defaults';
import { parseTarget } from '../target';
import { binary, relu } from '../topi/elemwise';
import { State } from '../schedule/state';
import type { Step } from '../schedule/steps';
import { buildState, RandomSource } from '../search/annotate';
import { Rng } from '../search/rng';
import { generateSketches } from '../search/sketch';
import { CONST_INDEXED_TAGS, conv2dWinogradNHWC } from '../topi/winograd';
import { LocalMeasurer } from './measurer';
import { DEFAULT_TOLERANCE, WINOGRAD_TOLERANCE, toleranceFor } from './verify';

const target = parseTarget('llvm -mcpu=native');

const winogradDag = (m: 2 | 4, h: number, ci: number, co: number): ComputeDAG => {
  const data = placeholder('p0', [1, h, h, ci]);
  const kernel = placeholder('p1', [m + 2, m + 2, ci, co]);
  const bias = placeholder('p2', [1, 1, 1, co]);
  return new ComputeDAG([relu(binary('add', conv2dWinogradNHWC(data, kernel, { padding: [1, 1, 1, 1], tileSize: m }), bias))]);
};

test('toleranceFor: the Winograd bound for Winograd tasks, the default for others', () => {
  assert.is(toleranceFor(winogradDag(2, 6, 4, 8)), WINOGRAD_TOLERANCE);
  const x = placeholder('x', [4]);
  assert.is(toleranceFor(new ComputeDAG([relu(x)])), DEFAULT_TOLERANCE);
});

test('default Winograd candidates (F(2x2, 3x3) and F(4x4, 3x3)) are measured and verified', async () => {
  const measurer = new LocalMeasurer(target, { timeoutMs: 5000, repeat: 1, minRepeatMs: 1, buildJobs: 2, seed: 3 });
  try {
    for (const [m, h] of [[2, 9], [4, 14]] as const) {
      const dag = winogradDag(m, h, 16, 32);
      const [o] = await measurer.measure({ dag, constInputs: ['p1'] }, [defaultSchedule(dag, { vectorLanes: target.vectorLanes })]);
      assert.is(o.error, null, `F(${m}) ${h}x${h}: ${o.message}`);
      assert.is(o.costs_ms.length, 1);
    }
  } finally {
    await measurer.close();
  }
});

test('random states of every sketch unroll the transforms\' matrix axes (TVM\'s const-tensor rule) and verify', async () => {
  const dag = winogradDag(4, 14, 16, 32);
  const sketches = generateSketches(dag, { numCores: 2 });
  const rng = new Rng(9);
  const candidates: Step[][] = [];
  for (let i = 0; i < sketches.length; i++) {
    for (let n = 0, attempt = 0; n < 2 && attempt < 100; attempt++) {
      let steps: Step[];
      try { steps = buildState(dag, sketches, i, new RandomSource(rng)).steps; } catch { continue; }
      n++;
      candidates.push(steps);
      const state = State.replay(dag, steps);
      for (const stage of state.stages.filter((x) => x.tensor.op.kind === 'compute' && CONST_INDEXED_TAGS.has(x.tensor.op.tag) && x.attach.k === 'root')) {
        const [t0, t1] = stage.axes.map((a) => a.name);
        for (const axis of [t0, t1]) {
          assert.ok(steps.some((st) => st.s === 'annotate' && st.stage === stage.name && st.iter === `${axis}.1` && st.ann === 'unroll'), `${sketches[i].name}: ${stage.name}'s ${axis} unrolled`);
        }
        const leaves = stage.leaves;
        assert.ok(leaves.indexOf(`${t1}.1`) >= leaves.length - 2, `${stage.name}: the matrix axes are the innermost loops but the vector one (${leaves.join(' ')})`);
      }
    }
  }
  assert.ok(candidates.length >= sketches.length, `a valid state of each of the ${sketches.length} sketches`);
  const measurer = new LocalMeasurer(target, { timeoutMs: 20000, repeat: 1, minRepeatMs: 1, buildJobs: 2, seed: 3 });
  try {
    const outcomes = await measurer.measure({ dag, constInputs: ['p1'] }, candidates);
    outcomes.forEach((o, i) => assert.is(o.error, null, `candidate ${i}: ${o.error}: ${o.message ?? ''}`));
  } finally {
    await measurer.close();
  }
});

test.run();
