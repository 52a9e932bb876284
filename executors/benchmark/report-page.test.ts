// The benchmark page with its tuning section, rendered in headless Chromium (one launch):
// the page, not only its HTML string. A network and a task named like a script injection
// render as text (no script element, no dialog); the network curve and each task's curve
// are SVG paths with one vertex per point of the figures; the bars, the axis labels and
// the tables are there; no console error and no request leaves the page; a screenshot of
// the tuning section is not blank. A second page: before every task has a valid
// measurement, the estimate and the curve say so instead of drawing one. A Winograd
// alternative counts once with its layers; the curve's marker label stays inside the chart.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { CompareReport } from '../../engine/compare/compare';
import type { LogEntry } from '../../engine/records/log';
import type { TuningRecord } from '../../engine/records/record';
import { launchChromium } from '../../engine/report/chromium.fixture';
import { tuningFigures, type ReportTask } from '../../engine/report/tuning-data';
import { skip } from '../../engine/skip.fixture';
import { renderHtml, type BenchmarkReport } from './report';

const HOSTILE_NETWORK = '<script>alert(1)</script>';
const HOSTILE_TASK = '<img src=x onerror=alert(2)> 1x8 -> 1x8';
const key = (c: string): string => `["${c.repeat(32)}", [1, 8]]`;
const TASKS: ReportTask[] = [
  { key: key('a'), desc: HOSTILE_TASK, weight: 2, flops: 2e6 },
  { key: key('b'), desc: 'dense 1x4 -> 1x4', weight: 1, flops: 1e6 },
  { key: key('c'), desc: 'conv2d_nhwc+add+relu 1x8x8x4 -> 1x8x8x4', weight: 3, flops: 4e6 },
];
const MATCH = { target: 'llvm', fingerprint: 'f00df00d' };

function rec(k: string, s: number, costs: number[] | 'error', policy?: string): TuningRecord {
  return {
    v: 1, engine: '0.1.0', key: k, desc: '', target: MATCH.target, fingerprint: MATCH.fingerprint, steps: [],
    costs_ms: costs === 'error' ? [] : costs, error: costs === 'error' ? 'wrong_answer' : null, seed: 0,
    time: new Date(Date.UTC(2025, 0, 1, 0, 0, s)).toISOString(), budget: 'full', ...(policy ? { policy } : {}),
  };
}
const asEntries = (records: TuningRecord[]): LogEntry[] => records.map((record, i) => ({ record, file: 'log.jsonl', line: i + 1 }));

/** Three tasks, 12 trials: a default and a few improvements each (task c's default is not in the log). */
const LOG = [
  rec(key('a'), 1, [4], 'default'), rec(key('b'), 2, [2], 'default'), rec(key('c'), 3, [6]),
  rec(key('a'), 4, [3]), rec(key('c'), 5, 'error'), rec(key('c'), 6, [5]), rec(key('b'), 7, [1.5]),
  rec(key('a'), 8, [3.5]), rec(key('c'), 9, [4]), rec(key('a'), 10, [2]), rec(key('b'), 11, [1.6]), rec(key('c'), 12, [4.5]),
];

const COMPARISON: CompareReport = {
  model_dir: '/m', onnx: '/m/net.onnx', onnx_source: 'exported builtin network', onnxruntime_version: '1.30.0', threads: 1, rounds: 5, number: 10,
  tensortune_median_ms: 18, onnxruntime_median_ms: 24, ratio: 0.75, tensortune_runs_ms: [18], onnxruntime_runs_ms: [24],
  outputs: [{ name: 'output', shape: [1, 10], max_abs_err: 1e-6, max_rel_err: 2e-5, max_abs_value: 3 }],
  top1: { tensortune: [3], onnxruntime: [3], agree: true },
};

function report(network: string, records: TuningRecord[], comparison?: CompareReport): BenchmarkReport {
  return {
    network, target: 'cpu', target_string: 'llvm', fingerprint: MATCH.fingerprint, engine_version: '0.1.0', time: '2025-01-02T00:00:00.000Z',
    cpu: 'test CPU', model_dir: 'out/net/cpu',
    result: {
      mean_ms: 20, median_ms: 20, max_ms: 21, min_ms: 19, std_ms: 0.5, threads: 1, repeat: 3, number: 10, warmup: 1, min_repeat_ms: 100, seed: 0,
      runs_ms: [19, 20, 21], abi_version: 1, cpu_ms: 500, cores: 2, load_before: 0.1, load_after: 0.2, seconds: 1, others_cores: null, warnings: [],
    },
    tuning: tuningFigures({ network, tasks: TASKS, entries: asEntries(records), match: MATCH }),
    comparison, comparison_hint: comparison ? undefined : 'none saved in <reports>/cpu.onnxruntime.json',
  };
}

const dir = mkdtempSync(path.join(tmpdir(), 'tt-report-page-'));
let browser: Browser | undefined;
let why = '';

