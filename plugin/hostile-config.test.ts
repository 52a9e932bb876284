// Config files a hostile or careless user writes: a YAML alias bomb, a config that is a
// FIFO or too large, a model that is a link to /dev/zero (sharded or not), and records or
// outDir folders that leave the workspace. Each is one line naming the file and the field,
// fast, with bounded memory; the networks of the file keep their projects (whose targets
// report the error when run; for a model, that network's alone), other config files are untouched, no inferred input names a
// path that is not a regular file, and nothing is written outside the workspace. The
// cases that could hang run createNodes in a child killed past a time limit.

import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExecutorContext } from '@nx/devkit';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { canMeasureRss, makeFifo, releaseFifo, runScriptWithin } from '../engine/not-regular.fixture';
import { skip } from '../engine/skip.fixture';
import compileExecutor from '../executors/compile/executor';
import { captureConsole, writeNetWorkspace } from '../executors/workspace.fixture';
import { ConfigError, loadConfig, MAX_CONFIG_BYTES, validateConfig } from './config';
import { resolveRun } from './resolve';

const work = mkdtempSync(path.join(tmpdir(), 'tt-hostile-config-'));
const CHILD = path.join(__dirname, 'create-nodes-child.fixture.ts');
const GOOD = 'targets: { cpu: { target: llvm } }\nnetworks: { ok: { model: mobilenet } }\n';
const fifos: string[] = [];

interface Inferred {
  results: Record<string, { projects?: Record<string, { name: string; targets: Record<string, { inputs?: unknown[]; metadata?: { description?: string } }> }> }>;
  warnings: string[];
}

const plain = (s: string): string => s.replace(/\x1b\[[0-9;]*m/g, '');

/** A workspace folder of its own with `files` (text) in it. */
function workspace(name: string, files: Record<string, string>): string {
  const root = path.join(work, name);
  mkdirSync(root, { recursive: true });
  for (const [f, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, f)), { recursive: true });
    writeFileSync(path.join(root, f), text);
  }
  return root;
}

/** createNodes on `root` for `files` in a child (killed after a minute); its projects and warnings. */
async function inferInChild(root: string, files: string[]): Promise<Inferred & { maxRssKiB?: number }> {
  const r = await runScriptWithin(CHILD, [root, ...files], { cwd: root, measureRss: true });
  assert.not.ok(r.timedOut, 'createNodes hung (killed at the time limit)');
  assert.is(r.code, 0, r.err);
  const inferred = JSON.parse(r.out) as Inferred;
  return { ...inferred, warnings: inferred.warnings.map(plain), maxRssKiB: r.maxRssKiB };
}

function configError(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    assert.instance(e, ConfigError);
    return (e as Error).message;
  }
  throw new Error('expected a ConfigError');
}

test.after(() => {
  for (const f of fifos) releaseFifo(f);
  rmSync(work, { recursive: true, force: true });
});

test('a YAML alias bomb (nine levels of nine aliases): one line naming the file and why, at once; the other config files keep their projects', async () => {
  const levels = ['a0: &a0 [x, x, x, x, x, x, x, x, x]'];
  for (let i = 1; i <= 9; i++) levels.push(`a${i}: &a${i} [${Array(9).fill(`*a${i - 1}`).join(', ')}]`);
  const bomb = `${levels.join('\n')}\ntargets: { cpu: { target: llvm } }\nnetworks: { n: { model: mobilenet, targets: *a9 } }\n`;
  const root = workspace('bomb', { 'tensortune.config.yaml': bomb, 'other/tensortune.config.yaml': GOOD });
  const { results, warnings } = await inferInChild(root, ['tensortune.config.yaml', 'other/tensortune.config.yaml']);
  const why = 'tensortune.config.yaml: cannot be parsed: its YAML aliases expand to more than 100 copies (an alias bomb?); write the values out or share fewer';
  assert.equal(warnings, [`tensortune: ${why} (the projects of this file report it when run)`]);
  assert.equal(Object.keys(results['other/tensortune.config.yaml'].projects!), ['other/models/ok']);
  assert.is(configError(() => loadConfig('tensortune.config.yaml', root)), why);
});

