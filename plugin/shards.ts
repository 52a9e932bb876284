// Sharded tuning: a network with `shards: N` in the config is tuned by N Nx targets
// `tune--0` ... `tune--<N-1>`, each over the tasks whose workload keys hash to it, and
// its `tune` target merges them. Used at graph time (plugin/targets.ts: the targets and
// their cache inputs) and at run time (executors/tune: which tasks a shard tunes, with
// what share of the budget), so both sides compute the same plan from the same models.
//
// - A task's shard depends on its workload key alone (rendezvous hashing: the shard
//   whose hash of (shard, key) is highest; an alternative implementation of a layer, the
//   Winograd task of a conv, goes by the key of the task it is an alternative of, so that
//   one scheduler weighs both), so a task never moves because another one was added,
//   removed or changed: a changed layer re-tunes the shards that held its old
//   and new workloads, and no other. The price: shards are not equal in cost; the budget
//   follows the cost instead (shardBudget).
// - A workload shared by several sharded networks of one config that are built for the
//   same targets is tuned by one of them, the first by name (its owner); the others'
//   `tune` depends on the owner's shard. Nx hashes a task with its project's whole
//   configuration, so two projects never share a cache entry: the sharing is in the task
//   graph, not in the cache.
// - A shard's cache key is its own: the digest of its tasks (workload key, weight, FLOPs),
//   of the engine version and, when a budget of the config is a total (trials, time limit),
//   of its share of the network's estimated cost; the budget's name is an option of the
//   target, the fingerprint a runtime input of every tune target.

import { createHash } from 'node:crypto';
import type { Task } from '../engine/graph/extract';
import type { Graph } from '../engine/graph/graph';
import { ConfigError, configLabel, type LoadedConfig } from './config';
import { networkTargets, resolveRun } from './resolve';

/** What planning needs of a task (engine/graph/extract.ts's Task has it). */
export interface ShardTask {
  key: string;
  desc: string;
  weight: number;
  flops: number;
  /** An alternative implementation of another task (engine/graph/extract.ts): `of` is that task's key. */
  alternative?: { of: string };
}

/** The key a task is sharded by: its own, or for an alternative implementation, that of the task it replaces. */
export const shardKeyOf = (t: Pick<ShardTask, 'key' | 'alternative'>): string => t.alternative?.of ?? t.key;

/** The estimated cost of a task before tuning: its occurrences times its FLOPs (the task scheduler's weight). */
export const taskCost = (t: Pick<ShardTask, 'weight' | 'flops'>): number => t.weight * t.flops;

/**
 * The shard (0..count-1) of a workload key: rendezvous (highest random weight) hashing over
 * the shard indices, written here in a few lines over node:crypto rather than taken from a
 * library. Changing the count moves only the keys whose best shard appeared or vanished.
 */
export function shardOfKey(key: string, count: number): number {
  let best = 0;
  let bestScore = '';
  for (let k = 0; k < count; k += 1) {
    const score = createHash('sha256').update(`${k}\0${key}`).digest('hex');
    if (score > bestScore) { bestScore = score; best = k; }
  }
  return best;
}

export interface Shard<T extends ShardTask = ShardTask> {
  index: number;
  /** The tasks this shard tunes, in the network's task order. */
  tasks: T[];
  /** Its tasks' estimated cost. */
  cost: number;
  /** Its cost over the whole network's (owned and borrowed tasks): the share of the network's budget it gets. */
  share: number;
}

export interface NetworkShardPlan<T extends ShardTask = ShardTask> {
  network: string;
  count: number;
  shards: Shard<T>[];
  /** Tasks of this network that another network's shard tunes: which network and shard. */
  borrowed: { task: T; network: string; shard: number }[];
  /** Estimated cost of all the network's tasks. */
  totalCost: number;
}

/** Networks of the config with `shards`, by name. */
export const shardedNetworks = (loaded: LoadedConfig): string[] =>
  Object.entries(loaded.config.networks).filter(([, n]) => n.shards !== undefined).map(([name]) => name).sort();

/**
 * The shards of every sharded network of a config, given each one's tasks. A workload
 * shared by networks built for the same targets belongs to the first of them by name.
 */
export function planShards<T extends ShardTask>(loaded: LoadedConfig, tasksOf: (network: string) => readonly T[]): Map<string, NetworkShardPlan<T>> {
  const networks = shardedNetworks(loaded);
  const tasks = new Map(networks.map((n) => [n, tasksOf(n)]));
  const targetsOf = (n: string): string => JSON.stringify([...networkTargets(loaded, n)].sort());
  // Owner of each workload, per set of targets: the first network (by name) that has it.
  const owner = new Map<string, string>();
  for (const n of networks) {
    for (const t of tasks.get(n)!) {
      const k = `${targetsOf(n)}\0${t.key}`;
      if (!owner.has(k)) owner.set(k, n);
    }
  }
  const countOf = (n: string): number => loaded.config.networks[n].shards!;
  const plans = new Map<string, NetworkShardPlan<T>>();
  for (const n of networks) {
    const count = countOf(n);
    const all = tasks.get(n)!;
    const totalCost = all.reduce((a, t) => a + taskCost(t), 0);
    const shards: Shard<T>[] = Array.from({ length: count }, (_, index) => ({ index, tasks: [], cost: 0, share: 0 }));
    const borrowed: NetworkShardPlan<T>['borrowed'] = [];
    for (const t of all) {
      const o = owner.get(`${targetsOf(n)}\0${t.key}`)!;
      if (o !== n) { borrowed.push({ task: t, network: o, shard: shardOfKey(shardKeyOf(t), countOf(o)) }); continue; }
      const s = shards[shardOfKey(shardKeyOf(t), count)];
      s.tasks.push(t);
      s.cost += taskCost(t);
    }
    for (const s of shards) s.share = totalCost > 0 ? s.cost / totalCost : 0;
    plans.set(n, { network: n, count, shards, borrowed, totalCost });
  }
  return plans;
}

