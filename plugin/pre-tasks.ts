// preTasksExecution: before Nx runs (or restores from its cache) any task of a command,
// refuse what Nx itself would drop without a word for the tensortune targets the command
// names: a configuration they do not define (`nx tune mobilenet -c ful` runs the defaults
// otherwise, or replays them from the cache), --target in a form where Nx ignores it (it
// names the Nx target to run; the config's target is -c <name> or --config-target),
// `--batch N` and flags Nx's parser swallows (`--batch-size`), and, for `nx <target>
// <project>` and `nx run`, an option the target's executor does not take (so `nx benchmark
// x --trials-per-task 3` fails at once, not after tuning and compiling), and `--shard`, which
// the plugin sets on each `tune--<k>` target.

import path from 'node:path';
import { readCachedProjectGraph, type PreTasksExecution, type ProjectGraph, type TargetConfiguration } from '@nx/devkit';
import { UserError } from '../engine/errors';
import { camelOf, isExecutorName, optionProblem, userOptions, type ExecutorName } from '../executors/options';
import { loadConfig } from './config';
import { honoursTargetFlag, nxArguments, parseNxFlags, type NxFlags } from './nx-args';
import { resolveRun, toPosix } from './resolve';

/** A tensortune target the command names: its project, its name and its configuration in the graph. */
interface Named {
  project: string;
  target: string;
  executor: ExecutorName;
  config: TargetConfiguration;
}

/**
 * The tensortune targets the command names, and whether it names their projects: `nx tune`
 * without a project runs the one of the current folder, which only Nx knows, so every
 * project with that target is a candidate. (run-many without -p runs them all.)
 */
export function namedTargets(nx: NxFlags, graph: Pick<ProjectGraph, 'nodes'>): { named: Named[]; projectsNamed: boolean } {
  const [command, second] = nx.positionals;
  const many = honoursTargetFlag(command);
  let wanted: { project?: string; target: string }[];
  if (command === 'run') {
    const [project, target] = (second ?? '').split(':');
    wanted = target ? [{ project, target }] : [];
  } else if (many) {
    const exact = nx.projects.filter((p) => /^[\w.@/-]+$/.test(p) && graph.nodes[p]);
    const projects = exact.length > 0 && exact.length === nx.projects.length ? exact : [undefined];
    wanted = nx.targets.flatMap((target) => projects.map((project) => ({ project, target })));
  } else {
    wanted = command === undefined ? [] : [{ project: second ?? nx.projects[0], target: command }];
  }
  const named: Named[] = [];
  for (const w of wanted) {
    const nodes = w.project === undefined ? Object.values(graph.nodes) : [graph.nodes[w.project]].filter(Boolean);
    for (const node of nodes) {
      const config = node.data.targets?.[w.target];
      const [pkg, executor] = (config?.executor ?? '').split(':');
      if (config && pkg === 'tensortune' && isExecutorName(executor)) named.push({ project: node.name, target: w.target, executor, config });
    }
  }
  return { named, projectsNamed: command === 'run' || many || wanted.every((w) => w.project !== undefined) };
}

/** The config targets a target's configurations set (`-c <target>`). */
const configTargets = (config: TargetConfiguration): string[] =>
  [...new Set(Object.values(config.configurations ?? {}).map((c) => (c as { configTarget?: string }).configTarget).filter((t): t is string => !!t))];

