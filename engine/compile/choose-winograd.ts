// Per layer, direct conv or Winograd: a layer whose conv can run as Winograd
// (graph/winograd.ts) runs as Winograd when the best record of its Winograd task is faster
// than the best record of its direct task, both measured for this target and machine.
// Where only the Winograd task has a record, Winograd runs (a measured schedule over a
// guess). Where only the direct task has one, TVM's rule decides as if neither had: a tune
// that ran out of budget before it reached a layer's Winograd task must not compile that
// layer slower than no tuning at all (on our AVX2 box the Winograd default is 0.43 to 0.69
// of the direct default on the 128- and 256-channel layers of resnet-18, more than tuning
// the direct conv gains). With `--strict`, which wants a record for every kernel that runs,
// the direct conv with its record runs instead. Where neither has one, TVM's rule decides
// (winogradByDefault). The chosen convs are rewritten in the graph (their weights
// transformed once) and the graph is partitioned again: the same groups, the chosen ones
// now Winograd.

import { winogradConvOf, winogradTasks, type Task } from '../graph/extract';
import { partition, type FusedGroup } from '../graph/fuse';
import type { Graph } from '../graph/graph';
import { constantOf } from '../graph/rewrite';
import { useWinograd } from '../graph/winograd';
import { applyRecords, type ApplyRecordsOptions } from './apply-records';
import type { TunedSchedule } from './model';

export interface WinogradChoice {
  graph: Graph;
  groups: readonly FusedGroup[];
  /** The tuned schedules of the Winograd tasks chosen, by workload key (none for those TVM's rule chose). */
  schedules: Map<string, TunedSchedule>;
  /** One line per chosen task: its description, weight and why (both times, or the rule). */
  chosen: string[];
  /** Eligible layers (groups) and how many went Winograd. */
  eligible: number;
  used: number;
}

/**
 * Whether an eligible conv with `outChannels` output channels runs as Winograd when neither
 * implementation has a record, on a CPU whose vector unit holds `lanes` float32s. TVM's rule
 * for x86 with the auto-scheduler (relay op strategy x86.py, conv2d NHWC): the Winograd
 * implementation gets the higher priority when 64 < CO < 512. Our default schedules agree on
 * AVX2 (`bench/winograd.ts`, resnet-18, Winograd / direct: 0.43 to 0.69 on the 128- and
 * 256-channel layers, 0.88 to 1.54 on the 64- and 512-channel ones), but on AVX-512 (16
 * lanes; a Zen 4 box) the 7x7x512 layers run faster as Winograd too (0.69
 * to 0.80), so there the range takes in CO = 512. The 64-channel layers stay direct on both
 * (1.09 to 2.14 on Zen 4).
 */
export function winogradByDefault(outChannels: number, lanes: number): boolean {
  return outChannels > 64 && (outChannels < 512 || (outChannels === 512 && takesIn512(lanes)));
}

/** Where the rule's range takes in 512 output channels: AVX-512's 16 lanes. */
const takesIn512 = (lanes: number): boolean => lanes >= 16;

/** The rule's range in words, for the compile log. */
function ruleText(lanes: number): string {
  return takesIn512(lanes) ? '64 < channels <= 512 at 16 lanes' : '64 < channels < 512';
}

/** The output channels of the conv of a Winograd task's layer (its HWIO weight's O). */
function outChannelsOf(graph: Graph, groups: readonly FusedGroup[], task: Task): number {
  const conv = graph.node(winogradConvOf(graph, groups[task.groups[0]])!);
  return constantOf(graph, conv.inputs[1])!.shape[3];
}

/**
 * Chooses per layer. `directCosts`: the mean time of the best record of each direct task
 * (applyRecords' `costs`; empty without records); `records`: what applyRecords read them from;
 * `lanes`: the target's float32 vector lanes (TVM's rule, winogradByDefault).
 */
export async function chooseWinograd(
  graph: Graph, groups: readonly FusedGroup[], directCosts: ReadonlyMap<string, number>,
  records: Pick<ApplyRecordsOptions, 'target' | 'fingerprint' | 'threads' | 'files' | 'entries' | 'warn' | 'strict'>,
  lanes: number,
): Promise<WinogradChoice> {
  const alternatives = winogradTasks(graph, groups);
  const eligible = alternatives.reduce((a, t) => a + t.weight, 0);
  const none: WinogradChoice = { graph, groups, schedules: new Map(), chosen: [], eligible, used: 0 };
  if (alternatives.length === 0) return none;
  const tuned = records.files.length > 0 ? await applyRecords({ ...records, strict: false, tasks: alternatives }) : undefined;
  const applied: ReadonlyMap<string, number> = tuned?.costs ?? new Map();
  // Per Winograd task, why it runs (undefined: the layer stays direct).
  const why = (t: Task): string | undefined => {
    const w = applied.get(t.key), d = directCosts.get(t.alternative!.of);
    const head = `${t.desc} (x${t.weight}): `;
    if (w !== undefined && d !== undefined) return w < d ? `${head}${w.toFixed(3)} ms vs direct ${d.toFixed(3)} ms` : undefined;
    if (w !== undefined) return `${head}${w.toFixed(3)} ms, the direct conv has no record`;
    if (d !== undefined && records.strict) return undefined;
    const co = outChannelsOf(graph, groups, t);
    if (!winogradByDefault(co, lanes)) return undefined;
    const rule = `${co} output channels (Winograd without its record when ${ruleText(lanes)})`;
    return d !== undefined ? `${head}no Winograd record (direct ${d.toFixed(3)} ms), ${rule}` : `${head}no records, ${rule}`;
  };
  const reasons = alternatives.map(why);
  const faster = alternatives.filter((_, i) => reasons[i] !== undefined);
  const chosen = reasons.filter((r): r is string => r !== undefined);
  if (faster.length === 0) return none;
  const convs = faster.flatMap((t) => t.groups.map((id) => winogradConvOf(graph, groups[id])!));
  const wg = useWinograd(graph, convs);
  const wgroups = partition(wg);
  const schedules = new Map(faster.filter((t) => applied.has(t.key)).map((t) => [t.key, tuned!.schedules.get(t.key)!]));
  return { graph: wg, groups: wgroups, schedules, chosen, eligible, used: faster.reduce((a, t) => a + t.weight, 0) };
}
