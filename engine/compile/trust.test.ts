// compile trusts nothing it did not just make: a compiler that hangs on a tuned kernel gives
// way to the task's default schedule, a damaged cached object is rebuilt, a link failure
// names the cache, and the output folder is replaced whole (a compile killed during its
// link leaves the old model; benchmark refuses a folder that mixes two builds). The hanging
// compiler is a shell script in front of the real one that sleeps when one of its arguments
// contains $TT_TEST_HANG (an object's hash, or model.so for the link).

import { spawn } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { main } from '../cli';
import { loadOnnx } from '../frontend/onnx/import';
import { OnnxModelBuilder } from '../frontend/onnx/model-builder';
import { extractTasks } from '../graph/extract';
import { cachedFileOk, sealIntoCache } from '../native/file-cache';
import { appendRecords } from '../records/log';
import { RECORD_FORMAT_VERSION, type TuningRecord } from '../records/record';
import { uniform } from '../runtime/random';
import { defaultSchedule } from '../schedule/defaults';
import { hardwareFingerprint, parseTarget } from '../target';
import { readManifest } from './manifest';
import { compileNetwork } from '../app/compile';

const work = mkdtempSync(path.join(tmpdir(), 'tt-trust-test-'));
const target = parseTarget('llvm -mcpu=native');
const realCc = process.env.CC?.trim() || 'cc';

// A small conv network as an ONNX file, and a tuned record for its conv (another vector width).
const model = path.join(work, 'conv.onnx');
writeFileSync(model, new OnnxModelBuilder().input('x', [1, 8, 10, 10]).float('w', [32, 8, 3, 3], uniform(32 * 8 * 9, 5, 0))
  .node('Conv', ['x', 'w'], ['c'], { pads: [1, 1, 1, 1], kernel_shape: [3, 3] }).node('Relu', ['c'], ['y']).output('y').build());
const conv = extractTasks(loadOnnx(model).graph).find((t) => t.desc.startsWith('conv2d'))!;
const records = path.join(work, 'conv.jsonl');
const record: TuningRecord = {
  v: RECORD_FORMAT_VERSION, engine: '0.1.0', key: conv.key, desc: conv.desc, target: target.text, fingerprint: hardwareFingerprint(target),
  steps: defaultSchedule(conv.dag, { vectorLanes: target.vectorLanes === 4 ? 2 : 4 }), costs_ms: [1], error: null, seed: 0, time: new Date().toISOString(),
};

const wrapper = path.join(work, 'hanging-cc.sh');
writeFileSync(wrapper, [
  '#!/bin/sh',
  'if [ -n "$TT_TEST_HANG" ]; then',
  '  for a in "$@"; do',
  '    case "$a" in *"$TT_TEST_HANG"*) if [ -n "$TT_TEST_MARK" ]; then echo $$ > "$TT_TEST_MARK"; fi; exec sleep 600 ;; esac',
  '  done',
  'fi',
  `exec ${realCc} "$@"`,
  '',
].join('\n'));
chmodSync(wrapper, 0o755);

/** Runs `fn` with $CC set to the hanging compiler, hanging on arguments that contain `hang`. */
async function withHangingCc<T>(hang: string, fn: () => Promise<T>): Promise<T> {
  const saved = { CC: process.env.CC, TT_TEST_HANG: process.env.TT_TEST_HANG };
  process.env.CC = wrapper;
  process.env.TT_TEST_HANG = hang;
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '', err = '';
  const code = await main(args, { out: (t) => { out += t; }, err: (t) => { err += t; } });
  return { code, out, err };
}

const objectFile = (cache: string, hash: string): string => path.join(cache, 'objects', `${hash}.o`);
const removeObject = (cache: string, hash: string): void => {
  for (const f of [objectFile(cache, hash), `${objectFile(cache, hash)}.seal`]) rmSync(f, { force: true });
};

test.before(async () => {
  // The tuned record first (line 1), then a slower record of the current default schedule: a
  // log that measured its default, as a tune leaves it (compile warns about one that did not).
  await appendRecords(records, [record, { ...record, steps: defaultSchedule(conv.dag, { vectorLanes: target.vectorLanes }), costs_ms: [2] }]);
});

