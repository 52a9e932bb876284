import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ABI_VERSION, outputFileName } from '../runtime/abi';
import { ModelRunError, UserError } from '../runtime/errors';
import { encodeParams, writeParams } from '../runtime/params';
import { readFloat32File, writeFloat32File } from '../runtime/rawfile';
import { uniform } from '../runtime/random';
import { pairedSpeedup, runBench } from './bench';
import { compileSharedLibrary, loadExeca, nativeBinary, nativeDir } from './build';

const FAST = { repeat: 3, number: 1, minRepeatMs: 0, threads: 1 };
let dir = '';
let model = '';
let params = '';
let bench = '';

const file = (name: string): string => path.join(dir, name);

/** Runs tt_bench directly, for the exit code and stderr. */
async function rawBench(args: string[], env: Record<string, string> = {}): Promise<{ exitCode?: number; stderr: string; stdout: string }> {
  const { execa } = await loadExeca();
  const r = await execa(bench, args, { reject: false, env });
  return { exitCode: r.exitCode, stderr: r.stderr, stdout: r.stdout };
}

async function rejects<E extends Error>(p: Promise<unknown>, type: new (...a: never[]) => E, pattern: RegExp): Promise<E> {
  try {
    await p;
  } catch (e) {
    assert.instance(e, type);
    assert.match((e as Error).message, pattern);
    return e as E;
  }
  throw new Error(`expected a ${type.name}`);
}

test.before(async () => {
  dir = await fs.mkdtemp(path.join(tmpdir(), 'tt-bench-test-'));
  const source = path.join(nativeDir(), 'test', 'fixtures', 'tiny_model.c');
  model = file('tiny_model.so');
  params = file('tiny.params');
  await Promise.all([
    compileSharedLibrary([source], model),
    compileSharedLibrary([source], file('abi99.so'), { flags: ['-DTINY_ABI_VERSION=99'] }),
    writeParams(params, Float32Array.from([0.5])),
    writeParams(file('negative.params'), Float32Array.from([-1])),
    writeParams(file('two.params'), Float32Array.from([0.5, 1])),
  ]);
  bench = await nativeBinary('tt_bench');
});

