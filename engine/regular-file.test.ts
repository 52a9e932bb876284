// Paths that are not regular files, where the CLI reads a path: a FIFO as the model, as
// --records, as --read-records and as benchmark --input, and a link to /dev/zero as the
// model. Each is refused in one line naming the path, exit code 2, before anything is read
// or written; the children are killed past a time limit, so a hang fails the test. Then
// the size limits of regular-file.ts on regular files, and the other files read where a
// FIFO may sit (a comparison file, the benchmark history).

import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { NetBuilder } from './frontend/builder';
import { writeOnnxFile } from './frontend/onnx/export';
import { canMeasureRss, makeFifo, releaseFifo, runCliWithin, type BoundedRun } from './not-regular.fixture';
import { byteLimit, checkRegularIfPresent, FileTooLargeError, NotRegularFileError, readRegularFile, readRegularFileSync } from './regular-file';
import { readHistory } from '../executors/benchmark/report';
import { readComparison } from './report/comparison-file';
import { inputFiles } from './runtime/rawfile';
import { skip } from './skip.fixture';

const dir = mkdtempSync(path.join(tmpdir(), 'tt-regular-'));
const file = (...parts: string[]): string => path.join(dir, ...parts);
const fifos: string[] = [];

function fifo(name: string): string | undefined {
  const at = file(name);
  if (existsSync(at)) return at;
  const why = makeFifo(at);
  if (why) return undefined;
  fifos.push(at);
  return at;
}

/** Exit code 2, one line on stderr (and it ended by itself). */
function refused(r: BoundedRun, line: string, what: string): void {
  assert.not.ok(r.timedOut, `${what}: it hung (killed at the time limit)`);
  assert.is(r.code, 2, `${what}: exit code; stderr: ${r.err}`);
  assert.is(r.err, `${line}\n`, what);
}

test.after(() => {
  for (const f of fifos) releaseFifo(f);
  rmSync(dir, { recursive: true, force: true });
});

test('a FIFO as the model, as --records and as --read-records: one line each, exit 2, nothing written', async () => {
  const model = fifo('f.onnx'), log = fifo('log.jsonl');
  if (!model || !log) { skip('FIFO as the model and the record log', makeFifo(file('probe'))); return; }
  refused(await runCliWithin(['tasks', model], { cwd: dir }), `tensortune tasks: the ONNX model ${model} is a FIFO (named pipe), expected a regular file`, 'tasks FIFO');
  refused(await runCliWithin(['tune', 'mobilenet', '--target', 'llvm', '--records', log], { cwd: dir }),
    `tensortune tune: the record log ${log} is a FIFO (named pipe), expected a JSON-lines file`, 'tune --records FIFO');
  refused(await runCliWithin(['tune', 'mobilenet', '--target', 'llvm', '--records', file('new.jsonl'), '--read-records', log], { cwd: dir }),
    `tensortune tune: records file ${log} is a FIFO (named pipe), expected a regular file`, 'tune --read-records FIFO');
  assert.equal(readdirSync(dir).sort(), ['f.onnx', 'log.jsonl'], 'no log, lock or temporary file was created');
});

test('a link to /dev/zero as the model: refused before a byte is read (the peak resident size stays small)', async () => {
  if (!existsSync('/dev/zero')) { skip('a link to /dev/zero as the model', 'no /dev/zero here'); return; }
  const model = file('zero.onnx');
  symlinkSync('/dev/zero', model);
  const r = await runCliWithin(['tasks', model], { cwd: dir, measureRss: true });
  refused(r, `tensortune tasks: the ONNX model ${model} (a link to /dev/zero) is a character device, expected a regular file`, 'tasks /dev/zero');
  if (!canMeasureRss()) { skip('peak resident size of tasks on a link to /dev/zero', 'no GNU time (/usr/bin/time) here'); return; }
  // The CLI alone takes about 100 MiB; reading /dev/zero grew it by gigabytes before it was refused.
  assert.ok(r.maxRssKiB! < 400 * 1024, `peak resident size ${r.maxRssKiB} KiB`);
});

test('benchmark --input NAME=FIFO: one line naming the flag and the path, exit 2, the runner never starts', async () => {
  const input = fifo('x.bin');
  if (!input) { skip('benchmark --input NAME=FIFO', makeFifo(file('probe'))); return; }
  const b = new NetBuilder({ batch: 1, layout: 'NCHW', imageSize: 4, seed: 1, randomStats: true, weights: 'random' });
  b.graph.outputs = [b.relu(b.input(2))];
  mkdirSync(file('m'));
  writeOnnxFile(file('m', 'net.onnx'), b.graph);
  const compiled = await runCliWithin(['compile', file('m', 'net.onnx'), '--target', 'llvm', '--out', file('m', 'out'), '--cache', file('m', 'cache')], { cwd: dir, limitMs: 300_000 });
  assert.is(compiled.code, 0, compiled.err);
  refused(await runCliWithin(['benchmark', file('m', 'out'), '--input', `x=${input}`, '--repeat', '1'], { cwd: dir }),
    `tensortune benchmark: --input x ${input} is a FIFO (named pipe), expected a regular file`, 'benchmark --input FIFO');
  // The compiled folder's own files: a FIFO in place of the manifest or of the library.
  for (const name of ['manifest.json', 'model.so']) {
    const copy = file(`m-${name}`);
    cpSync(file('m', 'out'), copy, { recursive: true });
    rmSync(path.join(copy, name));
    const swapped = fifo(path.join(`m-${name}`, name));
    if (!swapped) continue;
    const what = name === 'manifest.json' ? `the manifest ${swapped}` : swapped;
    refused(await runCliWithin(['benchmark', copy, '--repeat', '1'], { cwd: dir }),
      `tensortune benchmark: ${what} is a FIFO (named pipe), expected a regular file`, `benchmark with a FIFO ${name}`);
  }
  // The check itself only stats the path (the Nx benchmark executor resolves --input through it too).
  assert.throws(() => inputFiles([`x=${input}`], dir), (e: Error) => e instanceof NotRegularFileError);
  assert.throws(() => inputFiles(['x=missing.bin'], dir), /^--input x .*missing\.bin does not exist$/);
});

