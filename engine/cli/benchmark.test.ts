// `tensortune benchmark` as a user runs it when things go wrong: a model.so that crashes
// the runner (a truncated library: SIGBUS) is one line and exit 3; a CLI killed with
// SIGKILL takes tt_bench down with it, and the next run removes its temp folder; figures
// that may not be trusted are a warning line each, and --json carries them.

import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fileSha256, sealManifest, type Manifest } from '../compile/manifest';
import { compileNetwork } from '../app/compile';
import { NetBuilder } from '../frontend/builder';
import { writeOnnxFile } from '../frontend/onnx/export';
import { childProcesses, eventually, processGone } from '../fs-faults.fixture';
import { skip } from '../skip.fixture';
import { spawnCli, type CliRun } from './spawn.fixture';

const dir = mkdtempSync(path.join(tmpdir(), 'tt-cli-benchmark-'));
const model = path.join(dir, 'model');
const tmp = path.join(dir, 'tmp'); // TMPDIR of the spawned CLIs, so their temp folders are this test's

const start = (...args: string[]): CliRun => spawnCli(['benchmark', ...args], { TMPDIR: tmp });

test.before(async () => {
  mkdirSync(tmp);
  const b = new NetBuilder({ batch: 1, layout: 'NCHW', imageSize: 8, seed: 1, randomStats: true, weights: 'random' });
  b.graph.outputs = [b.relu(b.conv2d(b.input(4), 'conv', { channels: 8, kernel: [3, 3], padding: [1, 1] }))];
  const onnx = path.join(dir, 'net.onnx');
  writeOnnxFile(onnx, b.graph);
  await compileNetwork({ model: onnx, target: 'llvm -mcpu=native', outDir: model, log: () => undefined });
});

test.after(() => rmSync(dir, { recursive: true, force: true }));

test('a truncated model.so crashes the runner (SIGBUS): one line naming the library, exit 3', async () => {
  const broken = path.join(dir, 'truncated');
  cpSync(model, broken, { recursive: true });
  const library = path.join(broken, 'model.so');
  truncateSync(library, 4096); // the ELF headers survive, the segments they map do not
  // The manifest vouches for the truncated file (else reading it refuses the folder before
  // the runner starts): a library that breaks after the check, while it is loaded.
  const manifest = path.join(broken, 'manifest.json');
  writeFileSync(manifest, JSON.stringify(sealManifest({ ...JSON.parse(readFileSync(manifest, 'utf8')) as Manifest, library_sha256: fileSha256(library) })));
  const r = await start(broken, '--repeat', '1').done;
  assert.is(r.code, 3, r.err);
  assert.is(r.err, `tensortune benchmark: tt_bench: ${library}: the model crashed (SIGBUS: the library file is truncated or was changed ` +
    'while loaded; compile the model again)\n');
  assert.is(r.out, '');
});

test('SIGKILL of the CLI: tt_bench dies with it; the next run removes the temp folder it left', async () => {
  if (process.platform !== 'linux') { skip('benchmark: SIGKILL of the CLI', 'finding child processes needs Linux /proc'); return; }
  const run = start(model, '--repeat', '1000000', '--min-repeat-ms', '1000'); // hours, unless killed
  const cli = run.child.pid!;
  const runner = (): number | undefined =>
    childProcesses(cli).find((p) => p.comm === 'tt_bench' && p.cmdline.includes('--json'))?.pid;
  try {
    assert.ok(await eventually(() => runner() !== undefined), `tt_bench started: ${run.child.exitCode ?? 'running'}`);
    const bench = runner()!;
    try {
      run.child.kill('SIGKILL');
      assert.is((await run.done).signal, 'SIGKILL');
      assert.ok(await eventually(() => processGone(bench)), `tt_bench ${bench} is gone`);
    } finally {
      if (!processGone(bench)) process.kill(bench, 'SIGKILL');
    }
    const left = readdirSync(tmp).filter((n) => n.startsWith(`tt-bench-${cli}-`));
    assert.is(left.length, 1, 'the killed CLI left its temp folder');

    const next = await start(model, '--repeat', '1', '--min-repeat-ms', '0').done;
    assert.is(next.code, 0, next.err);
    assert.match(next.out, /^Execution time summary:\n/);
    assert.equal(readdirSync(tmp).filter((n) => n.startsWith('tt-bench-')), [], 'removed by the next run');
  } finally {
    run.child.kill('SIGKILL');
  }
});

