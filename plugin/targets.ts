// The inferred Nx projects of one config file: one project per network, each with tune,
// compile and benchmark targets. Pure: config in, project configurations out (no I/O), so
// createNodes can cache it by content hash and the tests can read it directly.

import { createHash } from 'node:crypto';
import path from 'node:path';
import type { TargetConfiguration } from '@nx/devkit';
import { benchmarkInputs } from './affected';
import { isModelFile, targetRunners, type LoadedConfig } from './config';
import { defaultBudgetName, defaultTargetName, networkTargets, outDir, projectRootOf, shardOutputFile, storeDir, toPosix, tuneOutputFile, tuneOutputsDir } from './resolve';
import { budgetsSplitByShare, shardDigest, type NetworkShardPlan } from './shards';

export interface TensortunePluginOptions {
  tuneTargetName?: string;
  compileTargetName?: string;
  benchmarkTargetName?: string;
  /** Add `{ externalDependencies: ['tensortune'] }` to the inputs (default: when the workspace's package.json lists tensortune). */
  externalDependency?: boolean;
}

export interface InferenceContext {
  workspaceRoot: string;
  /** Workspace-relative command that runs this package's CLI (`node .../bin/tensortune.js`). */
  cliCommand: string;
  /** Whether `tensortune` is an npm package of the workspace (lockfile entry). */
  externalDependency: boolean;
  /** The shards of the config's sharded networks (plugin/shards.ts loadShardPlans); none without. */
  shardPlans?: ReadonlyMap<string, NetworkShardPlan>;
  /** The engine version that shard cache keys name (the plugin's package version). */
  engineVersion?: string;
}

export interface InferredProject {
  name: string;
  root: string;
  projectType: 'application';
  tags: string[];
  metadata: { description: string; targetGroups: Record<string, string[]> };
  targets: Record<string, TargetConfiguration>;
}

const quote = (s: string): string => `"${s.replace(/(["\\$`])/g, '\\$1')}"`;

/** Nx configurations shared by the three targets, so `-c <name>` flows through dependsOn. The
 *  config's target is the option `configTarget`: Nx owns `--target` (the target to run). */
function configurationsFor(loaded: LoadedConfig, network: string, budgetKey: boolean): Record<string, Record<string, string>> {
  const budgets = Object.keys(loaded.config.budgets ?? {});
  const targets = networkTargets(loaded, network);
  const out: Record<string, Record<string, string>> = {};
  for (const b of budgets) out[b] = budgetKey ? { budget: b } : {};
  for (const t of targets) out[t] = { configTarget: t };
  for (const t of targets) {
    for (const b of budgets) {
      const name = `${t}-${b}`;
      if (!(name in out)) out[name] = budgetKey ? { configTarget: t, budget: b } : { configTarget: t };
    }
  }
  return out;
}

/**
 * What of the config a network's targets depend on: the network, the targets it is built
 * for, the budgets and the record and output folders. It is an option of the targets, and
 * Nx hashes options, so an edit elsewhere in the file (a comment, another network) leaves
 * their caches valid; the config file itself is no input.
 */
function settingsDigest(loaded: LoadedConfig, network: string): string {
  const c = loaded.config;
  const targets = Object.fromEntries(networkTargets(loaded, network).map((t) => [t, c.targets[t]]));
  const settings = { network: c.networks[network], targets, budgets: c.budgets ?? {}, records: c.records, outDir: c.outDir, defaults: c.defaults };
  return createHash('sha256').update(JSON.stringify(settings)).digest('hex').slice(0, 32);
}

/** The Nx target names of the tune, compile and benchmark executors. */
const executorTargetNames = (opts: TensortunePluginOptions): [string, string, string] =>
  [opts.tuneTargetName ?? 'tune', opts.compileTargetName ?? 'compile', opts.benchmarkTargetName ?? 'benchmark'];

