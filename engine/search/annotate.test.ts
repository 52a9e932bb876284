import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { lower, type Stmt } from '../codegen/lower';
import { getNetwork } from '../frontend/networks';
import { extractTasks } from '../graph/extract';
import { buildState, MIN_PARALLEL_ITERS, parallelCount, RandomSource } from './annotate';
import { factorizations } from './factors';
import { Rng } from './rng';
import { generateSketches } from './sketch';

test('vectorised tiles favour whole vectors; other tiles stay uniform over the factorisations', () => {
  const share = (src: RandomSource, vector: boolean): number => {
    let whole = 0;
    for (let i = 0; i < 2000; i++) {
      const f = src.tile('k', 128, 4, 64, vector);
      assert.is(f.reduce((a, b) => a * b, 1), 128);
      if (f[3] % 16 === 0) whole++;
    }
    return whole / 2000;
  };
  const uniform = factorizations(128, 4, 64).filter((f) => f[3] % 16 === 0).length / factorizations(128, 4, 64).length;
  assert.ok(uniform < 0.5, `whole-vector factorisations are a minority (${uniform})`);
  assert.ok(share(new RandomSource(new Rng(1), 16), true) > 0.8, 'vectorised: mostly whole vectors');
  assert.ok(Math.abs(share(new RandomSource(new Rng(1), 16), false) - uniform) < 0.05, 'not vectorised: uniform');
  assert.ok(Math.abs(share(new RandomSource(new Rng(1)), true) - uniform) < 0.05, 'no vector width known: uniform');
});

/** Extents of the parallel loops of a lowered kernel. */
function parallelExtents(body: readonly Stmt[], out: number[] = []): number[] {
  for (const st of body) {
    if (st.k === 'for' && st.kind === 'parallel') out.push(st.extent);
    if ('body' in st && Array.isArray(st.body)) parallelExtents(st.body as Stmt[], out);
  }
  return out;
}

test('parallelCount: the chosen outer loops, more while they give fewer than MIN_PARALLEL_ITERS iterations', () => {
  assert.is(MIN_PARALLEL_ITERS, 32);
  assert.is(parallelCount(0, [1, 7, 64]), 0, 'no parallel loop chosen');
  assert.is(parallelCount(1, [1, 7, 2, 4]), 4, 'an outer loop of extent 1 alone is never the parallel loop');
  assert.is(parallelCount(1, [1, 14, 4, 16]), 3);
  assert.is(parallelCount(2, [64, 2, 3]), 2, 'enough already: the choice stands');
  assert.is(parallelCount(5, [1, 2]), 2, 'at most every outer loop');
});

test('random fills of mobilenet convs: no parallel loop of fewer than 32 iterations', () => {
  const tasks = extractTasks(getNetwork('mobilenet', { weights: 'zeros' }).graph);
  const rng = new Rng(3);
  let small = 0, total = 0;
  for (const prefix of ['conv2d_nhwc+add+relu 1x14x14x512', 'conv2d_nhwc+add+relu 1x7x7x1024', 'depthwise_conv2d_nhwc+add+relu 1x112x112x32']) {
    const task = tasks.find((t) => t.desc.startsWith(prefix))!;
    const sketches = generateSketches(task.dag, { numCores: 2 });
    for (let i = 0; i < 40; i++) {
      let body: Stmt[];
      try {
        body = lower(buildState(task.dag, sketches, i % sketches.length, new RandomSource(rng, 16)).state, 'k').body;
      } catch {
        continue; // an invalid fill
      }
      for (const extent of parallelExtents(body)) {
        total++;
        if (extent < MIN_PARALLEL_ITERS) small++;
      }
    }
  }
  assert.ok(total > 50, `${total} parallel loops`);
  // Before the floor, 46 of 151 had fewer (an outer loop of extent 1 marked parallel, or
  // a level-0 tile of a few iterations); such fills are now raised or refused.
  assert.is(small, 0, `${small} of ${total} parallel loops have fewer than ${MIN_PARALLEL_ITERS} iterations`);
});

test.run();
