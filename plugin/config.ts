// The workspace configuration (tensortune.config.{yaml,yml,json}, .tensortunerc*): read as
// a regular file of at most MAX_CONFIG_BYTES (a FIFO or a device in its place is refused,
// not read), parsed as JSON (.json) or YAML (the rest, as cosmiconfig reads these names)
// with YAML aliases capped (an alias bomb expands a few hundred bytes into gigabytes),
// validated by schemas/config.schema.json (ajv), then checked for what a schema cannot say
// (names that refer to other entries, target strings, model files that must be regular
// files, folders that must stay inside the workspace). Every mistake is one ConfigError
// naming the file, the JSON path and what was expected. Used by createNodes (graph time)
// and by the executors (run time).
// Written here rather than with cosmiconfig: cosmiconfig reads whatever sits at a config
// path in one fs.readFile, so a FIFO there blocks it and a huge file is read whole before
// anything can refuse it; the lookup itself is a fixed list of names in one folder.

import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import Ajv, { type ErrorObject } from 'ajv';
import { parse as parseYaml } from 'yaml';
import { UserError } from '../engine/errors';
import { formatBytes, kindOf, MiB, modelLimit, readRegularFileSync } from '../engine/regular-file';
import { NETWORK_NAMES, networkSuggestion } from '../engine/frontend/networks';
import { parseTarget, withHardwareParams, type GpuParams } from '../engine/target';
import schema from '../schemas/config.schema.json';

export const CONFIG_FILE_NAMES = [
  'tensortune.config.yaml', 'tensortune.config.yml', 'tensortune.config.json',
  '.tensortunerc', '.tensortunerc.yaml', '.tensortunerc.yml', '.tensortunerc.json',
] as const;

export interface NetworkConfig {
  model: string;
  root?: string;
  batch?: number;
  layout?: 'NHWC' | 'NCHW';
  dtype?: 'float32';
  imageSize?: number;
  inputs?: Record<string, number[]>;
  targets?: string[];
  /** Tune in this many `tune--<k>` Nx targets (plugin/shards.ts); default one `tune` target. */
  shards?: number;
  /** The most memory the compiled model may need to run (`16GiB`); default 4 GiB (engine/compile/memory-plan.ts). */
  maxMemory?: string;
}

export interface TargetConfig {
  /** The target string; once validated, with hardwareParams appended as its options (withHardwareParams). */
  target: string;
  /** GPU targets: the host target string (default llvm, this machine). */
  host?: string;
  /** GPU targets: hardware parameter overrides, also in `target` once validated. */
  hardwareParams?: Partial<GpuParams>;
  /** A command template that runs a command on the measuring device ("ssh board {command}"). */
  runner?: string;
  /** A pool of such devices, of one kind, measuring in parallel (instead of `runner`). */
  runners?: string[];
  threads?: number;
}

/** The runner templates of a target (`runner` or `runners`), with where they came from; none: measured here. */
export function targetRunners(t: TargetConfig, name: string): { runners: string[]; where: string } | undefined {
  if (t.runners !== undefined) return { runners: t.runners, where: `targets.${name}.runners` };
  if (t.runner !== undefined) return { runners: [t.runner], where: `targets.${name}.runner` };
  return undefined;
}

export interface BudgetConfig {
  trials?: number;
  trialsPerTask?: number;
  earlyStopping?: number;
  timeLimit?: number;
  /** Schedules per task the confirmation pass at the end of a tune times again (tune --confirm). */
  confirm?: number;
  /** The network pass after the confirmation pass (tune --network-pass; default false). */
  networkPass?: boolean;
  /** Candidates measured per round (batchSize: its former name). */
  measuresPerRound?: number;
  batchSize?: number;
  /** Candidates in each task's first round (tune --warmup-trials; default 16, at most a round). */
  warmupTrials?: number;
  policy?: 'evolutionary' | 'ga' | 'random' | 'grid';
  seed?: number;
  /** timeout in seconds (timeoutMs: its former spelling, in milliseconds). */
  measure?: { number?: number; repeat?: number; minRepeatMs?: number; timeout?: number; timeoutMs?: number; flush?: boolean; buildJobs?: number };
}

export interface TensortuneConfig {
  /** Another config file (relative to this one) whose targets, budgets, defaults and folders this one takes. */
  extends?: string;
  records?: string;
  outDir?: string;
  defaults?: { target?: string; budget?: string };
  networks: Record<string, NetworkConfig>;
  targets: Record<string, TargetConfig>;
  budgets?: Record<string, BudgetConfig>;
}

