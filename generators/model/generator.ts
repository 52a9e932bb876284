// `nx g tensortune:model [name] --model <builtin|file.onnx>`: scaffold a network's project
// folder with a config file of its own, `<folder>/tensortune.config.yaml`, which declares
// the network and extends the workspace's `tensortune.config.yaml` for the targets and
// budgets (creating that with a CPU target and tiny / full budgets if there is none). The
// network's settings then live in a file of its project, so an edit of them makes that one
// project affected (Nx maps changed files to projects by path). `--config FILE` adds the
// network to FILE instead. The name defaults to the model's (a builtin's name, an ONNX
// file's base name), so the generator runs without a prompt. Comments and layout of an
// existing YAML config are kept; what it adds is block YAML. Runs init last.

import path from 'node:path';
import { joinPathFragments, type Tree } from '@nx/devkit';
import { isMap, parseDocument, stringify } from 'yaml';
import { NETWORK_NAMES, networkSuggestion } from '../../engine/frontend/networks';
import { isModelFile } from '../../plugin/config';
import { DEFAULT_OUT_DIR, DEFAULT_RECORDS_DIR } from '../../plugin/resolve';
import initGenerator from '../init/generator';

export interface ModelGeneratorOptions {
  /** Default: derived from the model (defaultNetworkName). */
  name?: string;
  model: string;
  directory?: string;
  config?: string;
  batch?: number;
  layout?: 'NHWC' | 'NCHW';
  imageSize?: number;
}

export const DEFAULT_CONFIG = 'tensortune.config.yaml';

/** The workspace config a first network creates: what the networks' own files extend. */
const STARTER = {
  records: DEFAULT_RECORDS_DIR,
  outDir: DEFAULT_OUT_DIR,
  defaults: { target: 'cpu', budget: 'tiny' },
  targets: { cpu: { target: 'llvm -mcpu=native' } },
  budgets: {
    tiny: { trialsPerTask: 2, measuresPerRound: 2 },
    full: { trialsPerTask: 800, measuresPerRound: 64, earlyStopping: 200 },
  },
};

const STARTER_COMMENT = ' tensortune: the targets and budgets of this workspace\'s networks. Each network has\n'
  + ' its own config file in its project folder (`nx g tensortune:model`), which extends this one.';

function fail(message: string): never {
  throw new Error(`tensortune:model: ${message}`);
}

/**
 * The network name a model gives when none is asked for: a builtin's own name, or an ONNX
 * file's base name in lower case with anything but letters, digits, '.', '_' and '-' as '-'.
 */
export function defaultNetworkName(model: string): string {
  const base = isModelFile(model) ? path.posix.basename(model.replace(/\\/g, '/')).replace(/\.[^.]+$/, '') : model;
  return base.toLowerCase().replace(/[^a-z0-9_.-]+/g, '-').replace(/^[^a-z0-9]+/, '');
}

export default function modelGenerator(tree: Tree, options: ModelGeneratorOptions): void {
  if (typeof options.model !== 'string' || options.model.trim() === '') fail('model: expected a builtin network or the workspace path of an .onnx file (--model)');
  const name = (options.name ?? defaultNetworkName(options.model)).trim();
  if (!name || !/^[a-z0-9][a-z0-9_.-]*$/.test(name)) fail(`name: expected lower-case letters, digits, '.', '_' or '-', got ${JSON.stringify(options.name)}`);
  const root = options.directory ?? joinPathFragments('models', name);
  // Without --config, the network's own file in its folder, extending the workspace config.
  const ownFile = options.config === undefined;
  const configPath = options.config ?? joinPathFragments(root, DEFAULT_CONFIG);
  if (!/\.(ya?ml)$/.test(configPath) && tree.exists(configPath)) fail(`${configPath}: only YAML configs are edited by this generator; add the network by hand`);
  const configDir = configPath.includes('/') ? configPath.slice(0, configPath.lastIndexOf('/')) : '';
  if (ownFile && configPath === DEFAULT_CONFIG) fail(`directory: expected a project folder, not the workspace root (its ${DEFAULT_CONFIG} is what the networks' own files extend)`);

  const network: Record<string, unknown> = {};
  if (isModelFile(options.model)) {
    if (!tree.exists(options.model)) fail(`model: file ${options.model} not found in the workspace (give a workspace-relative path)`);
    const ext = options.model.slice(options.model.lastIndexOf('.'));
    const dest = joinPathFragments(root, `model${ext}`);
    if (dest !== options.model) tree.write(dest, tree.read(options.model)!);
    network.model = relativeTo(configDir, dest);
    if (options.imageSize !== undefined) fail('imageSize: applies to builtin networks only');
  } else {
    if (!NETWORK_NAMES.includes(options.model)) fail(`model: expected a builtin network (${NETWORK_NAMES.join(', ')}) or an .onnx file, got ${JSON.stringify(options.model)}${networkSuggestion(options.model)}`);
    network.model = options.model;
    if (options.imageSize !== undefined) network.imageSize = options.imageSize;
  }
  // The project folder, as the config says it (default: models/<name> next to the config).
  const rootInConfig = relativeTo(configDir, root) || '.';
  if (rootInConfig !== joinPathFragments('models', name)) network.root = rootInConfig;
  if (options.batch !== undefined) network.batch = options.batch;
  if (options.layout !== undefined) network.layout = options.layout;

  if (ownFile && !tree.exists(DEFAULT_CONFIG)) {
    const starter = parseDocument(stringify(STARTER));
    starter.commentBefore = STARTER_COMMENT;
    tree.write(DEFAULT_CONFIG, starter.toString());
  }
  const doc = parseDocument(tree.exists(configPath) ? tree.read(configPath, 'utf-8')!
    : stringify(ownFile ? { extends: relativeTo(configDir, DEFAULT_CONFIG), networks: {} } : { ...STARTER, networks: {} }));
  if (doc.errors.length) fail(`${configPath}: cannot be parsed: ${doc.errors[0].message}`);
  if (doc.hasIn(['networks', name])) fail(`${configPath}: networks.${name} exists already`);
  if (ownFile && tree.exists(DEFAULT_CONFIG) && parseDocument(tree.read(DEFAULT_CONFIG, 'utf-8')!).hasIn(['networks', name])) fail(`${DEFAULT_CONFIG}: networks.${name} exists already`);
  if (!doc.has('networks') || doc.get('networks') === null) doc.set('networks', doc.createNode({}));
  // An empty `networks: {}` is a flow map; the first network turns it into a block one
  // (a flow map the user wrote with entries keeps its style).
  const networks = doc.get('networks', true);
  if (isMap(networks) && networks.items.length === 0) networks.flow = false;
  doc.setIn(['networks', name], doc.createNode(network));
  tree.write(configPath, doc.toString());

  tree.write(joinPathFragments(root, 'README.md'), `# ${name}

The network \`${String(network.model)}\`, declared in \`${configPath}\` (networks.${name})${ownFile ? `,
which takes its targets and budgets from \`${DEFAULT_CONFIG}\` (extends)` : ''}.
Nx infers its targets from that file:

\`\`\`sh
npx nx tune ${name}          # search schedules (budget: defaults.budget; -c full for the big one)
npx nx compile ${name}       # best schedule per task -> model.so, params.bin, manifest.json
npx nx benchmark ${name}     # time it on this machine, JSON + HTML report
npx nx show project ${name}  # every inferred target with its inputs and outputs
\`\`\`
`);
  initGenerator(tree, {});
}

function relativeTo(dir: string, p: string): string {
  return dir ? path.posix.relative(dir, p) : p;
}
