// End to end, as a user meets the plugin: pack this package, install the tarball and
// nx@24 into a fresh workspace outside the repository (its own cache directory, no
// daemon, no cloud), declare a tiny ONNX network with a tiny budget, and drive `nx` from
// outside: tune / compile / benchmark, cache hits and restores, a fingerprint change, a
// one-layer change, a broken config, and a remote-cache hit in a second clone through a
// self-hosted cache server on 127.0.0.1. Steps run in order and build on each other.

import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startCacheServer, type CacheServer } from './cache-server';
import { writeTinyModel } from './tiny-model';

const REPO = path.resolve(__dirname, '..');
const NX_VERSION = (JSON.parse(readFileSync(path.join(REPO, 'node_modules', 'nx', 'package.json'), 'utf8')) as { version: string }).version;
const base = mkdtempSync(path.join(tmpdir(), 'tensortune-e2e-'));
const ws = path.join(base, 'ws');
const clone = path.join(base, 'clone');
const KEEP = process.env.TENSORTUNE_E2E_KEEP === '1';

const CONFIG = `# e2e: one tiny ONNX network, the CPU of this machine, a tiny budget
records: .tensortune/records
outDir: dist/tensortune
targets:
  cpu:
    target: llvm -mcpu=native
    threads: 1
budgets:
  tiny:
    trialsPerTask: 2
    batchSize: 2
networks:
  tiny:
    model: models/tiny/tiny.onnx
`;

function sh(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): SpawnSyncReturns<string> {
  const r = spawnSync(cmd, args, { cwd, env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.error) throw r.error;
  return r;
}

const NX_ENV: NodeJS.ProcessEnv = {
  NX_DAEMON: 'false', NX_NO_CLOUD: 'true', NX_TUI: 'false', CI: 'true', NX_INTERACTIVE: 'false',
  NX_SKIP_NX_CACHE: '', NX_SELF_HOSTED_REMOTE_CACHE_SERVER: '', TENSORTUNE_DEVICE: '',
  // The kernel object cache and the native tools: shared by both workspaces, kept out of the repo.
  TENSORTUNE_CACHE_DIR: path.join(base, 'tensortune-cache'),
  FORCE_COLOR: '0',
};

/** `nx ...` in a workspace; returns stdout + stderr (without colours) and the exit code. */
function nx(dir: string, args: string[], env: NodeJS.ProcessEnv = {}): { code: number | null; out: string } {
  const r = sh(process.execPath, [path.join(dir, 'node_modules', 'nx', 'dist', 'bin', 'nx.js'), ...args], dir, { ...NX_ENV, ...env });
  const out = `${r.stdout}\n${r.stderr}`.replace(/\x1b\[[0-9;]*m/g, '');
  return { code: r.status, out };
}

/** `nx` without blocking this process (the remote cache server runs in it). */
function nxAsync(dir: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(dir, 'node_modules', 'nx', 'dist', 'bin', 'nx.js'), ...args], { cwd: dir, env: { ...process.env, ...NX_ENV, ...env } });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => { out += d; });
    child.stderr.setEncoding('utf8').on('data', (d: string) => { out += d; });
    child.on('error', reject);
    child.on('close', (code) => {
      const text = out.replace(/\x1b\[[0-9;]*m/g, '');
      if (code === 0) resolve(text);
      else reject(new Error(`nx ${args.join(' ')} exited ${code}:\n${text.slice(-4000)}`));
    });
  });
}

function nxOk(dir: string, args: string[], env: NodeJS.ProcessEnv = {}): string {
  const r = nx(dir, args, env);
  assert.is(r.code, 0, `nx ${args.join(' ')} failed:\n${r.out.slice(-4000)}`);
  return r.out;
}

const recordsFile = (dir: string): string => path.join(dir, '.tensortune', 'records', 'tiny.cpu.jsonl');
const keysOf = (file: string): string[] => [...new Set(readFileSync(file, 'utf8').split('\n').filter((l) => l.trim()).map((l) => (JSON.parse(l) as { key: string }).key))].sort();

function writeWorkspaceFiles(dir: string): void {
  mkdirSync(path.join(dir, 'models', 'tiny'), { recursive: true });
  writeFileSync(path.join(dir, 'nx.json'), `${JSON.stringify({
    plugins: ['tensortune/plugin'], cacheDirectory: '.nx/cache', neverConnectToCloud: true,
  }, null, 2)}\n`);
  writeFileSync(path.join(dir, 'tensortune.config.yaml'), CONFIG);
  writeFileSync(path.join(dir, '.gitignore'), 'node_modules/\n.nx/\n/.tensortune/\n/dist/\n');
  writeTinyModel(path.join(dir, 'models', 'tiny', 'tiny.onnx'), 3);
  // An unrelated project: a broken tensortune config must not hide it.
  mkdirSync(path.join(dir, 'libs', 'other'), { recursive: true });
  writeFileSync(path.join(dir, 'libs', 'other', 'project.json'), `${JSON.stringify({ name: 'other', targets: { hello: { command: 'echo hello' } } }, null, 2)}\n`);
}

