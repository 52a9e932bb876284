// End to end, as a user meets the plugin: pack this package, install the tarball and
// nx@24 into a fresh workspace outside the repository (its own cache directory, no
// daemon, no cloud), declare a tiny ONNX network with two small budgets, and drive `nx`
// from outside: tune / compile / benchmark, cache hits and restores, a fingerprint change,
// a one-layer change, config edits that must not invalidate, cache restores that must not
// lose records (the CLI and a second budget writing the store), a broken config, and the
// README's CI commands in a second clone through a self-hosted remote cache on 127.0.0.1.
// Steps run in order and build on each other.

import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openclAvailable } from '../engine/native/opencl';
import { recordId } from '../engine/records/store';
import { skip } from '../engine/skip.fixture';
import type { TuningRecord } from '../engine/records/record';
import { startCacheServer, type CacheServer } from './cache-server';
import { e2e, KEEP, sh } from './harness';
import { writeTinyModel } from './tiny-model';

const { base, env: NX_ENV, nx, nxAsyncResult, nxAsync, packAndInstall } = e2e('tensortune-e2e-');
const ws = path.join(base, 'ws');
const clone = path.join(base, 'clone');

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
    confirm: 0
  full:
    trialsPerTask: 6
    batchSize: 2
networks:
  tiny:
    model: models/tiny/tiny.onnx
