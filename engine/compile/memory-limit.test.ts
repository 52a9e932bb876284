// A model of a hundred bytes can need gigabytes: `a[1,32768,1] + b[1,1,32768]` has a 4 GiB
// output. compile refuses it above --max-memory (default 4 GiB) before writing anything, and
// benchmark refuses such a compiled model before loading it, in one line naming the tensor,
// the size and the flag; the refused process stays small (resident size measured).

import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BIN } from '../cli/spawn.fixture';
import { UserError } from '../errors';
import { OnnxModelBuilder } from '../frontend/onnx/model-builder';
import { Graph } from '../graph/graph';
import { partition } from '../graph/fuse';
import { skip } from '../skip.fixture';
import { DEFAULT_MAX_MEMORY_BYTES, checkModelMemory, formatBytes, graphMemory, manifestMemory, parseMemorySize } from './memory-plan';

const work = mkdtempSync(path.join(tmpdir(), 'tt-memory-limit-test-'));
const N = 32768;
const model = path.join(work, 'broadcast.onnx');
writeFileSync(model, new OnnxModelBuilder(13).input('a', [1, N, 1]).input('b', [1, 1, N]).node('Add', ['a', 'b'], ['y']).output('y').build());

const hasPython = spawnSync('python3', ['-c', 'import resource'], { encoding: 'utf8' }).status === 0;

/**
 * `tensortune <args>` in a child process; with python3, through one that reports the largest
 * resident size (KiB) of the CLI and every process it waited for (getrusage RUSAGE_CHILDREN).
 */
function cli(args: readonly string[]): { code: number | null; out: string; err: string; maxRssKiB?: number } {
  const env = { ...process.env, TMPDIR: work };
  if (!hasPython) {
    const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env });
    return { code: r.status, out: r.stdout, err: r.stderr };
  }
  const script = 'import resource, subprocess, sys\n' +
    'r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n' +
    'sys.stdout.write(r.stdout); sys.stderr.write(r.stderr)\n' +
    'sys.stderr.write("\\nmaxrss %d\\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n' +
    'sys.exit(r.returncode)\n';
  const r = spawnSync('python3', ['-c', script, process.execPath, BIN, ...args], { encoding: 'utf8', env });
  const m = /\nmaxrss (\d+)\n$/.exec(r.stderr);
  return { code: r.status, out: r.stdout, err: m ? r.stderr.slice(0, m.index) : r.stderr, maxRssKiB: m ? Number(m[1]) : undefined };
}

/** The refused process never came near the model's size (Node and tsx alone take a few hundred MiB). */
function assertSmall(r: { maxRssKiB?: number }, what: string): void {
  if (r.maxRssKiB === undefined) { skip(`${what}: resident size`, 'python3 (getrusage of the child) is not installed'); return; }
  assert.ok(r.maxRssKiB < 1024 * 1024, `${what}: the largest resident size was ${formatBytes(r.maxRssKiB * 1024)}`);
}

test('memory sizes: units, and one line naming the flag for a bad one', () => {
  assert.is(parseMemorySize('8GiB', 'f'), 8 * 1024 ** 3);
  assert.is(parseMemorySize('512 MiB', 'f'), 512 * 1024 ** 2);
  assert.is(parseMemorySize('4GB', 'f'), 4e9);
  assert.is(parseMemorySize('1.5g', 'f'), 1.5e9);
  assert.is(parseMemorySize('1000', 'f'), 1000);
  for (const bad of ['', 'lots', '-1GiB', '0', '8 GiBs', '1e400']) {
    assert.throws(() => parseMemorySize(bad, '--max-memory'), (e: Error) => e instanceof UserError &&
      e.message.startsWith('--max-memory: expected a memory size such as 8GiB, 512MiB or 4GB') && e.message.endsWith(`got ${JSON.stringify(bad)}`), bad);
  }
  assert.is(formatBytes(4 * 1024 ** 3), '4.0 GiB');
  assert.is(formatBytes(12), '12 B');
  assert.is(DEFAULT_MAX_MEMORY_BYTES, 4 * 1024 ** 3);
});

