// `nx benchmark` as the executor runs it, on a tiny compiled network: the summary names the
// threads and the load, every warning of the result is a `warning:` line, and each run
// appends to <target>.history.jsonl while <target>.json and .html show the latest. The
// report itself on synthetic results: warnings first and escaped, the history table and
// plot, broken history lines skipped. The schema's defaults are the CLI's.

import { mkdtempSync, readFileSync, rmSync, appendFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExecutorContext } from '@nx/devkit';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { sealManifest, type Manifest } from '../../engine/compile/manifest';
import { compileNetwork } from '../../engine/app/compile';
import type { CompareReport } from '../../engine/compare/compare';
import { tryLoadOnnxRuntime } from '../../engine/compare/ort';
import { BENCH_DEFAULTS } from '../../engine/native/bench';
import { skip } from '../../engine/skip.fixture';
import { captureConsole as capture, writeNetWorkspace } from '../workspace.fixture';
import benchmarkExecutor from './executor';
import { readHistory, renderHtml, writeReport, type BenchmarkReport } from './report';

const dir = mkdtempSync(path.join(tmpdir(), 'tt-benchmark-executor-'));
const reports = path.join(dir, 'out', 'net', 'reports');
/** A report as the executor writes it, with the given median and warnings. */
const synthetic = (time: string, median: number, warnings: string[]): BenchmarkReport => ({
  network: 'net', target: 'cpu', target_string: 'llvm', fingerprint: 'f00d', engine_version: '0.1.0', time,
  cpu: 'AMD EPYC <test>', model_dir: 'out/net/cpu',
  result: {
    mean_ms: median, median_ms: median, max_ms: median, min_ms: median, std_ms: 0, threads: 2, repeat: 3, number: 10,
    warmup: 1, min_repeat_ms: 100, seed: 0, runs_ms: [median, median, median], abi_version: 1, cpu_ms: 500,
    cores: 2, load_before: 2.04, load_after: 2.31, seconds: 1.5, others_cores: 1.02, warnings,
  },
});

test.before(async () => {
  writeNetWorkspace(dir, { convOnly: true });
  await compileNetwork({ model: path.join(dir, 'net.onnx'), target: 'llvm', outDir: path.join(dir, 'out', 'net', 'cpu'), log: () => undefined });
});

test.after(() => rmSync(dir, { recursive: true, force: true }));

test('the schema\'s defaults are the CLI\'s', () => {
  const schema = JSON.parse(readFileSync(path.join(__dirname, 'schema.json'), 'utf8')) as { properties: Record<string, { default?: unknown }> };
  assert.is(schema.properties.repeat.default, BENCH_DEFAULTS.repeat);
  assert.is(schema.properties.minRepeatMs.default, BENCH_DEFAULTS.minRepeatMs);
});

test('two runs: threads and load in the summary, warnings as warning: lines, a history of two and the latest report', async () => {
  const ctx = { root: dir, cwd: dir, isVerbose: false, projectName: 'net' } as unknown as ExecutorContext;
  const options = { config: 'tensortune.config.yaml', network: 'net', repeat: 3, minRepeatMs: 0, threads: 1 };
  for (let i = 0; i < 2; i++) {
    const { value, lines } = await capture(() => benchmarkExecutor(options, ctx));
    assert.equal(value, { success: true }, lines.join('\n'));
    assert.is(lines[0], 'net on cpu ("llvm")');
    assert.is(lines[1], 'Execution time summary:');
    assert.match(lines[2], /^ mean \((ms|µs)\) {3}median \((ms|µs)\)/);
    assert.match(lines[4], /^1 thread\(s\) of \d+ core\(s\), 3 measurement\(s\) of \d+ run\(s\); load average \d+\.\d\d before, \d+\.\d\d after$/);
    const report = JSON.parse(readFileSync(path.join(reports, 'cpu.json'), 'utf8')) as BenchmarkReport;
    assert.equal(lines.filter((l) => l.startsWith('warning: ')), report.result.warnings.map((w) => `warning: ${w}`));
    assert.is(lines.at(-1), 'wrote out/net/reports/cpu.json and out/net/reports/cpu.html, appended to out/net/reports/cpu.history.jsonl');
    assert.is(report.result.threads, 1);
    assert.type(report.result.load_before, 'number');
    assert.ok(report.cpu.length > 0);
    const history = readHistory(path.join(reports, 'cpu.history.jsonl'));
    assert.is(history.length, i + 1);
    assert.equal(history.at(-1), { ...history.at(-1)!, time: report.time, threads: 1, cpu: report.cpu, median_ms: report.result.median_ms, warnings: report.result.warnings });
    const html = readFileSync(path.join(reports, 'cpu.html'), 'utf8');
    assert.is(html.match(/<tr( class="warned")?><td>\d{4}-/g)?.length, i + 1, 'a history row per run');
    // No tuning records in this workspace: the tuning section says so instead of drawing a curve.
    // The tasks are the conv and its Winograd alternative, one layer group.
    assert.ok(lines.includes('tuning: 0 trial(s) of 2 task(s) in the records for this target and machine, no estimated total latency yet (1 of 1 layer group(s) without a valid measurement)'));
    assert.is(report.tuning?.trials, 0);
    assert.ok(html.includes('<section class="tuning"') && html.includes('no value yet'));
  }
});