export interface LoadedConfig {
  /** Absolute path of the config file. */
  file: string;
  /** Its directory: relative paths in the config are relative to it. */
  dir: string;
  /** The config as validated: with `extends`, the other file's settings merged in (its paths made relative to `dir`). */
  config: TensortuneConfig;
  /** Absolute path of the file named by `extends`, if any: an input of every network of this file. */
  base?: string;
  /**
   * Networks whose model file cannot be used (missing, not a regular file, too large), with
   * the error: each is refused when run (resolveRun), and the file's other networks work.
   */
  modelProblems?: ReadonlyMap<string, ConfigError>;
}

/** A mistake in a config file; the message names the file and the JSON path. */
export class ConfigError extends UserError {
  constructor(readonly file: string, readonly jsonPath: string, readonly expected: string) {
    super(`${file}: ${jsonPath ? `${jsonPath}: ` : ''}${expected}`);
    this.name = 'ConfigError';
  }
}

/** `/networks/mobilenet/batch` -> `networks.mobilenet.batch` (keys with dots are quoted). */
function dottedPath(pointer: string): string {
  if (!pointer) return '';
  return pointer.split('/').slice(1)
    .map((seg) => seg.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((seg, i) => (/^\d+$/.test(seg) ? `[${seg}]` : /^[A-Za-z0-9_$-]+$/.test(seg) ? `${i ? '.' : ''}${seg}` : `[${JSON.stringify(seg)}]`))
    .join('');
}

const show = (v: unknown): string => (typeof v === 'string' ? JSON.stringify(v) : v === undefined ? 'nothing' : JSON.stringify(v) ?? String(v));

/** One ajv error -> [JSON path, what was expected]. */
function describe(err: ErrorObject): [string, string] {
  const where = dottedPath(err.instancePath);
  const p = err.params as Record<string, unknown>;
  const got = `, got ${show(err.data)}`;
  switch (err.keyword) {
    case 'required':
      return [where, `missing required property '${String(p.missingProperty)}'`];
    case 'additionalProperties': {
      const allowed = Object.keys((err.parentSchema?.properties ?? {}) as object);
      return [dottedPath(`${err.instancePath}/${String(p.additionalProperty)}`),
        `unknown property${allowed.length ? ` (expected one of: ${allowed.join(', ')})` : ''}`];
    }
    case 'propertyNames':
      return [where, `bad name ${show(p.propertyName)}`];
    case 'pattern':
      return [where, `expected a name matching ${String(p.pattern)}${got}`];
    case 'type':
      return [where, `expected ${String(p.type) === 'integer' ? 'an integer' : `a ${String(p.type)}`}${got}`];
    case 'enum':
      return [where, `expected one of ${(p.allowedValues as unknown[]).map(show).join(', ')}${got}`];
    case 'minimum': case 'maximum': case 'exclusiveMinimum': case 'exclusiveMaximum': {
      const op = { minimum: '>=', maximum: '<=', exclusiveMinimum: '>', exclusiveMaximum: '<' }[err.keyword];
      return [where, `expected a number ${op} ${String(p.limit)}${got}`];
    }
    case 'minProperties':
      return [where, `expected at least ${String(p.limit)} entr${p.limit === 1 ? 'y' : 'ies'}`];
    case 'minLength':
      return [where, 'expected a non-empty string'];
    case 'minItems':
      return [where, `expected at least ${String(p.limit)} item(s)`];
    case 'uniqueItems':
      return [where, 'expected no duplicate items'];
    default:
      return [where, `${err.message ?? 'invalid'}${got}`];
  }
}

let validator: ReturnType<Ajv['compile']> | undefined;

/**
 * Why the model file `file` (a config's `model`) cannot be used, or undefined when it can:
 * it must be a regular file (links followed) of at most the model size limit, as the
 * importer reads it. Checked when the config loads, so that a FIFO or a link to a device
 * is one error of its network and never an input that Nx's hasher (or the importer) reads.
 */
function modelFileProblem(file: string, shown: string, label: string): string | undefined {
  let stat;
  try {
    stat = statSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? `model file ${shown} not found (relative to ${label})` : `model file ${shown} cannot be read (${code ?? (e as Error).message})`;
  }
  if (!stat.isFile()) return `model file ${shown} is ${kindOf(stat)}, expected a regular .onnx file`;
  const { maxBytes, raise } = modelLimit();
  if (stat.size > maxBytes) return `model file ${shown} has ${formatBytes(stat.size)}, more than the limit of ${formatBytes(maxBytes)}; ${raise}`;
  return undefined;
}

/** Where records and compiled models go when a config does not say (relative to the config file). */
export const DEFAULT_RECORDS_DIR = '.tensortune/records';
export const DEFAULT_OUT_DIR = 'dist/tensortune';

/** The folder fields of a config (relative to its file), which must name folders inside the workspace. */
const FOLDER_FIELDS = ['records', 'outDir'] as const;

/** Whether `p` is `root` or below it, by the paths' text (`..` segments resolved). */
export function insideFolder(p: string, root: string): boolean {
  const rel = path.relative(path.resolve(root), path.resolve(p));
  return rel === '' || (!path.isAbsolute(rel) && rel.split(path.sep)[0] !== '..');
}

/**
 * Schema validation plus the cross-checks a schema cannot express. `label` names the file
 * in messages; relative paths are relative to `dir`; `records` and `outDir` must stay inside
 * `workspaceRoot` (default `dir`): Nx caches nothing outside it, and a compile must not
 * write at a folder like `/` before Nx refuses the output. With `modelProblems`, a network
 * whose model file cannot be used is entered there instead of thrown.
 */
export function validateConfig(raw: unknown, label: string, dir: string, workspaceRoot = dir, modelProblems?: Map<string, ConfigError>): TensortuneConfig {
  validator ??= new Ajv({ allErrors: false, verbose: true, strict: false }).compile(schema);
  if (raw === null || raw === undefined) throw new ConfigError(label, '', 'the file is empty (expected networks and targets)');
  if (!validator(raw)) {
    // Errors inside propertyNames come with a sibling 'propertyNames' error; report the first.
    const [where, expected] = describe(validator.errors![0]);
    throw new ConfigError(label, where, expected);
  }
  // Targets are required of a file that extends none (an extending file has them merged in
  // before it is validated); networks are not: a file of targets and budgets alone is what
  // per-project files extend.
  if ((raw as TensortuneConfig).targets === undefined) {
    throw new ConfigError(label, '', (raw as TensortuneConfig).extends === undefined ? "missing required property 'targets'" : `missing required property 'targets' (neither here nor in ${(raw as TensortuneConfig).extends})`);
  }
  // A copy of targets: validation writes each target's effective string into it, not into `raw`.
  const config = { ...(raw as TensortuneConfig), targets: { ...(raw as TensortuneConfig).targets }, networks: (raw as TensortuneConfig).networks ?? {} };
  const targetNames = Object.keys(config.targets);
  const budgetNames = Object.keys(config.budgets ?? {});
  const oneOf = (names: string[]): string => names.join(', ') || '(none defined)';
  if (config.defaults?.target !== undefined && !targetNames.includes(config.defaults.target)) {
    throw new ConfigError(label, 'defaults.target', `unknown target ${show(config.defaults.target)} (expected one of: ${oneOf(targetNames)})`);
  }
  if (config.defaults?.budget !== undefined && !budgetNames.includes(config.defaults.budget)) {
    throw new ConfigError(label, 'defaults.budget', `unknown budget ${show(config.defaults.budget)} (expected one of: ${oneOf(budgetNames)})`);
  }
  for (const [name, b] of Object.entries(config.budgets ?? {})) {
    if (b.measuresPerRound !== undefined && b.batchSize !== undefined) {
      throw new ConfigError(label, `budgets.${name}.batchSize`, 'is the former name of measuresPerRound; give one of them');
    }
    if (b.measure?.timeout !== undefined && b.measure.timeoutMs !== undefined) {
      throw new ConfigError(label, `budgets.${name}.measure.timeoutMs`, 'is the former spelling of timeout (seconds); give one of them');
    }
  }
  for (const field of FOLDER_FIELDS) {
    const value = config[field];
    if (value !== undefined && !insideFolder(path.resolve(dir, value), workspaceRoot)) {
      throw new ConfigError(label, field, `expected a folder inside the workspace ${workspaceRoot}, got ${show(value)} (${path.resolve(dir, value)})`);
    }
  }
  const clash = budgetNames.find((b) => targetNames.includes(b));
  if (clash) throw new ConfigError(label, `budgets.${clash}`, `'${clash}' is also a target name; budgets and targets name Nx configurations, so they must differ`);
  for (const [name, t] of Object.entries(config.targets)) {
    try {
      // The target as the engine gets it: hardwareParams become options of the string, as
      // on the command line, so one target has one text (records and Nx's cache key by it).
      const target = withHardwareParams(t.target, t.hardwareParams, `targets.${name}.hardwareParams`);
      parseTarget(target, `targets.${name}.target`, t.host);
      if (target !== t.target) config.targets[name] = { ...t, target };
    } catch (e) {
      if (e instanceof UserError) throw new ConfigError(label, '', e.message);
      throw e;
    }
    if (t.runner !== undefined && !t.runner.includes('{command}')) {
      throw new ConfigError(label, `targets.${name}.runner`, `expected a command template containing {command}, got ${show(t.runner)}`);
    }
    if (t.runner !== undefined && t.runners !== undefined) {
      throw new ConfigError(label, `targets.${name}.runners`, 'give runner (one device) or runners (a pool), not both');
    }
    for (const [i, r] of (t.runners ?? []).entries()) {
      if (!r.includes('{command}')) throw new ConfigError(label, `targets.${name}.runners[${i}]`, `expected a command template containing {command}, got ${show(r)}`);
    }
  }
  for (const [name, n] of Object.entries(config.networks)) {
    const at = `networks.${name}`;
    for (const [i, t] of (n.targets ?? []).entries()) {
      if (!targetNames.includes(t)) throw new ConfigError(label, `${at}.targets[${i}]`, `unknown target ${show(t)} (expected one of: ${oneOf(targetNames)})`);
    }
    if (isModelFile(n.model)) {
      if (!/\.onnx$/i.test(n.model)) throw new ConfigError(label, `${at}.model`, `expected an .onnx file or a builtin network name, got ${show(n.model)}`);
      const problem = modelFileProblem(path.resolve(dir, n.model), show(n.model), label);
      if (problem && !modelProblems) throw new ConfigError(label, `${at}.model`, problem);
      if (problem) modelProblems!.set(name, new ConfigError(label, `${at}.model`, problem));
      if (n.imageSize !== undefined) throw new ConfigError(label, `${at}.imageSize`, 'applies to builtin networks only (a model file fixes its input size; use inputs)');
    } else {
      if (!NETWORK_NAMES.includes(n.model)) {
        throw new ConfigError(label, `${at}.model`, `unknown builtin network ${show(n.model)} (expected a path to an .onnx file or one of: ${NETWORK_NAMES.join(', ')})${networkSuggestion(n.model)}`);
      }
      if (n.inputs !== undefined) throw new ConfigError(label, `${at}.inputs`, 'applies to model files only (builtin networks fix their input; use imageSize and batch)');
    }
  }
  return config;
}

/** A model reference that names a file rather than a builtin network. */
export function isModelFile(model: string): boolean {
  return /[\\/]/.test(model) || /\.onnx$/i.test(model);
}

/** How messages name a config file: relative to the workspace root (its base name when it is the root). */
export const configLabel = (file: string, workspaceRoot: string): string => path.relative(workspaceRoot, file) || path.basename(file);

/** The largest config file read: a config is a few kilobytes; anything near this is not one. */
export const MAX_CONFIG_BYTES = 1 * MiB;

/**
 * The most YAML alias uses a config may make (the yaml library's count, which grows with
 * the size of what each alias stands for): enough for any config that shares a list or a
 * budget by anchor, far too few for an alias bomb, which is refused before it expands.
 */
const MAX_ALIAS_COUNT = 100;

/** What readConfigFile read: the file, its label in messages, its parsed content and the workspace root. */
export interface ConfigFile {
  abs: string;
  label: string;
  raw: unknown;
  /** The folder that records and outDir must stay inside. */
  workspaceRoot: string;
  /** The file named by `extends`, read. */
  base?: ConfigFile;
}

/** The config file's parsed content (not validated); a file that is not a regular file, too large, or does not parse is a ConfigError. */
export function readConfigFile(file: string, workspaceRoot = process.cwd()): ConfigFile {
  const abs = path.resolve(workspaceRoot, file);
  const label = configLabel(abs, workspaceRoot);
  if (!existsSync(abs)) throw new ConfigError(label, '', 'file not found');
  let text: string;
  try {
    text = readRegularFileSync(abs, { what: 'the config file', maxBytes: MAX_CONFIG_BYTES }).toString('utf8');
  } catch (e) {
    const message = e instanceof UserError ? e.message.replace(`the config file ${abs}`, 'the file') : `cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`;
    throw new ConfigError(label, '', message);
  }
  if (text.trim() === '') return { abs, label, raw: undefined, workspaceRoot };
  let raw: unknown;
  try {
    raw = /\.json$/i.test(abs) ? JSON.parse(text) : parseYaml(text, { maxAliasCount: MAX_ALIAS_COUNT });
  } catch (e) {
    const message = (e as Error).message;
    if (/Excessive alias count/.test(message)) {
      throw new ConfigError(label, '', `cannot be parsed: its YAML aliases expand to more than ${MAX_ALIAS_COUNT} copies (an alias bomb?); write the values out or share fewer`);
    }
    // The parser's first line (it says where); the code frame after it is left out.
    throw new ConfigError(label, '', `cannot be parsed: ${(message.split('\n').find((l) => l.trim()) ?? message).replace(/:\s*$/, '')}`);
  }
  const base = readBaseFile(raw, abs, label, workspaceRoot);
  return { abs, label, raw, workspaceRoot, ...(base ? { base } : {}) };
}

/**
 * The file a config's `extends` names, read (a value that is not a string is left to the
 * schema). It must be another file inside the workspace, and may not extend a third: one
 * level keeps what a network's settings come from to two files, and rules out cycles.
 */
function readBaseFile(raw: unknown, abs: string, label: string, workspaceRoot: string): ConfigFile | undefined {
  const ref = (raw as { extends?: unknown } | null)?.extends;
  if (typeof raw !== 'object' || raw === null || typeof ref !== 'string' || ref === '') return undefined;
  const baseAbs = path.resolve(path.dirname(abs), ref);
  if (!insideFolder(baseAbs, workspaceRoot)) throw new ConfigError(label, 'extends', `expected a config file inside the workspace ${workspaceRoot}, got ${show(ref)}`);
  if (baseAbs === abs) throw new ConfigError(label, 'extends', 'names this file itself; expected another config file');
  if (!existsSync(baseAbs)) throw new ConfigError(label, 'extends', `config file ${show(ref)} not found (relative to ${label})`);
  const base = readConfigFile(baseAbs, workspaceRoot);
  if ((base.raw as { extends?: unknown } | null)?.extends !== undefined) {
    throw new ConfigError(label, 'extends', `${base.label} extends another file itself; a config may extend one that extends none`);
  }
  return base;
}

/** Set fields only: ajv's additionalProperties must not see an inherited field that neither file has. */
const defined = <T extends object>(o: T): T => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

/**
 * `raw` with what it takes from the file it extends: targets, budgets and defaults entry by
 * entry (its own win), records and outDir (the base's, or the base's defaults, as paths
 * relative to `dir`, so that both files' networks share one store and one output folder).
 */
function withBase(raw: TensortuneConfig, dir: string, base: ConfigFile): TensortuneConfig {
  const b = (base.raw ?? {}) as TensortuneConfig;
  const folder = (p: string): string => path.relative(dir, path.resolve(path.dirname(base.abs), p)).split(path.sep).join('/') || '.';
  const merge = <T extends object>(x: T | undefined, y: T | undefined): T | undefined => (x || y ? { ...x, ...y } as T : undefined);
  return defined({
    ...raw,
    records: raw.records ?? folder(b.records ?? DEFAULT_RECORDS_DIR),
    outDir: raw.outDir ?? folder(b.outDir ?? DEFAULT_OUT_DIR),
    defaults: merge(b.defaults, raw.defaults),
    targets: merge(b.targets, raw.targets)!,
    budgets: merge(b.budgets, raw.budgets),
  });
}

/** Validate what readConfigFile read. */
export function validateConfigFile({ abs, label, raw, workspaceRoot, base }: ConfigFile): LoadedConfig {
  const dir = path.dirname(abs);
  const modelProblems = new Map<string, ConfigError>();
  // The extended file is checked on its own first, so its mistakes name it; its networks'
  // model files are its own projects' concern, not this file's.
  if (base) validateConfig(base.raw, base.label, path.dirname(base.abs), workspaceRoot, new Map());
  const merged = base && typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? withBase(raw as TensortuneConfig, dir, base) : raw;
  const config = validateConfig(merged, label, dir, workspaceRoot, modelProblems);
  return { file: abs, dir, config, ...(base ? { base: base.abs } : {}), ...(modelProblems.size > 0 ? { modelProblems } : {}) };
}

/** Load and validate a config file; every problem is a ConfigError (a network's model file problem: when that network is resolved). */
export function loadConfig(file: string, workspaceRoot = process.cwd()): LoadedConfig {
  return validateConfigFile(readConfigFile(file, workspaceRoot));
}
