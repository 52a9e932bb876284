// Benchmark records: what a bench script writes is what the schema accepts and reads back,
// and a bad file (not JSON, a wrong field, not a regular file) gets one line naming it and
// the field. Every committed record in bench/results/ is valid.

import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { commandLine, hostIsa, machineId, readRecord, readRecords, RESULTS_DIR, writeRecord, type ResultRecord } from './result-record';

const good: ResultRecord = {
  format: 1, kind: 'speedup', source: 'measured', date: '2026-12-01T10:00Z', version: '0.1.0', command: 'npx tsx bench/scaling.ts', target: 'llvm -mcpu=native',
  machine: { id: 'box-2c', cpu: 'a CPU', cores: 2, peak: [{ threads: 1, gflops: 50, when: 'before' }] },
  reference: { name: 'ONNX Runtime', version: '1.30.0' },
  results: [{ network: 'mobilenet', schedules: 'default', threads: 2, ours: 1.9, oursRange: [1.8, 1.95], reference: 1.85, machine: 1.97, rounds: 6 }],
};

function inTemp(body: (dir: string) => void): void {
  const dir = mkdtempSync(path.join(tmpdir(), 'tt-result-record-'));
  try {
    body(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('a written record reads back equal, under a name of its date, kind and machine', () => inTemp((dir) => {
  const file = writeRecord(good, path.join(dir, 'results'));
  assert.match(path.basename(file), /^2026-12-01-speedup-box-2c-[0-9a-f]{8}\.json$/);
  assert.equal(readRecord(file), good);
  assert.equal(readdirSync(path.join(dir, 'results')), [path.basename(file)]);
}));

test('a record the schema refuses is not written, and the message names the field', () => inTemp((dir) => {
  const bad = { ...good, results: [{ ...good.results[0], ours: -1 }] } as ResultRecord;
  assert.throws(() => writeRecord(bad, dir), /\/results\/0\/ours must be > 0/);
  assert.equal(readdirSync(dir), []);
}));

test('a vs-reference record needs its reference; a transcribed one names its source', () => inTemp((dir) => {
  const noRef = { ...good, kind: 'vs-reference', reference: undefined, results: [{ network: 'm', schedules: 'default', ratio: 1 }] };
  writeFileSync(path.join(dir, 'a.json'), JSON.stringify(noRef));
  assert.throws(() => readRecord(path.join(dir, 'a.json')), (e: Error) => e.message === `${path.join(dir, 'a.json')}: (top level) must have required property 'reference' (schemas/bench-result.schema.json)`);
  writeFileSync(path.join(dir, 'b.json'), JSON.stringify({ ...good, source: 'transcribed' }));
  assert.throws(() => readRecord(path.join(dir, 'b.json')), /b\.json: \(top level\) must have required property 'transcribed'/);
}));

test('not JSON, or not a regular file: one line naming the file', () => inTemp((dir) => {
  writeFileSync(path.join(dir, 'a.json'), '{"format": 1,');
  assert.throws(() => readRecord(path.join(dir, 'a.json')), (e: Error) => e.message.startsWith(`${path.join(dir, 'a.json')}: not JSON`));
  mkdirSync(path.join(dir, 'd.json'));
  assert.throws(() => readRecord(path.join(dir, 'd.json')), (e: Error) => e.message === `${path.join(dir, 'd.json')}: not a regular file (a benchmark record is a .json file)`);
  rmSync(path.join(dir, 'd.json'), { recursive: true });
  symlinkSync(path.join(dir, 'a.json'), path.join(dir, 'l.json'));
  assert.throws(() => readRecord(path.join(dir, 'l.json')), /l\.json: not a regular file/);
}));

test('machine ids and command lines', () => {
  assert.is(machineId('AMD EPYC 9R14 96-Core Processor', 2), 'amd-epyc-9r14-96-core-2c');
  assert.is(machineId('Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz', 2), 'intel-xeon-platinum-8259cl-2c');
  assert.is(machineId('AMD EPYC', 2, 'avx512'), 'amd-epyc-avx512-2c');
  assert.equal(hostIsa(new Set(['avx2', 'fma', 'avx512f'])), { id: 'avx512', text: 'AVX-512' });
  assert.equal(hostIsa(new Set(['avx2', 'fma'])), { id: 'avx2', text: 'AVX2 only (no AVX-512)' });
  assert.is(hostIsa(new Set(['sse2'])), undefined);
  assert.is(commandLine('bench/peak.ts', ['--target', 'llvm -mcpu=native', '--threads', '2']), 'npx tsx bench/peak.ts --target "llvm -mcpu=native" --threads 2');
});

test('every committed record is valid', () => {
  const all = readRecords(RESULTS_DIR);
  assert.ok(all.length > 0);
  for (const { record } of all) if (record.source === 'transcribed') assert.ok(record.transcribed, 'a transcribed record names its source');
});

test.run();
