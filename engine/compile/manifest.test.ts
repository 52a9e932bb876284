import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { UserError } from '../errors';
import { checkManifest, readManifest, recordsThreadsWarning, sealManifest, type Manifest } from './manifest';

const good: Manifest = sealManifest({
  format_version: 1, engine_version: '0.1.0', name: 'mobilenet', target: 'llvm -mcpu=native', fingerprint: '0123456789abcdef',
  library: 'model.so', params: 'params.bin', library_sha256: 'a'.repeat(64), params_sha256: 'b'.repeat(64), params_count: 10, workspace_bytes: 64,
  inputs: [{ name: 'data', shape: [1, 8, 8, 3], dtype: 'float32' }],
  outputs: [{ name: 'output', shape: [1, 10], dtype: 'float32' }],
  kernels: [{ symbol: 'tt_k_00ff', groups: [0], key: '["k"]', desc: 'dense', schedule: 'default', source: 'default schedule', flops: 20, objectHash: 'ab12' }],
});

test('recordsThreadsWarning: only a model whose kernels were ranked at another count than they run at', () => {
  assert.equal(recordsThreadsWarning(good, 1, 'FIX'), [], 'default schedules, or records ranked without a count');
  assert.equal(recordsThreadsWarning({ ...good, records_threads: 2 }, 2, 'FIX'), []);
  assert.equal(recordsThreadsWarning({ ...good, records_threads: 2 }, 1, 'FIX'), ['the model\'s records were ranked at 2 thread(s) (manifest records_threads) and it ran at 1: FIX']);
  // 16 samples: at 2 and at 4 threads each thread runs whole samples on one-thread kernels, as at 1; at 32 not.
  const batch = { ...good, samples: 16, records_threads: 2 };
  assert.equal(recordsThreadsWarning(batch, 4, 'FIX'), []);
  assert.equal(recordsThreadsWarning(batch, 1, 'FIX'), []);
  assert.equal(recordsThreadsWarning(batch, 32, 'FIX').length, 1);
});

test('a well-formed manifest passes', () => {
  assert.equal(checkManifest(structuredClone(good), 'm.json'), good);
});

test('a model compiled from a file: its relative path and hash, tensor names of any bytes, saved-output files, record ids', () => {
  const m: Manifest = {
    ...structuredClone(good), name: 'tf.onnx', model_file: '../../models/tf.onnx', model_sha256: 'c'.repeat(64),
    inputs: [{ name: 'x:0', shape: [1, 4], dtype: 'float32' }],
    outputs: [{ name: 'a/b:0', shape: [1, 4], dtype: 'float32', file: 'a_b_0-069de8c3.bin' }, { name: 'tab\there "é"', shape: [1], dtype: 'float32' }],
    kernels: [{ ...good.kernels[0], schedule: 'tuned', source: 'tf.cpu.jsonl:12', record: '0123456789abcdef0123456789abcdef', budget: 'full' }],
  };
  assert.equal(checkManifest(structuredClone(m), 'm.json'), m);
  for (const [what, edit, want] of [
    ['an absolute model_file', (x: Manifest) => { x.model_file = '/home/me/tf.onnx'; }, /\/model_file must match pattern/],
    ['a saved-output file with a path', (x: Manifest) => { x.outputs[0].file = '../a.bin'; }, /\/outputs\/0\/file must match pattern/],
    ['a record id that is no hash', (x: Manifest) => { x.kernels[0].record = '/tmp/x.jsonl:3'; }, /\/kernels\/0\/record must match pattern/],
  ] as const) {
    const bad = structuredClone(m);
    edit(bad);
    assert.throws(() => checkManifest(bad, 'm.json'), (e: Error) => e instanceof UserError && want.test(e.message), what);
  }
});

test('bad manifests: one message naming the file and the field', () => {
  const cases: [string, (m: Record<string, unknown>) => void, RegExp][] = [
    ['library with a path', (m) => { m.library = '../evil.so'; }, /m\.json: .*\/library/],
    ['shape of zero', (m) => { (m.inputs as { shape: number[] }[])[0].shape = [0]; }, /\/inputs\/0\/shape\/0/],
    ['missing outputs', (m) => { delete m.outputs; }, /outputs/],
    ['unknown field', (m) => { m.extra = 1; }, /extra/],
    ['future format', (m) => { m.format_version = 2; }, /format_version/],
    ['no library hash (an older compile)', (m) => { delete m.library_sha256; }, /m\.json: not a tensortune manifest: \(top level\) must have required property 'library_sha256'/],
  ];
  for (const [what, edit, want] of cases) {
    const m = structuredClone(good) as unknown as Record<string, unknown>;
    edit(m);
    try {
      checkManifest(m, 'm.json');
      assert.unreachable(`${what}: accepted`);
    } catch (e) {
      assert.instance(e, UserError, what);
      assert.match((e as Error).message, want, what);
    }
  }
});

test('readManifest: missing file and broken JSON', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tt-manifest-'));
  try {
    assert.throws(() => readManifest(dir), /manifest\.json: not found/);
    writeFileSync(path.join(dir, 'manifest.json'), '{"format_version": 1,');
    assert.throws(() => readManifest(dir), /not valid JSON/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