/** The projects of one config file. `configRel` is the file relative to the workspace root. */
export function inferProjects(loaded: LoadedConfig, ctx: InferenceContext, opts: TensortunePluginOptions = {}): InferredProject[] {
  const [tune, compile, benchmark] = executorTargetNames(opts);
  const rel = (abs: string): string => toPosix(path.relative(ctx.workspaceRoot, abs));
  const configRel = rel(loaded.file);
  const store = storeDir(loaded);
  const storeRel = rel(store);
  const outputsRel = rel(tuneOutputsDir(store));
  const outRel = rel(outDir(loaded));
  const externalDependency = opts.externalDependency ?? ctx.externalDependency;
  const defaultTarget = defaultTargetName(loaded);
  const budget = defaultBudgetName(loaded);

  return Object.entries(loaded.config.networks).map(([network, net]) => {
    const targets = networkTargets(loaded, network);
    const targetStrings = targets.map((t) => loaded.config.targets[t].target);
    const target = targets.includes(defaultTarget) ? defaultTarget : targets[0];
    const base = { config: configRel, network, configTarget: target, settings: settingsDigest(loaded, network) };
    const modelInput = isModelFile(net.model) ? [`{workspaceRoot}/${rel(path.resolve(loaded.dir, net.model))}`] : [];
    const shared = [
      ...modelInput,
      { runtime: `${ctx.cliCommand} fingerprint ${targetStrings.map(quote).join(' ')}` },
      // A target measured on a device through runner(s): the device's fingerprint, asked through them (engine/remote).
      ...targets.flatMap((t) => {
        const remote = targetRunners(loaded.config.targets[t], t);
        return remote ? [{ runtime: `${ctx.cliCommand} fingerprint ${remote.runners.map((r) => `--runner ${quote(r)}`).join(' ')} ${quote(loaded.config.targets[t].target)}` }] : [];
      }),
      ...(externalDependency ? [{ externalDependencies: ['tensortune'] }] : []),
    ];
    // tune's output: a file of its own per configuration (target, budget), never the store's logs.
    const tuneOutput = `{workspaceRoot}/${rel(tuneOutputFile(store, network, '{options.configTarget}', budget ? '{options.budget}' : undefined))}`;
    // compile's records: the best per workload of the store and of the restored tune outputs,
    // for the workloads this network's tune outputs mention (see `tensortune best-digest`).
    const bestDigest = `${ctx.cliCommand} best-digest ${quote(storeRel)} ${quote(`${outputsRel}/${network}`)} --keys-from ${quote(`${outputsRel}/${network}`)} ` +
      targetStrings.map((t) => `--target ${quote(t)}`).join(' ');
    // ...and which budgets have tuned the network: compile's note on the others depends on it.
    const tunedOutputs = `${ctx.cliCommand} best-digest ${quote(`${outputsRel}/${network}`)} --files`;
    const what = `${net.model}${net.imageSize ? ` ${net.imageSize}x${net.imageSize}` : ''}, batch ${net.batch ?? 1}, ${net.layout ?? 'NHWC'}`;
    const help = (cmd: string, example: Record<string, unknown>) => ({
      command: `npx tensortune ${cmd} --help`,
      example: { options: example },
    });
    const projectTargets: Record<string, TargetConfiguration> = {
      [tune]: {
        executor: 'tensortune:tune',
        options: { ...base, ...(budget ? { budget } : {}) },
        configurations: configurationsFor(loaded, network, true),
        cache: true,
        inputs: shared,
        outputs: [tuneOutput],
        parallelism: false,
        metadata: {
          description: `Tune ${network} (${what}) for one target: search schedules per task and append measurements to the store ${storeRel}/${network}.<target>.jsonl ` +
            `(append-only). Resumes from the store; its cached output is ${outputsRel}/${network}/<target>.<budget>.jsonl. -c <budget> / -c <target> / -c <target>-<budget>.`,
          technologies: ['tensortune'],
          help: help('tune', { budget: budget ?? 'tiny' }),
        },
      },
      [compile]: {
        executor: 'tensortune:compile',
        options: base,
        configurations: configurationsFor(loaded, network, false),
        dependsOn: [tune],
        cache: true,
        inputs: [...shared, { dependentTasksOutputFiles: '**/*.jsonl', transitive: false }, { runtime: bestDigest }, { runtime: tunedOutputs }],
        outputs: [`{workspaceRoot}/${outRel}/${network}/{options.configTarget}`],
        metadata: {
          description: `Compile ${network} with the best record of each task in the store ${storeRel}, whichever budget or machine tuned it (defaults where none), into ${outRel}/${network}/<target>/ (model.so, params.bin, manifest.json). --watch recompiles on changes, never re-tunes.`,
          technologies: ['tensortune'],
          help: help('compile', { watch: true }),
        },
      },
      [benchmark]: {
        executor: 'tensortune:benchmark',
        options: base,
        configurations: configurationsFor(loaded, network, false),
        dependsOn: [compile],
        cache: false,
        // The config file: an edit of it makes the project affected (affected.ts).
        inputs: benchmarkInputs(configRel, loaded.base ? rel(loaded.base) : undefined),
        parallelism: false,
        outputs: [`{workspaceRoot}/${outRel}/${network}/reports`],
        metadata: {
          description: `Time the compiled ${network} on this machine (mean / median / max / min / std) and write ${outRel}/${network}/reports/<target>.json and .html (the latest run, with a warning for each reason not to trust it) and <target>.history.jsonl (every run). Never cached: it measures this machine now.`,
          technologies: ['tensortune'],
          help: help('benchmark', { repeat: 10 }),
        },
      },
    };
    const plan = ctx.shardPlans?.get(network);
    if (plan) {
      const shardTargets = shardedTuneTargets(loaded, ctx, plan, { tune, base: { ...base, ...(budget ? { budget } : {}) }, store, shared, rel });
      Object.assign(projectTargets, shardTargets.shards);
      projectTargets[tune] = { ...projectTargets[tune], ...shardTargets.merge, metadata: { ...projectTargets[tune].metadata, ...shardTargets.merge.metadata } };
    }
    return {
      name: network,
      root: projectRootOf(loaded, ctx.workspaceRoot, network),
      projectType: 'application',
      tags: ['tensortune'],
      metadata: {
        description: `${network}: ${what}, tuned and compiled by tensortune from ${configRel}`,
        targetGroups: { tensortune: [tune, ...(plan ? plan.shards.map((s) => shardTargetName(tune, s.index)) : []), compile, benchmark] },
      },
      targets: projectTargets,
    };
  });
}