test('a model whose records were ranked at another thread count than the run: a warning naming the config field', async () => {
  const ctx = { root: dir, cwd: dir, isVerbose: false, projectName: 'net' } as unknown as ExecutorContext;
  const manifestFile = path.join(dir, 'out', 'net', 'cpu', 'manifest.json');
  const original = readFileSync(manifestFile, 'utf8');
  writeFileSync(manifestFile, JSON.stringify(sealManifest({ ...JSON.parse(original) as Manifest, records_threads: 2 })));
  try {
    const { value, lines } = await capture(() => benchmarkExecutor({ config: 'tensortune.config.yaml', network: 'net', repeat: 2, minRepeatMs: 0, threads: 1 }, ctx));
    assert.equal(value, { success: true }, lines.join('\n'));
    assert.ok(lines.includes('warning: the model\'s records were ranked at 2 thread(s) (manifest records_threads) and it ran at 1: set threads: 1 on targets.cpu in the config, which nx compile ranks at and nx benchmark runs at'), lines.join('\n'));
  } finally {
    writeFileSync(manifestFile, original);
  }
});

test('the HTML report: the warnings first, escaped; a history table newest first and a plot with the warned runs marked', () => {
  const out = path.join(dir, 'synthetic');
  writeReport(out, synthetic('2025-01-01T10:00:00.000Z', 3.2, []));
  appendFileSync(path.join(out, 'cpu.history.jsonl'), '{"time": "cut by a kill\n');
  const busy = 'busy machine: other processes used 1.0 cores <while> it ran';
  const files = writeReport(out, synthetic('2025-01-02T10:00:00.000Z', 371, [busy]));
  const history = readHistory(files.history);
  assert.equal(history.map((e) => e.median_ms), [3.2, 371], 'the broken line is skipped');
  assert.equal(history[1].warnings, [busy]);
  const html = readFileSync(files.html, 'utf8');
  const alert = html.indexOf('<div class="warning" role="alert">');
  assert.ok(alert > 0 && alert < html.indexOf('Execution time summary'), 'the warnings come before the figures');
  assert.ok(html.includes('<li>busy machine: other processes used 1.0 cores &#60;while&#62; it ran</li>'));
  const rows = [...html.matchAll(/<tr( class="warned")?><td>([^<]+)<\/td><td>([^<]+)</g)].map((m) => [m[2], m[3], Boolean(m[1])]);
  assert.equal(rows, [['2025-01-02T10:00:00.000Z', '371', true], ['2025-01-01T10:00:00.000Z', '3.2', false]]);
  assert.is(html.match(/<circle /g)?.length, 2);
  assert.is(html.match(/stroke="#c0392b" stroke-width="2"/g)?.length, 1, 'one red ring');
  assert.ok(html.includes('<tr><th>CPU</th><td>AMD EPYC &#60;test&#62;</td></tr>'));
  assert.ok(html.includes('<tr><th>threads</th><td>2 of 2 core(s)</td></tr>'));

  const quiet = renderHtml(synthetic('2025-01-03T10:00:00.000Z', 3.2, []));
  assert.not.ok(quiet.includes('role="alert"'));
  assert.ok(quiet.includes('<p class="trusted">'));
  assert.not.ok(quiet.includes('<h2>History</h2>'), 'no history given, no section');
});