test('a config file that is a FIFO, or larger than the config limit: one line naming the file, no hang', async () => {
  const root = workspace('fifo-config', { 'other/tensortune.config.yaml': GOOD });
  const config = path.join(root, 'tensortune.config.yaml');
  const why = makeFifo(config);
  if (why) skip('a config file that is a FIFO', why);
  else {
    fifos.push(config);
    const { results, warnings } = await inferInChild(root, ['tensortune.config.yaml', 'other/tensortune.config.yaml']);
    assert.equal(warnings, ['tensortune: tensortune.config.yaml: the file is a FIFO (named pipe), expected a regular file (the projects of this file report it when run)']);
    assert.equal(Object.keys(results['other/tensortune.config.yaml'].projects!), ['other/models/ok']);
  }
  const big = workspace('big-config', { 'tensortune.config.yaml': `${GOOD}${'# padding\n'.repeat(MAX_CONFIG_BYTES / 5)}` });
  assert.match(configError(() => loadConfig('tensortune.config.yaml', big)), /^tensortune\.config\.yaml: the file has 2 MiB, more than the limit of 1 MiB$/);
});

test('a model that is a link to /dev/zero (sharded or not), or a FIFO: one line naming the file, the network and the field; never read; no input names it', async () => {
  if (!existsSync('/dev/zero')) { skip('a model that is a link to /dev/zero', 'no /dev/zero here'); return; }
  const root = workspace('zero-model', {
    'tensortune.config.yaml': 'targets: { cpu: { target: llvm } }\nnetworks: { zero: { model: zero.onnx, shards: 2 }, ok: { model: mobilenet } }\n',
    'plain/tensortune.config.yaml': 'targets: { cpu: { target: llvm } }\nnetworks: { zero: { model: ../zero.onnx } }\n',
  });
  symlinkSync('/dev/zero', path.join(root, 'zero.onnx'));
  const { results, warnings, maxRssKiB } = await inferInChild(root, ['tensortune.config.yaml', 'plain/tensortune.config.yaml']);
  const why = (file: string, model: string): string => `${file}: networks.zero.model: model file "${model}" is a character device, expected a regular .onnx file`;
  assert.equal(warnings, [
    `tensortune: ${why('tensortune.config.yaml', 'zero.onnx')} (this network's targets report it when run)`,
    `tensortune: ${why(path.join('plain', 'tensortune.config.yaml'), '../zero.onnx')} (this network's targets report it when run)`,
  ]);
  // The network keeps its project and target names (a sharded one its shard targets too), with
  // no input for Nx to hash; the other network of the file is inferred as usual.
  const projects = results['tensortune.config.yaml'].projects!;
  assert.equal(Object.keys(projects).sort(), ['models/ok', 'models/zero']);
  assert.equal(Object.keys(projects['models/zero'].targets).sort(), ['benchmark', 'compile', 'tune', 'tune--0', 'tune--1']);
  for (const p of [projects['models/zero'], ...Object.values(results['plain/tensortune.config.yaml'].projects!)]) {
    for (const t of Object.values(p.targets)) {
      assert.not.ok(JSON.stringify(t.inputs ?? []).includes('zero.onnx'), `${p.name}: an input names the link`);
      assert.ok(t.metadata?.description?.includes('is a character device'), `${p.name}: the target reports the error`);
    }
  }
  const ok = projects['models/ok'].targets;
  assert.ok(ok.tune.inputs?.length && ok.compile.inputs?.length, 'the other network has its inputs');
  assert.not.ok(JSON.stringify(ok).includes('character device'), 'and no error');
  // At run time too: the broken network is refused, the other resolves.
  const loaded = loadConfig('tensortune.config.yaml', root);
  assert.is(resolveRun(loaded, root, 'ok').network, 'ok');
  assert.throws(() => resolveRun(loaded, root, 'zero'), (e: Error) => e instanceof ConfigError && e.message === why('tensortune.config.yaml', 'zero.onnx'));
  if (canMeasureRss()) assert.ok(maxRssKiB! < 600 * 1024, `peak resident size ${maxRssKiB} KiB: the link was read`);
  else skip('peak resident size of createNodes on a link to /dev/zero', 'no GNU time (/usr/bin/time) here');

  const fifo = path.join(root, 'f.onnx');
  const noFifo = makeFifo(fifo);
  if (noFifo) { skip('a model that is a FIFO', noFifo); return; }
  fifos.push(fifo);
  writeFileSync(path.join(root, 'f.yaml'), 'targets: { cpu: { target: llvm } }\nnetworks: { f: { model: f.onnx } }\n');
  assert.is(configError(() => resolveRun(loadConfig('f.yaml', root), root, 'f')), 'f.yaml: networks.f.model: model file "f.onnx" is a FIFO (named pipe), expected a regular .onnx file');
});

