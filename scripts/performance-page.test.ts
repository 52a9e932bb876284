// docs/performance.md is what scripts/performance-page.ts generates from bench/results/ and
// docs/src/performance-studies.md: a record added or changed changes the page, and this fails
// until `npm run docs:performance` rewrites it. The standing takes, per network and kind of
// schedules, the latest run.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readRecords, RESULTS_DIR, type ResultRecord } from '../bench/result-record';
import { byDate, currentPage, DOC_FILE, networkLabel, performanceMarkdown, standing, type NamedRecord } from './performance-page';

test('docs/performance.md is up to date (else: npm run docs:performance)', () => {
  assert.fixture(readFileSync(DOC_FILE, 'utf8'), currentPage());
});

const record = (date: string, rows: [string, 'default' | 'tuned', number, number][], machine = 'box-2c'): ResultRecord => ({
  format: 1, kind: 'vs-reference', source: 'measured', date, version: '0.1.0', command: 'npx tsx bench/compare-ort.ts', target: 'llvm -mcpu=native',
  machine: { id: machine, cpu: 'a CPU', cores: 2 }, reference: { name: 'ONNX Runtime' },
  results: rows.map(([network, schedules, threads, ratio]) => ({ network, schedules, threads, ratio })),
});
const named = (file: string, r: ResultRecord): NamedRecord => ({ file, record: r });

// The README's table names networks as users know them; the records use the model zoo's ids.
const README_NETWORKS: Record<string, string> = {
  'BERT-base (sequence 128)': 'bert-base', 'ViT-S/16': 'vit-s16', 'MobileNet-V2': 'mobilenet_v2',
  'DCGAN generator': 'dcgan', '3D-ResNet-18': 'resnet3d-18', 'ResNet-50': 'resnet-50',
};

/** The README's results table as [network id, batch, default|tuned, 1-thread cell, 2-thread cell]; a row with empty leading cells continues the one above. */
function readmeResults(readme: string): string[][] {
  const lines = readme.split('\n');
  const header = lines.findIndex((l) => l.startsWith('| network | batch | schedules | 1 thread | 2 threads |'));
  assert.ok(header >= 0, 'README.md has no results table');
  const rows: string[][] = [];
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith('|')) break;
    const [name, batch, schedules, one, two] = line.split('|').slice(1, 6).map((c) => c.trim());
    const prev = rows[rows.length - 1];
    const network = name ? README_NETWORKS[name] : prev[0];
    assert.ok(network, `README.md names a network the test does not know: ${name}`);
    rows.push([network, batch || prev[1], schedules === 'default' ? 'default' : 'tuned', one, two]);
  }
  return rows;
}

test("the README's results table is the standing of its machine in bench/results", () => {
  const table = readmeResults(readFileSync(path.resolve(__dirname, '..', 'README.md'), 'utf8'));
  const box = readRecords(RESULTS_DIR).filter((r) => r.record.machine.id === 'amd-epyc-avx512-2c' && r.record.reference?.name === 'ONNX Runtime');
  const latest = standing(box);
  const expected = table.map(([network, batch, schedules]) => {
    const x = latest.find((s) => s.network === networkLabel({ network, batch: Number(batch) }) && s.rows[0].schedules === schedules);
    return [network, batch, schedules, ...[1, 2].map((t) => {
      const row = x?.rows.find((r) => r.threads === t);
      return row ? `${row.ratio.toFixed(2)} (${row.paired!.toFixed(2)})` : 'not measured';
    })];
  });
  assert.equal(table, expected);
});

test('the standing is the latest run of each network and schedules, every thread count from that run', () => {
  const old = named('a.json', record('2026-11-01', [['mobilenet', 'default', 1, 1.5], ['mobilenet', 'default', 2, 1.4], ['mobilenet', 'tuned', 1, 1.2]]));
  const later = named('b.json', record('2026-11-02', [['mobilenet', 'default', 1, 0.9]]));
  const s = standing([later, old]);
  assert.equal(s.map((x) => [x.network, x.from.file, x.rows.map((r) => r.ratio)]), [
    ['mobilenet', 'b.json', [0.9]],
    ['mobilenet', 'a.json', [1.2]],
  ]);
});

test('a run at another batch is its own line of the standing, named with its batch', () => {
  const b1 = named('a.json', record('2026-11-01', [['bert-base', 'default', 1, 0.96]]));
  const b16 = record('2026-11-02', [['bert-base', 'default', 1, 0.9]]);
  (b16 as { results: { batch?: number }[] }).results[0].batch = 16;
  assert.equal(standing([b1, named('b.json', b16)]).map((x) => [x.network, x.rows.map((r) => r.ratio)]), [['bert-base', [0.96]], ['bert-base (batch 16)', [0.9]]]);
});

test('within a day a record without a time comes before one with a time, then by file name', () => {
  const rs = [named('z.json', record('2026-11-02T10:00Z', [])), named('b.json', record('2026-11-02', [])), named('a.json', record('2026-11-02', [])), named('c.json', record('2026-11-01T23:59Z', []))];
  assert.equal([...rs].sort(byDate).map((r) => r.file), ['c.json', 'a.json', 'b.json', 'z.json']);
});

test('records transcribed from one commit at one time keep the order of its text', () => {
  const t = (file: string, order: number): NamedRecord => named(file, { ...record('2026-11-02T10:00Z', []), source: 'transcribed', transcribed: { from: 'docs/x.md', commit: 'abcdef0', order } });
  assert.equal([t('a.json', 1), t('b.json', 0)].sort(byDate).map((r) => r.file), ['b.json', 'a.json']);
});

test('the page shows each figure with its record and command, and includes the studies', () => {
  const page = performanceMarkdown([named('/x/2026-11-02-r.json', record('2026-11-02', [['resnet-18', 'tuned', 2, 0.746]]))], '## Studies\n\nThe flush.');
  assert.match(page, '| resnet-18 | tuned | 0.746 |');
  assert.match(page, '(../bench/results/2026-11-02-r.json)');
  assert.match(page, '`npx tsx bench/compare-ort.ts`');
  assert.ok(page.endsWith('## Studies\n\nThe flush.\n'));
});

test('a bad record stops the page with the file and the field', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tt-perf-page-'));
  try {
    const bad = { ...record('2026-11-02', [['mobilenet', 'default', 1, 0.9]]), date: 'yesterday' };
    writeFileSync(path.join(dir, 'bad.json'), JSON.stringify(bad));
    assert.throws(() => currentPage(dir), (e: Error) => e.message.startsWith(`${path.join(dir, 'bad.json')}: /date must match pattern`));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
