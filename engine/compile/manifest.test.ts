import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { UserError } from '../errors';
import { checkManifest, readManifest, type Manifest } from './manifest';

const good: Manifest = {
  format_version: 1, engine_version: '0.1.0', name: 'mobilenet', target: 'llvm -mcpu=native', fingerprint: '0123456789abcdef',
  library: 'model.so', params: 'params.bin', library_sha256: 'a'.repeat(64), params_sha256: 'b'.repeat(64), params_count: 10, workspace_bytes: 64,
  inputs: [{ name: 'data', shape: [1, 8, 8, 3], dtype: 'float32' }],
  outputs: [{ name: 'output', shape: [1, 10], dtype: 'float32' }],
  kernels: [{ symbol: 'tt_k_00ff', groups: [0], key: '["k"]', desc: 'dense', schedule: 'default', source: 'default schedule', flops: 20, objectHash: 'ab12' }],
};

test('a well-formed manifest passes', () => {
  assert.equal(checkManifest(structuredClone(good), 'm.json'), good);
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
