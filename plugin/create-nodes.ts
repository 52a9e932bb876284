// Nx 24 createNodes (batched): every tensortune config file in the workspace becomes one
// Nx project per network. Results are cached in Nx's workspace data directory by the
// config file's content, the plugin options, the plugin's version and a digest of the
// inference code (an upgraded or rebuilt plugin must not serve the old targets). A config that does not load never breaks the graph:
// its networks (from the raw file, or the last good load) keep their target names, the
// executors report the error when run, and a warning names the file and the field. A
// network whose model file cannot be used (missing, a FIFO, a link to a device) is such a
// network alone: the file's other networks are inferred as usual.

import { existsSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { createNodesFromFiles, logger, type CreateNodes, type CreateNodesResult } from '@nx/devkit';
// From the workspace's own nx, whose paths these are in every supported version (23, 24):
// @nx/devkit/internal is released in lockstep with nx and lacks workspaceDataDirectory before 24.
import { workspaceDataDirectory } from 'nx/src/utils/cache-directory';
import { PluginCache } from 'nx/src/utils/plugin-cache-utils';
import { readRegularFileSync, modelLimit } from '../engine/regular-file';
import { CONFIG_FILE_NAMES, ConfigError, isModelFile, MAX_CONFIG_BYTES, readConfigFile, validateConfigFile, type ConfigFile } from './config';
import { PACKAGE_ROOT, PLUGIN_VERSION } from './package-info';
import { projectRootOf, toPosix } from './resolve';
import { loadShardPlans, shardedNetworks } from './shards';
import { brokenProjects, inferProjects, type InferenceContext, type TensortunePluginOptions } from './targets';

export const CONFIG_GLOB = `**/{${CONFIG_FILE_NAMES.join(',')}}`;

/** The code that shapes the inferred targets (targets.ts, shards.ts and affected.ts, or their build), by content. */
const INFERENCE_CODE = createHash('sha256').update(readFileSync(require.resolve('./targets'))).update(readFileSync(require.resolve('./shards'))).update(readFileSync(require.resolve('./affected'))).digest('hex').slice(0, 16);

interface CacheEntry {
  result: CreateNodesResult;
  /** Networks of the last good load, for a file that later breaks. */
  names?: { name: string; root: string; shards?: number }[];
  /** False when a network's model file could not be used: re-inferred next time (the file may be fixed without the config changing). */
  cacheable?: boolean;
}

function workspaceDependsOnTensortune(workspaceRoot: string): boolean {
  try {
    const pkg = JSON.parse(readFileSync(path.join(workspaceRoot, 'package.json'), 'utf8')) as Record<string, Record<string, string> | string>;
    if (pkg.name === 'tensortune') return false;
    return ['dependencies', 'devDependencies', 'optionalDependencies']
      .some((k) => typeof pkg[k] === 'object' && 'tensortune' in (pkg[k] as Record<string, string>));
  } catch {
    return false;
  }
}

/** How Nx runs `tensortune` (fingerprint, best-digest) from the workspace root: this package's own bin. */
export function cliCommand(workspaceRoot: string): string {
  const bin = toPosix(path.relative(workspaceRoot, path.join(PACKAGE_ROOT, 'bin', 'tensortune.js')));
  return `node ${bin}`;
}

function inferenceContext(workspaceRoot: string): InferenceContext {
  return {
    workspaceRoot,
    cliCommand: cliCommand(workspaceRoot),
    externalDependency: workspaceDependsOnTensortune(workspaceRoot),
  };
}

const sha = (text: string): string => createHash('sha256').update(text).digest('hex');

function toResult(projects: ReturnType<typeof inferProjects>): CreateNodesResult {
  return { projects: Object.fromEntries(projects.map(({ root, ...p }) => [root, { root, ...p }])) };
}

function namesOfRaw(raw: unknown): { name: string; root: string; shards?: number }[] | undefined {
  const networks = (raw as { networks?: unknown } | null)?.networks;
  if (typeof networks !== 'object' || networks === null || Array.isArray(networks)) return undefined;
  return Object.entries(networks as Record<string, unknown>).map(([name, n]) => {
    const { root, shards } = (n ?? {}) as { root?: unknown; shards?: unknown };
    return { name, root: typeof root === 'string' ? root : path.join('models', name), ...(typeof shards === 'number' ? { shards } : {}) };
  });
}

/** Infer the projects of one config file (uncached). */
export function createNodesForConfig(
  configFile: string, options: TensortunePluginOptions | undefined, ctx: InferenceContext, lastGood?: CacheEntry['names'],
): CacheEntry {
  // Parsed once: a file that parses but does not validate still names its networks.
  let raw: unknown;
  try {
    const file = readConfigFile(configFile, ctx.workspaceRoot);
    raw = file.raw;
    const all = validateConfigFile(file);
    // A network whose model file cannot be used (missing, a FIFO, a link to a device) gets
    // targets that report it, and no input that would point Nx's hasher at it; the other
    // networks of the file are inferred as usual.
    const unusable = all.modelProblems ?? new Map<string, ConfigError>();
    for (const e of unusable.values()) logger.warn(`tensortune: ${e.message} (this network's targets report it when run)`);
    const loaded = unusable.size === 0 ? all
      : { ...all, config: { ...all.config, networks: Object.fromEntries(Object.entries(all.config.networks).filter(([n]) => !unusable.has(n))) } };
    // Sharded networks: their tasks decide the shard targets' inputs (the models are loaded here, and cached below).
    const shardPlans = shardedNetworks(loaded).length > 0 ? loadShardPlans(loaded, ctx.workspaceRoot) : undefined;
    const projects = inferProjects(loaded, { ...ctx, shardPlans, engineVersion: PLUGIN_VERSION }, options);
    const broken = [...unusable].flatMap(([name, e]) => brokenProjects(
      [{ name, root: projectRootOf(all, ctx.workspaceRoot, name), shards: all.config.networks[name].shards }], toPosix(configFile), e.message, options));
    const names = [...projects, ...broken].map((p) => ({ name: p.name, root: p.root, shards: all.config.networks[p.name]?.shards }));
    return { result: toResult([...projects, ...broken]), names, cacheable: unusable.size === 0 };
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    logger.warn(`tensortune: ${e.message} (the projects of this file report it when run)`);
    // raw is undefined when the file does not even parse: fall back to the last good load.
    const dir = path.dirname(configFile);
    const names = namesOfRaw(raw)?.map((n) => ({ ...n, root: toPosix(path.join(dir, n.root)) })) ?? lastGood ?? [];
    return { result: toResult(brokenProjects(names, toPosix(configFile), e.message, options)), names: lastGood };
  }
}

/**
 * A digest of a file's content for a cache key, read only as a regular file within its
 * limit: a FIFO or a link to a device in its place must not hang or exhaust the graph
 * computation (the config's validation reports it, naming the file and field).
 */
function contentDigest(file: string, limit: { what: string; maxBytes: number }): string {
  if (!existsSync(file)) return 'missing';
  try {
    return createHash('sha256').update(readRegularFileSync(file, limit)).digest('hex');
  } catch (e) {
    return `unreadable: ${(e as Error).message}`;
  }
}

/** A config file's parsed content, or undefined where it does not parse (its content digest still keys it). */
function parsedOrUndefined(configFile: string, workspaceRoot: string): ConfigFile | undefined {
  try {
    return readConfigFile(configFile, workspaceRoot);
  } catch {
    return undefined;
  }
}

/** The content of the file a config extends (its networks' settings come from it too); empty when it extends none. */
function baseDigest(parsed: ConfigFile | undefined): string {
  return parsed?.base ? `${parsed.base.abs}\0${contentDigest(parsed.base.abs, { what: 'the config file', maxBytes: MAX_CONFIG_BYTES })}` : '';
}

/**
 * The content of the model files of a config's sharded networks (their tasks shape the
 * shard targets, so the cached inference must change with them); empty when it has none.
 */
function shardedModelsDigest(parsed: ConfigFile | undefined, configFile: string, workspaceRoot: string): string {
  const networks = (parsed?.raw as { networks?: Record<string, { model?: unknown; shards?: unknown } | null> } | null | undefined)?.networks;
  if (typeof networks !== 'object' || networks === null) return '';
  const h = createHash('sha256');
  for (const [name, n] of Object.entries(networks).sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (n?.shards === undefined || typeof n.model !== 'string' || !isModelFile(n.model)) continue;
    const file = path.resolve(workspaceRoot, path.dirname(configFile), n.model);
    h.update(`${name}\0${contentDigest(file, modelLimit())}\0`);
  }
  return h.digest('hex');
}

/**
 * The cache key of a config file's inferred projects: its content, the file it extends and
 * its sharded networks' models (the file parsed once for both).
 */
export function inferenceKey(configFile: string, workspaceRoot: string): string {
  const parsed = parsedOrUndefined(configFile, workspaceRoot);
  const own = contentDigest(path.join(workspaceRoot, configFile), { what: 'the config file', maxBytes: MAX_CONFIG_BYTES });
  return sha(`${configFile}\0${own}\0${baseDigest(parsed)}\0${shardedModelsDigest(parsed, configFile, workspaceRoot)}`);
}

export const createNodes: CreateNodes<TensortunePluginOptions> = [
  CONFIG_GLOB,
  async (configFiles, options, context) => {
    const ctx = inferenceContext(context.workspaceRoot);
    const optionsKey = sha(JSON.stringify({ options: options ?? {}, version: PLUGIN_VERSION, code: INFERENCE_CODE, ctx })).slice(0, 16);
    const cache = new PluginCache<CacheEntry>(path.join(workspaceDataDirectory, `tensortune-${optionsKey}.hash`));
    try {
      return await createNodesFromFiles((file, opts) => {
        const key = inferenceKey(file, context.workspaceRoot);
        const hit = cache.get(key);
        if (hit) return hit.result;
        const lastGood = cache.get(`names:${file}`)?.names;
        const entry = createNodesForConfig(file, opts, ctx, lastGood);
        // A broken file, or one with a network whose model cannot be used, is re-inferred every time (so the warning shows); a good one is cached.
        if (entry.names && entry.names !== lastGood) {
          if (entry.cacheable !== false) cache.set(key, entry);
          cache.set(`names:${file}`, { result: {}, names: entry.names });
        }
        return entry.result;
      }, configFiles, options, context);
    } finally {
      cache.writeToDisk();
    }
  },
];