test('what a model needs: inputs, outputs, weights and the planned workspace; its largest tensor named', () => {
  const g = new Graph();
  const x = g.input('x', [1, 1024]);
  const w = g.constant('w', [1024], new Float32Array(1024));
  const big = g.op('add', [x, w], {}, 'big');
  g.outputs = [g.op('relu', [big], {}, 'y')];
  const groups = partition(g);
  const needed = graphMemory(g, groups);
  assert.ok(needed.bytes >= 3 * 4096 && needed.bytes <= 4 * 4096 + 1024, String(needed.bytes));
  assert.throws(() => checkModelMemory(g, groups, 'm.onnx', { bytes: 4096, raise: 'RAISE' }), (e: Error) => e instanceof UserError &&
    /^m\.onnx: the model needs \d+\.\d KiB to run \((input 'x'|output 'y'|intermediate 'big'|the weights) \[?.*alone is 4\.0 KiB\), above the limit of 4\.0 KiB; RAISE$/.test(e.message));
  checkModelMemory(g, groups, 'm.onnx');
  const fromManifest = manifestMemory({ inputs: [{ name: 'a', shape: [1, N, 1], dtype: 'float32' }], outputs: [{ name: 'y', shape: [1, N, N], dtype: 'float32' }], params_count: 0, workspace_bytes: 0 });
  assert.equal(fromManifest.largest, { what: `output 'y' [1, ${N}, ${N}]`, bytes: 4 * 1024 ** 3 });
});

test('compile of the broadcast model: one line naming the output, its size and --max-memory, exit 2, nothing written, small', () => {
  const out = path.join(work, 'refused');
  const r = cli(['compile', model, '--target', 'llvm', '--out', out]);
  assert.is(r.code, 2, r.err);
  assert.is(r.err, `tensortune compile: ${model}: the model needs 4.0 GiB to run (output 'y' [1, ${N}, ${N}] alone is 4.0 GiB), ` +
    'above the limit of 4.0 GiB; raise the limit with --max-memory SIZE (e.g. --max-memory 16GiB)\n');
  assert.is(r.out, '');
  assert.not.ok(existsSync(out), 'no output folder');
  assert.equal(readdirSync(work).filter((n) => n.startsWith('.refused')), []);
  assertSmall(r, 'refused compile');
  const bad = cli(['compile', model, '--target', 'llvm', '--out', out, '--max-memory', 'plenty']);
  assert.is(bad.code, 2);
  assert.match(bad.err, /^tensortune compile: --max-memory: expected a memory size such as 8GiB/);
});

test('benchmark of the broadcast model compiled under a raised limit: refused before it is loaded, one line, exit 2, small', () => {
  const out = path.join(work, 'raised');
  const compiled = cli(['compile', model, '--target', 'llvm', '--out', out, '--max-memory', '8GiB']);
  assert.is(compiled.code, 0, compiled.err);
  const manifest = path.join(out, 'manifest.json');
  const r = cli(['benchmark', out, '--repeat', '1']);
  assert.is(r.code, 2, r.err);
  assert.is(r.err, `tensortune benchmark: ${manifest}: the model needs 4.0 GiB to run (output 'y' [1, ${N}, ${N}] alone is 4.0 GiB), ` +
    'above the limit of 4.0 GiB; raise the limit with --max-memory SIZE (e.g. --max-memory 16GiB)\n');
  assert.is(r.out, '', 'the runner never started');
  assertSmall(r, 'refused benchmark');
  const compare = cli(['benchmark', out, '--compare', 'onnxruntime', '--max-memory', '1GiB']);
  assert.is(compare.code, 2);
  assert.match(compare.err, /^tensortune benchmark: .*manifest\.json: the model needs 4\.0 GiB to run .*above the limit of 1\.0 GiB; raise the limit with --max-memory/);
});

test('tune of a matmul with a 4 GiB output: refused before measuring, one line naming the task and --max-memory, exit 2, no record, small', () => {
  const mm = path.join(work, 'outer.onnx');
  writeFileSync(mm, new OnnxModelBuilder(13).input('a', [1, N, 1]).input('b', [1, 1, N]).node('MatMul', ['a', 'b'], ['y']).output('y').build());
  const records = path.join(work, 'outer.jsonl');
  const r = cli(['tune', mm, '--target', 'llvm', '--records', records, '--trials', '2']);
  assert.is(r.code, 2, r.err);
  assert.match(r.err, new RegExp(`^tensortune tune: ${mm.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: task 0 \\(.*\\) needs 4\\.0 GiB to measure \\(tensor '.*' \\[1, ${N}, ${N}\\] alone is 4\\.0 GiB\\), ` +
    'above the limit of 4\\.0 GiB; raise the limit with --max-memory SIZE \\(e\\.g\\. --max-memory 16GiB\\)\n$'));
  assert.not.ok(existsSync(records) && readFileSync(records, 'utf8').trim() !== '', 'no measurement appended');
  assertSmall(r, 'refused tune');
});

test.after(() => rmSync(work, { recursive: true, force: true }));
test.run();