test.before(async () => {
  const launched = await launchChromium();
  if ('browser' in launched) browser = launched.browser;
  else why = launched.why;
});
test.after(async () => {
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Opens `html` from a file; collects console errors, page errors, dialogs and every request. */
async function open(name: string, html: string): Promise<{ page: Page; problems: string[]; requests: string[]; url: string }> {
  const file = path.join(dir, name);
  writeFileSync(file, html);
  const page = await browser!.newPage({ viewport: { width: 1200, height: 900 } });
  const problems: string[] = [], requests: string[] = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('dialog', (d) => { problems.push(`dialog: ${d.message()}`); void d.dismiss(); });
  page.on('request', (r) => requests.push(r.url()));
  const url = pathToFileURL(file).href;
  await page.goto(url);
  return { page, problems, requests, url };
}

/** Points of a step path: `M` starts it, each further point is `H x V y`. */
const vertices = (el: { getAttribute(name: string): string | null }): number => (el.getAttribute('d') ?? '').match(/[MV]/g)?.length ?? 0;
// The functions that run in the page see DOM objects; this project's types have no DOM
// library, so they name the one method they call.
const totalLength = (el: unknown): number => (el as { getTotalLength(): number }).getTotalLength();
const boxWidth = (el: unknown): number => (el as { getBBox(): { width: number } }).getBBox().width;
const bbox = (el: unknown): { x: number; width: number } => {
  const b = (el as { getBBox(): { x: number; width: number } }).getBBox();
  return { x: b.x, width: b.width };
};

/** Browser-side: decodes a PNG (base64) and counts pixels that are not near-white and near the charts' blue. */
const PIXEL_COUNT = `async (b64) => {
  const img = new Image();
  img.src = 'data:image/png;base64,' + b64;
  await img.decode();
  const canvas = document.createElement('canvas');
  canvas.width = img.width; canvas.height = img.height;
  const g = canvas.getContext('2d');
  g.drawImage(img, 0, 0);
  const d = g.getImageData(0, 0, img.width, img.height).data;
  let ink = 0, blue = 0;
  for (let i = 0; i < d.length; i += 4) {
    if (d[i] < 200 || d[i + 1] < 200 || d[i + 2] < 200) ink++;
    if (Math.abs(d[i] - 0x2f) < 30 && Math.abs(d[i + 1] - 0x6d) < 30 && Math.abs(d[i + 2] - 0xb5) < 30) blue++;
  }
  return { total: d.length / 4, ink, blue };
}`;

test('the tuning section in Chromium: hostile names as text, curves with one vertex per point, bars, axis labels, tables, a non-blank picture', async () => {
  if (!browser) { skip('report page in Chromium', why); return; }
  const r = report(HOSTILE_NETWORK, LOG, COMPARISON);
  const f = r.tuning!;
  // The figures the page must draw (computed by hand from LOG): estimate from trial 3.
  assert.equal(f.curve.points.map(({ trial, ms }) => ({ trial, ms })), [
    { trial: 3, ms: 28 }, { trial: 4, ms: 26 }, { trial: 6, ms: 23 }, { trial: 7, ms: 22.5 }, { trial: 9, ms: 19.5 }, { trial: 10, ms: 17.5 }, { trial: 12, ms: 17.5 },
  ]);
  const { page, problems, requests, url } = await open('full.html', renderHtml(r));
  try {
    assert.equal(problems, []);
    assert.equal(requests, [url], 'the page loads nothing but itself');
    assert.is(await page.locator('script').count(), 0);
    assert.is(await page.locator('h1').textContent(), `${HOSTILE_NETWORK} on cpu`);
    assert.ok((await page.title()).startsWith(HOSTILE_NETWORK));
    assert.ok((await page.locator('table.shares').textContent())!.includes(HOSTILE_TASK), 'the task name is text in the table');
    assert.is(await page.locator('img').count(), 0, 'the task name made no element');

    const net = page.locator('#tuning-network-curve');
    assert.is(await net.locator('path.curve').evaluate(vertices), f.curve.points.length);
    assert.is(await net.locator('circle.point').count(), f.curve.points.length);
    assert.ok(await net.locator('path.curve').evaluate(totalLength) > 100, 'the curve has length on screen');
    assert.is(await net.locator('.axis-label.x').textContent(), 'trials (all tasks, in measurement order)');
    assert.is(await net.locator('.axis-label.y').textContent(), 'estimated latency (ms)');
    assert.ok(await net.locator('.axis-label.y').evaluate(boxWidth) > 50, 'the axis label is laid out');
    assert.is(await net.locator('title').first().textContent(), `${HOSTILE_NETWORK}: estimated total latency against trials`);
    assert.is(await page.locator('table.curve tbody tr').count(), f.curve.points.length);

    for (const t of f.tasks) {
      const chart = page.locator(`#tuning-task-${t.id}`);
      assert.is(await chart.locator('path.curve').evaluate(vertices), t.curve.length, `task ${t.id}`);
      assert.is(await chart.locator('circle.point').count(), t.curve.length);
      assert.is(await chart.locator('.axis-label.x').textContent(), 'trials of this task');
    }
    assert.equal(f.tasks.map((t) => t.curve.length), [3, 3, 4]);

    assert.is(await page.locator('#tuning-shares rect.bar').count(), 3);
    // Default vs tuned: two bars for a and b, one bar and an "unknown" for c (its default is not in the log).
    assert.is(await page.locator('#tuning-defaults rect.bar').count(), 5);
    assert.is(await page.locator('#tuning-defaults text.unknown').textContent(), 'default schedule: unknown');
    assert.match((await page.locator('table.defaults').textContent())!, 'unknown: no measurement of the default schedule in the records');
    assert.is(await page.locator('#tuning-onnxruntime rect.bar').count(), 2);
    assert.match((await page.locator('table.onnxruntime').textContent())!, '0.750 (tensortune / ONNX Runtime');
    assert.match((await page.locator('p.estimate').textContent())!, 'Estimated total latency: 17.5 ms');
    for (const svg of await page.locator('section.tuning svg').all()) {
      assert.is(await svg.getAttribute('role'), 'img');
      assert.ok((await svg.locator('title').first().textContent())!.length > 0);
    }

    // A screenshot of the section, decoded by the browser itself: mostly white, with the charts' blue.
    const png = (await page.locator('section.tuning').screenshot()).toString('base64');
    const pixels = await page.evaluate(`(${PIXEL_COUNT})(${JSON.stringify(png)})`) as { total: number; ink: number; blue: number };
    assert.ok(pixels.ink > pixels.total * 0.01, `ink on ${pixels.ink} of ${pixels.total} pixels`);
    assert.ok(pixels.blue > 500, `${pixels.blue} pixels of the charts' blue`);
    assert.equal(problems, []);
  } finally {
    await page.close();
  }
});

test('before every task has a valid measurement: no curve, the estimate unknown, the comparison missing with its hint', async () => {
  if (!browser) { skip('report page in Chromium (incomplete)', why); return; }
  const { page, problems } = await open('partial.html', renderHtml(report('net', LOG.slice(0, 2))));
  try {
    assert.equal(problems, []);
    const net = page.locator('#tuning-network-curve');
    assert.is(await net.locator('path.curve').count(), 0);
    assert.is(await net.locator('text.empty').textContent(), 'no value yet');
    assert.match((await page.locator('p.estimate').textContent())!, 'Estimated total latency: unknown: 1 of 3 task(s)');
    assert.is(await page.locator('#tuning-task-2 path.curve').count(), 0);
    assert.is(await page.locator('#tuning-task-0 circle.point').count(), 1);
    assert.match((await page.locator('section.tuning').textContent())!, 'No ONNX Runtime comparison available: none saved in <reports>/cpu.onnxruntime.json');
  } finally {
    await page.close();
  }
});

test('a Winograd alternative: one bar per layer group in the shares and defaults, its best named there', async () => {
  if (!browser) { skip('report page in Chromium (alternative)', why); return; }
  const tasks: ReportTask[] = [...TASKS, { key: key('w'), desc: 'conv2d_winograd_nhwc+add+relu 1x8x8x4 -> 1x8x8x4', weight: 3, flops: 2e6, alternative: { of: key('c') } }];
  const r = report('net', [...LOG, rec(key('w'), 13, [1])]);
  r.tuning = tuningFigures({ network: 'net', tasks, entries: asEntries([...LOG, rec(key('w'), 13, [1])]), match: MATCH });
  assert.is(r.tuning.estimated_ms, 2 * 2 + 1 * 1.5 + 3 * 1);
  const { page, problems } = await open('alternative.html', renderHtml(r));
  try {
    assert.equal(problems, []);
    assert.is(await page.locator('#tuning-shares rect.bar').count(), 3);
    assert.is(await page.locator('#tuning-task-3 circle.point').count(), 1, 'the alternative has its own curve');
    assert.match((await page.locator('table.shares').textContent())!, 'alternative of task 2');
    assert.match((await page.locator('table.defaults').textContent())!, '1 ms (task 3)');
  } finally {
    await page.close();
  }
});

test('the marker label stays inside the chart when every task is measured only at the last trial', async () => {
  if (!browser) { skip('report page in Chromium (marker)', why); return; }
  const r = report('net', [...LOG.slice(0, 2), rec(key('c'), 13, [6])]);
  assert.is(r.tuning!.curve.complete_at, 3);
  assert.is(r.tuning!.trials, 3);
  const { page, problems } = await open('marker.html', renderHtml(r));
  try {
    assert.equal(problems, []);
    const net = page.locator('#tuning-network-curve');
    assert.is(await net.locator('text.marker-label').textContent(), 'every task measured');
    const width = Number(await net.getAttribute('width'));
    const box = await net.locator('text.marker-label').evaluate(bbox);
    assert.ok(box.x >= 0 && box.x + box.width <= width, `label from ${box.x} to ${box.x + box.width}, chart ${width} wide`);
  } finally {
    await page.close();
  }
});

test.run();
