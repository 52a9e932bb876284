// Errors users hit with --records, --out and --cache, through the real CLI and real
// filesystem failures: one line naming the path and the cause, exit code 2, no stack.
//   EACCES  a directory without write permission; as root the CLI runs as the user nobody
//           (permission bits do not stop root), otherwise as is
//   EPERM   an immutable file (chattr +i stops root too)
//   EEXIST  a --cache folder holding a regular file where compile makes a folder
//   ENOTDIR --records under a regular file
//   ENOSPC  a tmpfs of two pages that fills up in the middle of an append (the log is cut
//           back to its last whole line), one of one page where distill writes its output
// A case that cannot be built here (no mount privilege, no chattr, Windows) is skipped with skip(), which says why.

import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { NetBuilder } from '../frontend/builder';
import { writeOnnxFile } from '../frontend/onnx/export';
import { mountTmpfs, permissionsApply, setImmutable, unmount, unprivileged } from '../fs-faults.fixture';
import { RECORD_FORMAT_VERSION } from '../records/record';
import { skip } from '../skip.fixture';

const BIN = path.resolve(__dirname, '..', '..', 'bin', 'tensortune.js');
const dir = mkdtempSync(path.join(tmpdir(), 'tt-cli-errors-'));
const file = (...parts: string[]): string => path.join(dir, ...parts);
const onnx = file('net.onnx');

interface Result { code: number | null; out: string; err: string }

function cli(args: string[], opts: { unprivileged?: boolean } = {}): Promise<Result> {
  const as = opts.unprivileged ? unprivileged() : {};
  // An unprivileged CLI needs a temp dir of its own (tsx's cache, the compiler's files).
  const env = { ...process.env, CI: '', ...(opts.unprivileged ? { TMPDIR: file('tmp-any'), TENSORTUNE_CACHE_DIR: file('cache-any') } : {}) };
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env, ...as });
    let out = '', err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => { out += d; });
    child.stderr.setEncoding('utf8').on('data', (d: string) => { err += d; });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

function expectLine(r: Result, line: string, what: string): void {
  assert.is(r.code, 2, `${what}: exit code; stderr: ${r.err}`);
  assert.is(r.err, `${line}\n`, what);
}

test.before(() => {
  chmodSync(dir, 0o755); // the user nobody walks through it
  for (const d of ['tmp-any', 'cache-any']) { mkdirSync(file(d)); chmodSync(file(d), 0o777); }
  mkdirSync(file('read-only'));
  chmodSync(file('read-only'), 0o555);
  writeFileSync(file('a-file'), 'not a directory\n');
  const b = new NetBuilder({ batch: 1, layout: 'NCHW', imageSize: 8, seed: 1, randomStats: true, weights: 'random' });
  b.graph.outputs = [b.relu(b.conv2d(b.input(4), 'conv', { channels: 8, kernel: [3, 3], padding: [1, 1] }))];
  writeOnnxFile(onnx, b.graph);
  chmodSync(onnx, 0o644);
});

test.after(() => rmSync(dir, { recursive: true, force: true }));

test('EACCES: tune --records and compile --cache in a directory without write permission', async () => {
  const why = permissionsApply();
  if (why) { skip('CLI EACCES: tune --records and compile --cache in a read-only folder', why); return; }
  const ro = file('read-only');
  const records = path.join(ro, 'log.jsonl');
  expectLine(await cli(['tune', 'mobilenet', '--records', records], { unprivileged: true }),
    `tensortune tune: cannot write the record log ${records}: permission denied (EACCES)`, 'tune --records');
  expectLine(await cli(['compile', onnx, '--out', file('out-ok'), '--cache', path.join(ro, 'cache')], { unprivileged: true }),
    `tensortune compile: cannot mkdir '${path.join(ro, 'cache')}': permission denied (EACCES)`, 'compile --cache');
  assert.equal(readdirSync(ro), [], 'nothing was created');
});

