// Per layer, direct conv or Winograd: a layer whose conv can run as Winograd
// (graph/winograd.ts) runs as Winograd when the best record of its Winograd task is faster
// than the best record of its direct task, both measured for this target and machine;
// without both records it stays direct (a default Winograd schedule is not known to be
// faster). The chosen convs are rewritten in the graph (their weights transformed once)
// and the graph is partitioned again: the same groups, the chosen ones now Winograd.

import { winogradConvOf, winogradTasks, type Task } from '../graph/extract';
import { partition, type FusedGroup } from '../graph/fuse';
import type { Graph } from '../graph/graph';
import { useWinograd } from '../graph/winograd';
import { applyRecords, type ApplyRecordsOptions } from './apply-records';
import type { TunedSchedule } from './model';

export interface WinogradChoice {
  graph: Graph;
  groups: readonly FusedGroup[];
  /** The tuned schedules of the Winograd tasks chosen, by workload key. */
  schedules: Map<string, TunedSchedule>;
  /** One line per chosen task: its description, weight and both times. */
  chosen: string[];
  /** Eligible layers (groups) and how many went Winograd. */
  eligible: number;
  used: number;
}

/**
 * Chooses per layer. `directCosts`: the mean time of the best record of each direct task
 * (applyRecords' `costs`); `records`: what applyRecords read them from.
 */
export async function chooseWinograd(
  graph: Graph, groups: readonly FusedGroup[], directCosts: ReadonlyMap<string, number>,
  records: Pick<ApplyRecordsOptions, 'target' | 'fingerprint' | 'files' | 'warn'>,
): Promise<WinogradChoice> {
  const alternatives = winogradTasks(graph, groups);
  const eligible = alternatives.reduce((a, t) => a + t.weight, 0);
  const none: WinogradChoice = { graph, groups, schedules: new Map(), chosen: [], eligible, used: 0 };
  if (alternatives.length === 0) return none;
  const applied = await applyRecords({ ...records, tasks: alternatives });
  const faster: Task[] = alternatives.filter((t) => {
    const w = applied.costs.get(t.key), d = directCosts.get(t.alternative!.of);
    return w !== undefined && d !== undefined && w < d;
  });
  if (faster.length === 0) return none;
  const convs = faster.flatMap((t) => t.groups.map((id) => winogradConvOf(graph, groups[id])!));
  const wg = useWinograd(graph, convs);
  const wgroups = partition(wg);
  const schedules = new Map(faster.map((t) => [t.key, applied.schedules.get(t.key)!]));
  const chosen = faster.map((t) => {
    const w = applied.costs.get(t.key)!, d = directCosts.get(t.alternative!.of)!;
    return `${t.desc} (x${t.weight}): ${w.toFixed(3)} ms vs direct ${d.toFixed(3)} ms`;
  });
  return { graph: wg, groups: wgroups, schedules, chosen, eligible, used: faster.reduce((a, t) => a + t.weight, 0) };
}