`;

function nxOk(dir: string, args: string[], env: NodeJS.ProcessEnv = {}): string {
  const r = nx(dir, args, env);
  assert.is(r.code, 0, `nx ${args.join(' ')} failed:\n${r.out.slice(-4000)}`);
  return r.out;
}

const storeDir = (dir: string): string => path.join(dir, '.tensortune', 'records');
/** The store log `nx tune tiny` appends to. */
const recordsFile = (dir: string): string => path.join(storeDir(dir), 'tiny.cpu.jsonl');
/** The Nx output of one tune configuration. */
const tuneOutput = (dir: string, budget: string): string => path.join(storeDir(dir), 'nx', 'tiny', `cpu.${budget}.jsonl`);
const linesOf = (file: string): string[] => readFileSync(file, 'utf8').split('\n').filter((l) => l.trim());
const keysOf = (file: string): string[] => [...new Set(linesOf(file).map((l) => (JSON.parse(l) as { key: string }).key))].sort();

interface StoredRecord { key: string; target: string; costs_ms: number[]; error: unknown; budget?: string }
/**
 * The distinct measurements of the store's logs, and with `outputs` of the tune outputs too
 * (a line's text is the measurement's identity here: one writer, one serialisation).
 */
function storeMeasurements(dir: string, outputs = false): Map<string, StoredRecord> {
  const out = new Map<string, StoredRecord>();
  const files = readdirSync(storeDir(dir)).filter((n) => n.endsWith('.jsonl')).map((n) => path.join(storeDir(dir), n));
  if (outputs) files.push(...readdirSync(path.join(storeDir(dir), 'nx', 'tiny')).map((n) => path.join(storeDir(dir), 'nx', 'tiny', n)));
  for (const f of files) for (const line of linesOf(f)) out.set(line, JSON.parse(line) as StoredRecord);
  return out;
}
const mean = (r: Pick<StoredRecord, 'costs_ms'>): number => r.costs_ms.reduce((a, b) => a + b, 0) / r.costs_ms.length;

interface Manifest { records: { tuned: number; default: number; by_budget: Record<string, number> }; kernels: { key: string; schedule: string; source: string; record?: string; objectHash: string }[] }
const manifestOf = (dir: string): Manifest => JSON.parse(readFileSync(path.join(dir, 'dist', 'tensortune', 'tiny', 'cpu', 'manifest.json'), 'utf8')) as Manifest;

/**
 * Every tuned kernel of the compiled model uses the fastest valid record the workspace holds
 * for its workload (its store and its tune outputs: a compile restored from a cache reads no
 * store, and its manifest names the record by its id, whichever log and machine held it).
 */
function assertCompiledWithBest(dir: string): void {
  // A schedule is a task's records of the same steps. Those the task's latest confirmation pass
  // timed (records of policy 'confirm' sharing its `pass`) rank first, by the mean of that pass's
  // timings; then those earlier passes timed, by the mean of their confirmations; then the
  // others by the mean of all their timings.
  const timings = new Map<string, number[]>();
  const confirmations = new Map<string, number[]>();
  const passTimings = new Map<string, number[]>(); // [pass, schedule] -> timings
  const latest = new Map<string, { pass: string; time: number }>(); // task key -> its latest pass
  const schedule = (r: StoredRecord): string => JSON.stringify([r.key, (r as unknown as TuningRecord).steps]);
  const byId = new Map<string, StoredRecord>();
  for (const r of storeMeasurements(dir, true).values()) {
    byId.set(recordId(r as unknown as TuningRecord), r);
    if (r.error !== null || r.costs_ms.length === 0) continue;
    const t = r as unknown as TuningRecord;
    timings.set(schedule(r), [...(timings.get(schedule(r)) ?? []), ...r.costs_ms]);
    if (t.policy !== 'confirm') continue;
    assert.ok(t.pass, `a confirmation record names its pass: ${JSON.stringify(t)}`);
    confirmations.set(schedule(r), [...(confirmations.get(schedule(r)) ?? []), ...r.costs_ms]);
    const inPass = JSON.stringify([t.pass, schedule(r)]);
    passTimings.set(inPass, [...(passTimings.get(inPass) ?? []), ...r.costs_ms]);
    const time = Date.parse(t.time);
    if (time > (latest.get(r.key)?.time ?? -Infinity)) latest.set(r.key, { pass: t.pass!, time });
  }
  const rank = (r: StoredRecord): number => {
    const last = passTimings.get(JSON.stringify([latest.get(r.key)?.pass, schedule(r)]));
    if (last) return mean({ costs_ms: last }) - 2e9;
    const c = confirmations.get(schedule(r));
    return c ? mean({ costs_ms: c }) - 1e9 : mean({ costs_ms: timings.get(schedule(r))! });
  };
  const best = new Map<string, number>();
  for (const r of byId.values()) if (timings.has(schedule(r))) best.set(r.key, Math.min(best.get(r.key) ?? Infinity, rank(r)));
  const m = manifestOf(dir);
  assert.ok(m.records.tuned > 0, 'some kernel is tuned');
  for (const k of m.kernels.filter((k) => k.schedule === 'tuned')) {
    const used = byId.get(k.record ?? '');
    assert.ok(used, `kernel ${k.key}: its record ${k.record} (${k.source}) is in the workspace`);
    assert.is(rank(used), best.get(k.key), `kernel ${k.key} uses ${k.source}, not the store's best schedule`);
  }
}

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
  const files = packAndInstall(ws, 'tensortune-e2e');
  for (const f of ['executors.json', 'generators.json', 'dist/plugin/index.js', 'dist/executors/tune/schema.json', 'dist/schemas/config.schema.json', 'bin/tensortune.js']) {
    assert.ok(files.includes(f), `the tarball lacks ${f}`);
  }
  assert.ok(existsSync(path.join(ws, 'node_modules', 'tensortune', 'dist', 'plugin', 'index.js')));
  writeWorkspaceFiles(ws);
  // As `nx add tensortune` would: targetDefaults in nx.json, the store and outputs git-ignored.
  nxOk(ws, ['g', 'tensortune:init', '--no-interactive']);
  assert.match(readFileSync(path.join(ws, 'nx.json'), 'utf8'), /tensortune:tune/);
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
  // Two convs, the pooling and the dense layer, and (CPU targets tune them too) the Winograd alternative of each 3x3 stride-1 conv.
  assert.is(keysOf(recordsFile(ws)).length, 6, 'records for the 6 tasks: 4 layers and 2 Winograd alternatives');
  assert.equal(keysOf(tuneOutput(ws, 'tiny')), keysOf(recordsFile(ws)), "tune's own output holds the network's measurements");
  assert.match(out, /records used: \d+ tuned \(tiny: \d+\), \d+ default kernel\(s\)/);
  assert.match(out, /note: budget\(s\) 'full' never tuned tiny for cpu in this workspace; `nx compile tiny -c full` restores/);
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

