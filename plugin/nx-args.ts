// What Nx takes from its command line for itself. Nx's run commands parse their own flags
// (-c/--configuration, --target/-t, --batch, ...: nx/src/command-line/yargs-utils/
// shared-options.js) and hand the rest to the executors as options; a configuration the
// target does not define is dropped, and so is --target where Nx does not read it, so the
// task runs the defaults without a word. The plugin's preTasksExecution (pre-tasks.ts)
// gets the nx command line (context.argv) and parses it here to refuse those.

import path from 'node:path';

/**
 * The options Nx's run commands (`nx <target> <project>`, `nx run`) parse for themselves,
 * aliases included (nx 24's shared-options.js; nx-args.test.ts checks this list against
 * the installed Nx). An executor never sees them, and yargs also takes any
 * `--<one of them>-<more>` for that option (`--batch-size 4` sets batchSize) and drops it:
 * no executor option may be named so.
 */
export const NX_RUN_OPTIONS: readonly string[] = [
  'configuration', 'c', 'project', 'p', 'target', 't', 'batch', 'verbose', 'version', 'prod', 'graph', 'exclude', 'parallel', 'max-parallel',
  'runner', 'output-style', 'tui', 'tui-auto-exit', 'nx-bail', 'nx-ignore-cycles', 'skip-nx-cache', 'disable-nx-cache', 'skip-remote-cache',
  'disable-remote-cache', 'exclude-task-dependencies', 'skip-sync', 'cloud', 'dte', 'use-agents', 'agents',
];

/** What `nx run-many` and `nx affected` parse besides. */
const NX_MANY_OPTIONS: readonly string[] = ['targets', 'projects', 'all', 'files', 'uncommitted', 'untracked', 'base', 'head', 'stdin', 'explain', 'help'];

/** Nx options that take the next argument as their value (when not given as --name=value). */
const VALUE_OPTIONS = new Set(['configuration', 'c', 'project', 'p', 'projects', 'target', 't', 'targets', 'runner', 'exclude', 'output-style',
  'tui-auto-exit', 'max-parallel', 'files', 'base', 'head']);

/** The arguments after `nx` of an nx command line (`node .../nx.js tune x -c full`), else undefined. */
export function nxArguments(argv: readonly string[]): string[] | undefined {
  const i = argv.findIndex((a, k) => k < 3 && /^nx(\.js)?$/.test(path.basename(a)));
  return i < 0 ? undefined : argv.slice(i + 1);
}

export interface NxFlags {
  /** Positional arguments: the Nx command (`run`, `run-many`, `affected`, or a target for `nx <target> <project>`) and what follows it. */
  positionals: string[];
  /** The configuration asked for: -c/--configuration, --prod, or `nx run project:target:configuration`. */
  configuration?: string;
  /** The values of --target/--targets/-t (Nx honours them in run-many and affected only). */
  targets: string[];
  /** The values of -p/--projects/--project. */
  projects: string[];
  /** `--batch N`: Nx's own boolean flag, which leaves N behind as an argument. */
  batch?: string;
  /** Flags that Nx's parser takes for one of its own and drops: `--batch-size` (a --batch), `--target-x`, ... */
  swallowed: string[];
  /** The other flags, as typed without their value: Nx passes them to the tasks it was asked for as options. */
  overrides: string[];
}

/** `--skipNxCache`, `--no-tui` -> `skip-nx-cache`, `tui`. */
const optionName = (flag: string): string => flag.replace(/^-+/, '').replace(/^no-/, '').replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** The flags this module cares about, from the arguments after `nx` (up to `--`). */
export function parseNxFlags(args: readonly string[]): NxFlags {
  const flags: NxFlags = { positionals: [], targets: [], projects: [], swallowed: [], overrides: [] };
  const end = args.indexOf('--');
  const a = end < 0 ? [...args] : args.slice(0, end);
  const list = (v: string | undefined): string[] => (v ?? '').split(',').filter(Boolean);
  for (let i = 0; i < a.length; i++) {
    const arg = a[i];
    if (!arg.startsWith('-') || arg === '-') {
      flags.positionals.push(arg);
      continue;
    }
    const eq = /^(-{1,2}[^=]+)=(.*)$/.exec(arg);
    const [flag, inline] = eq ? [eq[1], eq[2]] : [arg, undefined];
    const name = optionName(flag);
    const value = (): string | undefined => inline ?? (i + 1 < a.length ? a[++i] : undefined);
    if (name === 'c' || name === 'configuration') flags.configuration = value();
    else if (name === 'prod') flags.configuration = 'production';
    else if (name === 't' || name === 'target' || name === 'targets') flags.targets.push(...list(value()));
    else if (name === 'p' || name === 'project' || name === 'projects') flags.projects.push(...list(value()));
    else if (name === 'batch' && inline === undefined && /^\d+$/.test(a[i + 1] ?? '')) flags.batch = a[++i];
    else if (NX_RUN_OPTIONS.includes(name) || NX_MANY_OPTIONS.includes(name)) {
      if (VALUE_OPTIONS.has(name) && inline === undefined) i++;
    } else if (NX_RUN_OPTIONS.some((o) => name.startsWith(`${o}-`))) {
      flags.swallowed.push(flag);
    } else {
      flags.overrides.push(flag);
      if (inline === undefined && i + 1 < a.length && !a[i + 1].startsWith('-')) i++;
    }
  }
  // nx run project:target:configuration (an explicit -c wins, as in Nx)
  const spec = flags.positionals[0] === 'run' ? flags.positionals[1]?.split(':') : undefined;
  if (spec && spec.length >= 3 && spec[2]) flags.configuration ??= spec[2];
  return flags;
}

/** Whether Nx reads --target/-t in this command (else it ignores it: the infix form, `nx run`). */
export const honoursTargetFlag = (command: string | undefined): boolean => command === 'run-many' || command?.startsWith('affected') === true;
