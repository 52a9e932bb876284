// tt_remote's request parser against bytes a host would never send (native/README.md,
// "tt_remote"): a byte count that does not parse, a payload cut short, an unknown verb or
// field, counts and names out of range. Each is one bad_request reply naming the field (or
// the end of the session with no reply when the stream ends), never a crash, and the
// worker's temp directory is gone when it exits. A request that fails after its files were
// written leaves none of them behind while the worker serves on.

import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeParams } from '../runtime/params';
import { parseTarget } from '../target';
import { workerBuild } from './device';
import { RemoteSession, shellQuote } from './session';

const target = parseTarget('llvm');

/** Runs the worker with `input` on its stdin (then closed): its reply lines and exit code. */
async function talk(tmp: string, input: Buffer | string): Promise<{ replies: Record<string, unknown>[]; code: number | null }> {
  const { path: binary } = await workerBuild(target);
  const { lines, code } = await new Promise<{ lines: string[]; code: number | null }>((resolve, reject) => {
    const child = spawn(binary, [], { stdio: ['pipe', 'pipe', 'ignore'], env: { ...process.env, TMPDIR: tmp } });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => { out += c; });
    child.stdin.on('error', () => {});
    child.on('error', reject);
    child.on('close', (exit) => resolve({ lines: out.trim().split('\n'), code: exit }));
    child.stdin.end(input);
  });
  assert.match(lines[0], /^\{"tt_remote":1,/, 'the hello comes first');
  return { replies: lines.slice(1).map((l) => JSON.parse(l) as Record<string, unknown>), code };
}

function withTmp(fn: (tmp: string) => Promise<void>): () => Promise<void> {
  return async () => {
    const tmp = mkdtempSync(path.join(tmpdir(), 'tt-remote-proto-'));
    try {
      await fn(tmp);
      assert.equal(readdirSync(tmp), [], 'the worker removed its temp directory');
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  };
}

test('a byte count that does not parse: one bad_request naming the field, and the session ends', withTmp(async (tmp) => {
  const r = await talk(tmp, 'measure m1\nlib 12x\nsymbol k\nend\nping\n');
  assert.equal(r.replies, [{ id: 'm1', ok: false, error: 'bad_request', message: "lib: expected a byte count, got '12x'" }]);
  assert.is(r.code, 0);
  const huge = await talk(tmp, `measure m2\nlib ${2 ** 30 + 1}\n`);
  assert.equal(huge.replies.map((x) => x.message), [`lib: expected a byte count, got '${2 ** 30 + 1}'`]);
}));

test('a payload cut short by the end of the stream: no reply (the host is gone), a clean exit', withTmp(async (tmp) => {
  const r = await talk(tmp, Buffer.concat([Buffer.from('measure m1\nlib 100\n'), Buffer.alloc(10, 0x41)]));
  assert.equal(r.replies, []);
  assert.is(r.code, 0);
}));

test('an unknown verb ends the session after its reply; an unknown field or a bad value is refused and the worker serves on', withTmp(async (tmp) => {
  const verb = await talk(tmp, 'GET / HTTP/1.1\nping\n');
  assert.equal(verb.replies.length, 1);
  assert.match(String(verb.replies[0].message), /^expected 'measure <id>', 'bench <id>', 'info <id>', 'ping' or 'quit' \(protocol 1\)$/);
  const fields = await talk(tmp, [
    'measure m1', 'colour blue', 'end',
    'measure m2', 'in 99999999999999999999', 'end',
    'measure m3', 'in 4', `symbol ${'k'.repeat(200)}`, 'end',
    'measure m4', 'repeat 0', 'end',
    'measure bad/id', 'end',
    'ping', '',
  ].join('\n'));
  assert.equal(fields.replies.map((x) => [x.id, x.error, x.message]), [
    ['m1', 'bad_request', "unknown field 'colour'"],
    ['m2', 'bad_request', "buffer 0: expected an element count, got '99999999999999999999'"],
    ['m3', 'bad_request', 'symbol: expected a name of 1-127 characters'],
    ['m4', 'bad_request', "repeat: expected a positive integer, got '0'"],
    ['', 'bad_request', 'the id must be 1-63 characters of [A-Za-z0-9_.-]'],
    [undefined, undefined, undefined],
  ]);
  assert.is(fields.replies[5].ok, true, 'ping answered after the refusals');
}));

test('a model that does not load: a runtime_error, and none of its files stay in the temp directory', withTmp(async (tmp) => {
  const { path: binary } = await workerBuild(target);
  const paramsDir = mkdtempSync(path.join(tmpdir(), 'tt-remote-proto-params-'));
  const params = path.join(paramsDir, 'params.bin');
  await writeParams(params, Float32Array.from([0.5]));
  const session = new RemoteSession(`TMPDIR=${shellQuote(tmp)} exec ${shellQuote(binary)}`, 'local worker');
  try {
    await session.start(30_000);
    const { reply } = await session.request('bench', 'b1', [['model', Buffer.from('not an ELF file')], ['params', readFileSync(params)]], 30_000);
    assert.is(reply.ok, false);
    assert.is(reply.error, 'runtime_error');
    assert.match(String(reply.message), /^cannot load the model library: /);
    // The next reply comes after the worker finished with the request before it.
    const { reply: again } = await session.request('info', 'i2', [], 30_000);
    assert.is(again.ok, true, 'the worker serves on');
    const dirs = readdirSync(tmp);
    assert.is(dirs.length, 1, 'the worker\'s own directory');
    assert.equal(readdirSync(path.join(tmp, dirs[0])), [], 'the model and params files are removed');
  } finally {
    await session.close();
    rmSync(paramsDir, { recursive: true, force: true });
  }
}));

test.run();
