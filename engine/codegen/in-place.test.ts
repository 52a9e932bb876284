// Kernels whose output a model writes over one of their inputs (ir/in-place.ts), run that
// way: the output buffer is the input's. With the default schedule and with random
// schedules of every sketch (what the tuner may pick), on shapes whose tiles do not divide
// them (where a last tile would otherwise be shifted back over elements already written),
// they give the reference evaluator's values: max |got - want| / (1 + |want|) < 1e-4
// (float32 sums in another order than the reference's float64).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { inPlaceInputs } from '../ir/in-place';
import { numElements, placeholder, type Tensor } from '../ir/tensor';
import { uniform } from '../runtime/random';
import { defaultSchedule } from '../schedule/defaults';
import { State } from '../schedule/state';
import type { Step } from '../schedule/steps';
import { buildState, RandomSource } from '../search/annotate';
import { Rng } from '../search/rng';
import { generateSketches } from '../search/sketch';
import { binary, relu } from '../topi/elemwise';
import { conv2dNHWC, dense } from '../topi/nn';
import { renderKernel } from './c';
import { lower, type Kernel } from './lower';
import { runKernel } from './run-c';

const CFLAGS = ['-O1', '-fopenmp', '-march=native'];

function checkInPlace(dag: ComputeDAG, residual: Tensor, kernel: Kernel, label: string, lanes: number): void {
  const inputs = dag.inputs.map((t, i) => uniform(numElements(t.shape), 5, i));
  const want = evaluate(dag, new Map(dag.inputs.map((t, i) => [t, inputs[i]]))).get(dag.outputs[0].name)!;
  const [got] = runKernel(kernel, inputs, CFLAGS, { vectorLanes: lanes }, { inPlace: dag.inputs.indexOf(residual) });
  let worst = 0;
  for (let j = 0; j < want.length; j++) worst = Math.max(worst, Math.abs(got[j] - want[j]) / (1 + Math.abs(want[j])));
  assert.ok(worst < 1e-4, `${label}: max relative error ${worst}`);
}

function checkSchedules(dag: ComputeDAG, residual: Tensor, what: string): void {
  assert.equal(inPlaceInputs(dag), [residual], `${what}: the residual may be written over`);
  for (const lanes of [8, 16]) {
    const kernel = lower(State.replay(dag, defaultSchedule(dag, { vectorLanes: lanes })), 'k');
    const c = renderKernel(kernel, { vectorLanes: lanes });
    const bufOf = (t: Tensor): string => kernel.args.find((a) => a.tensor === t)!.buf;
    assert.equal(new Set(kernel.aliased), new Set([bufOf(residual), bufOf(dag.outputs[0])]), 'the output and the residual may share memory');
    for (const buf of kernel.aliased) assert.not.match(c, new RegExp(`\\* __restrict__ ${buf}\\b`), `${buf} is not restrict`);
    checkInPlace(dag, residual, kernel, `${what}, default schedule at ${lanes} lanes`, lanes);
    const asConstant = lower(State.replay(dag, defaultSchedule(dag, { vectorLanes: lanes })), 'k', { packable: new Set([residual.name]) });
    assert.equal(asConstant.aliased, [], 'a constant is never written over');
  }
  const rng = new Rng(7);
  const sketches = generateSketches(dag, { numCores: 2 });
  sketches.forEach((sk, i) => {
    let done = 0;
    for (let attempt = 0; attempt < 30 && done < 3; attempt++) {
      let kernel: Kernel;
      try {
        kernel = lower(buildState(dag, sketches, i, new RandomSource(rng)).state, 'k');
      } catch {
        continue;
      }
      checkInPlace(dag, residual, kernel, `${what} / ${sk.name}`, 16);
      done++;
    }
    assert.ok(done > 0, `${what} / ${sk.name}: no valid state`);
  });
}

test('dense + bias + residual, 23x197 (ViT\'s 197 columns, rows no tile divides), written over the residual', () => {
  const x = placeholder('p0', [23, 32]), w = placeholder('p1', [197, 32]), b = placeholder('p2', [1, 197]), res = placeholder('p3', [23, 197]);
  const out = binary('add', binary('subtract', dense(x, w), b), res);
  checkSchedules(new ComputeDAG([out]), res, 'dense 23x197');
});

test('1x1 conv + residual add + relu on a 7x7 map, written over the residual', () => {
  const data = placeholder('p0', [1, 7, 7, 24]), w = placeholder('p1', [1, 1, 24, 40]), res = placeholder('p2', [1, 7, 7, 40]);
  const conv = conv2dNHWC(data, w, { strides: [1, 1], padding: [0, 0, 0, 0], dilation: [1, 1] });
  const out = relu(binary('add', conv, res));
  checkSchedules(new ComputeDAG([out]), res, 'conv 7x7x24 -> 40');
});

test('a split whose last tile does not fit is guarded, not shifted back over what the tile before it wrote', () => {
  const x = placeholder('p0', [3, 37]), y = placeholder('p1', [3, 37]);
  const out = relu(binary('add', x, y));
  const dag = new ComputeDAG([out]);
  const steps: Step[] = [
    { s: 'compute_inline', stage: 'T_add' },
    { s: 'split', stage: 'T_relu', iter: 'ax1', lengths: [8] },
  ];
  const kernel = lower(State.replay(dag, steps), 'k');
  checkInPlace(dag, x, kernel, 'relu(x + y), 37 columns in tiles of 8', 16);
  checkInPlace(dag, y, kernel, 'the same, written over y', 16);
});

test.run();
