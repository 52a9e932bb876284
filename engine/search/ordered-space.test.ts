// The search space of an ordered reduction (sum_bf16, ir/ordered.ts: a bfloat16 sum, each
// partial sum rounded in axis order): no sketch rfactors it or reduces it across threads,
// and random annotated states of every sketch, CPU and GPU, never hold a step that
// reassociates it (no rfactor stage, no vectorised or bound reduce loop, reduce loops in
// axis order) and never fail on the ordered-reduction guards of schedule/state.ts. The CPU
// states, compiled to C and run, give the evaluator's sums exactly, on rows where any other
// order gives other numbers. The same DAGs with the plain (float32) sum get the rfactor and
// cross-thread sketches, so the rules are live and the ordered combiner is what skips them.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { lower } from '../codegen/lower';
import { runKernel } from '../codegen/run-c';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { load, reduceAxis, sum, v, type Expr } from '../ir/expr';
import { sumBf16 } from '../ir/ordered';
import { compute, placeholder } from '../ir/tensor';
import type { State } from '../schedule/state';
import { narrowSoftmax } from '../topi/narrow-softmax';
import { buildState, RandomSource } from './annotate';
import { MALI, OPENCL } from './gpu-fixtures.fixture';
import { Rng } from './rng';
import { generateSketches, type Sketch } from './sketch';
import { generateGpuSketches } from './sketch-gpu';

const ROWS = 8, LEN = 64;
const E = 2 ** -8;

/** out[i] = sum over k of x[i, k]: ordered (sum_bf16) or the plain sum; few outputs, a long reduction (rfactor's case). */
function sumDag(plain = false): ComputeDAG {
  const x = placeholder('x', [ROWS, LEN]);
  const k = reduceAxis('k', LEN);
  return new ComputeDAG([compute('T_s', [ROWS], ['i'], (i) => (plain ? sum : sumBf16)(load(x, [i, v(k.name)]), [k]))]);
}

/** Row i: 1 at column 8i, e = 2^-8 elsewhere. In order the e's before the 1 add exactly, those after it tie back to the partial sum. */
const rowsInput = Float32Array.from({ length: ROWS * LEN }, (_, j) => (j % LEN === 8 * Math.floor(j / LEN) ? 1 : E));

const softmaxDag = (type: 'bfloat16' | 'float16'): ComputeDAG => new ComputeDAG([narrowSoftmax(placeholder('x', [4, LEN]), -1, type)]);

const ORDERED_GUARD = /ordered reduction/;

/** Checked by its combiner, not by isOrderedReduction, so that the check does not lean on what it checks. */
const isBf16Sum = (e: Expr): boolean => e.k === 'reduce' && e.combiner === 'sum_bf16';

const orderedStages = (dag: ComputeDAG): string[] => dag.computeStages.filter((t) => isBf16Sum(t.op.body)).map((t) => t.name);

/** Plans of `stage` over the sketches. */
const plansOf = (sketches: readonly Sketch[], stage: string): string[] => sketches.map((s) => s.plans.get(stage)?.k ?? 'none');

/** The ordered stages of `state` keep one serial accumulation in axis order. */
function assertSerial(state: State, names: readonly string[], label: string): void {
  assert.not.ok(state.stages.some((s) => names.some((n) => s.name.startsWith(`${n}.rf`))), `${label}: an rfactor stage`);
  for (const s of state.stages) {
    if (!isBf16Sum(s.body)) continue;
    const reduce = s.leaves.filter((l) => s.kinds.get(l) === 'R');
    for (const l of reduce) {
      assert.not.ok(s.ann.get(l) === 'vectorize' || s.ann.get(l) === 'parallel', `${label}: ${s.name}.${l} is ${s.ann.get(l)}`);
      assert.not.ok(s.bind.has(l), `${label}: ${s.name}.${l} is bound to ${s.bind.get(l)}`);
    }
    // One reduce axis here: its loops are its split parts, outermost first.
    const parts = reduce.map((l) => l.split('.').slice(1).map(Number));
    const sorted = [...parts].sort((a, b) => a.join() < b.join() ? -1 : 1);
    assert.equal(parts, sorted, `${label}: reduce loops ${reduce.join(', ')}`);
  }
}

