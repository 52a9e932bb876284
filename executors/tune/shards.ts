// The tune executor's side of sharded networks (plugin/shards.ts). A `tune--<k>` target
// tunes the tasks of shard k with its share of the network's budget and writes its own Nx
// output (every measurement the store holds for those tasks on this target and machine).
// The network's `tune` target then tunes nothing: once its shards (and the other networks'
// shards that tune its shared workloads) ran or were restored, and their outputs were
// merged into the store, it writes the best valid record per task of the network into its
// own output (distill: the fastest record whose steps still replay on the task).

import { UserError } from '../../engine/errors';
import { loadModel } from '../../engine/frontend/load';
import type { Task } from '../../engine/graph/extract';
import { distillEntries } from '../../engine/records/distill';
import { readStore, writeRecordsFile } from '../../engine/records/store';
import { tuneNetwork, tuneTasks, type TuneResult, type TuneRunOptions } from '../../engine/app/tune';
import { tuningTasks } from '../../engine/graph/extract';
import { ConfigError, configLabel } from '../../plugin/config';
import { shardOutputFile, type ResolvedRun } from '../../plugin/resolve';
import { loadShardPlans, networkTasks, shardBudget, type NetworkShardPlan, type Shard } from '../../plugin/shards';

/** How a run of the tune executor takes part in a sharded network's tuning. */
export interface Sharding {
  /** Every task of the network that tune searches on this run's target. */
  tasks: Task[];
  plan: NetworkShardPlan<Task>;
  /** The shard this run tunes (its tasks: those of this run's target); none for the network's tune target (it merges). */
  shard?: Shard<Task>;
  /** This run's Nx output: the shard's file, or the network's tune output for the merge. */
  output: string;
}

/**
 * The sharding of a run: undefined for a network without shards (the tune executor then
 * works as it always did). `shard` is the executor's option, set on `tune--<k>` targets.
 */
export function shardingOf(run: ResolvedRun, shard: number | undefined, root: string): Sharding | undefined {
  const label = configLabel(run.loaded.file, root);
  if (run.net.shards === undefined) {
    if (shard === undefined) return undefined;
    throw new ConfigError(label, `networks.${run.network}.shards`, `is not set, so ${run.network} has no shard ${shard} (--shard applies to networks tuned in shards)`);
  }
  if (shard !== undefined && !(Number.isInteger(shard) && shard >= 0 && shard < run.net.shards)) {
    throw new UserError(`--shard ${shard}: ${run.network} has ${run.net.shards} shard(s) (networks.${run.network}.shards in ${label}): expected 0 to ${run.net.shards - 1}`);
  }
  // The plan covers the tasks of all the network's targets (as the plugin planned it); this run tunes its own target's.
  const graph = loadModel(run.spec).graph;
  const tasks = tuningTasks(graph, run.target.target);
  const all = networkTasks(run.loaded, root, run.network, graph, new Map([[run.target.target, tasks]]));
  const plan = loadShardPlans(run.loaded, root, new Map([[run.network, all]])).get(run.network)!;
  if (shard === undefined) return { tasks, plan, output: run.tuneOutput };
  const mine = new Set(plan.shards[shard].tasks.map((t) => t.key));
  return {
    tasks, plan, shard: { ...plan.shards[shard], tasks: tasks.filter((t) => mine.has(t.key)) },
    output: shardOutputFile(run.storeDir, run.network, run.targetName, run.budgetName, shard),
  };
}

/** What the log line of a shard's run says about it. */
export function describeShard(s: Sharding): string {
  if (!s.shard) return `merging ${s.plan.count} shard(s)`;
  return `shard ${s.shard.index} of ${s.plan.count}: ${s.shard.tasks.length} of ${s.tasks.length} task(s), ${(100 * s.shard.share).toFixed(1)}% of the estimated cost`;
}

/**
 * tuneNetwork for an unsharded run; for a shard, the same loop over its tasks with its
 * share of the total trials and time limit (the task scheduler runs inside the shard).
 */
export function tuneRun(s: Sharding | undefined, opts: TuneRunOptions): Promise<TuneResult> {
  if (!s?.shard) return tuneNetwork(opts);
  if (opts.networkPass) opts.log?.('network pass: skipped, a shard tunes some of the network\'s tasks and the pass profiles the whole network');
  const { model: _model, ...rest } = opts;
  return tuneTasks(s.plan.network, s.shard.tasks, shardBudget(rest, s.shard));
}

/**
 * The merge of a sharded network's tune: from the store (into which the shards' outputs
 * were merged first), the best valid record per task of the network for this target and
 * machine, written whole to the tune output. Returns the tasks without a record.
 */
export async function writeMergedOutput(
  storeDir: string, s: Sharding, match: { target: string; fingerprint: string }, warn: (m: string) => void,
): Promise<{ best: number; missing: Task[] }> {
  const keys = new Set(s.tasks.map((t) => t.key));
  const entries = (await readStore(storeDir, { warn }))
    .filter((e) => keys.has(e.record.key) && e.record.target === match.target && e.record.fingerprint === match.fingerprint);
  const { kept, passedOver } = distillEntries(entries, { dags: new Map(s.tasks.map((t) => [t.key, t.dag])) });
  if (passedOver.length > 0) warn(`passed over ${passedOver.length} record(s) whose steps do not apply to their task (first: ${passedOver[0].entry.file}:${passedOver[0].entry.line}: ${passedOver[0].why})`);
  await writeRecordsFile(s.output, kept.map((e) => e.record));
  const have = new Set(kept.map((e) => e.record.key));
  return { best: kept.length, missing: s.tasks.filter((t) => !have.has(t.key)) };
}
