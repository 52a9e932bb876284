// Padded tilings (factors.ts paddedExtents): an extent with few divisors is also tiled by
// the factorisations of a slightly larger one, a partial last tile guarded. Random states
// that take them must compute what the reference evaluator does.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { lower } from '../codegen/lower';
import { runKernel } from '../codegen/run-c';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { numElements, placeholder } from '../ir/tensor';
import { uniform } from '../runtime/random';
import { batchMatmul, dense } from '../topi/nn';
import { buildState, GenomeSource, NO_FALLBACK, RandomSource, tileChoices } from './annotate';
import { factorizations, paddedExtents, tilesExtent } from './factors';
import { mutate } from './mutate';
import { Rng } from './rng';
import { generateSketches } from './sketch';

const CFLAGS = ['-O1', '-fopenmp'];

test('extents with few divisors from 32 up are padded to the next multiples of 2, 4, 8 and 16, by at most an eighth', () => {
  assert.equal(paddedExtents(197), [198, 200, 208]);
  assert.equal(paddedExtents(37), [38, 40]);
  assert.equal(paddedExtents(196), [], '196 has 9 divisors');
  assert.equal(paddedExtents(31), [], 'below 32');
  assert.equal(paddedExtents(128), []);
  assert.ok(tilesExtent(200, 197, true) && !tilesExtent(200, 197, false) && !tilesExtent(256, 197, true));
});

test('padded tile choices add the inner factors that no exact factorisation has, each once', () => {
  const exact = factorizations(197, 4);
  const all = tileChoices(197, 4, 64, undefined, true);
  assert.equal(all.slice(0, exact.length), exact, 'the exact ones first');
  assert.ok(all.length > exact.length);
  const inner = all.map((f) => f.slice(1).join('x'));
  assert.is(new Set(inner).size, inner.length, 'no two with the same inner factors');
  assert.ok(inner.includes('1x1x8') && inner.includes('1x6x1'), 'a vector of 8 lanes and a block of 6 rows');
  assert.equal(tileChoices(197, 4, 64), exact, 'not padded unless asked');
  assert.equal(tileChoices(128, 4, 64, undefined, true), factorizations(128, 4), 'an extent with divisors to spare is not padded');
});

/** A split in `steps` whose inner lengths do not divide the axis they split (of `extents`). */
function hasPartialSplit(steps: readonly { s: string; iter?: string; lengths?: readonly number[] }[], extents: ReadonlyMap<string, number>): boolean {
  return steps.some((s) => s.s === 'split' && s.iter !== undefined && extents.has(s.iter) && extents.get(s.iter)! % numElements(s.lengths ?? []) !== 0);
}

function checkRandomStates(dag: ComputeDAG, extents: ReadonlyMap<string, number>, label: string): void {
  const inputs = dag.inputs.map((t, i) => uniform(numElements(t.shape), 3, i));
  const want = evaluate(dag, new Map(dag.inputs.map((t, i) => [t, inputs[i]]))).get(dag.outputs[0].name)!;
  const sketches = generateSketches(dag, { numCores: 2 });
  const rng = new Rng(11);
  let partial = 0, checked = 0;
  for (let attempt = 0; attempt < 80 && partial < 6; attempt++) {
    const index = attempt % sketches.length;
    let built;
    try {
      built = buildState(dag, sketches, index, new RandomSource(rng, 8));
      if (attempt % 2 === 1) built = mutate(dag, sketches, built, rng) ?? built;
    } catch {
      continue;
    }
    if (!hasPartialSplit(built.steps, extents)) continue;
    // A record's genome rebuilds the same steps.
    const again = buildState(dag, sketches, built.genome.sketch, new GenomeSource(built.genome.values, NO_FALLBACK));
    assert.equal(again.steps, built.steps, `${label}: the genome rebuilds the state`);
    const got = runKernel(lower(built.state, 'kernel'), inputs, CFLAGS)[0];
    let worst = 0;
    for (let j = 0; j < want.length; j++) worst = Math.max(worst, Math.abs(got[j] - want[j]) / (1 + Math.abs(want[j])));
    assert.ok(worst < 1e-4, `${label} / ${sketches[index].name}: max relative error ${worst} (${JSON.stringify(built.steps)})`);
    partial++;
    checked++;
  }
  assert.ok(partial >= 3, `${label}: only ${partial} state(s) with a partial tile among ${checked}`);
}

test('dense over 37 rows: random states with padded row tiles agree with the reference', () => {
  const a = placeholder('p0', [37, 24]), w = placeholder('p1', [40, 24]);
  const out = dense(a, w);
  checkRandomStates(new ComputeDAG([out]), new Map([['i', 37]]), 'dense 37x24 by 40x24');
});

test('batch matmul of 37x37 scores: random states with padded row and column tiles agree with the reference', () => {
  const q = placeholder('p0', [2, 37, 16]), k = placeholder('p1', [2, 16, 37]);
  const out = batchMatmul(q, k, { transB: false });
  checkRandomStates(new ComputeDAG([out]), new Map([['i', 37], ['j', 37]]), 'batch_matmul 2x37x16 by 2x16x37');
});

test.run();
