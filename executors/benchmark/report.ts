// The benchmark report, under <outDir>/<network>/reports/: <target>.json and .html hold the
// latest run (the HTML is self-contained: tables and inline SVG plots, no scripts, no
// network), and <target>.history.jsonl gets one line per run (time, CPU, threads, load,
// summary, warnings), so a run never hides the ones before it and the page plots them.
// When the executor has the network's tuning figures (engine/report/), the page adds the
// tuning section (engine/report/tuning-html.ts) and the JSON its numbers.

import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { CompareReport } from '../../engine/compare/compare';
import type { BenchResult } from '../../engine/native/bench';
import { esc } from '../../engine/report/html';
import type { TuningFigures } from '../../engine/report/tuning-data';
import { TUNING_CSS, tuningSection } from '../../engine/report/tuning-html';
import type { KernelProfileRow } from '../../engine/compile/profile';

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
}

function historyEntry(r: BenchmarkReport): HistoryEntry {
  const s = r.result;
  return {
    time: r.time, network: r.network, target: r.target, target_string: r.target_string, cpu: r.cpu,
    cores: s.cores, threads: s.threads, load_before: s.load_before, load_after: s.load_after, others_cores: s.others_cores,
    repeat: s.repeat, number: s.number, min_repeat_ms: s.min_repeat_ms,
    mean_ms: s.mean_ms, median_ms: s.median_ms, max_ms: s.max_ms, min_ms: s.min_ms, std_ms: s.std_ms,
    fingerprint: r.fingerprint, engine_version: r.engine_version, warnings: s.warnings,
  };
}

/** The entries of a history file, oldest first; lines that are not entries (a line cut by a
 *  killed run, a hand edit) are skipped. */