test('a tuned kernel whose compiler runs past --timeout falls back to the default schedule with a warning (exit 0); a default one is exit 2', async () => {
  const cache = path.join(work, 'cache-timeout');
  // Warm the cache with every kernel of both schedules, then remove the one to hang on: only
  // that kernel is compiled under the limit. The limit is 3 s, not 1: it also bounds the real
  // link of model.so (0.2-0.4 s here), which must finish on a slow or busy CI runner.
  const plain = await compileNetwork({ model, target: target.text, outDir: path.join(work, 'plain'), cacheDir: cache });
  const tuned = await compileNetwork({ model, target: target.text, outDir: path.join(work, 'tuned'), cacheDir: cache, records: [records] });
  const tunedKernel = tuned.kernels.find((k) => k.schedule === 'tuned')!;
  const defaultConv = plain.kernels.find((k) => k.key === conv.key)!;
  assert.ok(tunedKernel && defaultConv && tunedKernel.objectHash !== defaultConv.objectHash, 'the record gives the conv another kernel');
  removeObject(cache, tunedKernel.objectHash);

  const out = path.join(work, 'fallback');
  const r = await withHangingCc(tunedKernel.objectHash, () => cli('compile', model, '--records', records, '--cache', cache, '--out', out, '--timeout', '3'));
  assert.is(r.code, 0, r.err);
  assert.is(r.err, `tensortune compile: warning: kernel ${tunedKernel.symbol} (${tunedKernel.desc}) from ${path.basename(records)}:1 did not compile ` +
    '(the compiler did not finish within 3000 ms); its task uses the default schedule\n');
  const m = readManifest(out);
  assert.equal(m.kernels.map((k) => k.schedule), m.kernels.map(() => 'default'));
  assert.ok(m.kernels.some((k) => k.symbol === defaultConv.symbol));

  removeObject(cache, defaultConv.objectHash);
  const failed = await withHangingCc(defaultConv.objectHash, () => cli('compile', model, '--cache', cache, '--out', path.join(work, 'no-fallback'), '--timeout', '3'));
  assert.is(failed.code, 2);
  assert.is(failed.err, `tensortune compile: compiling kernel ${defaultConv.symbol} (${defaultConv.desc}, default schedule) failed:\nthe compiler did not finish within 3000 ms\n`);
  assert.not.ok(existsSync(path.join(work, 'no-fallback')), 'nothing written');
  assert.is((await cli('compile', model, '--out', out, '--timeout', '0')).err, "tensortune compile: bad --timeout '0' (expected a positive number)\n");
});

test('an empty, truncated or overwritten cached object is rebuilt; a bad object that matches its seal fails the link, naming the cache (exit 2)', async () => {
  const cache = path.join(work, 'cache-objects');
  const out = path.join(work, 'objects-out');
  const first = await compileNetwork({ model, target: target.text, outDir: out, cacheDir: cache });
  const obj = objectFile(cache, first.kernels[0].objectHash);
  const good = readFileSync(obj);
  const damage: [string, () => void][] = [
    ['empty', () => truncateSync(obj, 0)],
    ['truncated', () => truncateSync(obj, good.length >> 1)],
    ['overwritten', () => writeFileSync(obj, Buffer.alloc(good.length, 0x90))],
    ['missing seal', () => rmSync(`${obj}.seal`)],
  ];
  for (const [what, hurt] of damage) {
    hurt();
    assert.not.ok(await cachedFileOk(obj), what);
    const logs: string[] = [];
    const again = await compileNetwork({ model, target: target.text, outDir: out, cacheDir: cache, log: (l) => logs.push(l) });
    assert.is(again.compiled, 1, what);
    assert.equal(logs.filter((l) => l.startsWith('kernels: ')), [`kernels: 1 compiled, ${first.kernels.length - 1} reused from ${path.join(cache, 'objects')}`], what);
    assert.ok(readFileSync(obj).equals(good), `${what}: rebuilt`);
    assert.is((await cli('benchmark', out, '--repeat', '1', '--number', '1', '--min-repeat-ms', '0')).code, 0, what);
  }

  // Garbage sealed as if it were an object: the cache cannot tell, the link can.
  const garbage = path.join(work, 'garbage.o');
  writeFileSync(garbage, 'not an object file\n');
  assert.ok(await sealIntoCache(garbage, obj));
  const before = readFileSync(path.join(out, 'manifest.json'), 'utf8');
  const r = await cli('compile', model, '--cache', cache, '--out', out);
  assert.is(r.code, 2);
  assert.is(r.err.split('\n')[0], `tensortune compile: linking model.so for ${out} failed (its kernel objects come from the cache ${path.join(cache, 'objects')}; delete that folder to rebuild them):`);
  assert.is(readFileSync(path.join(out, 'manifest.json'), 'utf8'), before, 'the previous model is untouched');
  assert.is((await cli('benchmark', out, '--repeat', '1', '--number', '1', '--min-repeat-ms', '0')).code, 0);
  assert.equal(readdirSync(work).filter((n) => n.startsWith('.objects-out.')), [], 'no temp folder left');
});