test('EPERM: tune --records naming an immutable log', async () => {
  const records = file('immutable.jsonl');
  writeFileSync(records, '');
  const why = setImmutable(records, true);
  if (why) { skip('CLI EPERM: tune --records naming an immutable log', why); return; }
  try {
    expectLine(await cli(['tune', 'mobilenet', '--records', records]),
      `tensortune tune: cannot write the record log ${records}: operation not permitted (EPERM)`, 'tune --records');
  } finally {
    setImmutable(records, false);
  }
});

test('EEXIST: a --cache folder with a file where compile makes a folder; ENOTDIR: tune --records under a regular file', async () => {
  const cache = file('cache-with-files');
  mkdirSync(cache);
  for (const name of ['objects', 'kernels', 'native']) writeFileSync(path.join(cache, name), '');
  const r = await cli(['compile', onnx, '--out', file('out-eexist'), '--cache', cache]);
  assert.is(r.code, 2, r.err);
  assert.match(r.err, new RegExp(`^tensortune compile: cannot mkdir '${cache}/[a-z]+': file already exists \\(EEXIST\\)\n$`));
  const records = file('a-file', 'log.jsonl');
  expectLine(await cli(['tune', 'mobilenet', '--records', records]),
    `tensortune tune: cannot write the record log ${records}: not a directory (ENOTDIR)`, 'tune --records');
  assert.is(readFileSync(file('a-file'), 'utf8'), 'not a directory\n');
});

test('ENOSPC in the middle of an append: one line, exit 2, the log cut back to its last whole line, no lock or temp file left', async () => {
  const mnt = file('small-fs');
  mkdirSync(mnt);
  const why = mountTmpfs(mnt, 2 * 4096);
  if (why) { skip('CLI ENOSPC: tune appending to a full disk', why); return; }
  try {
    // page 1: the log (a comment line, 4000 bytes); page 2: the lock; the first batch does not fit
    const records = path.join(mnt, 'log.jsonl');
    const before = '#' + 'x'.repeat(3998) + '\n';
    writeFileSync(records, before);
    const r = await cli(['tune', 'mobilenet', '--image-size', '32', '--target', 'llvm -mcpu=native', '--batch-size', '2', '--policy', 'random',
      '--trials', '200', '--records', records]);
    expectLine(r, `tensortune tune: cannot append to the record log ${records}: no space left on device (ENOSPC); ` +
      'the log was cut back to its last whole line', 'tune --records on a full disk');
    assert.is(readFileSync(records, 'utf8'), before);
    assert.equal(readdirSync(mnt), ['log.jsonl']);
  } finally {
    unmount(mnt);
  }
});

test('ENOSPC while distill writes its output: one line naming it, exit 2, no lock or *.tmp-PID left', async () => {
  const mnt = file('one-page-fs');
  mkdirSync(mnt);
  const why = mountTmpfs(mnt, 4096); // the lock takes the one page; the output does not fit
  if (why) { skip('CLI ENOSPC: distill writing to a full disk', why); return; }
  try {
    const input = file('in.jsonl');
    writeFileSync(input, JSON.stringify({
      v: RECORD_FORMAT_VERSION, engine: '0.1.0', key: '["0123456789abcdef0123456789abcdef", [1, 4], [1, 4]]', desc: 'add 1x4',
      target: 'llvm -mcpu=native', fingerprint: '0123456789abcdef', steps: [{ s: 'split', stage: 'T_add', iter: 'ax1', lengths: [2] }],
      costs_ms: [1], error: null, seed: 0, time: '2024-05-01T10:00:00.000Z',
    }) + '\n');
    const out = path.join(mnt, 'best.jsonl');
    expectLine(await cli(['distill', input, '--out', out]), `tensortune distill: cannot write ${out}: no space left on device (ENOSPC)`, 'distill --out');
    assert.equal(readdirSync(mnt), []);
  } finally {
    unmount(mnt);
  }
});

test.run();
