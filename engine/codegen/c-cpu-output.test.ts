// The C renderer's CPU output is pinned: the GPU dialects' bounded expansion (expansionBudget
// in c.ts) must not change one byte of what CPU targets get. Every mobilenet task's default
// schedule and one random fill (fixed seed) of each of its CPU sketches are lowered and
// rendered at 8 and 16 vector lanes, and the digest of all that source is pinned. A
// deliberate change to CPU code generation (the lowering, the default schedules, the
// sketches, this renderer or its prelude) changes the digest: check the new output, then
// update EXPECTED below with the digest the failure prints, and say why in the commit.

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

const EXPECTED = '900d44cc49224bea2221023f3ddf6682386170875f19574f7dfba0e1d190257c';

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