test('compile --out D killed during its link leaves the old model whole, and the next compile removes its leftovers', async () => {
  const cache = path.join(work, 'cache-kill');
  const out = path.join(work, 'killed');
  await compileNetwork({ model, target: target.text, outDir: out, cacheDir: cache });
  const before = readFileSync(path.join(out, 'manifest.json'), 'utf8');
  const mark = path.join(work, 'linking.pid');
  const child = spawn(process.execPath, [path.resolve(__dirname, '..', '..', 'bin', 'tensortune.js'),
    'compile', model, '--records', records, '--cache', cache, '--out', out], {
    env: { ...process.env, CC: wrapper, TT_TEST_HANG: 'model.so', TT_TEST_MARK: mark }, stdio: 'ignore',
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  let linker = 0;
  for (let i = 0; i < 1200 && !linker; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    if (existsSync(mark)) linker = Number(readFileSync(mark, 'utf8').trim());
  }
  assert.ok(linker > 0, 'the child compile reached its link');
  child.kill('SIGKILL');
  process.kill(linker, 'SIGKILL'); // the hanging "linker" the killed compile started
  await exited;

  assert.is(readFileSync(path.join(out, 'manifest.json'), 'utf8'), before, 'the old manifest');
  assert.is((await cli('benchmark', out, '--repeat', '1', '--number', '1', '--min-repeat-ms', '0')).code, 0, 'with its own model.so');
  const leftovers = (): string[] => readdirSync(work).filter((n) => n.startsWith('.killed.'));
  assert.equal(leftovers().map((n) => n.replace(/-[A-Za-z0-9]{6}$/, '')), [`.killed.new-${child.pid}`]);
  const next = await compileNetwork({ model, target: target.text, outDir: out, cacheDir: cache, records: [records] });
  assert.ok(next.kernels.some((k) => k.schedule === 'tuned'));
  assert.equal(leftovers(), []);
  assert.ok(readManifest(out).kernels.some((k) => k.schedule === 'tuned'));
});

test('benchmark refuses a folder whose model.so or params.bin is not the one its manifest was written with (exit 2)', async () => {
  const cache = path.join(work, 'cache-mixed');
  const a = path.join(work, 'mixed-a'), b = path.join(work, 'mixed-b');
  await compileNetwork({ model, target: target.text, outDir: a, cacheDir: cache });
  await compileNetwork({ model, target: target.text, outDir: b, cacheDir: cache, records: [records] });
  const m = readManifest(a);
  copyFileSync(path.join(b, 'model.so'), path.join(a, 'model.so')); // a new library beside the old manifest
  const r = await cli('benchmark', a);
  assert.is(r.code, 2);
  const got = readManifest(b).library_sha256;
  assert.is(r.err, `tensortune benchmark: ${path.join(a, 'model.so')}: does not match ${path.join(a, 'manifest.json')} ` +
    `(sha256 ${got.slice(0, 16)}, the manifest says ${m.library_sha256.slice(0, 16)}): the folder mixes two builds; compile the model again\n`);
  assert.is(r.out, '');
  rmSync(path.join(b, 'params.bin'));
  const missing = await cli('benchmark', b);
  assert.is(missing.code, 2);
  assert.match(missing.err, new RegExp(`^tensortune benchmark: ${path.join(b, 'params.bin').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: cannot read it \\(ENOENT\\), yet .*manifest\\.json lists it; compile the model again\n$`));
});

test('compile refuses an output folder that holds files it did not write (exit 2), before compiling anything', async () => {
  const out = path.join(work, 'shared');
  mkdirSync(path.join(out, 'notes'), { recursive: true });
  writeFileSync(path.join(out, 'README.txt'), 'mine\n');
  const r = await cli('compile', model, '--cache', path.join(work, 'cache-refused'), '--out', out);
  assert.is(r.code, 2);
  assert.is(r.err, `tensortune compile: ${out}: holds files that compile did not write (README.txt, notes); compile replaces the whole folder, so give it a folder of its own\n`);
  assert.not.ok(existsSync(path.join(work, 'cache-refused', 'objects')), 'nothing compiled');
  assert.equal(readdirSync(out).sort(), ['README.txt', 'notes']);
});

test.after(() => rmSync(work, { recursive: true, force: true }));
test.run();