test.after(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

test('random inputs: outputs saved, equal to 2x + p on the documented random data', async () => {
  const out = file('out-random');
  await runBench({ model, params, ...FAST, seed: 7, saveOutputs: out });
  assert.equal(await fs.readdir(out), [`${outputFileName('y')}.bin`]);
  const y = await readFloat32File(path.join(out, 'y.bin'), 6);
  const x = uniform(6, 7, 0); // input 0 under seed 7
  assert.equal(Array.from(y), Array.from(x, (v) => Math.fround(2 * v + 0.5)));
  assert.ok(x.every((v) => v >= 0 && v < 1));
});

test('JSON fields and the summary table', async () => {
  const r = await runBench({ model, params, ...FAST, warmup: 2 });
  for (const key of ['mean_ms', 'median_ms', 'max_ms', 'min_ms', 'std_ms'] as const) {
    assert.type(r[key], 'number');
    assert.ok(r[key] >= 0, key);
  }
  assert.is(r.threads, 1);
  assert.is(r.repeat, 3);
  assert.is(r.number, 1);
  assert.is(r.warmup, 2);
  assert.is(r.abi_version, ABI_VERSION);
  assert.is(r.runs_ms.length, 3);
  assert.ok(r.min_ms <= r.median_ms && r.median_ms <= r.max_ms);
  const lines = r.summary.split('\n');
  assert.is(lines.length, 3);
  assert.is(lines[0], 'Execution time summary:');
  assert.is(lines[1], ' mean (ms)   median (ms)    max (ms)     min (ms)     std (ms)');
  assert.match(lines[2]!, /^ +\d+\.\d{4}( +\d+\.\d{4}){4}$/);
  // each value is centred in a 12-character column, columns joined by one space
  const cells = [r.mean_ms, r.median_ms, r.max_ms, r.min_ms, r.std_ms].map((v) => {
    const s = v.toFixed(4);
    const pad = Math.max(0, 12 - s.length);
    return ' '.repeat(pad >> 1) + s + ' '.repeat(pad - (pad >> 1));
  });
  assert.is(lines[2], cells.join(' ').trimEnd());
});

test('min_repeat_ms grows number', async () => {
  const r = await runBench({ model, params, repeat: 2, number: 1, minRepeatMs: 2, threads: 1 });
  assert.ok(r.number > 1, `number ${r.number}`);
});

test('--alternate-threads: measurements in pairs, which count goes first alternating, each count warmed up once', async () => {
  const log = file('threads.log');
  const raw = await rawBench([model, params, '--repeat', '4', '--number', '2', '--warmup', '1', '--threads', '1', '--alternate-threads', '2', '--json', '-'], { TINY_THREAD_LOG: log });
  assert.is(raw.exitCode, 0, raw.stderr);
  const counts = (await fs.readFile(log, 'utf8')).trim().split('\n').map(Number);
  // pair 1: 1 then 2, each a warm-up run and 2 timed runs; pair 2: 2 then 1; and so on
  const pair = (first: number, second: number, warm: number): number[] => [...Array(warm + 2).fill(first), ...Array(warm + 2).fill(second)];
  assert.equal(counts, [...pair(1, 2, 1), ...pair(2, 1, 0), ...pair(1, 2, 0), ...pair(2, 1, 0)]);
  const json = JSON.parse(raw.stdout.slice(raw.stdout.indexOf('{'))) as { threads: number; runs_ms: number[]; alternate: { threads: number; number: number; runs_ms: number[] } };
  assert.is(json.threads, 1);
  assert.is(json.alternate.threads, 2);
  assert.is(json.alternate.number, 2);
  assert.is(json.alternate.runs_ms.length, 4);
});

test('--alternate-threads through runBench: each count grows its own number; pairedSpeedup is the median of the pairs\' ratios', async () => {
  const r = await runBench({ model, params, repeat: 3, number: 1, minRepeatMs: 1, threads: 1, alternateThreads: 2 });
  assert.is(r.alternate?.threads, 2);
  assert.is(r.alternate?.runs_ms.length, 3);
  assert.ok(r.number > 1 && (r.alternate?.number ?? 0) > 1, `${r.number} ${r.alternate?.number}`);
  assert.is(pairedSpeedup({ runs_ms: [2, 4, 9], alternate: { threads: 2, number: 1, runs_ms: [1, 1, 3] } }), 3);
  assert.throws(() => pairedSpeedup({ runs_ms: [2] }), /no alternate measurements/);
  const plain = await runBench({ model, params, ...FAST });
  assert.is(plain.alternate, undefined);
});

test('--input feeds a raw float32 file', async () => {
  const x = Float32Array.from([1, 2, 3, -4, 5.5, 0]);
  await writeFloat32File(file('x.bin'), x);
  const out = file('out-input');
  await runBench({ model, params, ...FAST, inputs: { x: file('x.bin') }, saveOutputs: out });
  assert.equal(Array.from(await readFloat32File(path.join(out, 'y.bin'))), [2.5, 4.5, 6.5, -7.5, 11.5, 0.5]);
});

test('--input with a wrong-size file: exit 2 and a message naming the input', async () => {
  await writeFloat32File(file('x5.bin'), new Float32Array(5));
  const raw = await rawBench([model, params, '--input', `x=${file('x5.bin')}`]);
  assert.is(raw.exitCode, 2);
  assert.is(
    raw.stderr,
    `tt_bench: --input x (shape [2,3]) '${file('x5.bin')}': expected 24 bytes (6 float32 values), the file has 20 bytes`,
  );
  await rejects(runBench({ model, params, ...FAST, inputs: { x: file('x5.bin') } }), UserError, /--input x \(shape \[2,3\]\)/);
  await rejects(runBench({ model, params, ...FAST, inputs: { z: file('x5.bin') } }), UserError, /the model has no input named 'z' \(its inputs: x\)/);
});

test('a FIFO as --input or as PARAMS.bin: refused at once (exit 2), never waiting for a writer', async () => {
  const { execa } = await loadExeca();
  const fifo = file('pipe.bin');
  await execa('mkfifo', [fifo]);
  // A hang would be killed by the timeout and fail here, not stall the suite.
  const run = (args: string[]) => execa(bench, args, { reject: false, timeout: 20_000 });
  const input = await run([model, params, '--input', `x=${fifo}`]);
  assert.is(input.timedOut, false);
  assert.is(input.exitCode, 2);
  assert.is(input.stderr, `tt_bench: --input x (shape [2,3]) '${fifo}': not a regular file`);
  const asParams = await run([model, fifo]);
  assert.is(asParams.timedOut, false);
  assert.is(asParams.exitCode, 2);
  assert.is(asParams.stderr, `tt_bench: PARAMS.bin '${fifo}': not a regular file`);
});

test('ABI mismatch: a clear error', async () => {
  const raw = await rawBench([file('abi99.so'), params]);
  assert.is(raw.exitCode, 2);
  assert.match(raw.stderr, /^tt_bench: MODEL\.so '.*abi99\.so': built for tensortune ABI version 99, this runner speaks version 2; recompile/);
  await rejects(runBench({ model: file('abi99.so'), params, ...FAST }), UserError, /ABI version 99/);
});

test('params: bad hash, wrong count, not a params file', async () => {
  const bytes = encodeParams(Float32Array.from([0.5]));
  bytes[32] ^= 0x10;
  await fs.writeFile(file('bad-hash.params'), bytes);
  const raw = await rawBench([model, file('bad-hash.params')]);
  assert.is(raw.exitCode, 2);
  assert.match(raw.stderr, /^tt_bench: PARAMS\.bin '.*bad-hash\.params': payload hash mismatch \(header [0-9a-f]{16}, payload [0-9a-f]{16}\): the file is corrupt or truncated$/);
  await rejects(runBench({ model, params: file('two.params'), ...FAST }), UserError, /holds 2 float32 values, the model expects 1/);
  await rejects(runBench({ model, params: model, ...FAST }), UserError, /bad magic, expected "TTPARAM1"/);
});

test('a failing model: exit 3 with the model\'s message', async () => {
  const raw = await rawBench([model, file('negative.params')]);
  assert.is(raw.exitCode, 3);
  assert.match(raw.stderr, /tt_init failed: tiny_model: params\[0\] must be non-negative/);
  await rejects(runBench({ model, params: file('negative.params'), ...FAST }), ModelRunError, /tt_init failed/);
});

test('usage errors: exit 2, one line naming the flag', async () => {
  for (const [args, pattern] of [
    [[model, params, '--repeat', '0'], /^tt_bench: --repeat: expected an integer in \[1, 1000000\], got '0'$/],
    [[model, params, '--threads'], /^tt_bench: --threads: missing value$/],
    [[model, params, '--alternate-threads', '0'], /^tt_bench: --alternate-threads: expected an integer in \[1, 4096\], got '0'$/],
    [[model, params, '--input', 'x'], /^tt_bench: --input: expected NAME=FILE, got 'x'$/],
    [[file('missing.so'), params], /^tt_bench: MODEL\.so '.*missing\.so': cannot load: /],
  ] as [string[], RegExp][]) {
    const raw = await rawBench(args);
    assert.is(raw.exitCode, 2, args.join(' '));
    assert.match(raw.stderr, pattern);
    assert.is(raw.stderr.trim().split('\n').length, 1, raw.stderr);
  }
});

test('TT_PARENT_PID naming another process than the parent (it died before the runner asked to die with it): both tools exit at once', async () => {
  const { execa } = await loadExeca();
  const gone = String(process.ppid); // not the parent of the tools this test starts
  for (const binary of [bench, await nativeBinary('tt_measure')]) {
    const r = await execa(binary, ['--version'], { reject: false, env: { TT_PARENT_PID: gone } });
    assert.is(r.exitCode, 1, binary);
    assert.is(r.stderr, `${path.basename(binary)}: parent process ${gone} is gone, exiting`);
    assert.is(r.stdout, '');
    const ours = await execa(binary, ['--version'], { reject: false, env: { TT_PARENT_PID: String(process.pid) } });
    assert.is(ours.stdout, String(ABI_VERSION), 'the real parent: runs as usual');
  }
});

test.run();
