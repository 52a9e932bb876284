// Static memory plan: every intermediate (a group's output that is not a model output)
// gets an offset in one workspace; a buffer's space is reused once its last reader has
// run. First fit over the live buffers, in call order; offsets are 16-float aligned.

import type { FusedGroup } from '../graph/fuse';
import type { Graph } from '../graph/graph';
import { numElements } from '../ir/tensor';

export interface MemoryPlan {
  /** Workspace offset (floats) of each intermediate node. */
  offsets: Map<number, number>;
  /** Workspace size in floats. */
  size: number;
  /** Sum of all intermediates' sizes (what no reuse would need), for reports. */
  unplannedSize: number;
}

const align = (n: number): number => Math.ceil(n / 16) * 16;

export function planMemory(g: Graph, groups: readonly FusedGroup[]): MemoryPlan {
  const producedAt = new Map<number, number>();
  groups.forEach((grp, i) => producedAt.set(grp.output, i));
  const lastUse = new Map<number, number>();
  groups.forEach((grp, i) => grp.inputs.forEach((id) => { if (producedAt.has(id)) lastUse.set(id, i); }));
  const live: { id: number; offset: number; size: number }[] = [];
  const offsets = new Map<number, number>();
  let size = 0, unplanned = 0;
  groups.forEach((grp, i) => {
    // Free what no later group reads (its readers all ran before group i).
    for (let j = live.length - 1; j >= 0; j--) if ((lastUse.get(live[j].id) ?? -1) < i) live.splice(j, 1);
    if (g.outputs.includes(grp.output)) return;
    const need = align(numElements(g.node(grp.output).shape));
    unplanned += need;
    live.sort((a, b) => a.offset - b.offset);
    let offset = 0;
    for (const b of live) {
      if (b.offset - offset >= need) break;
      offset = Math.max(offset, b.offset + b.size);
    }
    live.push({ id: grp.output, offset, size: need });
    offsets.set(grp.output, offset);
    size = Math.max(size, offset + need);
  });
  return { offsets, size, unplannedSize: unplanned };
}