/** Up to `perSketch` random states of each sketch, checked by assertSerial (and run, on the CPU, by `run`). */
function explore(dag: ComputeDAG, sketches: readonly Sketch[], perSketch: number, rng: Rng, run?: (state: State, label: string) => void): number {
  const names = orderedStages(dag);
  let checked = 0;
  sketches.forEach((sk, i) => {
    let done = 0;
    for (let attempt = 0; attempt < 40 && done < perSketch; attempt++) {
      let state: State;
      try {
        state = buildState(dag, sketches, i, new RandomSource(rng)).state;
      } catch (e) {
        assert.not.match(String(e), ORDERED_GUARD, `${sk.name}: the search tried a step the ordered reduction refuses`);
        continue;
      }
      assertSerial(state, names, sk.name);
      run?.(state, sk.name);
      done++;
      checked++;
    }
    assert.ok(done > 0, `${sk.name}: no valid state`);
  });
  return checked;
}

test('no rfactor sketch for the ordered sum on the CPU; the plain sum gets both', () => {
  assert.ok(plansOf(generateSketches(sumDag(true), { numCores: 4 }), 'T_s').includes('rfactor'));
  assert.not.ok(plansOf(generateSketches(sumDag(), { numCores: 4 }), 'T_s').includes('rfactor'));
  const f16 = generateSketches(softmaxDag('float16'), { numCores: 4 });
  assert.ok(plansOf(f16, 'T_narrow_softmax_expsum').includes('rfactor'));
  assert.not.ok(plansOf(generateSketches(softmaxDag('bfloat16'), { numCores: 4 }), 'T_narrow_softmax_expsum').includes('rfactor'));
});

test('no cross-thread (GPU) nor rfactor (Mali) sketch for the ordered sum; the plain sum gets them', () => {
  const gpu = (dag: ComputeDAG, mali: boolean): string[] => plansOf(generateGpuSketches(dag, { gpu: (mali ? MALI : OPENCL).gpu!, mali }), 'T_s');
  assert.ok(gpu(sumDag(true), false).includes('gpu-cross-thread'));
  assert.not.ok(gpu(sumDag(), false).includes('gpu-cross-thread'));
  assert.ok(gpu(sumDag(true), true).includes('gpu-rfactor'));
  assert.not.ok(gpu(sumDag(), true).includes('gpu-rfactor'));
});

test('random CPU states of the ordered sum: serial in axis order, and the C kernel gives the evaluator\'s sums exactly', () => {
  const dag = sumDag();
  const want = evaluate(dag, new Map([[dag.inputs[0], rowsInput]])).get('T_s')!;
  // The rows' in-order sums: 8i e's add exactly, 1 + 8i e = 1 + i/32 is a bfloat16 value of
  // an even last bit, and each e after it (half a step) ties back to it.
  assert.equal([...want], Array.from({ length: ROWS }, (_, i) => 1 + i / 32));
  const plain = sumDag(true);
  const plainWant = evaluate(plain, new Map([[plain.inputs[0], rowsInput]])).get('T_s')!;
  assert.not.equal([...plainWant], [...want]);
  const n = explore(dag, generateSketches(dag, { numCores: 4 }), 4, new Rng(11), (state, label) => {
    const [got] = runKernel(lower(state, 'kernel'), [rowsInput], ['-O1', '-fopenmp']);
    assert.equal([...got], [...want], label);
  });
  assert.ok(n >= 4, `${n} states`);
});

test('random CPU states of a bfloat16 narrow_softmax: its sum serial in axis order, the kernel within one bfloat16 step of the evaluator', () => {
  const dag = softmaxDag('bfloat16');
  const x = Float32Array.from({ length: 4 * LEN }, (_, j) => Math.fround(Math.sin(j * 0.37) * 3));
  const want = evaluate(dag, new Map([[dag.inputs[0], x]])).get(dag.outputs[0].name)!;
  explore(dag, generateSketches(dag, { numCores: 4 }), 3, new Rng(12), (state, label) => {
    const [got] = runKernel(lower(state, 'kernel'), [x], ['-O1', '-fopenmp']);
    // exp may differ in its last float32 bit between the kernel's and the evaluator's, which
    // can move a bfloat16 rounding: one step of 2^-8 relative at most.
    let worst = 0;
    for (let j = 0; j < want.length; j++) worst = Math.max(worst, Math.abs(got[j] - want[j]) / Math.max(Math.abs(want[j]), 2 ** -126));
    assert.ok(worst <= 2 ** -7, `${label}: max relative error ${worst}`);
  });
});

test('random GPU and Mali states of the ordered sum and of a bfloat16 narrow_softmax: serial in axis order', () => {
  for (const [target, mali] of [[OPENCL, false], [MALI, true]] as const) {
    for (const dag of [sumDag(), softmaxDag('bfloat16')]) explore(dag, generateGpuSketches(dag, { gpu: target.gpu!, mali }), 4, new Rng(13));
  }
});

test.run();
