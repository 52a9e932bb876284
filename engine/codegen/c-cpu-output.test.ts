// The C renderer's CPU output is pinned: the GPU dialects' bounded expansion (expansionBudget
// in c.ts) must not change one byte of what CPU targets get. Every mobilenet task's default
// schedule and one random fill (fixed seed) of each of its CPU sketches are lowered and
// rendered at 8 and 16 vector lanes; the digest of all that source was the one the renderer
// gave before bounded expansion existed, and was last updated when the default schedules
// began to write a conv's padding at root and to order late layers channels-outer, and the
// lowering began to fold floormod(x, 1) to 0, and the sketch fills to raise or refuse
// parallel loops of fewer than 32 iterations (session 7), and the default schedules to
// reduce a pool inside its epilogue's vector tile (session 9: mobilenet's global average
// pool), and to give a depthwise conv its own register tile, with its channel tiles inside
// the spatial loops, and to run a reduction in parallel by its multiply-adds, not its
// outputs (session 10), and to tile a 1x1 conv at 8 lanes over 6 fused output positions,
// the lowering to fold floordiv(p, k)*k + floormod(p, k) to p in buffer indices (it also
// simplified the global pool's rfactor sketch) and the renderer to version split tails
// (session 12), and to tile every NHWC conv at 8 lanes over output positions (mobilenet's
// first, 3x3 stride-2, conv) with the renderer naming an unrolled tile's per-position index
// terms outside its reduction loops (session 13), and to give parallel loops a guided
// OpenMP schedule instead of a static one (session 14), and the renderer to version bounds
// tests inside expressions (inlined padding) and floormod guards that do not wrap, with the
// default schedules inlining an image conv's padding (session 17), and parallel loops to be
// functions run by tensortune's thread pool instead of OpenMP loops (session 18), and the
// renderer to fold floordiv and floormod of sums that share a factor with the divisor, and
// to run a split tail at its one tile index with its guards folded (session 24), and the
// default schedules to reduce a pool held in its epilogue over 4 vectors of channels per
// tile (session 25: mobilenet's global average pool), and to fuse only as many leading loops
// of a root stage (a padding, an elementwise stage, softmax's steps) as its parallel loop needs
// (session 27), and the renderer to version the inner loops of a versioned loop's copies too,
// the tail's local buffers renamed, and the default schedules to run a reduction along its
// input's contiguous axis (the classifier's softmax) innermost on vector accumulators. A deliberate change to
// CPU code generation (the lowering, the default schedules, the sketches or this renderer)
// changes the digest: check the new output, then update EXPECTED below with the digest the
// failure prints.

import { createHash } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { getNetwork } from '../frontend/networks';
import { extractTasks } from '../graph/extract';
import { defaultOptionsOf, defaultSchedule } from '../schedule/defaults';
import { State } from '../schedule/state';
import { buildState, RandomSource } from '../search/annotate';
import { Rng } from '../search/rng';
import { generateSketches } from '../search/sketch';
import { parseTarget } from '../target';
import { renderKernel } from './c';
import { lower } from './lower';

const EXPECTED = '6f8cf0d6ccc5934ea596754a4825f8400f427483b5e20babd5084712de4da2cd';

/** The rendered C of every state this test pins, in a fixed order. */
function cpuSources(): { sources: string[]; states: number } {
  const target = parseTarget('llvm -mcpu=x86-64');
  const tasks = extractTasks(getNetwork('mobilenet', { weights: 'zeros' }).graph);
  const rng = new Rng(5);
  const sources: string[] = [];
  let states = 0;
  const render = (state: State, name: string): void => {
    const k = lower(state, name);
    for (const vectorLanes of [8, 16]) sources.push(renderKernel(k, { vectorLanes }));
    states++;
  };
  tasks.forEach((task, t) => {
    render(State.replay(task.dag, defaultSchedule(task.dag, defaultOptionsOf(target))), `t${t}_default`);
    const sketches = generateSketches(task.dag, { numCores: 4 });
    sketches.forEach((_, i) => {
      for (let attempt = 0; attempt < 20; attempt++) {
        try {
          render(buildState(task.dag, sketches, i, new RandomSource(rng)).state, `t${t}_s${i}`);
          return;
        } catch {
          // an invalid fill: draw again
        }
      }
    });
  });
  return { sources, states };
}

test('CPU output: mobilenet default schedules and random sketch fills render byte-identically to the pinned output (bounded GPU expansion changed none of it)', () => {
  const { sources, states } = cpuSources();
  assert.ok(states > 20, `${states} states rendered`);
  const digest = createHash('sha256').update(sources.join('\0')).digest('hex');
  assert.is(digest, EXPECTED, `digest of ${states} states' C source`);
});

test.run();
