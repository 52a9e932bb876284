// The benchmark report: the summary as JSON, and a self-contained HTML page with the
// table and a plot of every timed run (inline SVG, no scripts, no network).

import type { BenchResult } from '../../engine/native/bench';

export interface BenchmarkReport {
  network: string;
  target: string;
  target_string: string;
  fingerprint: string;
  engine_version: string;
  time: string;
  model_dir: string;
  result: Omit<BenchResult, 'summary'>;
}

const esc = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

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

export function renderHtml(r: BenchmarkReport): string {
  const s = r.result;
  const row = (k: string, v: string): string => `<tr><th>${esc(k)}</th><td>${esc(v)}</td></tr>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(r.network)} on ${esc(r.target)}: tensortune benchmark</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:48em}table{border-collapse:collapse}th,td{padding:.2em .8em;text-align:left;border-bottom:1px solid #ddd}td{font-variant-numeric:tabular-nums}</style>
</head><body>
<h1>${esc(r.network)} on ${esc(r.target)}</h1>
<p>Execution time summary (ms), ${s.repeat} measurement(s) of ${s.number} run(s), ${s.threads} thread(s).</p>
<table>
${row('mean', s.mean_ms.toFixed(4))}${row('median', s.median_ms.toFixed(4))}${row('max', s.max_ms.toFixed(4))}${row('min', s.min_ms.toFixed(4))}${row('std', s.std_ms.toFixed(4))}
</table>
<h2>Runs</h2>
${runsPlot(s.runs_ms, s.median_ms)}
<h2>Setup</h2>
<table>
${row('target', r.target_string)}${row('fingerprint', r.fingerprint)}${row('engine', r.engine_version)}${row('model', r.model_dir)}${row('time', r.time)}
</table>
</body></html>
`;
}
