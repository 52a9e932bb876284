// The manifest is sealed: an edit to any of its fields after compile (the input and output
// shapes, workspace_bytes, params_count, ...) is refused when the folder is read, in one
// line naming the file and the field; key order and spacing are not edits. `benchmark` of
// an edited folder exits 2 with that line and runs nothing.

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { main } from '../cli';
import { UserError } from '../errors';
import { OnnxModelBuilder } from '../frontend/onnx/model-builder';
import { fileSha256, readManifest, sealManifest, type Manifest } from './manifest';
import { compileNetwork } from '../app/compile';

const work = mkdtempSync(path.join(tmpdir(), 'tt-manifest-seal-test-'));

/** A folder with a library and params file and a sealed manifest listing them. */
function folder(name: string): { dir: string; manifest: Manifest; file: string } {
  const dir = path.join(work, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir);
  writeFileSync(path.join(dir, 'model.so'), 'library bytes');
  writeFileSync(path.join(dir, 'params.bin'), 'params bytes');
  const manifest = sealManifest({
    format_version: 1, engine_version: '0.1.0', name: 'net', target: 'llvm -mcpu=native', fingerprint: '0123456789abcdef', records_threads: 1,
    library: 'model.so', params: 'params.bin', library_sha256: fileSha256(path.join(dir, 'model.so')), params_sha256: fileSha256(path.join(dir, 'params.bin')),
    params_count: 10, workspace_bytes: 64,
    inputs: [{ name: 'x', shape: [1, 16], dtype: 'float32' }], outputs: [{ name: 'y', shape: [1, 16], dtype: 'float32' }],
    kernels: [{ symbol: 'tt_k_00ff', groups: [0], key: '["k"]', desc: 'add', schedule: 'default', source: 'default schedule', flops: 16, objectHash: 'ab12' }],
  });
  const file = path.join(dir, 'manifest.json');
  writeFileSync(file, JSON.stringify(manifest, null, 2));
  return { dir, manifest, file };
}

function refusal(dir: string): string {
  try {
    readManifest(dir);
  } catch (e) {
    assert.instance(e, UserError);
    return (e as Error).message;
  }
  assert.unreachable('the manifest was accepted');
  return '';
}

test('a sealed manifest reads back; reordered keys and other spacing are no edit', () => {
  const { dir, manifest, file } = folder('fine');
  assert.equal(readManifest(dir), manifest);
  const reordered = Object.fromEntries(Object.entries(manifest).reverse());
  writeFileSync(file, JSON.stringify(reordered));
  assert.equal(readManifest(dir), reordered);
});

test('an edited shape, workspace_bytes, params_count or any other field: one line naming the file and the field', () => {
  const edits: [string, (m: Manifest) => void][] = [
    ['inputs', (m) => { m.inputs[0].shape = [1, 1024]; }],
    ['outputs', (m) => { m.outputs[0].shape = [4, 16]; }],
    ['workspace_bytes', (m) => { m.workspace_bytes = 1 << 30; }],
    ['params_count', (m) => { m.params_count = 11; }],
    ['inputs', (m) => { m.inputs[0].dtype = 'int32'; }],
    ['records_threads', (m) => { m.records_threads = 2; }],
  ];
  for (const [field, edit] of edits) {
    const { dir, manifest, file } = folder(`edit-${field}`);
    edit(manifest);
    writeFileSync(file, JSON.stringify(manifest, null, 2));
    assert.is(refusal(dir), `${file}: field '${field}' was changed after compile (it does not match the manifest's seal; an application sizing buffers from it would be wrong): compile the model again`);
  }
});

test('a field added or removed after compile, a seal edited, a manifest without a seal', () => {
  let f = folder('added');
  const { records_threads: _r, ...unsealed } = f.manifest;
  writeFileSync(f.file, JSON.stringify(sealManifest(unsealed as Manifest)));
  readManifest(f.dir);
  writeFileSync(f.file, JSON.stringify({ ...sealManifest(unsealed as Manifest), records_threads: 4 }));
  assert.is(refusal(f.dir), `${f.file}: field 'records_threads' was added after compile (the manifest's seal does not cover it): compile the model again`);
  f = folder('removed');
  writeFileSync(f.file, JSON.stringify({ ...unsealed, seal: f.manifest.seal }));
  assert.is(refusal(f.dir), `${f.file}: field 'records_threads' was removed after compile (the manifest's seal covers it): compile the model again`);
  f = folder('seal-edited');
  writeFileSync(f.file, JSON.stringify({ ...f.manifest, seal: { ...f.manifest.seal, params_count: '0'.repeat(16) } }));
  assert.match(refusal(f.dir), /field 'params_count' was changed after compile/);
  f = folder('no-seal');
  const { seal: _s, ...bare } = f.manifest;
  writeFileSync(f.file, JSON.stringify(bare));
  assert.is(refusal(f.dir), `${f.file}: not a tensortune manifest: (top level) must have required property 'seal'`);
});

test('benchmark of a compiled folder whose manifest shapes were edited: exit 2, one line, nothing run', async () => {
  const model = path.join(work, 'add.onnx');
  writeFileSync(model, new OnnxModelBuilder(13).input('a', [1, 8]).input('b', [1, 8]).node('Add', ['a', 'b'], ['y']).output('y').build());
  const out = path.join(work, 'compiled');
  await compileNetwork({ model, target: 'llvm', outDir: out, cacheDir: path.join(work, 'cache') });
  const file = path.join(out, 'manifest.json');
  const m = JSON.parse(readFileSync(file, 'utf8')) as Manifest;
  assert.ok(m.seal && m.seal.inputs && m.seal.workspace_bytes && m.seal.params_count, 'compile seals the manifest');
  readManifest(out);
  m.inputs[0].shape = [1, 8192];
  writeFileSync(file, JSON.stringify(m, null, 2));
  let stdout = '', stderr = '';
  const code = await main(['benchmark', out, '--repeat', '1'], { out: (t) => { stdout += t; }, err: (t) => { stderr += t; } });
  assert.is(code, 2);
  assert.is(stderr, `tensortune benchmark: ${file}: field 'inputs' was changed after compile (it does not match the manifest's seal; an application sizing buffers from it would be wrong): compile the model again\n`);
  assert.is(stdout, '');
});

test.after(() => rmSync(work, { recursive: true, force: true }));
test.run();