test('records and outDir that leave the workspace (../x, absolute): refused with the field named, before anything is written', async () => {
  const root = workspace('escape/ws', {});
  writeNetWorkspace(root);
  const with_ = (line: string): string => `${line}\ntargets: { cpu: { target: llvm } }\nnetworks: { net: { model: net.onnx } }\n`;
  const cases: [string, string, string][] = [
    ['outDir: /', 'outDir', '"/" (/)'],
    ['outDir: ../out', 'outDir', `"../out" (${path.join(work, 'escape', 'out')})`],
    ['records: ../records', 'records', `"../records" (${path.join(work, 'escape', 'records')})`],
    [`records: ${path.join(work, 'escape', 'abs')}`, 'records', `"${path.join(work, 'escape', 'abs')}" (${path.join(work, 'escape', 'abs')})`],
  ];
  for (const [line, field, shown] of cases) {
    writeFileSync(path.join(root, 'tensortune.config.yaml'), with_(line));
    assert.is(configError(() => loadConfig('tensortune.config.yaml', root)),
      `tensortune.config.yaml: ${field}: expected a folder inside the workspace ${root}, got ${shown}`, line);
    // The compile executor stops at the config: nothing is written outside the workspace, nor inside.
    const ctx = { root, cwd: root, isVerbose: false, projectName: 'net' } as unknown as ExecutorContext;
    const { value, lines } = await captureConsole(async () => (await compileExecutor({ config: 'tensortune.config.yaml', network: 'net' }, ctx).next()).value);
    assert.equal(value, { success: false }, line);
    assert.ok(lines.some((l) => l.includes(`${field}: expected a folder inside the workspace`)), lines.join('\n'));
  }
  assert.equal(readdirSync(path.join(work, 'escape')), ['ws'], 'nothing was created beside the workspace');
  assert.equal(readdirSync(root).sort(), ['net.onnx', 'tensortune.config.yaml'], 'nor in it');
  assert.not.ok(existsSync('/net'), 'nor at the filesystem root');

  // Inside is fine, however spelled; a config in a subfolder may reach the workspace's folders.
  writeFileSync(path.join(root, 'tensortune.config.yaml'), with_('records: ./a/../records\noutDir: out'));
  assert.is(resolveRun(loadConfig('tensortune.config.yaml', root), root, 'net').storeDir, path.join(root, 'records'));
  mkdirSync(path.join(root, 'sub'));
  writeFileSync(path.join(root, 'sub', 'tensortune.config.yaml'), 'records: ../common-records\ntargets: { cpu: { target: llvm } }\nnetworks: { m: { model: mobilenet } }\n');
  assert.is(resolveRun(loadConfig('sub/tensortune.config.yaml', root), root, 'm').storeDir, path.join(root, 'common-records'));
  // resolveRun holds the line for a config that was validated against another root.
  const loose = { file: path.join(root, 'x.yaml'), dir: root, config: validateConfig({ outDir: '../x', targets: { cpu: { target: 'llvm' } }, networks: { m: { model: 'mobilenet' } } }, 'x.yaml', root, path.dirname(root)) };
  assert.throws(() => resolveRun(loose, root, 'm'), /^x\.yaml: outDir: expected a folder inside the workspace /);
});

test.run();
