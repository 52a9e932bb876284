// End to end, as a new user starts: an empty Nx workspace on the oldest Nx the package's
// peer range admits, `nx add` of the packed tarball (the init generator), the model
// generator with a positional name and without one, tune / compile / benchmark of a tiny
// ONNX network with the starter config's tiny budget, and `nx show projects --affected`
// in a git repository after an edit of one network's config file and of the workspace
// config they extend. Steps build on each other.

import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parse } from 'yaml';
import { e2e, KEEP, REPO, sh, tasksOf } from './harness';
import { writeTinyModel } from './tiny-model';

const { base, nx, pack } = e2e('tensortune-new-ws-e2e-');
const ws = path.join(base, 'ws');

interface Manifest { peerDependencies: Record<string, string>; scripts?: Record<string, string>; exports: Record<string, unknown> }
const manifest = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as Manifest;
/** The lowest Nx version of the peer range (`>=23.0.0 <25`): the one this suite installs. */
const OLDEST_NX = /^>=\s*(\d+\.\d+\.\d+)\s/.exec(manifest.peerDependencies.nx)?.[1];

function nxOk(args: string[], env: NodeJS.ProcessEnv = {}): string {
  const r = nx(ws, args, env);
  assert.is(r.code, 0, `nx ${args.join(' ')} failed:\n${r.out.slice(-4000)}`);
  return r.out;
}

