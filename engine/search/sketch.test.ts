// The search space of mobilenet's tasks: which sketches the rules derive, and that every
// annotated state the builder accepts replays from its steps and lowers.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { lower } from '../codegen/lower';
import { getNetwork } from '../frontend/networks';
import { ComputeDAG } from '../ir/dag';
import { extractTasks } from '../graph/extract';
import { State } from '../schedule/state';
import { buildState, RandomSource } from './annotate';
import { stepsKey } from '../schedule/steps';
import { generateSketches } from './sketch';
import { Rng } from './rng';

const tasks = extractTasks(getNetwork('mobilenet', { weights: 'zeros' }).graph);
const find = (prefix: string) => tasks.find((t) => t.desc.startsWith(prefix))!;

test('conv, depthwise and dense: fused at tile level 1 and 2 plus plain SSRSRS; padding placed, bias inlined', () => {
  for (const prefix of ['conv2d_nhwc+add+relu 1x224', 'depthwise_conv2d_nhwc+add+relu 1x112x112x32', 'dense+add']) {
    const names = generateSketches(find(prefix).dag, { numCores: 4 }).map((s) => s.name);
    assert.is(names.length, 3, prefix);
    assert.ok(names.some((n) => /:tile1>T_(relu|add)/.test(n)), names.join(' | '));
    assert.ok(names.some((n) => /:tile2>T_(relu|add)/.test(n)), names.join(' | '));
    assert.ok(names.some((n) => /:tile0 /.test(n)), names.join(' | '));
  }
  const conv = generateSketches(find('conv2d_nhwc+add+relu 1x224').dag, { numCores: 4 })[0];
  assert.is(conv.plans.get('T_add')!.k, 'inline');
  assert.is(conv.plans.get('pad_temp')!.k, 'simple');
  // A 1x1 conv's identity "padding" is strictly inlineable.
  const pw = generateSketches(find('conv2d_nhwc+add+relu 1x112x112x32').dag, { numCores: 4 })[0];
  assert.is(pw.plans.get('pad_temp')!.k, 'inline');
});

test('a tiled reduction without a fusible consumer gets cache_write sketches', () => {
  const dense = find('dense+add');
  // The matmul alone (its DAG cut at the matmul) has no consumer.
  const matmul = dense.dag.computeStages.find((t) => t.name === 'T_matmul_NT')!;
  const names = generateSketches(new ComputeDAG([matmul]), { numCores: 4 }).map((s) => s.name);
  assert.equal(names.filter((n) => n.includes('+cache')).length, 2, names.join(' | '));
});

test('rfactor for reductions with little spatial work (softmax, global pool), none for tiled convs', () => {
  const softmax = generateSketches(find('softmax').dag, { numCores: 4 }).map((s) => s.name);
  assert.is(softmax.length, 9); // {none, inner, outer} for each of the two reductions
  assert.ok(softmax.some((n) => n.includes('T_softmax_maxelem:rfactor-inner') && n.includes('T_softmax_expsum:rfactor-outer')));
  const pool = generateSketches(find('global_avg_pool2d').dag, { numCores: 4 }).map((s) => s.name);
  assert.is(pool.length, 3);
  // 49 reduce iterations and 64 cores: not worth an rfactor.
  assert.is(generateSketches(find('global_avg_pool2d').dag, { numCores: 64 }).length, 1);
  assert.not.ok(generateSketches(find('conv2d_nhwc+add+relu 1x224').dag, { numCores: 4 }).some((s) => s.name.includes('rfactor')));
});

test('every accepted state of every mobilenet task and sketch replays to the same steps and lowers', () => {
  const rng = new Rng(7);
  let accepted = 0, rejected = 0;
  for (const task of tasks) {
    const sketches = generateSketches(task.dag, { numCores: 4 });
    sketches.forEach((sk, i) => {
      let ok = 0;
      for (let attempt = 0; attempt < 40 && ok < 2; attempt++) {
        let built;
        try {
          built = buildState(task.dag, sketches, i, new RandomSource(rng));
        } catch {
          rejected++;
          continue;
        }
        const replayed = State.replay(task.dag, built.steps);
        assert.is(stepsKey(replayed.steps), stepsKey(built.steps));
        try {
          lower(replayed, 'k');
        } catch (e) {
          // Only codegen's local-buffer bound may reject a state the builder accepted.
          assert.match(String(e), /too large for a local buffer/, `${task.desc} / ${sk.name}`);
          rejected++;
          continue;
        }
        ok++;
      }
      assert.ok(ok > 0, `no valid state for ${task.desc} / ${sk.name}`);
      accepted += ok;
    });
  }
  assert.ok(accepted > rejected, `${accepted} accepted, ${rejected} rejected`);
});

test.run();
