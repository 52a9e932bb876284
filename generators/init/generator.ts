// `nx g tensortune:init` (also what `nx add tensortune` runs): register the plugin in
// nx.json (with its options spelled out at their defaults, so a user sees what can be
// renamed), git-ignore the records store and the compiled output, and give targets that
// use the executors directly (in a project.json) the same cache settings the inferred
// ones have. Idempotent: running it twice changes nothing the second time.

import { readNxJson, updateNxJson, type Tree } from '@nx/devkit';

export const PLUGIN_NAME = 'tensortune/plugin';

/** The plugin's options at their defaults (plugin/targets.ts TensortunePluginOptions; docs/workspace.md). */
export const DEFAULT_PLUGIN_OPTIONS = { tuneTargetName: 'tune', compileTargetName: 'compile', benchmarkTargetName: 'benchmark' };

export interface InitGeneratorOptions {
  /** Do not touch .gitignore. */
  skipGitignore?: boolean;
}

export const GITIGNORE_LINES = ['/.tensortune/', '/dist/tensortune/'];

const TARGET_DEFAULTS: Record<string, Record<string, unknown>> = {
  'tensortune:tune': { cache: true, parallelism: false },
  'tensortune:compile': { cache: true },
  'tensortune:benchmark': { cache: false, parallelism: false },
};

export function registerPlugin(tree: Tree): boolean {
  const nxJson = readNxJson(tree) ?? {};
  const plugins = nxJson.plugins ?? [];
  const registered = plugins.some((p) => (typeof p === 'string' ? p : p.plugin) === PLUGIN_NAME);
  let changed = false;
  if (!registered) {
    nxJson.plugins = [...plugins, { plugin: PLUGIN_NAME, options: { ...DEFAULT_PLUGIN_OPTIONS } }];
    changed = true;
  }
  if (!Array.isArray(nxJson.targetDefaults)) {
    const defaults = { ...(nxJson.targetDefaults ?? {}) };
    for (const [key, value] of Object.entries(TARGET_DEFAULTS)) {
      if (!(key in defaults)) { defaults[key] = value; changed = true; }
    }
    nxJson.targetDefaults = defaults;
  }
  if (changed) updateNxJson(tree, nxJson);
  return changed;
}

export function updateGitignore(tree: Tree): boolean {
  const text = tree.exists('.gitignore') ? tree.read('.gitignore', 'utf-8') ?? '' : '';
  const present = new Set(text.split(/\r?\n/).map((l) => l.trim()));
  const missing = GITIGNORE_LINES.filter((l) => !present.has(l) && !present.has(l.replace(/^\//, '')));
  if (missing.length === 0) return false;
  const sep = text === '' || text.endsWith('\n') ? '' : '\n';
  tree.write('.gitignore', `${text}${sep}# tensortune: records store and compiled models (Nx caches and restores them)\n${missing.join('\n')}\n`);
  return true;
}

export default function initGenerator(tree: Tree, options: InitGeneratorOptions = {}): void {
  registerPlugin(tree);
  if (!options.skipGitignore) updateGitignore(tree);
}