test('pack the plugin and install the tarball with nx into a fresh workspace', () => {
  const build = sh('npm', ['run', 'build', '--silent'], REPO);
  assert.is(build.status, 0, build.stderr + build.stdout);
  const pack = sh('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', base], REPO);
  assert.is(pack.status, 0, pack.stderr);
  const [info] = JSON.parse(pack.stdout) as { filename: string; files: { path: string }[] }[];
  const files = info.files.map((f) => f.path);
  for (const f of ['executors.json', 'generators.json', 'dist/plugin/index.js', 'dist/executors/tune/schema.json', 'dist/schemas/config.schema.json', 'bin/tensortune.js']) {
    assert.ok(files.includes(f), `the tarball lacks ${f}`);
  }
  mkdirSync(ws, { recursive: true });
  writeFileSync(path.join(ws, 'package.json'), `${JSON.stringify({
    name: 'tensortune-e2e', private: true,
    devDependencies: { nx: NX_VERSION, tensortune: `file:../${info.filename}` },
  }, null, 2)}\n`);
  // Everything but the tarball comes from npm's cache (the repository's own install
  // filled it); install scripts are skipped (onnxruntime-node's downloads GPU files).
  const install = sh('npm', ['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], ws, { ONNXRUNTIME_NODE_INSTALL: 'skip' });
  assert.is(install.status, 0, install.stderr);
  assert.ok(existsSync(path.join(ws, 'node_modules', 'tensortune', 'dist', 'plugin', 'index.js')));
  writeWorkspaceFiles(ws);
});

test('the network is a project with inferred tune, compile and benchmark targets', () => {
  const projects = nxOk(ws, ['show', 'projects', '--json']);
  const names = JSON.parse(projects.slice(projects.indexOf('['), projects.lastIndexOf(']') + 1)) as string[];
  assert.equal(names.sort(), ['other', 'tiny']);
  const out = nxOk(ws, ['show', 'project', 'tiny', '--json']);
  const project = JSON.parse(out.slice(out.indexOf('{'), out.lastIndexOf('}') + 1)) as {
    targets: Record<string, { executor: string; cache?: boolean; parallelism?: boolean; inputs?: unknown[]; outputs?: string[]; dependsOn?: unknown[]; metadata?: { description?: string } }>;
  };
  const { tune, compile, benchmark } = project.targets;
  assert.is(tune.executor, 'tensortune:tune');
  assert.is(tune.cache, true);
  assert.is(tune.parallelism, false);
  assert.ok(JSON.stringify(tune.inputs).includes('fingerprint'), 'tune hashes the fingerprint command');
  assert.ok(JSON.stringify(tune.inputs).includes('models/tiny/tiny.onnx'), 'tune hashes the model file');
  assert.ok(JSON.stringify(tune.inputs).includes('"externalDependencies":["tensortune"]'), 'tune hashes the engine package');
  assert.equal(compile.dependsOn, ['tune']);
  assert.equal(benchmark.dependsOn, ['compile']);
  assert.is(benchmark.cache, false);
  for (const t of [tune, compile, benchmark]) assert.ok(t.metadata?.description, 'every target has a description');
});

test('nx benchmark tiny tunes, compiles and benchmarks', () => {
  const out = nxOk(ws, ['benchmark', 'tiny', '--outputStyle=stream']);
  assert.match(out, /Execution time summary/);
  assert.ok(keysOf(recordsFile(ws)).length === 4, 'records for the 4 tasks');
  const modelDir = path.join(ws, 'dist', 'tensortune', 'tiny', 'cpu');
  for (const f of ['model.so', 'params.bin', 'manifest.json']) assert.ok(existsSync(path.join(modelDir, f)), `compile wrote ${f}`);
  const report = JSON.parse(readFileSync(path.join(ws, 'dist', 'tensortune', 'tiny', 'reports', 'cpu.json'), 'utf8')) as { result: { median_ms: number } };
  assert.ok(report.result.median_ms > 0);
  assert.match(readFileSync(path.join(ws, 'dist', 'tensortune', 'tiny', 'reports', 'cpu.html'), 'utf8'), /<svg/);
});

test('tune again: a local cache hit', () => {
  const before = readFileSync(recordsFile(ws), 'utf8');
  const out = nxOk(ws, ['tune', 'tiny']);
  assert.match(out, /local cache|existing outputs match the cache/);
  assert.is(readFileSync(recordsFile(ws), 'utf8'), before);
});

test('deleted records are restored from the cache', () => {
  const before = readFileSync(recordsFile(ws), 'utf8');
  rmSync(recordsFile(ws));
  const out = nxOk(ws, ['tune', 'tiny']);
  assert.match(out, /local cache/);
  assert.is(readFileSync(recordsFile(ws), 'utf8'), before);
});

test('a different fingerprint input is a cache miss', () => {
  const out = nxOk(ws, ['tune', 'tiny', '--outputStyle=stream'], { TENSORTUNE_DEVICE: 'another-board' });
  assert.not.match(out, /local cache/);
  assert.match(out, /tensortune tune tiny/, 'the executor ran');
  // Same machine underneath: the log already spent the budget of every task.
  assert.match(out, /trials-per-task budget spent/);
});

test('one changed layer: only the new task is tuned', () => {
  const before = keysOf(recordsFile(ws));
  writeTinyModel(path.join(ws, 'models', 'tiny', 'tiny.onnx'), 1);
  const out = nxOk(ws, ['tune', 'tiny', '--outputStyle=stream']);
  assert.not.match(out, /local cache/);
  const after = keysOf(recordsFile(ws));
  const added = after.filter((k) => !before.includes(k));
  assert.is(added.length, 1, `one new task tuned, got ${added.length}`);
  assert.is((out.match(/trials-per-task budget spent/g) ?? []).length, 3, 'the 3 unchanged tasks are skipped');
});

test('a broken config: one clear message, the workspace still works', () => {
  const good = readFileSync(path.join(ws, 'tensortune.config.yaml'), 'utf8');
  writeFileSync(path.join(ws, 'tensortune.config.yaml'), good.replace('threads: 1', 'threads: two'));
  try {
    const shown = nxOk(ws, ['show', 'projects']);
    assert.match(shown, /other/);
    assert.match(shown, /tiny/);
    assert.match(shown, /tensortune\.config\.yaml: targets\.cpu\.threads: expected an integer, got "two"/);
    const r = nx(ws, ['tune', 'tiny', '--outputStyle=stream']);
    assert.is.not(r.code, 0);
    assert.match(r.out, /tensortune tune: tensortune\.config\.yaml: targets\.cpu\.threads: expected an integer, got "two"/);
    assert.not.match(r.out, /    at /, 'no stack trace');
    assert.is(nx(ws, ['run', 'other:hello']).code, 0);
  } finally {
    writeFileSync(path.join(ws, 'tensortune.config.yaml'), good);
  }
});

let server: CacheServer | undefined;

test('remote cache: a second clone restores tune and compile from a self-hosted cache', async () => {
  server = await startCacheServer('e2e-token');
  const remote = { NX_SELF_HOSTED_REMOTE_CACHE_SERVER: server.url, NX_SELF_HOSTED_REMOTE_CACHE_ACCESS_TOKEN: 'e2e-token' };
  // Fill the remote: the local cache is emptied, so both tasks run (quickly: the log is
  // on disk, the kernels in the object cache) and upload their outputs.
  nxOk(ws, ['reset', '--only-cache']);
  await nxAsync(ws, ['compile', 'tiny'], remote);
  assert.ok(server.log.some((l) => /^PUT \S+ 20\d$/.test(l)), `nothing uploaded: ${server.log.join('; ')}`);

  // The clone: same sources and lockfile, its own (empty) local cache and outputs.
  mkdirSync(clone, { recursive: true });
  for (const f of ['package.json', 'package-lock.json', 'nx.json', 'tensortune.config.yaml', '.gitignore']) cpSync(path.join(ws, f), path.join(clone, f));
  cpSync(path.join(ws, 'models'), path.join(clone, 'models'), { recursive: true });
  cpSync(path.join(ws, 'libs'), path.join(clone, 'libs'), { recursive: true });
  symlinkSync(path.join(ws, 'node_modules'), path.join(clone, 'node_modules'), 'dir');
  const out = await nxAsync(clone, ['compile', 'tiny'], remote);
  assert.is((out.match(/remote cache/g) ?? []).length >= 2, true, `expected two remote hits:\n${out}`);
  assert.is(readFileSync(recordsFile(clone), 'utf8'), readFileSync(recordsFile(ws), 'utf8'));
  assert.ok(existsSync(path.join(clone, 'dist', 'tensortune', 'tiny', 'cpu', 'model.so')));
});

test.after(async () => {
  await server?.close();
  if (!KEEP) rmSync(base, { recursive: true, force: true });
  else console.log(`kept ${base}`);
});

test.run();