test('profile: true prints and reports every kernel of the model, slowest first, against the peak measured with it', async () => {
  const ctx = { root: dir, cwd: dir, isVerbose: false, projectName: 'net' } as unknown as ExecutorContext;
  const options = { config: 'tensortune.config.yaml', network: 'net', repeat: 2, minRepeatMs: 0, threads: 1, profile: true };
  const { value, lines } = await capture(() => benchmarkExecutor(options, ctx));
  assert.equal(value, { success: true }, lines.join('\n'));
  const report = JSON.parse(readFileSync(path.join(reports, 'cpu.json'), 'utf8')) as BenchmarkReport;
  const manifest = JSON.parse(readFileSync(path.join(dir, 'out', 'net', 'cpu', 'manifest.json'), 'utf8')) as { kernels: { symbol: string; groups: number[] }[] };
  const rows = report.profile!.rows;
  assert.equal(rows.map((r) => r.symbol).sort(), manifest.kernels.map((k) => k.symbol).sort());
  for (const r of rows) assert.is(r.calls, manifest.kernels.find((k) => k.symbol === r.symbol)!.groups.length);
  assert.ok(rows.every((r, i) => i === 0 || rows[i - 1].ms >= r.ms), 'slowest first');
  assert.ok(report.profile!.peak_gflops > 0);
  assert.ok(lines.some((l) => l.startsWith('Per-kernel profile')), lines.join('\n'));
  assert.not.ok('profile' in report.result, 'the raw calls stay out of the result');
  const html = readFileSync(path.join(reports, 'cpu.html'), 'utf8');
  assert.match(html, /<h2>Per-kernel profile<\/h2>/);
  assert.is((html.match(/<tr><td>[\d.]+<\/td><td><span class="bar"/g) ?? []).length, rows.length);
});

test('compare: onnxruntime and untuned: true: the comparison file of this build, the default-schedule build timed too, both in the report and the history', async () => {
  const ort = tryLoadOnnxRuntime();
  const ctx = { root: dir, cwd: dir, isVerbose: false, projectName: 'net' } as unknown as ExecutorContext;
  const options = { config: 'tensortune.config.yaml', network: 'net', repeat: 2, minRepeatMs: 0, threads: 1, untuned: true, ...(ort.module ? { compare: 'onnxruntime' as const } : {}) };
  const { value, lines } = await capture(() => benchmarkExecutor(options, ctx));
  assert.equal(value, { success: true }, lines.join('\n'));
  const report = JSON.parse(readFileSync(path.join(reports, 'cpu.json'), 'utf8')) as BenchmarkReport;
  const manifest = JSON.parse(readFileSync(path.join(dir, 'out', 'net', 'cpu', 'manifest.json'), 'utf8')) as Manifest;

  const untunedManifest = JSON.parse(readFileSync(path.join(reports, 'cpu.untuned', 'manifest.json'), 'utf8')) as Manifest;
  assert.ok(untunedManifest.kernels.every((k) => k.schedule === 'default'), 'the untuned build has default schedules only');
  assert.is(report.untuned!.model_dir, 'out/net/reports/cpu.untuned');
  assert.is(report.untuned!.threads, 1);
  assert.is(report.untuned!.runs_ms.length, 2);
  assert.ok(lines.some((l) => /^untuned \(default schedules\): median [\d.]+ [µm]s; tuned: median [\d.]+ [µm]s \([\d.]+x faster tuned\)$/.test(l)), lines.join('\n'));
  assert.is(readHistory(path.join(reports, 'cpu.history.jsonl')).at(-1)!.untuned_median_ms, report.untuned!.median_ms);
  assert.equal(report.model!.inputs.map((i) => i.shape), manifest.inputs.map((i) => i.shape));
  assert.is(report.library_sha256, manifest.library_sha256);
  const html = readFileSync(path.join(reports, 'cpu.html'), 'utf8');
  assert.ok(html.includes('id="untuned-tuned"') && html.includes('measured in this run right after the tuned model'));

  if (!ort.module) { skip('nx benchmark compare: onnxruntime', ort.error); return; }
  const comparison = JSON.parse(readFileSync(path.join(reports, 'cpu.onnxruntime.json'), 'utf8')) as CompareReport;
  assert.is(comparison.library_sha256, manifest.library_sha256, 'a comparison of the build benchmarked');
  assert.is(comparison.threads, 1);
  assert.equal(report.comparison, comparison);
  assert.equal(report.comparison_age, { time: comparison.time, from: 'measured' }, 'fresh: not stale');
  assert.ok(lines.includes('wrote out/net/reports/cpu.onnxruntime.json'), lines.join('\n'));
  assert.match(html, `1 thread(s), measured ${comparison.time}.`);
  assert.not.ok(html.includes('class="stale"'));
});

test.run();
