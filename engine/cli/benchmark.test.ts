// `tensortune benchmark` as a user runs it when things go wrong: a model.so that crashes
// the runner (a truncated library: SIGBUS) is one line and exit 3; a CLI killed with
// SIGKILL takes tt_bench down with it, and the next run removes its temp folder; figures
// that may not be trusted are a warning line each, and --json carries them.

import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fileSha256 } from '../compile/manifest';
import { compileNetwork } from '../compile/network';
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
  writeFileSync(manifest, JSON.stringify({ ...JSON.parse(readFileSync(manifest, 'utf8')) as object, library_sha256: fileSha256(library) }));
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

test('the threads and load under the summary; a warning line on stderr per reason, the same reasons in --json', async () => {
  const r = await start(model, '--repeat', '3', '--min-repeat-ms', '0', '--threads', '1', '--json').done;
  assert.is(r.code, 0, r.err);
  const lines = r.out.trimEnd().split('\n');
  assert.is(lines.length, 5, r.out);
  assert.is(lines[0], 'Execution time summary:');
  assert.match(lines[3], /^1 thread\(s\) of \d+ core\(s\), 3 measurement\(s\) of \d+ run\(s\); load average \d+\.\d\d before, \d+\.\d\d after$/);
  const json = JSON.parse(lines[4]) as { threads: number; cores: number; load_before: number; load_after: number; warnings: string[] };
  assert.is(json.threads, 1);
  assert.type(json.cores, 'number');
  assert.type(json.load_after, 'number');
  // Whether this machine is busy now is not the test's to know: the lines must match the JSON.
  assert.is(r.err, json.warnings.map((w) => `tensortune benchmark: warning: ${w}\n`).join(''));
});

test('a model whose records were ranked at another thread count: one warning naming the compile that ranks them', async () => {
  const ranked = path.join(dir, 'ranked-at-2');
  cpSync(model, ranked, { recursive: true });
  const manifestFile = path.join(ranked, 'manifest.json');
  writeFileSync(manifestFile, JSON.stringify({ ...JSON.parse(readFileSync(manifestFile, 'utf8')), records_threads: 2 }));
  const at1 = await start(ranked, '--repeat', '2', '--min-repeat-ms', '0', '--threads', '1', '--json').done;
  assert.is(at1.code, 0, at1.err);
  const warnings = (JSON.parse(at1.out.trimEnd().split('\n').at(-1)!) as { warnings: string[] }).warnings;
  assert.ok(warnings.includes('the model\'s records were ranked at 2 thread(s) (manifest records_threads) and it ran at 1: `tensortune compile --threads 1` ranks them for 1'), warnings.join('\n'));
  const at2 = await start(ranked, '--repeat', '2', '--min-repeat-ms', '0', '--threads', '2', '--json').done;
  assert.is(at2.code, 0, at2.err);
  assert.not.match(at2.err, /records_threads/);
});

test.run();
