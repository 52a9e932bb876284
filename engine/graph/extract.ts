// Task extraction: the fused groups that contain a reduction, deduplicated by workload
// key. A task's weight is how many groups of the network share its key; the task
// scheduler minimises sum(latency * weight).

import type { ComputeDAG } from '../ir/dag';
import { isCompute } from '../ir/tensor';
import type { Graph, OpNode } from './graph';
import { partition, type FusedGroup } from './fuse';
import { WINOGRAD_OP, useWinograd, winogradEligible } from './winograd';
import { optimize, type OptimizeOptions } from './passes';
import { samplePlan } from './per-sample';
import { isGpu, parseTarget } from '../target';

export interface Task {
  /** The DAG's workload key: `["<md5>", [input shape]..., [output shape]]`. */
  key: string;
  dag: ComputeDAG;
  /** Number of fused groups with this key. */
  weight: number;
  /** FLOPs of one execution. */
  flops: number;
  /** e.g. `conv2d_nhwc+add+relu 1x56x56x64 -> 1x56x56x128` */
  desc: string;
  /** Input shapes then the output shape, in workload-key order. */
  shapes: number[][];
  /** Ids of the fused groups (of `partition(optimize(graph, opts))`) that are this task. */
  groups: number[];
  /** Placeholders of the DAG (p0, p1, ...) that hold constants (weights) in every group of the task:
   *  the lowering may re-lay them out (codegen/layout.ts), as compile will. */
  constInputs?: string[];
  /** An alternative implementation of the layers of another task (extractTasks' `winograd`):
   *  `of` is that task's key; compile uses whichever has the faster best record. */
  alternative?: { of: string; impl: 'winograd' };
}

/** A short name per node: the main compute's tag for convs (conv2d_nhwc, depthwise_conv2d_nhwc, ...), else the op. */
function label(g: Graph, id: number, group: FusedGroup): string {
  const n = g.node(id) as OpNode;
  if (n.op !== 'conv2d') return n.op;
  const stage = group.dag.computeStages.find((t) => t.op.body.k === 'reduce' && isCompute(t));
  return stage ? stage.op.tag : n.op;
}

/** The description of one group: its ops joined by '+', then data shape -> output shape. */
export function describeGroup(g: Graph, group: FusedGroup): string {
  const dims = (s: readonly number[]): string => s.join('x');
  const first = group.dag.inputs[0];
  const io = `${first ? dims(first.shape) : '()'} -> ${dims(group.dag.outputs[0].shape)}`;
  return `${group.nodes.map((id) => label(g, id, group)).join('+')} ${io}`;
}

/** A group's placeholders (p0, p1, ...) that are constants of the graph: the weights the lowering may re-lay out. */
export function constantPlaceholders(graph: Graph, group: FusedGroup): string[] {
  return group.inputs.flatMap((id, i) => (graph.node(id).op === 'constant' ? [`p${i}`] : []));
}

/** Tasks of already partitioned groups (`graph` is the graph they partition). */
export function tasksOfGroups(graph: Graph, groups: readonly FusedGroup[]): Task[] {
  const byKey = new Map<string, Task>();
  for (const group of groups) {
    if (!group.hasReduction) continue;
    const key = group.dag.workloadKey;
    const constants = constantPlaceholders(graph, group);
    const task = byKey.get(key);
    if (task) {
      task.weight += 1;
      task.groups.push(group.id);
      task.constInputs = (task.constInputs ?? []).filter((p) => constants.includes(p));
      continue;
    }
    byKey.set(key, {
      key, dag: group.dag, weight: 1, flops: group.dag.flops, desc: describeGroup(graph, group), shapes: group.dag.shapes, groups: [group.id],
      constInputs: constants,
    });
  }
  return [...byKey.values()];
}

export interface ExtractOptions extends OptimizeOptions {
  /** Run the inference passes first (default true); false partitions the graph as given. */
  optimize?: boolean;
  /**
   * Also a Winograd task for every layer whose conv is a 3x3 stride-1 NHWC conv
   * (graph/winograd.ts), after the tasks of the network, marked `alternative` (default
   * false: the tasks are then exactly one per distinct fused group, the partition every
   * FLOP and latency sum assumes). For CPU targets; tune turns it on.
   */
  winograd?: boolean;
  /**
   * Tasks of the graph a CPU model runs (per-sample.ts): of one sample where the model runs
   * its batch per sample (default false: the graph's own batch).
   */
  perSample?: boolean;
}

/** The tuning tasks of a network, in order of first occurrence. */
export function extractTasks(graph: Graph, opts: ExtractOptions = {}): Task[] {
  return extractPlan(graph, opts).tasks;
}

/** extractTasks' tasks, and the samples a model of them runs its graph for (per-sample.ts; 1 without `perSample`). */
function extractPlan(graph: Graph, opts: ExtractOptions): { tasks: Task[]; samples: number } {
  const optimized = opts.optimize === false ? graph : optimize(graph, opts);
  const plan = opts.perSample ? samplePlan(optimized) : { graph: optimized, samples: 1 };
  const { graph: g, samples } = plan;
  const groups = plan.groups ?? partition(g);
  const tasks = tasksOfGroups(g, groups);
  return { tasks: opts.winograd ? [...tasks, ...winogradTasks(g, groups)] : tasks, samples };
}

/**
 * The Winograd tasks of the layers of `graph` (optimised, partitioned into `groups`) whose
 * conv can run as Winograd: the same fused groups (same ids) with the conv replaced by
 * conv2d_winograd_nhwc, each task marked as the alternative of the direct task of its groups.
 */
export function winogradTasks(graph: Graph, groups: readonly FusedGroup[]): Task[] {
  const convs = winogradEligible(graph);
  if (convs.length === 0) return [];
  const wg = useWinograd(graph, convs);
  const wgroups = partition(wg);
  if (wgroups.length !== groups.length) throw new Error(`winograd: the rewritten graph has ${wgroups.length} groups, the graph ${groups.length}`);
  const chosen = wgroups.filter((grp) => grp.nodes.some((id) => wg.node(id).op === WINOGRAD_OP));
  const tasks = tasksOfGroups(wg, chosen);
  for (const t of tasks) t.alternative = { of: groups[t.groups[0]].dag.workloadKey, impl: 'winograd' };
  return tasks;
}

/** The conv node of `group` (of a graph's partition) that winogradTasks made a Winograd conv, if any. */
export function winogradConvOf(graph: Graph, group: FusedGroup): number | undefined {
  const convs = new Set(winogradEligible(graph));
  return group.nodes.find((id) => convs.has(id));
}

/**
 * The tasks a tune searches for a model's graph on a target (also what `tune --workload`,
 * the Nx shards and the tuning report choose from). CPU targets also tune a Winograd task
 * for each 3x3 stride-1 conv layer: compile runs the layer as Winograd where that task's
 * best record beats the direct conv's (compile/choose-winograd.ts); and where a CPU model runs
 * its batch per sample, its tasks are those of one sample (per-sample.ts).
 */
export function tuningTasks(graph: Graph, target: string): Task[] {
  return tuningPlan(graph, target).tasks;
}

/** tuningTasks' tasks, and how many samples a CPU model runs them for per run (1: the whole batch at once). */
export function tuningPlan(graph: Graph, target: string): { tasks: Task[]; samples: number } {
  const cpu = !isGpu(parseTarget(target, 'target'));
  return extractPlan(graph, { winograd: cpu, perSample: cpu });
}