export function readHistory(file: string): HistoryEntry[] {
  if (!existsSync(file)) return [];
  const entries: HistoryEntry[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
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
  appendFileSync(files.history, `${JSON.stringify(historyEntry(report))}\n`);
  writeFileSync(files.json, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(files.html, renderHtml(report, readHistory(files.history)));
  return files;
}

/** A bar per timed run, scaled to the slowest, with the median as a line. */
function runsPlot(runs: readonly number[], median: number): string {
  const w = 640, h = 200, pad = 30;
  const max = Math.max(...runs, median) || 1;
  const bw = (w - 2 * pad) / Math.max(runs.length, 1);
  const y = (v: number): number => h - pad - (v / max) * (h - 2 * pad);
  const bars = runs.map((v, i) =>
    `<rect x="${(pad + i * bw + 1).toFixed(1)}" y="${y(v).toFixed(1)}" width="${Math.max(bw - 2, 1).toFixed(1)}" height="${(h - pad - y(v)).toFixed(1)}" fill="#4a7ab8"><title>run ${i + 1}: ${v.toFixed(4)} ms</title></rect>`).join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" role="img" aria-label="time per run">` +
    `<line x1="${pad}" y1="${h - pad}" x2="${w - pad}" y2="${h - pad}" stroke="#333"/>${bars}` +
    `<line x1="${pad}" y1="${y(median).toFixed(1)}" x2="${w - pad}" y2="${y(median).toFixed(1)}" stroke="#c0392b" stroke-dasharray="4 3"/>` +
    `<text x="${w - pad}" y="${(y(median) - 4).toFixed(1)}" font-size="11" text-anchor="end" fill="#c0392b">median ${median.toFixed(4)} ms</text>` +
    `<text x="${pad}" y="${pad - 10}" font-size="11">ms per run (max ${max.toFixed(4)})</text></svg>`;
}

/** The per-kernel profile as a table, slowest kernel first, with a bar for its share of the run. */
function profileSection(p: NonNullable<BenchmarkReport['profile']>, threads: number): string {
  const head = ['ms per run', 'share', 'GFLOP/s', '% of peak', 'calls', 'schedule', 'task'];
  const rows = p.rows.map((r) => `<tr><td>${r.ms.toFixed(4)}</td><td><span class="bar" style="display:inline-block;background:#4a7ab8;height:.7em;width:${(r.share * 8).toFixed(2)}em"></span> ${(r.share * 100).toFixed(1)}%</td>` +
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

/** The median of each past run, oldest left; runs with warnings are red rings. */
function historyPlot(entries: readonly HistoryEntry[]): string {
  const w = 640, h = 180, pad = 30;
  const max = Math.max(...entries.map((e) => e.median_ms)) || 1;
  const x = (i: number): number => pad + (entries.length > 1 ? (i / (entries.length - 1)) * (w - 2 * pad) : (w - 2 * pad) / 2);
  const y = (v: number): number => h - pad - (v / max) * (h - 2 * pad);
  const line = entries.map((e, i) => `${x(i).toFixed(1)},${y(e.median_ms).toFixed(1)}`).join(' ');
  const dots = entries.map((e, i) => {
    const warned = e.warnings.length > 0;
    return `<circle cx="${x(i).toFixed(1)}" cy="${y(e.median_ms).toFixed(1)}" r="4" fill="${warned ? '#fff' : '#4a7ab8'}" stroke="${warned ? '#c0392b' : '#4a7ab8'}" stroke-width="2">` +
      `<title>${esc(e.time)}: median ${e.median_ms.toFixed(4)} ms, ${e.threads} thread(s)${warned ? `, ${e.warnings.length} warning(s)` : ''}</title></circle>`;
  }).join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" role="img" aria-label="median per run over time">` +
    `<line x1="${pad}" y1="${h - pad}" x2="${w - pad}" y2="${h - pad}" stroke="#333"/>` +
    `<polyline points="${line}" fill="none" stroke="#9db4d6"/>${dots}` +
    `<text x="${pad}" y="${pad - 10}" font-size="11">median ms per benchmark run, oldest left (max ${max.toFixed(4)}); red rings: runs with warnings</text></svg>`;
}

function historySection(history: readonly HistoryEntry[]): string {
  if (history.length === 0) return '';
  const shown = history.slice(-HISTORY_SHOWN);
  const head = ['time', 'median (ms)', 'std (ms)', 'threads', 'load before', 'load after', 'CPU', 'warnings'];
  const rows = [...shown].reverse().map((e) => `<tr${e.warnings.length ? ' class="warned"' : ''}><td>${esc(e.time)}</td><td>${e.median_ms.toFixed(4)}</td>` +
    `<td>${e.std_ms.toFixed(4)}</td><td>${e.threads} of ${e.cores}</td><td>${e.load_before.toFixed(2)}</td><td>${e.load_after.toFixed(2)}</td>` +
    `<td>${esc(e.cpu)}</td><td>${e.warnings.length ? esc(e.warnings.join(' / ')) : ''}</td></tr>`).join('\n');
  return `<h2>History</h2>
<p>${history.length} run(s) of this network on this target${history.length > shown.length ? `, the latest ${shown.length} shown` : ''}; every run is a line of ${esc(`${shown[0].target}.history.jsonl`)}.</p>
${historyPlot(shown)}
<table class="history">
<tr>${head.map((c) => `<th>${c}</th>`).join('')}</tr>
${rows}
</table>`;
}

export function renderHtml(r: BenchmarkReport, history: readonly HistoryEntry[] = []): string {
  const s = r.result;
  const row = (k: string, v: string): string => `<tr><th>${esc(k)}</th><td>${esc(v)}</td></tr>`;
  const trust = s.warnings.length > 0
    ? `<div class="warning" role="alert"><strong>Warning: these figures may not be trustworthy.</strong><ul>\n${s.warnings.map((w) => `<li>${esc(w)}</li>`).join('\n')}\n</ul></div>`
    : '<p class="trusted">No reason found to distrust these figures: their spread is small, no measurement is an outlier, and no other process wanted the cores.</p>';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(r.network)} on ${esc(r.target)}: tensortune benchmark</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:60em}table{border-collapse:collapse}th,td{padding:.2em .8em;text-align:left;border-bottom:1px solid #ddd}td{font-variant-numeric:tabular-nums}
.warning{border:2px solid #c0392b;background:#fdecea;padding:.6em 1em;margin:1em 0}.trusted{color:#2d6a2d}tr.warned td{background:#fdecea}
${TUNING_CSS}</style>
</head><body>
<h1>${esc(r.network)} on ${esc(r.target)}</h1>
${trust}
<p>Execution time summary (ms), ${s.repeat} measurement(s) of ${s.number} run(s), ${s.threads} thread(s) of ${s.cores} core(s).</p>
<table>
${row('mean', s.mean_ms.toFixed(4))}${row('median', s.median_ms.toFixed(4))}${row('max', s.max_ms.toFixed(4))}${row('min', s.min_ms.toFixed(4))}${row('std', s.std_ms.toFixed(4))}
</table>
<h2>Runs</h2>
${runsPlot(s.runs_ms, s.median_ms)}
<h2>Setup</h2>
<table>
${row('CPU', r.cpu)}${row('threads', `${s.threads} of ${s.cores} core(s)`)}${row('load average (1 min)', `${s.load_before.toFixed(2)} before, ${s.load_after.toFixed(2)} after`)}${
  s.others_cores === null ? '' : row('other processes', `${s.others_cores.toFixed(2)} core(s) busy during the run`)}${
  row('min repeat', `${s.min_repeat_ms} ms`)}${row('target', r.target_string)}${row('fingerprint', r.fingerprint)}${row('engine', r.engine_version)}${row('model', r.model_dir)}${row('time', r.time)}
</table>
${r.profile ? profileSection(r.profile, s.threads) : ''}
${historySection(history)}
${r.tuning ? tuningSection(r.tuning, { comparison: r.comparison, comparisonHint: r.comparison_hint, measuredMs: s.median_ms }) : ''}
</body></html>
`;
}
