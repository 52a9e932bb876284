// The benchmark report, under <outDir>/<network>/reports/: <target>.json and .html hold the
// latest run (the HTML is self-contained: tables and inline SVG plots, no scripts, no
// network), and <target>.history.jsonl gets one line per run (time, CPU, threads, load,
// summary, warnings, and the records, engine and model.so that made it), so a run never
// hides the ones before it and the page plots them. Times under 1 ms read in µs.
// When the executor has the network's tuning figures (engine/report/), the page adds the
// tuning section (engine/report/tuning-html.ts) and the JSON its numbers.

import { appendFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { CompareReport } from '../../engine/compare/compare';
import type { BenchResult } from '../../engine/native/bench';
import { esc } from '../../engine/report/html';
import type { TuningFigures } from '../../engine/report/tuning-data';
import { TUNING_CSS, tuningSection } from '../../engine/report/tuning-html';
import type { KernelProfileRow } from '../../engine/compile/profile';
import { formatRecordsUsed, type RecordsUsed } from '../../engine/compile/manifest';
import { barChart, columnChart, lineChart } from '../../engine/report/svg-charts';
import type { ComparisonAge } from '../../engine/report/tuning-html';
import { digits, duration, fixed, inUnit, unitFor, unitOf } from '../../engine/units';
import type { ModelFacts } from './model-facts';
import { checkRegularIfPresent, MiB, readRegularFileSync } from '../../engine/regular-file';

export interface BenchmarkReport {
  network: string;
  target: string;
  target_string: string;
  fingerprint: string;
  engine_version: string;
  time: string;
  /** The CPU's model name. */
  cpu: string;
  model_dir: string;
  result: Omit<BenchResult, 'summary'>;
  /** The tuning figures of the network on this target and machine (the records in the store). */
  tuning?: TuningFigures;
  /** The ONNX Runtime comparison found beside the report, if any. */
  comparison?: CompareReport;
  /** Where the page says a comparison would be read from, when there is none. */
  comparison_hint?: string;
  /** When the comparison was measured (or its file written, for one that does not say), and why it is stale, if it is. */
  comparison_age?: ComparisonAge;
  /** The compiled model's inputs, outputs, work and size (model-facts.ts). */
  model?: ModelFacts;
  /** sha256 of the model.so benchmarked. */
  library_sha256?: string;
  /** The records its kernels use (the manifest's summary): tuned per budget, default. */
  records?: RecordsUsed;
  /** `untuned: true`: the default-schedule build, timed right after this one (measure-more.ts). */
  untuned?: UntunedRun;
  /** `profile: true`: each kernel's time per run (engine/compile/profile.ts), slowest first, and the peak measured with it. */
  profile?: { peak_gflops: number; rows: KernelProfileRow[] };
}

/** One line of <target>.history.jsonl: a run without its per-measurement times. */
export interface HistoryEntry {
  time: string;
  network: string;
  target: string;
  target_string: string;
  cpu: string;
  cores: number;
  threads: number;
  load_before: number;
  load_after: number;
  others_cores: number | null;
  repeat: number;
  number: number;
  min_repeat_ms: number;
  mean_ms: number;
  median_ms: number;
  max_ms: number;
  min_ms: number;
  std_ms: number;
  fingerprint: string;
  engine_version: string;
  warnings: string[];
  /** The records the model's kernels used, its model.so and the untuned build's median when measured; absent from entries written before they were recorded. */
  records?: RecordsUsed;
  library_sha256?: string;
  untuned_median_ms?: number;
}

/** The default-schedule build's timing (`untuned: true`). */
export interface UntunedRun {
  /** Workspace-relative folder of the build. */
  model_dir: string;
  time: string;
  kernels: number;
  mean_ms: number;
  median_ms: number;
  max_ms: number;
  min_ms: number;
  std_ms: number;
  runs_ms: number[];
  threads: number;
  repeat: number;
  number: number;
  warnings: string[];
}

function historyEntry(r: BenchmarkReport): HistoryEntry {
  const s = r.result;
  return {
    time: r.time, network: r.network, target: r.target, target_string: r.target_string, cpu: r.cpu,
    cores: s.cores, threads: s.threads, load_before: s.load_before, load_after: s.load_after, others_cores: s.others_cores,
    repeat: s.repeat, number: s.number, min_repeat_ms: s.min_repeat_ms,
    mean_ms: s.mean_ms, median_ms: s.median_ms, max_ms: s.max_ms, min_ms: s.min_ms, std_ms: s.std_ms,
    fingerprint: r.fingerprint, engine_version: r.engine_version, warnings: s.warnings,
    ...(r.records ? { records: r.records } : {}), ...(r.library_sha256 ? { library_sha256: r.library_sha256 } : {}),
    ...(r.untuned ? { untuned_median_ms: r.untuned.median_ms } : {}),
  };
}

/** The entries of a history file, oldest first; lines that are not entries (a line cut by a
 *  killed run, a hand edit) are skipped. */
export function readHistory(file: string): HistoryEntry[] {
  if (!existsSync(file)) return [];
  const entries: HistoryEntry[] = [];
  for (const line of readRegularFileSync(file, { what: 'the benchmark history', maxBytes: 256 * MiB }).toString('utf8').split('\n')) {
    if (!line.trim()) continue;
    try {
      const e = JSON.parse(line) as HistoryEntry;
      if (typeof e.time === 'string' && typeof e.median_ms === 'number' && Array.isArray(e.warnings)) entries.push(e);
    } catch { /* not an entry */ }
  }
  return entries;
}

export interface ReportFiles { json: string; html: string; history: string }

const reportFiles = (reportsDir: string, target: string): ReportFiles => ({
  json: path.join(reportsDir, `${target}.json`),
  html: path.join(reportsDir, `${target}.html`),
  history: path.join(reportsDir, `${target}.history.jsonl`),
});

/** Appends the run to the history, then writes the latest JSON and the HTML page. */
export function writeReport(reportsDir: string, report: BenchmarkReport): ReportFiles {
  const files = reportFiles(reportsDir, report.target);
  mkdirSync(reportsDir, { recursive: true });
  checkRegularIfPresent(files.history, 'the benchmark history'); // appending to a FIFO would block
  appendFileSync(files.history, `${JSON.stringify(historyEntry(report))}\n`);
  writeFileSync(files.json, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(files.html, renderHtml(report, readHistory(files.history)));
  return files;
}

/** A column per timed measurement, with the median as a dashed line labelled clear of the columns. */
function runsPlot(runs: readonly number[], median: number): string {
  const u = unitOf([...runs, median]);
  return columnChart({
    id: 'runs', title: 'Time per run of each measurement', desc: `${runs.length} measurement(s), median ${duration(median)}.`,
    xLabel: 'measurement', yLabel: `time per run (${u.name})`, values: runs.map((v) => v * u.scale),
    tooltip: (v, i) => `measurement ${i + 1}: ${inUnit(v / u.scale, u)} ${u.name} per run`,
    line: { value: median * u.scale, label: `median ${inUnit(median, u)} ${u.name}` },
  });
}

/** The per-kernel profile as a table, slowest kernel first, with a bar for its share of the run. */
function profileSection(p: NonNullable<BenchmarkReport['profile']>, threads: number): string {
  const u = unitOf(p.rows.map((r) => r.ms));
  const head = [`${u.name} per run`, 'share', 'GFLOP/s', '% of peak', 'calls', 'schedule', 'task'];
  const rows = p.rows.map((r) => `<tr><td>${inUnit(r.ms, u)}</td><td><span class="bar" style="display:inline-block;background:#4a7ab8;height:.7em;width:${(r.share * 8).toFixed(2)}em"></span> ${(r.share * 100).toFixed(1)}%</td>` +
    `<td>${r.gflops.toFixed(1)}</td><td>${r.peak !== undefined ? `${(r.peak * 100).toFixed(1)}%` : '-'}</td><td>${r.calls}</td><td>${esc(r.schedule)}</td><td>${esc(r.desc)}</td></tr>`).join('\n');
  return `<h2>Per-kernel profile</h2>
<p>Each kernel's time per run (all its calls), slowest first, its GFLOP/s and its share of the machine's peak fp32 rate, ${p.peak_gflops.toFixed(1)} GFLOP/s at ${threads} thread(s), measured with this run.</p>
<table class="profile">
<tr>${head.map((c) => `<th>${c}</th>`).join('')}</tr>
${rows}
</table>`;
}

/** The plot and the table show this many runs of the history, the latest ones. */
const HISTORY_SHOWN = 50;

/** `2025-01-02 13:04` (UTC) for an axis label. */
const shortTime = (iso: string): string => (Number.isFinite(Date.parse(iso)) ? new Date(iso).toISOString().slice(0, 16).replace('T', ' ') : iso);

/** What made a run: its records (tuned kernels by budget, default ones), the engine version and the model.so. */
const madeBy = (e: Pick<HistoryEntry, 'records' | 'engine_version' | 'library_sha256'>): string =>
  `${e.records ? formatRecordsUsed(e.records) : 'records unknown'}; engine ${e.engine_version}${e.library_sha256 ? `; model.so ${e.library_sha256.slice(0, 8)}` : ''}`;

/** The median of each past run, oldest left, with y ticks and dates; runs with warnings are red rings. Two runs or more. */
function historyPlot(entries: readonly HistoryEntry[]): string {
  const u = unitOf(entries.map((e) => e.median_ms));
  return lineChart({
    id: 'history-plot', title: 'Median time per run of each benchmark run',
    desc: `${entries.length} runs from ${entries[0].time} to ${entries.at(-1)!.time}; red rings: runs with warnings.`,
    xLabel: 'benchmark run (UTC), oldest left', yLabel: `median (${u.name})`,
    points: entries.map((e) => ({
      y: e.median_ms * u.scale, flagged: e.warnings.length > 0,
      title: `${e.time}: median ${duration(e.median_ms)}, ${e.threads} thread(s); ${madeBy(e)}${e.warnings.length ? `; ${e.warnings.length} warning(s)` : ''}`,
    })),
    xTickLabel: (i) => shortTime(entries[i].time),
  });
}

function historySection(history: readonly HistoryEntry[]): string {
  if (history.length === 0) return '';
  const shown = history.slice(-HISTORY_SHOWN);
  const u = unitOf(shown.map((e) => e.median_ms));
  const head = ['time', `median (${u.name})`, `std (${u.name})`, 'threads', 'load before', 'load after', 'made by', 'CPU', 'warnings'];
  const rows = [...shown].reverse().map((e) => `<tr${e.warnings.length ? ' class="warned"' : ''}><td>${esc(e.time)}</td><td>${inUnit(e.median_ms, u)}</td>` +
    `<td>${inUnit(e.std_ms, u)}</td><td>${e.threads} of ${e.cores}</td><td>${e.load_before.toFixed(2)}</td><td>${e.load_after.toFixed(2)}</td>` +
    `<td class="made-by">${esc(e.records ? formatRecordsUsed(e.records) : 'records unknown')}<br>engine ${esc(e.engine_version)}${e.library_sha256 ? `, model.so ${esc(e.library_sha256.slice(0, 8))}` : ''}` +
    `${e.untuned_median_ms !== undefined ? `<br>untuned build ${esc(duration(e.untuned_median_ms))}` : ''}</td>` +
    `<td>${esc(e.cpu)}</td><td>${e.warnings.length ? esc(e.warnings.join(' / ')) : ''}</td></tr>`).join('\n');
  const only = shown.length === 1 ? shown[0] : undefined;
  const picture = only
    ? `<p class="single-run">One run so far: median <strong>${esc(duration(only.median_ms))}</strong> on ${esc(only.time)}. The plot of the medians appears from the second run on.</p>`
    : `<figure><figcaption>Median per benchmark run, oldest left</figcaption>${historyPlot(shown)}</figure>`;
  return `<h2>History</h2>
<p>${history.length} run(s) of this network on this target${history.length > shown.length ? `, the latest ${shown.length} shown` : ''}; every run is a line of ${esc(`${shown[0].target}.history.jsonl`)}, with the records, engine version and model.so that made it.</p>
${picture}
<table class="history">
<tr>${head.map((c) => `<th>${c}</th>`).join('')}</tr>
${rows}
</table>`;
}

/** `1.14 GFLOP`, `356 MFLOP`, `12.5 kFLOP`: no exponent for small models. */
function flopCount(flops: number): string {
  const [scale, name] = flops >= 1e9 ? [1e9, 'GFLOP'] : flops >= 1e6 ? [1e6, 'MFLOP'] : flops >= 1e3 ? [1e3, 'kFLOP'] : [1, 'FLOP'];
  return `${digits(flops / scale)} ${name}`;
}

/** A rate per second: whole and grouped from 100 on (`48,309`), else 4 digits. */
const rate = (v: number): string => (v >= 100 ? Math.round(v).toLocaleString('en-US') : digits(v));

/** The model's inputs, work and size, and the throughput the median gives. */
function modelSection(m: ModelFacts, medianMs: number): string {
  const row = (k: string, v: string): string => `<tr><th>${esc(k)}</th><td>${esc(v)}</td></tr>`;
  const perSecond = medianMs > 0 ? (m.batch * 1000) / medianMs : 0;
  // A 4-D or 5-D first input is an image (or a clip) batch; anything else is counted in runs' batch rows.
  const images = m.inputs[0] !== undefined && m.inputs[0].shape.length >= 4;
  const tensor = (t: ModelFacts['inputs'][number]): string => `${t.name} [${t.shape.join(', ')}] ${t.dtype}`;
  return `<h2>Model</h2>
<table class="model-facts">
${row(m.inputs.length === 1 ? 'input' : 'inputs', m.inputs.map(tensor).join('; '))}${row(m.outputs.length === 1 ? 'output' : 'outputs', m.outputs.map(tensor).join('; '))}${
  row('work per run', `${flopCount(m.flops)} (the kernels' floating-point operations, as compile counts them)`)}${
  row('parameters', `${m.params.toLocaleString('en-US')} values in params.bin (${(m.params * 4 / 2 ** 20).toFixed(1)} MiB; packed as the kernels read them)`)}${
  row(images ? 'images per second' : 'batch rows per second', `${rate(perSecond)} (batch ${m.batch} / median ${duration(medianMs)})`)}${
  row('achieved rate', `${digits(medianMs > 0 ? m.flops / (medianMs * 1e-3) / 1e9 : 0)} GFLOP/s`)}
</table>`;
}

/**
 * The measured end-to-end latency of the default-schedule build against the tuned one:
 * from this run when it measured both (`untuned: true`), else from the latest earlier run
 * in the history whose model had no tuned kernel, named with its date, else what to run.
 */
function untunedSection(r: BenchmarkReport, history: readonly HistoryEntry[]): string {
  const tuned = r.result.median_ms;
  let untuned: { ms: number; what: string } | undefined;
  if (r.untuned) {
    untuned = { ms: r.untuned.median_ms, what: `measured in this run right after the tuned model, same options (${r.untuned.repeat} measurement(s) of ${r.untuned.number} run(s), ${r.untuned.threads} thread(s)): the build compile makes with no records, ${r.untuned.kernels} kernel(s) on default schedules, in ${r.untuned.model_dir}` };
  } else {
    const past = [...history].reverse().find((e) => e.records !== undefined && e.records.tuned === 0 && e.threads === r.result.threads && e.time !== r.time);
    if (past) untuned = { ms: past.median_ms, what: `an earlier benchmark run of this network on ${past.time}, whose model had no tuned kernel (${madeBy(past)}); not measured together with this run` };
  }
  if (!untuned) {
    return `<h2>Untuned against tuned</h2>
<p class="unknown-note">No measured untuned latency: <code>nx benchmark ${esc(r.network)} --untuned</code> also compiles the network with default schedules only and times it. The tuning section's per-task figures are estimates from single kernels.</p>`;
  }
  const u = unitOf([untuned.ms, tuned]);
  const chart = barChart({
    id: 'untuned-tuned', title: `${r.network}: measured latency, default schedules against tuned`,
    desc: `Median time per run: untuned ${duration(untuned.ms)}, tuned ${duration(tuned)}.`,
    xLabel: `median time per run (${u.name})`, series: [{ name: 'median', color: '#2f6db5' }],
    rows: [{ label: 'untuned (default schedules)', values: [untuned.ms * u.scale] }, { label: 'tuned (this run)', values: [tuned * u.scale] }],
    valueLabel: (v) => `${inUnit(v / u.scale, u)} ${u.name}`,
  });
  return `<h2>Untuned against tuned</h2>
<figure><figcaption>Measured median latency of the whole model</figcaption>${chart}</figure>
<p class="untuned-note">Tuned: ${esc(duration(tuned))}, untuned: ${esc(duration(untuned.ms))}, <strong>${(untuned.ms / tuned).toFixed(2)}× faster tuned</strong>. The untuned figure is ${esc(untuned.what)}.</p>`;
}

export function renderHtml(r: BenchmarkReport, history: readonly HistoryEntry[] = []): string {
  const s = r.result;
  const unit = unitFor(s.median_ms);
  const row = (k: string, v: string): string => `<tr><th>${esc(k)}</th><td>${esc(v)}</td></tr>`;
  const trust = s.warnings.length > 0
    ? `<div class="warning" role="alert"><strong>Warning: these figures may not be trustworthy.</strong><ul>\n${s.warnings.map((w) => `<li>${esc(w)}</li>`).join('\n')}\n</ul></div>`
    : '<p class="trusted">No reason found to distrust these figures: their spread is small, no measurement is an outlier, and no other process wanted the cores.</p>';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(r.network)} on ${esc(r.target)}: tensortune benchmark</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:72em}table{border-collapse:collapse}th,td{padding:.2em .8em;text-align:left;border-bottom:1px solid #ddd}td{font-variant-numeric:tabular-nums}
.warning{border:2px solid #c0392b;background:#fdecea;padding:.6em 1em;margin:1em 0}table.history td{white-space:nowrap}table.history td.made-by,table.history td:last-child{white-space:normal}table.history td.made-by{min-width:15em}
figure{margin:1em 0}figcaption{font-weight:600;margin-bottom:.3em}.trusted{color:#2d6a2d}tr.warned td{background:#fdecea}
${TUNING_CSS}</style>
</head><body>
<h1>${esc(r.network)} on ${esc(r.target)}</h1>
${trust}
<p>Execution time summary (${unit.name}), ${s.repeat} measurement(s) of ${s.number} run(s), ${s.threads} thread(s) of ${s.cores} core(s).</p>
<table class="summary">
${row(`mean (${unit.name})`, fixed(s.mean_ms, unit))}${row(`median (${unit.name})`, fixed(s.median_ms, unit))}${row(`max (${unit.name})`, fixed(s.max_ms, unit))}${
  row(`min (${unit.name})`, fixed(s.min_ms, unit))}${row(`std (${unit.name})`, fixed(s.std_ms, unit))}
</table>
${r.model ? modelSection(r.model, s.median_ms) : ''}
<h2>Runs</h2>
<figure><figcaption>Time per run of each timed measurement, with their median</figcaption>${runsPlot(s.runs_ms, s.median_ms)}</figure>
${untunedSection(r, history)}
<h2>Setup</h2>
<table>
${row('CPU', r.cpu)}${row('threads', `${s.threads} of ${s.cores} core(s)`)}${row('load average (1 min)', `${s.load_before.toFixed(2)} before, ${s.load_after.toFixed(2)} after`)}${
  s.others_cores === null ? '' : row('other processes', `${s.others_cores.toFixed(2)} core(s) busy during the run`)}${
  row('min repeat', `${s.min_repeat_ms} ms`)}${row('target', r.target_string)}${row('fingerprint', r.fingerprint)}${row('engine', r.engine_version)}${row('model', r.model_dir)}${
  r.library_sha256 ? row('model.so sha256', r.library_sha256) : ''}${r.records ? row('records', formatRecordsUsed(r.records)) : ''}${row('time', r.time)}
</table>
${r.profile ? profileSection(r.profile, s.threads) : ''}
${historySection(history)}
${r.tuning ? tuningSection(r.tuning, { comparison: r.comparison, comparisonAge: r.comparison_age, comparisonHint: r.comparison_hint, measuredMs: s.median_ms }) : ''}
</body></html>
`;
}
