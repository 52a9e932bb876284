// The inferred Nx projects of one config file: one project per network, each with tune,
// compile and benchmark targets. Pure: config in, project configurations out (no I/O), so
// createNodes can cache it by content hash and the tests can read it directly.

import path from 'node:path';
import type { TargetConfiguration } from '@nx/devkit';
import { isModelFile, type LoadedConfig } from './config';
import { defaultBudgetName, defaultTargetName, networkTargets, outDir, projectRootOf, storeDir, toPosix } from './resolve';

export interface TensortunePluginOptions {
  tuneTargetName?: string;
  compileTargetName?: string;
  benchmarkTargetName?: string;
  /** Add `{ externalDependencies: ['tensortune'] }` to the inputs (default: when the workspace's package.json lists tensortune). */
  externalDependency?: boolean;
}

export interface InferenceContext {
  workspaceRoot: string;
  /** Workspace-relative command that prints the fingerprint (`tensortune fingerprint`) given target strings. */
  fingerprintCommand: string;
  /** Whether `tensortune` is an npm package of the workspace (lockfile entry). */
  externalDependency: boolean;
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

/** Nx configurations shared by the three targets, so `-c <name>` flows through dependsOn. */
function configurationsFor(loaded: LoadedConfig, network: string, budgetKey: boolean): Record<string, Record<string, string>> {
  const budgets = Object.keys(loaded.config.budgets ?? {});
  const targets = networkTargets(loaded, network);
  const out: Record<string, Record<string, string>> = {};
  for (const b of budgets) out[b] = budgetKey ? { budget: b } : {};
  for (const t of targets) out[t] = { target: t };
  for (const t of targets) {
    for (const b of budgets) {
      const name = `${t}-${b}`;
      if (!(name in out)) out[name] = budgetKey ? { target: t, budget: b } : { target: t };
    }
  }
  return out;
}

/** The Nx target names of the tune, compile and benchmark executors. */
const executorTargetNames = (opts: TensortunePluginOptions): [string, string, string] =>
  [opts.tuneTargetName ?? 'tune', opts.compileTargetName ?? 'compile', opts.benchmarkTargetName ?? 'benchmark'];

/** The projects of one config file. `configRel` is the file relative to the workspace root. */
export function inferProjects(loaded: LoadedConfig, ctx: InferenceContext, opts: TensortunePluginOptions = {}): InferredProject[] {
  const [tune, compile, benchmark] = executorTargetNames(opts);
  const rel = (abs: string): string => toPosix(path.relative(ctx.workspaceRoot, abs));
  const configRel = rel(loaded.file);
  const storeRel = rel(storeDir(loaded));
  const outRel = rel(outDir(loaded));
  const externalDependency = opts.externalDependency ?? ctx.externalDependency;
  const defaultTarget = defaultTargetName(loaded);
  const budget = defaultBudgetName(loaded);

  return Object.entries(loaded.config.networks).map(([network, net]) => {
    const targets = networkTargets(loaded, network);
    const targetStrings = targets.map((t) => loaded.config.targets[t].target);
    const target = targets.includes(defaultTarget) ? defaultTarget : targets[0];
    const base = { config: configRel, network, target };
    const modelInput = isModelFile(net.model) ? [`{workspaceRoot}/${rel(path.resolve(loaded.dir, net.model))}`] : [];
    const shared = [
      `{workspaceRoot}/${configRel}`,
      ...modelInput,
      { runtime: `${ctx.fingerprintCommand} ${targetStrings.map(quote).join(' ')}` },
      ...(externalDependency ? [{ externalDependencies: ['tensortune'] }] : []),
    ];
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
        outputs: [`{workspaceRoot}/${storeRel}/${network}.{options.target}.jsonl`],
        parallelism: false,
        metadata: {
          description: `Tune ${network} (${what}) for one target: search schedules per task and append measurements to ${storeRel}/${network}.<target>.jsonl. ` +
            'Resumes from that log and skips tasks other logs in the store already cover. -c <budget> / -c <target> / -c <target>-<budget>.',
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
        inputs: [...shared, { dependentTasksOutputFiles: '**/*.jsonl', transitive: false }],
        outputs: [`{workspaceRoot}/${outRel}/${network}/{options.target}`],
        metadata: {
          description: `Compile ${network} with the best tuned schedule of each task (defaults where none) into ${outRel}/${network}/<target>/ (model.so, params.bin, manifest.json). --watch recompiles on changes, never re-tunes.`,
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
        parallelism: false,
        outputs: [`{workspaceRoot}/${outRel}/${network}/reports`],
        metadata: {
          description: `Time the compiled ${network} on this machine (mean / median / max / min / std) and write ${outRel}/${network}/reports/<target>.json and .html. Never cached: it measures this machine now.`,
          technologies: ['tensortune'],
          help: help('benchmark', { repeat: 10 }),
        },
      },
    };
    return {
      name: network,
      root: projectRootOf(loaded, ctx.workspaceRoot, network),
      projectType: 'application',
      tags: ['tensortune'],
      metadata: {
        description: `${network}: ${what}, tuned and compiled by tensortune from ${configRel}`,
        targetGroups: { tensortune: [tune, compile, benchmark] },
      },
      targets: projectTargets,
    };
  });
}

/** Projects for a config that does not load: the same target names, whose executors report the error. */
export function brokenProjects(
  names: readonly { name: string; root: string }[], configRel: string, message: string, opts: TensortunePluginOptions = {},
): InferredProject[] {
  const targetNames = executorTargetNames(opts);
  const executors = ['tune', 'compile', 'benchmark'];
  return names.map(({ name, root }) => ({
    name, root, projectType: 'application', tags: ['tensortune'],
    metadata: { description: `Config error: ${message}`, targetGroups: { tensortune: targetNames } },
    targets: Object.fromEntries(targetNames.map((t, i) => [t, {
      executor: `tensortune:${executors[i]}`,
      options: { config: configRel, network: name },
      cache: false,
      metadata: { description: `Config error: ${message}`, technologies: ['tensortune'] },
    }])),
  }));
}