test('readRegularFile: the bytes of a regular file; a FIFO refused after a non-blocking open; the size limit, and the variable that raises it', async () => {
  writeFileSync(file('small.txt'), 'hello\n');
  const limit = { what: 'the thing', maxBytes: 6 };
  assert.is(readRegularFileSync(file('small.txt'), limit).toString(), 'hello\n');
  assert.is((await readRegularFile(file('small.txt'), limit)).toString(), 'hello\n');
  writeFileSync(file('empty.txt'), '');
  assert.is(readRegularFileSync(file('empty.txt'), limit).length, 0);
  const big = { ...limit, maxBytes: 5, raise: 'set X to raise it' };
  assert.throws(() => readRegularFileSync(file('small.txt'), big), (e: Error) => e instanceof FileTooLargeError &&
    e.message === `the thing ${file('small.txt')} has 6 bytes, more than the limit of 5 bytes; set X to raise it`);
  try {
    await readRegularFile(file('small.txt'), big);
    assert.unreachable('over the limit');
  } catch (e) {
    assert.instance(e, FileTooLargeError);
  }
  const pipe = fifo('p.fifo');
  if (pipe) {
    // A regression would block in open(); the release below frees it, so the test fails instead of hanging.
    const timer = setTimeout(() => releaseFifo(pipe), 10_000);
    try {
      await readRegularFile(pipe, limit);
      assert.unreachable('a FIFO was read');
    } catch (e) {
      assert.instance(e, NotRegularFileError);
      assert.is((e as Error).message, `the thing ${pipe} is a FIFO (named pipe), expected a regular file`);
    } finally {
      clearTimeout(timer);
    }
  }
  assert.throws(() => readRegularFileSync(dir, limit), new RegExp(`^the thing ${dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is a directory, expected a regular file$`));
  assert.throws(() => readRegularFileSync(file('nope'), limit), (e: NodeJS.ErrnoException) => e.code === 'ENOENT');

  const saved = process.env.TT_TEST_LIMIT;
  try {
    delete process.env.TT_TEST_LIMIT;
    assert.is(byteLimit('TT_TEST_LIMIT', 10), 10);
    process.env.TT_TEST_LIMIT = '4096';
    assert.is(byteLimit('TT_TEST_LIMIT', 10), 4096);
    process.env.TT_TEST_LIMIT = '4GB';
    assert.throws(() => byteLimit('TT_TEST_LIMIT', 10), /^TT_TEST_LIMIT="4GB": expected a positive number of bytes$/);
  } finally {
    if (saved === undefined) delete process.env.TT_TEST_LIMIT;
    else process.env.TT_TEST_LIMIT = saved;
  }
});

test('the other files read or appended to where a FIFO may sit: a comparison file, the benchmark history (refused before it is opened for appending)', () => {
  const pipe = fifo('other.fifo');
  if (!pipe) { skip('a comparison file and a benchmark history that are FIFOs', makeFifo(file('probe'))); return; }
  const timer = setTimeout(() => releaseFifo(pipe), 10_000);
  try {
    assert.throws(() => readComparison(pipe), (e: Error) => e instanceof NotRegularFileError && e.message === `the comparison file ${pipe} is a FIFO (named pipe), expected a regular file`);
    assert.throws(() => readHistory(pipe), (e: Error) => e instanceof NotRegularFileError && e.message === `the benchmark history ${pipe} is a FIFO (named pipe), expected a regular file`);
    assert.throws(() => checkRegularIfPresent(pipe, 'the benchmark history'), (e: Error) => e instanceof NotRegularFileError);
    checkRegularIfPresent(file('not-there.jsonl'), 'the benchmark history');
  } finally {
    clearTimeout(timer);
  }
});

test('the model size limit: a model over TENSORTUNE_MAX_MODEL_BYTES is refused in one line saying how to raise it', async () => {
  const b = new NetBuilder({ batch: 1, layout: 'NCHW', imageSize: 4, seed: 1, randomStats: true, weights: 'random' });
  b.graph.outputs = [b.relu(b.input(2))];
  writeOnnxFile(file('tiny.onnx'), b.graph);
  const r = await runCliWithin(['tasks', file('tiny.onnx')], { cwd: dir, env: { TENSORTUNE_MAX_MODEL_BYTES: '16' } });
  assert.not.ok(r.timedOut);
  assert.is(r.code, 2, r.err);
  assert.match(r.err, new RegExp(`^tensortune tasks: the ONNX model ${file('tiny.onnx').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} has \\d+ bytes, more than the limit of 16 bytes; set TENSORTUNE_MAX_MODEL_BYTES to raise it\\n$`));
});

test.run();
