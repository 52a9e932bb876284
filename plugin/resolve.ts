// From a validated config to what one tune / compile / benchmark run needs: the model
// spec, the target, the budget and the file layout. Relative paths in the config are
// relative to the config file; everything here is absolute except the `*Rel` fields
// (workspace-relative, for Nx inputs and outputs).
//
// Layout (defaults):  <records>/*.jsonl                        the store: append-only logs, read whole
//                     <records>/<network>.<target>.jsonl       the log `nx tune` appends to
//                     <records>/nx/<network>/<target>.<budget>.jsonl
//                                                              tune's Nx output: written by that target
//                                                              configuration only, merged into the store
//                     <records>/nx/<network>/<target>.<budget>.shard-<k>.jsonl
//                                                              the output of tune--<k> (sharded networks);
//                                                              then tune's output is the merged best
//                     <outDir>/<network>/<target>/             compiled model
//                     <outDir>/<network>/reports/<target>.*    benchmark reports

import path from 'node:path';
import type { ModelSpec } from '../engine/frontend/load';
import { ConfigError, configLabel, DEFAULT_OUT_DIR, DEFAULT_RECORDS_DIR, insideFolder, isModelFile, type BudgetConfig, type LoadedConfig, type NetworkConfig, type TargetConfig } from './config';


export { DEFAULT_OUT_DIR, DEFAULT_RECORDS_DIR };

export interface ResolvedRun {
  /** The config it was resolved from. */
  loaded: LoadedConfig;
  network: string;
  net: NetworkConfig;
  spec: ModelSpec;
  /** Absolute model file, for file models. */
  modelFile?: string;
  targetName: string;
  target: TargetConfig;
  budgetName?: string;
  budget: BudgetConfig;
  /** Every budget of the config, by name. */
  budgets: Record<string, BudgetConfig>;
  storeDir: string;
  /** The store log this network's tuning appends to. */
  recordsFile: string;
  /** The Nx output of this tune configuration (network, target, budget); nothing else writes it. */
  tuneOutput: string;
  modelDir: string;
  reportsDir: string;
}

export function defaultTargetName(loaded: LoadedConfig): string {
  return loaded.config.defaults?.target ?? Object.keys(loaded.config.targets)[0];
}

export function defaultBudgetName(loaded: LoadedConfig): string | undefined {
  return loaded.config.defaults?.budget ?? Object.keys(loaded.config.budgets ?? {})[0];
}

/** Target names a network is built for. */
export function networkTargets(loaded: LoadedConfig, network: string): string[] {
  return loaded.config.networks[network]?.targets ?? Object.keys(loaded.config.targets);
}

export function storeDir(loaded: LoadedConfig): string {
  return path.resolve(loaded.dir, loaded.config.records ?? DEFAULT_RECORDS_DIR);
}

export function outDir(loaded: LoadedConfig): string {
  return path.resolve(loaded.dir, loaded.config.outDir ?? DEFAULT_OUT_DIR);
}

/** The store log `nx tune` appends to for one network and target. */
export const storeLogFile = (store: string, network: string, target: string): string => path.join(store, `${network}.${target}.jsonl`);

/** Where Nx outputs of tune targets live inside the store (never read as store logs themselves). */
export const tuneOutputsDir = (store: string): string => path.join(store, 'nx');

/** The Nx output file of one tune configuration. */
export function tuneOutputFile(store: string, network: string, target: string, budget: string | undefined): string {
  return path.join(tuneOutputsDir(store), network, `${target}.${budget ?? 'default'}.jsonl`);
}

/** The Nx output of shard `shard` of a sharded tune configuration (`tune--<shard>`, plugin/shards.ts). */
export function shardOutputFile(store: string, network: string, target: string, budget: string | undefined, shard: number | string): string {
  return path.join(tuneOutputsDir(store), network, `${target}.${budget ?? 'default'}.shard-${shard}.jsonl`);
}

/** Resolve one run; unknown names are ConfigErrors naming what exists. */
export function resolveRun(
  loaded: LoadedConfig, workspaceRoot: string, network: string, targetName?: string, budgetName?: string,
): ResolvedRun {
  const file = configLabel(loaded.file, workspaceRoot);
  const net = loaded.config.networks[network];
  if (!net) throw new ConfigError(file, 'networks', `no network '${network}' (expected one of: ${Object.keys(loaded.config.networks).join(', ')})`);
  const unusable = loaded.modelProblems?.get(network);
  if (unusable) throw unusable;
  const tName = targetName ?? defaultTargetName(loaded);
  const allowed = networkTargets(loaded, network);
  if (!allowed.includes(tName)) {
    throw new ConfigError(file, `networks.${network}.targets`, `target '${tName}' is not one of this network's targets (${allowed.join(', ')})`);
  }
  const bName = budgetName ?? defaultBudgetName(loaded);
  const budget = bName === undefined ? {} : loaded.config.budgets?.[bName];
  if (!budget) throw new ConfigError(file, 'budgets', `no budget '${bName}' (expected one of: ${Object.keys(loaded.config.budgets ?? {}).join(', ') || '(none defined)'})`);
  const modelFile = isModelFile(net.model) ? path.resolve(loaded.dir, net.model) : undefined;
  // A model file's symbolic batch dimension comes from batch, else from the inputs' shapes.
  const batch = net.batch ?? Object.values(net.inputs ?? {})[0]?.[0];
  const inputShapes = net.inputs && modelFile ? Object.entries(net.inputs).map(([name, shape]) => ({ name, shape })) : undefined;
  const spec: ModelSpec = { model: modelFile ?? net.model, batch, layout: net.layout, imageSize: net.imageSize, ...(inputShapes ? { inputShapes } : {}) };
  const store = storeDir(loaded);
  const out = path.join(outDir(loaded), network);
  // Every folder a run writes stays inside the workspace, whatever built `loaded` (validateConfig refuses such a config already).
  for (const [field, folder] of [['records', store], ['outDir', out]] as const) {
    if (!insideFolder(folder, workspaceRoot)) throw new ConfigError(file, field, `expected a folder inside the workspace ${workspaceRoot}, got ${folder}`);
  }
  return {
    loaded, network, net, spec, modelFile, targetName: tName, target: loaded.config.targets[tName], budgetName: bName, budget, budgets: loaded.config.budgets ?? {},
    storeDir: store,
    recordsFile: storeLogFile(store, network, tName),
    tuneOutput: tuneOutputFile(store, network, tName, bName),
    modelDir: path.join(out, tName),
    reportsDir: path.join(out, 'reports'),
  };
}

/** The Nx project root of a network, relative to the workspace root (posix separators). */
export function projectRootOf(loaded: LoadedConfig, workspaceRoot: string, network: string): string {
  const root = loaded.config.networks[network].root ?? path.join('models', network);
  return toPosix(path.relative(workspaceRoot, path.resolve(loaded.dir, root))) || '.';
}

export function toPosix(p: string): string {
  return p.split(path.sep).join('/');
}
