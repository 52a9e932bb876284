// `tensortune tune --records` refuses an Nx tune output of a record store (the file
// `nx tune` prints as its output): Nx rewrites it whole and a cache restore replaces it, so
// an append there would be lost. The refusal names the store log to append to instead.

import { existsSync, mkdirSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { nxTuneOutputLog } from './tune';
import { spawnCli } from './spawn.fixture';

test('the tune outputs of a store, and no other path, map to their store log', () => {
  const store = path.resolve('ws', '.tensortune', 'records');
  assert.is(nxTuneOutputLog(path.join(store, 'nx', 'mobilenet', 'cpu.tiny.jsonl')), path.join(store, 'mobilenet.cpu.jsonl'));
  assert.is(nxTuneOutputLog(path.join(store, 'nx', 'mobilenet', 'cpu.default.shard-1.jsonl')), path.join(store, 'mobilenet.cpu.jsonl'));
  for (const other of [path.join(store, 'mobilenet.cpu.jsonl'), path.join(store, 'nx', 'cpu.tiny.jsonl'), path.join(store, 'nx', 'mobilenet', 'tiny.jsonl'),
    path.join(store, 'other', 'mobilenet', 'cpu.tiny.jsonl'), 'records.jsonl']) {
    assert.is(nxTuneOutputLog(other), undefined, other);
  }
});

test('tune --records <a tune output>: one line naming the store log, exit 2, nothing written', async () => {
  const ws = mkdtempSync(path.join(tmpdir(), 'tt-cli-nx-output-'));
  const outputs = path.join(ws, '.tensortune', 'records', 'nx', 'mobilenet');
  mkdirSync(outputs, { recursive: true });
  const r = await spawnCli(['tune', 'mobilenet', '--image-size', '32', '--records', path.join(outputs, 'cpu.tiny.jsonl'), '--trials', '2']).done;
  assert.is(r.code, 2, r.err);
  const lines = r.err.trim().split('\n');
  assert.is(lines.length, 1, r.err);
  assert.match(lines[0], /--records .*cpu\.tiny\.jsonl: this is an Nx tune output, which only its `nx tune` target writes/);
  assert.match(lines[0], `append to the store log ${path.join(ws, '.tensortune', 'records', 'mobilenet.cpu.jsonl')} instead, or read it with --read-records`);
  assert.equal(readdirSync(outputs), [], 'nothing written into the outputs');
  assert.not.ok(existsSync(path.join(ws, '.tensortune', 'records', 'mobilenet.cpu.jsonl')));
});

test.run();