/** Whether some budget of the config is a total that shards split by their share (trials, time limit). */
export const budgetsSplitByShare = (loaded: LoadedConfig): boolean =>
  Object.values(loaded.config.budgets ?? {}).some((b) => b.trials !== undefined || b.timeLimit !== undefined);

/**
 * A shard's part of a network budget: the network's total trials and time limit times the
 * shard's share of its estimated cost (at least one trial); per-task limits stay as they are.
 */
export function shardBudget<B extends { trials?: number; timeLimitS?: number }>(budget: B, shard: Pick<Shard, 'share'>): B {
  return {
    ...budget,
    trials: budget.trials === undefined ? undefined : Math.max(1, Math.round(budget.trials * shard.share)),
    timeLimitS: budget.timeLimitS === undefined ? undefined : budget.timeLimitS * shard.share,
  };
}

/** The cache key of one shard (see the header): changes exactly when what it tunes, or how much, changes. */
export function shardDigest(shard: Shard, engineVersion: string, splitByShare: boolean): string {
  const tasks = shard.tasks.map((t) => [t.key, t.weight, t.flops]).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const what = { engine: engineVersion, tasks, ...(splitByShare ? { share: shard.share.toFixed(6) } : {}) };
  return createHash('sha256').update(JSON.stringify(what)).digest('hex').slice(0, 32);
}

// The engine's model loading and task extraction modules are required when a sharded network is
// planned, not when the plugin loads: every Nx command loads the plugin, most plan nothing.
/* eslint-disable @typescript-eslint/no-require-imports */
const engine = {
  loadModel: (...a: Parameters<typeof import('../engine/frontend/load').loadModel>) => (require('../engine/frontend/load') as typeof import('../engine/frontend/load')).loadModel(...a),
  tuningTasks: (graph: Graph, target: string): Task[] => (require('../engine/graph/extract') as typeof import('../engine/graph/extract')).tuningTasks(graph, target),
};
/* eslint-enable @typescript-eslint/no-require-imports */

/**
 * The tasks tune searches for a graph on any of `targets` (tuningTasks: CPU targets add
 * Winograd alternatives), each once, in order. The plan covers them all, so that every
 * configuration (-c <target>) of a shard target has the same plan and cache input; a run
 * tunes those of its own target. `known` supplies the tasks of targets already extracted.
 */
export function tasksForTargets(graph: Graph, targets: readonly string[], known: ReadonlyMap<string, readonly Task[]> = new Map()): Task[] {
  const out = new Map<string, Task>();
  for (const t of targets) for (const task of known.get(t) ?? engine.tuningTasks(graph, t)) if (!out.has(task.key)) out.set(task.key, task);
  return [...out.values()];
}

/** The target strings a network is built for. */
const targetStrings = (loaded: LoadedConfig, network: string): string[] => networkTargets(loaded, network).map((t) => loaded.config.targets[t].target);

/** A network's model graph, as tune loads it (its spec, so the same workload keys). A model that does not load is a ConfigError naming it. */
export function networkGraph(loaded: LoadedConfig, workspaceRoot: string, network: string, opts: { weights?: 'zeros' } = {}): Graph {
  const spec = resolveRun(loaded, workspaceRoot, network, networkTargets(loaded, network)[0]).spec;
  try {
    return engine.loadModel({ ...spec, ...opts }).graph;
  } catch (e) {
    throw new ConfigError(configLabel(loaded.file, workspaceRoot), `networks.${network}.model`,
      `cannot be loaded to plan its shards: ${(e as Error).message.split('\n')[0]}`);
  }
}

/**
 * The tasks a network's shards are planned over: those tune searches on any of its targets,
 * of `graph` when it is loaded already, and with the tasks of targets in `known`.
 */
export function networkTasks(loaded: LoadedConfig, workspaceRoot: string, network: string, graph?: Graph, known?: ReadonlyMap<string, readonly Task[]>): Task[] {
  // Shapes are what the keys depend on: a builtin network's weights are left zero (its tasks are the same).
  return tasksForTargets(graph ?? networkGraph(loaded, workspaceRoot, network, { weights: 'zeros' }), targetStrings(loaded, network), known);
}

/** planShards over the models of the config; `known` supplies the tasks of networks already loaded. */
export function loadShardPlans(loaded: LoadedConfig, workspaceRoot: string, known: ReadonlyMap<string, readonly Task[]> = new Map()): Map<string, NetworkShardPlan<Task>> {
  return planShards<Task>(loaded, (n) => known.get(n) ?? networkTasks(loaded, workspaceRoot, n));
}