function git(args: string[]): string {
  const r = sh('git', ['-c', 'user.name=e2e', '-c', 'user.email=e2e@example.com', ...args], ws);
  assert.is(r.status, 0, `git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** `nx show projects --affected --base=HEAD`: the project names it prints, sorted. */
function affected(): string[] {
  const out = nxOk(['show', 'projects', '--affected', '--base=HEAD', '--json']);
  return (JSON.parse(out.slice(out.indexOf('['), out.lastIndexOf(']') + 1)) as string[]).sort();
}

const settingsOf = (project: string): string => {
  const out = nxOk(['show', 'project', project, '--json']);
  const p = JSON.parse(out.slice(out.indexOf('{'), out.lastIndexOf('}') + 1)) as { targets: Record<string, { options: { settings: string } }> };
  return p.targets.tune.options.settings;
};

test(`an empty workspace on the oldest supported Nx takes the packed tarball through nx add`, () => {
  assert.ok(OLDEST_NX, `package.json's peer range names its lowest version: ${manifest.peerDependencies.nx}`);
  const { tarball, files } = pack();
  for (const f of ['LICENSE', 'CHANGELOG.md', 'README.md', 'dist/plugin/index.js', 'executors.json', 'generators.json']) assert.ok(files.includes(f), `the tarball lacks ${f}`);
  mkdirSync(path.join(ws, 'libs', 'other'), { recursive: true });
  writeFileSync(path.join(ws, 'package.json'), `${JSON.stringify({ name: 'new-ws', private: true, devDependencies: { nx: OLDEST_NX } }, null, 2)}\n`);
  writeFileSync(path.join(ws, 'nx.json'), `${JSON.stringify({ neverConnectToCloud: true }, null, 2)}\n`);
  writeFileSync(path.join(ws, '.gitignore'), 'node_modules/\n.nx/\n');
  // A project of the workspace's own, which no tensortune config edit may touch.
  writeFileSync(path.join(ws, 'libs', 'other', 'project.json'), `${JSON.stringify({ name: 'other', targets: { hello: { command: 'echo hello' } } }, null, 2)}\n`);
  const install = sh('npm', ['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], ws);
  assert.is(install.status, 0, `npm install nx@${OLDEST_NX}: ${install.stderr}`);

  // nx add installs with the workspace's npm (a peer range refusing this Nx fails it with ERESOLVE), then runs init.
  const out = nxOk(['add', `tensortune@file:${tarball}`], { ONNXRUNTIME_NODE_INSTALL: 'skip', npm_config_prefer_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false' });
  assert.not.match(out, /ERESOLVE|legacy-peer-deps/);
  const installed = (file: string): Record<string, unknown> => JSON.parse(readFileSync(path.join(ws, 'node_modules', file), 'utf8')) as Record<string, unknown>;
  assert.is(installed('nx/package.json').version, OLDEST_NX, 'nx add kept the workspace on its Nx');
  const pkg = installed('tensortune/package.json') as unknown as Manifest;
  assert.is(pkg.scripts?.prepare, undefined, 'the published package has no install-time script');
  assert.equal(Object.keys(pkg.exports).filter((k) => k.includes('dist')), [], 'no export of the internals in dist/');

  const nxJson = JSON.parse(readFileSync(path.join(ws, 'nx.json'), 'utf8')) as { plugins: unknown[]; targetDefaults: Record<string, unknown> };
  assert.equal(nxJson.plugins, [{ plugin: 'tensortune/plugin', options: { tuneTargetName: 'tune', compileTargetName: 'compile', benchmarkTargetName: 'benchmark' } }]);
  assert.ok('tensortune:tune' in nxJson.targetDefaults);
  assert.match(readFileSync(path.join(ws, '.gitignore'), 'utf8'), /^\/\.tensortune\/$/m);
});

test('the model generator: a positional name, and a name taken from the model; block YAML; each network in a file of its own', () => {
  mkdirSync(path.join(ws, 'downloads'), { recursive: true });
  writeTinyModel(path.join(ws, 'downloads', 'tiny.onnx'), 3);
  nxOk(['g', 'tensortune:model', 'tiny', '--model', 'downloads/tiny.onnx', '--no-interactive']);
  nxOk(['g', 'tensortune:model', '--model', 'mobilenet', '--no-interactive']);
  const own = (name: string): string => readFileSync(path.join(ws, 'models', name, 'tensortune.config.yaml'), 'utf8');
  assert.is(own('tiny'), 'extends: ../../tensortune.config.yaml\nnetworks:\n  tiny:\n    model: model.onnx\n    root: .\n');
  assert.is(own('mobilenet'), 'extends: ../../tensortune.config.yaml\nnetworks:\n  mobilenet:\n    model: mobilenet\n    root: .\n');
  const config = parse(readFileSync(path.join(ws, 'tensortune.config.yaml'), 'utf8')) as { budgets: Record<string, unknown>; networks?: unknown };
  assert.equal(config.budgets.tiny, { trialsPerTask: 2, measuresPerRound: 2 });
  assert.is(config.networks, undefined, 'the workspace config holds the targets and budgets');
  const out = nxOk(['show', 'projects', '--json']);
  assert.equal((JSON.parse(out.slice(out.indexOf('['), out.lastIndexOf(']') + 1)) as string[]).sort(), ['mobilenet', 'other', 'tiny']);
});

test('nx benchmark tiny tunes (tiny budget), compiles and benchmarks', () => {
  const out = nxOk(['benchmark', 'tiny', '--outputStyle=stream']);
  assert.equal(tasksOf(out).ran, ['tiny:benchmark', 'tiny:compile', 'tiny:tune']);
  for (const f of ['model.so', 'params.bin', 'manifest.json']) assert.ok(existsSync(path.join(ws, 'dist', 'tensortune', 'tiny', 'cpu', f)), `compile wrote ${f}`);
  const report = JSON.parse(readFileSync(path.join(ws, 'dist', 'tensortune', 'tiny', 'reports', 'cpu.json'), 'utf8')) as { result: { median_ms: number } };
  assert.ok(report.result.median_ms > 0);
});

test('nx show projects --affected: an edit of a network\'s entry touches that project alone, an edit of the shared budgets every network; tune keys change as the projects do', () => {
  sh('git', ['init', '-q'], ws);
  git(['add', '.']);
  git(['commit', '-q', '-m', 'a workspace with tensortune']);
  assert.equal(affected(), [], 'nothing changed since HEAD');
  const before = { tiny: settingsOf('tiny'), mobilenet: settingsOf('mobilenet') };
  const mobilenet = path.join(ws, 'models', 'mobilenet', 'tensortune.config.yaml');
  writeFileSync(mobilenet, readFileSync(mobilenet, 'utf8').replace('    model: mobilenet\n', '    model: mobilenet\n    imageSize: 96\n'));
  assert.equal(affected(), ['mobilenet']);
  assert.is.not(settingsOf('mobilenet'), before.mobilenet, "mobilenet's tune key changed");
  assert.is(settingsOf('tiny'), before.tiny, "tiny's did not");
  const again = nxOk(['compile', 'tiny', '--outputStyle=stream']);
  assert.equal(tasksOf(again).cached, ['tiny:compile', 'tiny:tune'], `tiny's tune and compile are cache hits:\n${again.slice(-2000)}`);
  git(['checkout', '--', 'models/mobilenet/tensortune.config.yaml']);
  assert.equal(affected(), []);
  // The budgets every network's file extends: both keys change, both projects are touched.
  const shared = path.join(ws, 'tensortune.config.yaml');
  writeFileSync(shared, readFileSync(shared, 'utf8').replace('trialsPerTask: 2', 'trialsPerTask: 3'));
  assert.equal(affected(), ['mobilenet', 'tiny']);
  assert.is.not(settingsOf('tiny'), before.tiny);
  git(['checkout', '--', 'tensortune.config.yaml']);
  assert.equal(affected(), []);
});

test.after(() => {
  if (!KEEP) rmSync(base, { recursive: true, force: true });
  else console.log(`kept ${base}`);
});

test.run();