/** `tune--<k>`: the Nx target of shard k of a network (named after the tune target). */
export const shardTargetName = (tune: string, shard: number): string => `${tune}--${shard}`;

type Input = NonNullable<TargetConfiguration['inputs']>[number];

/**
 * The targets of a sharded network: one per shard, and what changes in its tune target
 * (which then merges). A shard's options and outputs name its index only: Nx hashes every
 * target of a project with each of its tasks, so what differs between shards and changes
 * with the model (its workload keys) is an input of that shard alone, a runtime input that
 * prints its digest.
 */
function shardedTuneTargets(
  loaded: LoadedConfig, ctx: InferenceContext, plan: NetworkShardPlan,
  at: { tune: string; base: Record<string, string>; store: string; shared: Input[]; rel: (abs: string) => string },
): { shards: Record<string, TargetConfiguration>; merge: Partial<TargetConfiguration> } {
  const { tune, base, shared, rel } = at;
  const network = plan.network;
  const budget = defaultBudgetName(loaded);
  const split = budgetsSplitByShare(loaded);
  const version = ctx.engineVersion ?? '0';
  // The model file is no input of a shard (its digest stands for the tasks it holds); the fingerprint and the package are.
  const inputs = shared.filter((i) => typeof i !== 'string');
  const shards: Record<string, TargetConfiguration> = {};
  for (const s of plan.shards) {
    const output = `{workspaceRoot}/${rel(shardOutputFile(at.store, network, '{options.configTarget}', budget ? '{options.budget}' : undefined, s.index))}`;
    const what = s.tasks.length === 0 ? 'no task (nothing to tune)' : `${s.tasks.length} task(s), ${(100 * s.share).toFixed(1)}% of the estimated cost: ${s.tasks.map((t) => t.desc).join('; ')}`;
    shards[shardTargetName(tune, s.index)] = {
      executor: 'tensortune:tune',
      options: { ...base, shard: s.index },
      configurations: configurationsFor(loaded, network, true),
      cache: true,
      inputs: [...inputs, { runtime: `echo tensortune-shard ${shardDigest(s, version, split)}` }],
      outputs: [output],
      parallelism: false,
      metadata: {
        description: `Tune shard ${s.index} of ${plan.count} of ${network}: ${what}. Appends to the store like tune; its cached output is its own file.`,
        technologies: ['tensortune'],
      },
    };
  }
  // tune: after its shards and the other networks' shards that tune its shared workloads.
  const dependsOn = [
    ...plan.shards.map((s) => ({ target: shardTargetName(tune, s.index), params: 'forward' as const })),
    ...[...new Map(plan.borrowed.map((b) => [`${b.network}:${b.shard}`, b])).values()]
      .map((b) => ({ target: shardTargetName(tune, b.shard), projects: [b.network], params: 'forward' as const })),
  ];
  const borrowed = plan.borrowed.length > 0 ? ` (${plan.borrowed.length} shared task(s) are tuned by ${[...new Set(plan.borrowed.map((b) => b.network))].join(', ')})` : '';
  return {
    shards,
    merge: {
      dependsOn,
      inputs: [...shared, { dependentTasksOutputFiles: '**/*.jsonl', transitive: false }],
      parallelism: true,
      metadata: {
        description: `Merge the ${plan.count} shards of ${network} (${shardTargetName(tune, 0)} ... ${shardTargetName(tune, plan.count - 1)})${borrowed}: their measurements into the store, ` +
          'the best valid record per task into its cached output. Budget options are forwarded to the shards.',
        technologies: ['tensortune'],
      },
    },
  };
}

/** Projects for a config that does not load: the same target names, whose executors report the error. */
export function brokenProjects(
  names: readonly { name: string; root: string; shards?: number }[], configRel: string, message: string, opts: TensortunePluginOptions = {},
): InferredProject[] {
  const targetNames = executorTargetNames(opts);
  const executors = ['tune', 'compile', 'benchmark'];
  const broken = (executor: string, options: Record<string, unknown>): TargetConfiguration => ({
    executor: `tensortune:${executor}`, options, cache: false, metadata: { description: `Config error: ${message}`, technologies: ['tensortune'] },
  });
  return names.map(({ name, root, shards }) => {
    // A network with shards keeps its tune--<k> targets too (a CI job running one of them reports the error).
    const shardNames = Number.isInteger(shards) && shards! >= 1 && shards! <= 64 ? Array.from({ length: shards! }, (_, k) => shardTargetName(targetNames[0], k)) : [];
    return {
      name, root, projectType: 'application', tags: ['tensortune'],
      metadata: { description: `Config error: ${message}`, targetGroups: { tensortune: [...targetNames, ...shardNames] } },
      targets: Object.fromEntries([
        ...targetNames.map((t, i) => [t, broken(executors[i], { config: configRel, network: name })]),
        ...shardNames.map((t, k) => [t, broken('tune', { config: configRel, network: name, shard: k })]),
      ]),
    };
  });
}