test('a config comment and a second network added by the generator leave tune and compile cache hits', () => {
  const config = path.join(ws, 'tensortune.config.yaml');
  const good = readFileSync(config, 'utf8');
  try {
    writeFileSync(config, `# tuned on the team's laptops\n${good}`);
    const out = nxOk(ws, ['compile', 'tiny']);
    assert.ok(/Nx read the output from the cache instead of running the command for 2 out of 2 tasks/.test(out), out);
    nxOk(ws, ['g', 'tensortune:model', 'extra', '--model', 'mobilenet', '--no-interactive']);
    assert.match(readFileSync(path.join(ws, 'models', 'extra', 'tensortune.config.yaml'), 'utf8'), /^extends: \.\.\/\.\.\/tensortune\.config\.yaml\nnetworks:\n  extra:/);
    const again = nxOk(ws, ['compile', 'tiny']);
    assert.ok(/Nx read the output from the cache instead of running the command for 2 out of 2 tasks/.test(again), again);
  } finally {
    writeFileSync(config, good);
    rmSync(path.join(ws, 'models', 'extra'), { recursive: true, force: true });
  }
});

test('deleted records come back: the cache restores tune\'s output, and the next tune or compile that runs merges it into the store', () => {
  const before = new Set(storeMeasurements(ws).keys());
  rmSync(recordsFile(ws));
  rmSync(tuneOutput(ws, 'tiny'));
  const out = nxOk(ws, ['compile', 'tiny', '--outputStyle=stream']);
  assert.ok(/tiny:tune +\[local cache\]/.test(out), out);
  assert.equal(new Set(storeMeasurements(ws, true).keys()), before, 'the restored output holds every measurement');
  // compile was a cache hit too (it would pick the same records); the next run merges.
  const merged = nxOk(ws, ['tune', 'tiny', '--skip-nx-cache', '--outputStyle=stream']);
  assert.ok(/merged \d+ measurement\(s\) from restored tune outputs into the store/.test(merged), merged);
  assert.equal(new Set(storeMeasurements(ws).keys()), before);
});

test('a cache restore never takes a measurement away: the CLI appends to the store, then nx compile', () => {
  // The sequence: nx tune (cached), tensortune tune on the same log, nx compile.
  const start = storeMeasurements(ws).size;
  const cli = sh(process.execPath, [path.join(ws, 'node_modules', 'tensortune', 'bin', 'tensortune.js'), 'tune', 'models/tiny/tiny.onnx',
    '--target', 'llvm -mcpu=native', '--records', recordsFile(ws), '--trials', String(start + 8), '--batch-size', '4', '--threads', '1'], ws, NX_ENV);
  assert.is(cli.status, 0, cli.stderr + cli.stdout);
  const afterCli = storeMeasurements(ws);
  assert.ok(afterCli.size > start, `the CLI appended measurements: ${start} -> ${afterCli.size}`);
  const out = nxOk(ws, ['compile', 'tiny', '--outputStyle=stream']);
  assert.match(out, /\[local cache\]|existing outputs match the cache/, 'tune was a cache hit');
  assert.match(out, /records used: /);
  const afterCompile = storeMeasurements(ws);
  for (const line of afterCli.keys()) assert.ok(afterCompile.has(line), 'no measurement lost');
  assertCompiledWithBest(ws);
});

