// What the benchmark report takes from the workspace: the network's tasks (extracted as
// tune extracts them, the conv's Winograd alternative included) and every record of the store, including a tune output under
// <records>/nx/ that no compile merged yet, for the compiled model's target and machine;
// and the ONNX Runtime comparison beside the report: absent (the page says where it would
// come from), the CLI's `--compare onnxruntime --json` output, or a broken file (one
// message naming the file and the field).

import { mkdirSync, mkdtempSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { CompareReport } from '../../engine/compare/compare';
import type { Manifest } from '../../engine/compile/manifest';
import { UserError } from '../../engine/errors';
import { loadModel } from '../../engine/frontend/load';
import { appendRecords } from '../../engine/records/log';
import type { TuningRecord } from '../../engine/records/record';
import { tuningTasks } from '../../engine/graph/extract';
import { loadConfig } from '../../plugin/config';
import { resolveRun, tuneOutputFile } from '../../plugin/resolve';
import { writeNetWorkspace } from '../workspace.fixture';
import { comparisonAge, comparisonFile, tuningForReport } from './tuning';

const dir = mkdtempSync(path.join(tmpdir(), 'tt-benchmark-tuning-'));
const rel = (p: string): string => path.relative(dir, p);
const MATCH = { target: 'llvm', fingerprint: 'f00df00d' };
const manifest = MATCH as unknown as Manifest; // the report reads the manifest's target and fingerprint only
const rec = (key: string, s: number, cost: number, fingerprint = MATCH.fingerprint): TuningRecord => ({
  v: 1, engine: '0.1.0', key, desc: 'd', target: MATCH.target, fingerprint, steps: [], costs_ms: [cost], error: null, seed: 0,
  time: new Date(Date.UTC(2025, 0, 1, 0, 0, s)).toISOString(),
});

test.after(() => rmSync(dir, { recursive: true, force: true }));

test('the store\'s logs and an unmerged tune output, for this target and machine; then the comparison file', async () => {
  writeNetWorkspace(dir);
  const run = resolveRun(loadConfig('tensortune.config.yaml', dir), dir, 'net');
  const tasks = tuningTasks(loadModel(run.spec).graph, MATCH.target);
  assert.ok(tasks.length >= 3, 'conv, its Winograd alternative and dense (and the pool) are tasks');
  const store = path.join(run.storeDir, 'net.cpu.jsonl');
  await appendRecords(store, [...tasks.map((t, i) => rec(t.key, i, 2)), rec(tasks[0].key, 30, 0.001, '12345678')]);
  const output = tuneOutputFile(run.storeDir, 'net', 'cpu', 'full');
  mkdirSync(path.dirname(output), { recursive: true });
  await appendRecords(output, [rec(tasks[0].key, 20, 1), rec(tasks[1].key, 1, 2)]); // the second one is already in the store

  const warnings: string[] = [];
  const got = await tuningForReport(run, manifest, rel, (m) => warnings.push(m));
  // A layer group (a task and its Winograd alternative) counts once in the estimate.
  const weights = tasks.filter((t) => !t.alternative).reduce((a, t) => a + t.weight, 0);
  assert.is(got.tuning.trials, tasks.length + 1);
  assert.is(got.tuning.estimated_ms, 2 * weights - tasks[0].weight);
  assert.equal(got.tuning.tasks.map((t) => t.key), tasks.map((t) => t.key));
  assert.is(got.comparison, undefined);
  assert.is(got.comparison_hint, 'the page shows one from out/net/reports/cpu.onnxruntime.json, which `nx benchmark net --compare onnxruntime` or ' +
    '`npx tensortune benchmark out/net/cpu --compare onnxruntime --json > out/net/reports/cpu.onnxruntime.json` writes');
  assert.equal(warnings, []);

  const file = comparisonFile(run.reportsDir, 'cpu');
  mkdirSync(run.reportsDir, { recursive: true });
  const json = {
    model_dir: 'm', onnx: 'm.onnx', onnx_source: 'manifest', onnxruntime_version: '1.30.0', threads: 1, rounds: 5, number: 10,
    tensortune_median_ms: 1.5, onnxruntime_median_ms: 2, ratio: 0.75, tensortune_runs_ms: [], onnxruntime_runs_ms: [],
    outputs: [{ name: 'y', shape: [1, 10], max_abs_err: 0, max_rel_err: 0, max_abs_value: 1 }], top1: { tensortune: [1], onnxruntime: [1], agree: true },
  };
  writeFileSync(file, `Comparison with ONNX Runtime 1.30.0 (1 thread, 5 interleaved rounds, 10 run(s) per measurement)\n  ratio: 0.750\n${JSON.stringify(json)}\n`);
  const old = await tuningForReport(run, manifest, rel, () => undefined);
  assert.is(old.comparison?.ratio, 0.75);
  assert.equal(old.comparison_age, { time: statSync(file).mtime.toISOString(), from: 'file written' }, 'no model folder here: nothing to be older than');

  writeFileSync(file, JSON.stringify({ ...json, tensortune_median_ms: 'fast' }));
  try {
    await tuningForReport(run, manifest, rel, () => undefined);
    assert.unreachable('a broken comparison file is refused');
  } catch (e) {
    assert.instance(e, UserError);
    assert.is((e as Error).message, `${file}: not an ONNX Runtime comparison (the JSON of \`tensortune benchmark DIR --compare onnxruntime --json\`): /tensortune_median_ms must be number`);
  }
  writeFileSync(file, 'ONNX Runtime was faster\n');
  try {
    await tuningForReport(run, manifest, rel, () => undefined);
    assert.unreachable('a file without JSON is refused');
  } catch (e) {
    assert.is((e as Error).message, `${file}: not an ONNX Runtime comparison: expected the JSON that \`tensortune benchmark DIR --compare onnxruntime --json\` prints on its last line`);
  }
});

test('comparisonAge: another model.so is stale; without the hash, measured before the model was compiled is stale', () => {
  const modelDir = path.join(dir, 'age', 'cpu');
  mkdirSync(modelDir, { recursive: true });
  const manifestFile = path.join(modelDir, 'manifest.json');
  writeFileSync(manifestFile, '{}');
  const compiled = new Date(Date.UTC(2025, 5, 1));
  utimesSync(manifestFile, compiled, compiled);
  const file = path.join(dir, 'age', 'cpu.onnxruntime.json');
  writeFileSync(file, '{}');
  const c = (extra: object): CompareReport => ({ threads: 1, ...extra }) as unknown as CompareReport;
  const built = { library_sha256: 'a'.repeat(64) };
  assert.equal(comparisonAge(c({ time: '2025-06-02T00:00:00.000Z', library_sha256: 'a'.repeat(64) }), file, built, modelDir), { time: '2025-06-02T00:00:00.000Z', from: 'measured' });
  assert.equal(comparisonAge(c({ time: '2025-06-02T00:00:00.000Z', library_sha256: 'b'.repeat(64) }), file, built, modelDir), {
    time: '2025-06-02T00:00:00.000Z', from: 'measured', stale: 'it ran another build of the model (its model.so differs from the one benchmarked here): compare again',
  });
  assert.equal(comparisonAge(c({ time: '2025-05-01T00:00:00.000Z' }), file, built, modelDir), {
    time: '2025-05-01T00:00:00.000Z', from: 'measured', stale: `older than the compiled model (compiled ${compiled.toISOString()}): compare again`,
  });
  const written = new Date(Date.UTC(2025, 4, 20));
  utimesSync(file, written, written);
  assert.equal(comparisonAge(c({}), file, built, modelDir), { time: written.toISOString(), from: 'file written', stale: `older than the compiled model (compiled ${compiled.toISOString()}): compare again` });
  assert.equal(comparisonAge(c({ time: '2025-06-03T00:00:00.000Z' }), file, built, modelDir), { time: '2025-06-03T00:00:00.000Z', from: 'measured' });
});

test.run();
