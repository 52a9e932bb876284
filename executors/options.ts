// The options each executor takes (the properties of its schema.json) and what it says
// about any other: Nx hands an executor every --flag of the command line, declared in its
// schema or not, so one that is not declared would otherwise be dropped without a word.
// CLI flags that have no meaning under Nx say why and where the setting lives. Used by the
// executors (executors/run.ts) and, before any task runs, by the plugin's preTasksExecution.

import { UserError } from '../engine/errors';
import benchmarkSchema from './benchmark/schema.json';
import compileSchema from './compile/schema.json';
import tuneSchema from './tune/schema.json';

export type ExecutorName = 'tune' | 'compile' | 'benchmark';

const SCHEMAS: Record<ExecutorName, { properties: Record<string, unknown> }> = { tune: tuneSchema, compile: compileSchema, benchmark: benchmarkSchema };

/** Whether `name` is one of the executors (the part after `tensortune:` in a target's executor). */
export const isExecutorName = (name: string): name is ExecutorName => Object.hasOwn(SCHEMAS, name);

/** The options of an executor: the properties of its schema.json. */
export const executorOptions = (name: ExecutorName): string[] => Object.keys(SCHEMAS[name].properties);

/** `--trials-per-task` for trialsPerTask. */
export const flagOf = (key: string): string => `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
/** trialsPerTask for `trials-per-task`. */
export const camelOf = (key: string): string => key.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** The options a user gives, as flags (config, network, settings and a tune--<k> target's shard are the plugin's). */
export const userOptions = (name: ExecutorName): string[] => executorOptions(name).filter((k) => !['config', 'network', 'settings', 'shard'].includes(k)).map(flagOf);

/** Where a message points: the config file (as the user names it), the network, its config target and compiled model folder. */
export interface OptionsContext {
  config: string;
  network: string;
  configTarget: string;
  /** Workspace-relative. */
  modelDir?: string;
}

/** Why a flag of the tensortune CLI is refused under Nx (`key` camelCased), if it is one. */
function refusal(name: ExecutorName, key: string, at: OptionsContext): string | undefined {
  const f = flagOf(key);
  const net = `networks.${at.network}`;
  const modelDir = at.modelDir ?? `<outDir>/${at.network}/${at.configTarget}`;
  switch (key) {
    case 'target':
      return `'target' is 'configTarget' now (Nx owns --target, the target to run): choose a target of ${at.config} with -c <name> or --config-target <name>`;
    case 'host':
      return `--host: the host of target ${at.configTarget} is targets.${at.configTarget}.host in ${at.config} (GPU targets only; default llvm, this machine)`;
    case 'records': case 'readRecords': case 'tuningRecords':
      return `${f}: nx ${name} reads ${name === 'tune' ? 'and appends to ' : ''}the record store that ${at.config} names (records:); a log of your own is for the CLI, \`npx tensortune ${name} ...\``;
    case 'out': case 'output':
      return `${f}: nx ${name} writes under the outDir of ${at.config} (${modelDir})`;
    case 'layout': case 'batch': case 'imageSize': case 'inputShapes':
      return `${f}: the model is ${net} in ${at.config}; set ${key === 'inputShapes' ? 'batch and imageSize (or inputs, for a model file)' : key} there (records tuned for another shape do not apply)`;
    case 'batchSize':
      return `--batch-size is --measures-per-round now (candidates measured per round; the model's batch is ${net}.batch in ${at.config})`;
    case 'timeoutMs':
      return '--timeout-ms: give --timeout, in seconds';
    case 'json':
      return `--json: nx ${name} prints text${name === 'benchmark' ? ` and writes ${at.configTarget}.json under the reports folder` : ''}; --json is for the CLI, \`npx tensortune ${name} ...\``;
    case 'onnx': case 'rounds':
      return `${f}: nx benchmark --compare onnxruntime runs the model's own ONNX file in 5 rounds; for another, run \`npx tensortune benchmark ${modelDir} --compare onnxruntime ${f} ...\``;
    case 'cache':
      return `${f}: under nx, set TENSORTUNE_CACHE_DIR to move the object cache`;
    case 'maxMemory':
      return `${f}: under nx, the limit is ${net}.maxMemory in ${at.config} (e.g. maxMemory: 16GiB)`;
    default:
      return undefined;
  }
}

/** What is wrong with option `key` (as typed or camelCased) of executor `name`, or undefined when it takes it. */
export function optionProblem(name: ExecutorName, key: string, at: OptionsContext): string | undefined {
  if (executorOptions(name).includes(key)) return undefined;
  return refusal(name, camelOf(key), at) ??
    `unknown option ${key.startsWith('-') ? key : flagOf(key)} (nx ${name} takes: ${userOptions(name).join(', ')}, and -c <configuration>)`;
}

/** Refuses options the executor does not know, and positional arguments: one line naming the option and listing those it takes. */
export function checkOptions(name: ExecutorName, options: object, at: OptionsContext): void {
  const extra = (options as { _?: unknown[] })._;
  if (Array.isArray(extra) && extra.length > 0) {
    throw new UserError(`unexpected argument(s) ${extra.map((a) => `'${String(a)}'`).join(' ')}: nx ${name} <project> takes options only (--name value)`);
  }
  for (const key of Object.keys(options)) {
    const problem = key === '_' ? undefined : optionProblem(name, key, at);
    if (problem) throw new UserError(problem);
  }
}