test('a second budget: nx tune -c full, then the default nx compile uses the best of both', () => {
  const start = storeMeasurements(ws);
  nxOk(ws, ['tune', 'tiny', '-c', 'full', '--outputStyle=stream']);
  const afterFull = storeMeasurements(ws);
  for (const line of start.keys()) assert.ok(afterFull.has(line), 'no measurement lost');
  assert.ok([...afterFull.values()].some((r) => r.budget === 'full'), 'records tagged with their budget');
  assert.ok(existsSync(tuneOutput(ws, 'full')) && existsSync(tuneOutput(ws, 'tiny')), 'one output per budget');
  const out = nxOk(ws, ['compile', 'tiny', '--outputStyle=stream']);
  assert.match(out, /\[local cache\]|existing outputs match the cache/, 'tune (tiny) was a cache hit');
  const afterCompile = storeMeasurements(ws);
  for (const line of afterFull.keys()) assert.ok(afterCompile.has(line), 'the tiny restore took nothing away');
  assertCompiledWithBest(ws);
  assert.not.match(out, /note: budget/, `every budget was tuned here; tune outputs: ${readdirSync(path.join(storeDir(ws), 'nx', 'tiny')).join(', ')}; compile printed:\n${out.slice(-3000)}`);
  const m = manifestOf(ws);
  assert.is(Object.values(m.records.by_budget).reduce((a, b) => a + b, 0), m.records.tuned);
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
  // The 1x1 conv is a new task with no Winograd alternative; the first conv, its Winograd task, the pooling and the dense layer are unchanged.
  assert.is(added.length, 1, `one new task tuned, got ${added.length}`);
  assert.is((out.match(/trials-per-task budget spent/g) ?? []).length, 4, 'the 4 unchanged tasks are skipped');
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

test("the README's CI commands: a clone compiles with the records of the full budget tuned on another machine", async () => {
  server = await startCacheServer('e2e-token');
  const remote = { NX_SELF_HOSTED_REMOTE_CACHE_SERVER: server.url, NX_SELF_HOSTED_REMOTE_CACHE_ACCESS_TOKEN: 'e2e-token' };
  // The tuning machine: its local cache is emptied so the full budget's tune runs and
  // uploads (quickly: the store already holds its trials, the kernels the object cache).
  nxOk(ws, ['reset', '--only-cache']);
  await nxAsync(ws, ['run-many', '-t', 'compile', '-c', 'full'], remote);
  assert.ok(server.log.some((l) => /^PUT \S+ 20\d$/.test(l)), `nothing uploaded: ${server.log.join('; ')}`);

  // CI: a fresh clone (same sources and lockfile, empty store, empty local cache).
  mkdirSync(clone, { recursive: true });
  for (const f of ['package.json', 'package-lock.json', 'nx.json', 'tensortune.config.yaml', '.gitignore']) cpSync(path.join(ws, f), path.join(clone, f));
  cpSync(path.join(ws, 'models'), path.join(clone, 'models'), { recursive: true });
  cpSync(path.join(ws, 'libs'), path.join(clone, 'libs'), { recursive: true });
  symlinkSync(path.join(ws, 'node_modules'), path.join(clone, 'node_modules'), 'dir');
  const ci = { ...remote, TENSORTUNE_REQUIRE_CACHED_TUNE: '1' };
  const out = await nxAsync(clone, ['run-many', '-t', 'compile', '-c', 'full', '--outputStyle=stream'], ci);
  assert.match(out, /tiny:tune:full.*\[remote cache\]|\[remote cache\].*tiny:tune:full/, `tune -c full restored from the remote cache:\n${out}`);
  assert.ok(existsSync(path.join(clone, 'dist', 'tensortune', 'tiny', 'cpu', 'model.so')));
  // The clone's store holds what the tuning machine knew for this network, and compiles the same kernels.
  assert.ok([...storeMeasurements(clone, true).values()].some((r) => r.budget === 'full'));
  const kernels = (dir: string): string[] => manifestOf(dir).kernels.map((k) => `${k.key} ${k.schedule} ${k.objectHash}`).sort();
  assert.equal(kernels(clone), kernels(ws));
  assertCompiledWithBest(clone);

  // A configuration nobody tuned: CI refuses to search, in one line, and exits non-zero.
  const miss = await nxAsyncResult(clone, ['tune', 'tiny', '-c', 'tiny', '--outputStyle=stream'], ci);
  assert.is.not(miss.code, 0);
  assert.match(miss.out, /tensortune tune: tiny: no cached tune for target cpu, budget tiny on a machine of this kind \(local or remote Nx cache\), and TENSORTUNE_REQUIRE_CACHED_TUNE=1 forbids searching here/);
  assert.not.match(miss.out, /    at /, 'no stack trace');
});

test('Nx options are honoured or refused, never dropped: nx tune --trials-per-task, -c ful, --target, --batch-size, an option benchmark does not take', () => {
  // tiny's budget (2 trials per task) is spent: the override tunes on past what the store holds per task, and says so.
  const perTask = new Map<string, number>();
  for (const r of storeMeasurements(ws).values()) perTask.set(r.key, (perTask.get(r.key) ?? 0) + 1);
  const n = String(Math.max(...perTask.values()) + 1);
  const more = nxOk(ws, ['tune', 'tiny', '--trials-per-task', n, '--policy', 'random', '--outputStyle=stream']);
  assert.match(more, new RegExp(`budget tiny with --trials-per-task ${n} --policy random`));
  assert.match(more, /tuning stopped \([a-z-]+\): [1-9]\d* new trial\(s\)/);
  // What Nx would drop is refused before any task runs, even one the cache holds (compile tiny is cached here).
  const cases: [string[], RegExp][] = [
    [['compile', 'tiny', '-c', 'ful'], /tensortune compile: -c ful: tiny:compile has no configuration 'ful' \(expected one of: tiny, full, cpu, cpu-tiny, cpu-full: /],
    [['compile', 'tiny', '--target', 'nosuch'], /tensortune compile: --target nosuch: Nx takes --target for itself \(the target to run\) and ignores it here; choose a target of tensortune\.config\.yaml with -c nosuch or --config-target nosuch/],
    [['tune', 'tiny', '--batch-size', '4'], /tensortune tune: --batch-size: Nx's parser takes it for one of its own flags and drops it; candidates measured per round are --measures-per-round/],
    [['benchmark', 'tiny', '--trials-per-task', '3'], /tensortune benchmark: unknown option --trials-per-task \(nx benchmark takes: --config-target, --repeat, /],
  ];
  for (const [args, message] of cases) {
    const r = nx(ws, [...args, '--outputStyle=stream']);
    assert.is.not(r.code, 0, args.join(' '));
    assert.match(r.out, message, r.out);
    assert.not.match(r.out, /    at /, 'no stack trace');
    assert.not.match(r.out, /nx run tiny:/, `${args.join(' ')}: no task ran`);
  }
});

test('GPU targets from the config: nx benchmark tiny -c cl tunes, compiles and runs on the OpenCL device; a Mali target with an aarch64 host compiles an aarch64 model.so', () => {
  const why = openclAvailable();
  if (why) { skip('GPU targets from the config (nx benchmark tiny -c cl)', why); return; }
  const configFile = path.join(ws, 'tensortune.config.yaml');
  const config = readFileSync(configFile, 'utf8');
  // After the CPU target (still the default): an OpenCL target and the seed's Mali target.
  writeFileSync(configFile, config.replace('    threads: 1\n', '    threads: 1\n  cl:\n    target: opencl\n  mali:\n    target: opencl -device=mali\n    host: llvm -mtriple=aarch64-linux-gnu\n'));
  nxOk(ws, ['benchmark', 'tiny', '-c', 'cl', '--outputStyle=stream']);
  const manifest = JSON.parse(readFileSync(path.join(ws, 'dist', 'tensortune', 'tiny', 'cl', 'manifest.json'), 'utf8')) as { target: string; kernels: { schedule: string }[] };
  assert.is(manifest.target, 'opencl');
  assert.ok(manifest.kernels.some((k) => k.schedule === 'tuned'), 'compiled with the OpenCL records');
  const opencl = [...storeMeasurements(ws).values()].filter((r) => r.target === 'opencl');
  assert.ok(opencl.some((r) => r.error === null), 'verified OpenCL measurements in the store');
  // spawnSync reports a missing program as `error` (sh would throw it).
  if (spawnSync('aarch64-linux-gnu-gcc', ['--version']).error) {
    skip('the Mali target compiles an aarch64 model.so', 'no aarch64-linux-gnu-gcc');
    return;
  }
  nxOk(ws, ['compile', 'tiny', '-c', 'mali', '--outputStyle=stream']);
  const elf = readFileSync(path.join(ws, 'dist', 'tensortune', 'tiny', 'mali', 'model.so'));
  assert.is(elf.readUInt16LE(18), 0xb7, 'e_machine of model.so is EM_AARCH64');
  // It runs on the board, not here: benchmark says so.
  const bench = nx(ws, ['benchmark', 'tiny', '-c', 'mali', '--outputStyle=stream']);
  assert.is.not(bench.code, 0);
  assert.match(bench.out, /aarch64/);
});

test.after(async () => {
  await server?.close();
  if (!KEEP) rmSync(base, { recursive: true, force: true });
  else console.log(`kept ${base}`);
});

test.run();