test('--json: the JSON object alone on stdout; the summary, threads and load on stderr, a warning line per reason, the same reasons in the JSON', async () => {
  const r = await start(model, '--repeat', '3', '--min-repeat-ms', '0', '--threads', '1', '--json').done;
  assert.is(r.code, 0, r.err);
  assert.is(r.out.trimEnd().split('\n').length, 1, r.out);
  const json = JSON.parse(r.out) as { threads: number; cores: number; load_before: number; load_after: number; median_ms: number; warnings: string[] };
  assert.is(json.threads, 1);
  assert.type(json.cores, 'number');
  assert.type(json.load_after, 'number');
  const lines = r.err.trimEnd().split('\n');
  assert.is(lines[0], 'Execution time summary:');
  // The unit of the table follows the median: µs for a model under 1 ms.
  assert.match(lines[1], json.median_ms < 1 ? /^ mean \(µs\) {3}median \(µs\)/ : /^ mean \(ms\) {3}median \(ms\)/);
  assert.match(lines[3], /^1 thread\(s\) of \d+ core\(s\), 3 measurement\(s\) of \d+ run\(s\); load average \d+\.\d\d before, \d+\.\d\d after$/);
  // Whether this machine is busy now is not the test's to know: the lines must match the JSON.
  assert.equal(lines.slice(4), json.warnings.map((w) => `tensortune benchmark: warning: ${w}`));
});

test('benchmark --json | python3 -m json.tool: stdout is one JSON document', async () => {
  const python = spawnSync('python3', ['-c', 'import json.tool'], { encoding: 'utf8' });
  if (python.error || python.status !== 0) { skip('benchmark --json | python3 -m json.tool', 'no python3'); return; }
  const r = await start(model, '--repeat', '2', '--min-repeat-ms', '0', '--threads', '1', '--json').done;
  assert.is(r.code, 0, r.err);
  const tool = spawnSync('python3', ['-m', 'json.tool'], { input: r.out, encoding: 'utf8' });
  assert.is(tool.status, 0, tool.stderr);
  assert.is((JSON.parse(tool.stdout) as { threads: number }).threads, 1);
  // Without --json the summary is on stdout, which is not JSON.
  const plain = await start(model, '--repeat', '2', '--min-repeat-ms', '0', '--threads', '1').done;
  assert.match(plain.out, /^Execution time summary:\n/);
  assert.is.not(spawnSync('python3', ['-m', 'json.tool'], { input: plain.out, encoding: 'utf8' }).status, 0);
});

test('a model whose records were ranked at another thread count: one warning naming the compile that ranks them', async () => {
  const ranked = path.join(dir, 'ranked-at-2');
  cpSync(model, ranked, { recursive: true });
  const manifestFile = path.join(ranked, 'manifest.json');
  writeFileSync(manifestFile, JSON.stringify(sealManifest({ ...JSON.parse(readFileSync(manifestFile, 'utf8')) as Manifest, records_threads: 2 })));
  const at1 = await start(ranked, '--repeat', '2', '--min-repeat-ms', '0', '--threads', '1', '--json').done;
  assert.is(at1.code, 0, at1.err);
  const warnings = (JSON.parse(at1.out) as { warnings: string[] }).warnings;
  assert.ok(warnings.includes('the model\'s records were ranked at 2 thread(s) (manifest records_threads) and it ran at 1: `tensortune compile --threads 1` ranks them for 1'), warnings.join('\n'));
  const at2 = await start(ranked, '--repeat', '2', '--min-repeat-ms', '0', '--threads', '2', '--json').done;
  assert.is(at2.code, 0, at2.err);
  assert.not.match(at2.err, /records_threads/);
});

test('--compare onnxruntime where onnxruntime-node is not installed: one line saying how to install it, exit 2', async () => {
  // Node resolves 'onnxruntime-node' as in a workspace that lacks it: the preload makes the lookup fail.
  const hide = path.join(dir, 'hide-onnxruntime.cjs');
  writeFileSync(hide, `const Module = require('node:module');
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request === 'onnxruntime-node') throw Object.assign(new Error("Cannot find module 'onnxruntime-node'"), { code: 'MODULE_NOT_FOUND' });
  return resolve.call(this, request, ...rest);
};
`);
  const r = await spawnCli(['benchmark', model, '--compare', 'onnxruntime', '--rounds', '1', '--json'], { TMPDIR: tmp, NODE_OPTIONS: `--require ${hide}` }).done;
  assert.is(r.code, 2, r.err);
  assert.is(r.out, '');
  const lines = r.err.trimEnd().split('\n');
  assert.is(lines.at(-1), 'tensortune benchmark: onnxruntime-node is not installed: install it with `ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node` ' +
    '(the CPU runtime ships inside the npm package; `skip` only stops its install script from downloading GPU files, which fails offline)');
  assert.equal(lines.slice(0, -1).filter((l) => !l.startsWith('ONNX model: ')), [], 'nothing else but the line naming the ONNX file');
});

test.run();