/** One line for the first thing of the command that Nx would drop for a tensortune target, or nothing. */
export function checkNxCommand(nx: NxFlags, graph: Pick<ProjectGraph, 'nodes'>, modelDir?: (n: Named) => string | undefined): void {
  const { named, projectsNamed } = namedTargets(nx, graph);
  if (named.length === 0) return;
  const first = named[0];
  const options = first.config.options as { config?: string; network?: string; configTarget?: string } | undefined;
  const config = options?.config ?? 'the tensortune config';
  const prefix = `tensortune ${first.executor}`;
  if (nx.targets.length > 0 && !honoursTargetFlag(nx.positionals[0])) {
    const t = nx.targets[0];
    throw new UserError(`${prefix}: --target ${nx.targets.join(',')}: Nx takes --target for itself (the target to run) and ignores it here; ` +
      `choose a target of ${config} with -c ${t} or --config-target ${t} (${first.project}'s: ${configTargets(first.config).join(', ') || '(none)'})`);
  }
  if (nx.batch !== undefined) {
    throw new UserError(`${prefix}: --batch ${nx.batch}: Nx takes --batch for itself (its batch mode); the model's batch is networks.${options?.network ?? first.project}.batch in ${config}`);
  }
  if (nx.swallowed.length > 0) {
    const f = nx.swallowed[0];
    throw new UserError(`${prefix}: ${f}: Nx's parser takes it for one of its own flags and drops it` +
      `${/^--batch-?[sS]ize$/.test(f) ? '; candidates measured per round are --measures-per-round' : ''} (nx ${first.executor} takes: ${userOptions(first.executor).join(', ')})`);
  }
  const shardFlag = nx.overrides.find((f) => /^-+shard$/.test(f));
  if (shardFlag && named.some((n) => n.executor === 'tune')) {
    // The plugin sets it on each tune--<k> target; given here, Nx would hand it to every shard tune depends on.
    throw new UserError(`tensortune tune: ${shardFlag}: the plugin sets the shard of each tune--<k> target; run one shard with \`nx run ${first.project}:tune--<k>\`, or all of them with \`nx run-many -t tune--<k>\``);
  }
  const c = nx.configuration;
  if (c !== undefined) {
    const defines = (n: Named): boolean => Object.hasOwn(n.config.configurations ?? {}, c);
    // Projects named: each must define it. Else (nx tune -c x in a project's folder): one of them must.
    const lacking = projectsNamed ? named.find((n) => !defines(n)) : named.some(defines) ? undefined : first;
    if (lacking) {
      const defined = Object.keys(lacking.config.configurations ?? {});
      throw new UserError(`tensortune ${lacking.executor}: -c ${c}: ${lacking.project}:${lacking.target} has no configuration '${c}' ` +
        `(expected one of: ${defined.join(', ') || '(none)'}: the targets and budgets of ${config}, and <target>-<budget>)`);
    }
  }
  if (!honoursTargetFlag(nx.positionals[0]) && nx.overrides.length > 0) {
    for (const n of named) {
      const o = n.config.options as { network?: string; configTarget?: string } | undefined;
      const at = { config, network: o?.network ?? n.project, configTarget: o?.configTarget ?? '<target>' };
      for (const flag of nx.overrides) {
        const key = camelOf(flag.replace(/^-+(no-)?/, ''));
        // The model folder (which loads the config) only for the message of a refused option.
        if (optionProblem(n.executor, key, at)) throw new UserError(`tensortune ${n.executor}: ${optionProblem(n.executor, key, { ...at, modelDir: modelDir?.(n) })}`);
      }
    }
  }
}

/** The plugin hook: the nx command line is context.argv; without a cached project graph nothing is checked. */
export const preTasksExecution: PreTasksExecution = (_options, context) => {
  const args = nxArguments(context.argv);
  if (!args) return;
  const nx = parseNxFlags(args);
  let graph: ProjectGraph;
  try {
    graph = readCachedProjectGraph();
  } catch {
    return;
  }
  // For messages: the compiled model folder of a named target, from its config.
  const modelDir = (n: Named): string | undefined => {
    const o = n.config.options as { config?: string; network?: string; configTarget?: string } | undefined;
    try {
      const run = resolveRun(loadConfig(o?.config ?? '', context.workspaceRoot), context.workspaceRoot, o?.network ?? n.project, o?.configTarget);
      return toPosix(path.relative(context.workspaceRoot, run.modelDir));
    } catch {
      return undefined;
    }
  };
  try {
    checkNxCommand(nx, graph, modelDir);
  } catch (e) {
    // Nx prints the message as is; without a stack it does not add 'Pass --verbose to see the stacktrace'.
    (e as Error).stack = undefined;
    throw e;
  }
};
