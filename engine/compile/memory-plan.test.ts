// The memory plan: buffers that are live at once never overlap, and with `inPlace` a
// residual add's output takes the buffer of the input it is written over, only where
// nothing reads that input afterwards.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { getNetwork } from '../frontend/networks';
import { partition, type FusedGroup } from '../graph/fuse';
import { Graph } from '../graph/graph';
import { numElements } from '../ir/tensor';
import { planMemory, type MemoryPlan } from './memory-plan';

/** Two intermediates live at once (one produced before the other's last reader ran) hold disjoint words, but for an in-place pair. */
function assertNoOverlap(g: Graph, groups: readonly FusedGroup[], plan: MemoryPlan): void {
  const producedAt = new Map(groups.map((grp, i) => [grp.output, i]));
  const lastUse = new Map<number, number>();
  groups.forEach((grp, i) => grp.inputs.forEach((id) => lastUse.set(id, i)));
  const bufs = [...plan.offsets].map(([id, offset]) => ({
    id, offset, end: offset + numElements(g.node(id).shape), from: producedAt.get(id)!, to: lastUse.get(id) ?? producedAt.get(id)!,
  }));
  for (const a of bufs) {
    for (const b of bufs) {
      if (a.id >= b.id || a.to < b.from || b.to < a.from) continue;
      if (plan.inPlace.get(b.from) === a.id || plan.inPlace.get(a.from) === b.id) continue;
      assert.ok(a.end <= b.offset || b.end <= a.offset, `nodes ${a.id} and ${b.id} are live at once and overlap`);
    }
  }
}

test('resnet-18: each residual add writes over an input no later group reads; nothing live at once overlaps', () => {
  const g = getNetwork('resnet-18', { weights: 'zeros', imageSize: 32 }).graph;
  const groups = partition(g);
  const plain = planMemory(g, groups), shared = planMemory(g, groups, { inPlace: true });
  assert.is(plain.inPlace.size, 0, 'none without the option');
  assert.ok(shared.inPlace.size >= 8, `the 8 residual adds at least (${shared.inPlace.size})`);
  assert.ok(shared.size <= plain.size);
  for (const [i, over] of shared.inPlace) {
    assert.is(shared.offsets.get(groups[i].output), shared.offsets.get(over));
    assert.ok(groups.slice(i + 1).every((grp) => !grp.inputs.includes(over)), `group ${i} writes over node ${over}, which a later group reads`);
  }
  assertNoOverlap(g, groups, plain);
  assertNoOverlap(g, groups, shared);
});

test('an input read again by a later group, or a model input, is not written over; another input of the same group may be', () => {
  const g = new Graph();
  const x = g.input('data', [1, 4, 4, 8]);
  const a = g.op('relu', [x]);
  const b = g.op('sigmoid', [x]);
  const sum = g.op('add', [a, b]); // a is read again below, b is not
  const again = g.op('multiply', [sum, a]);
  g.outputs = [g.op('tanh', [again])];
  const groups = partition(g, { maxDepth: 1 }); // one op per group
  assert.equal(groups.map((grp) => grp.output), [a, b, sum, again, g.outputs[0]]);
  const plan = planMemory(g, groups, { inPlace: true });
  assert.equal([...plan.inPlace], [[2, b], [3, sum]], 'the add over b (not a, read again by the multiply); the multiply over the sum');
  assertNoOverlap(g, groups, plan);
});

test.run();
