// The benchmark page laid out in headless Chromium, checked in the page itself (element
// geometry from getBoundingClientRect, not the HTML string): every chart has y ticks and
// x labels inside its picture, tick labels of one axis do not overlap, the median label of
// the runs chart touches no column and is not cut off, the units say µs for a model that
// runs in microseconds (no exponent anywhere), share-bar labels of convs that differ only
// in shape read differently and do not overlap, each figure's title sits above its chart,
// one run of history is a value instead of an empty chart, and the ONNX Runtime block
// names its threads and time and flags a stale comparison. With TENSORTUNE_REPORT_SCREENSHOTS
// set to a folder, each page is saved there as report-<name>.png and .html for a person to look at.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
import { renderHtml, type BenchmarkReport, type HistoryEntry } from './report';

const MATCH = { target: 'llvm -mcpu=native', fingerprint: 'f00df00d' };
const key = (i: number): string => `["${String(i).padStart(32, '0')}", [1, 8]]`;
/** Mobilenet-like tasks: many convs whose descriptions differ only at the end (their shapes). */
const TASKS: ReportTask[] = [
  { key: key(0), desc: 'conv2d_nhwc+add+relu 1x112x112x32 -> 1x112x112x64', weight: 1, flops: 5e7 },
  { key: key(1), desc: 'conv2d_nhwc+add+relu 1x56x56x64 -> 1x56x56x128', weight: 2, flops: 5e7 },
  { key: key(2), desc: 'conv2d_nhwc+add+relu 1x28x28x128 -> 1x28x28x256', weight: 2, flops: 5e7 },
  { key: key(3), desc: 'conv2d_nhwc+add+relu 1x14x14x256 -> 1x14x14x512', weight: 6, flops: 5e7 },
  { key: key(4), desc: 'depthwise_conv2d_nhwc+add+relu 1x56x56x128 -> 1x56x56x128', weight: 2, flops: 1e6 },
  { key: key(5), desc: 'dense+add 1x1024 -> 1x1000', weight: 1, flops: 2e6 },
];

function rec(k: number, minute: number, ms: number, policy?: string): TuningRecord {
  return {
    v: 1, engine: '0.1.0', key: key(k), desc: '', target: MATCH.target, fingerprint: MATCH.fingerprint, steps: [],
    costs_ms: [ms], error: null, seed: 0, time: new Date(Date.UTC(2025, 0, 1, 10, minute, k)).toISOString(), budget: 'full', ...(policy ? { policy } : {}),
  };
}
/** Default schedules first, then improvements over 30 minutes, all in microseconds. */
const LOG: TuningRecord[] = [
  ...TASKS.map((_, k) => rec(k, 0, 0.05 + 0.01 * k, 'default')),
  ...[5, 10, 20, 30].flatMap((minute, round) => TASKS.map((_, k) => rec(k, minute, (0.04 + 0.008 * k) / (round + 1)))),
];
const entries = (records: TuningRecord[]): LogEntry[] => records.map((record, i) => ({ record, file: 'log.jsonl', line: i + 1 }));

const RUNS = [0.0212, 0.0208, 0.0231, 0.0199, 0.0205, 0.0204, 0.0210, 0.0202, 0.0220, 0.0207];
const COMPARISON: CompareReport = {
  time: '2025-01-01T09:00:00.000Z', library_sha256: 'b'.repeat(64),
  model_dir: '/m', onnx: '/m/net.onnx', onnx_source: 'manifest', onnxruntime_version: '1.30.0', threads: 1, rounds: 5, number: 1000,
  tensortune_median_ms: 0.0207, onnxruntime_median_ms: 0.0312, ratio: 0.663, tensortune_runs_ms: [0.0207], onnxruntime_runs_ms: [0.0312],
  outputs: [{ name: 'logits', shape: [1, 1000], max_abs_err: 1e-6, max_rel_err: 2e-5, max_abs_value: 3 }],
  top1: { tensortune: [3], onnxruntime: [3], agree: true },
};

function report(): BenchmarkReport {
  return {
    network: 'mobilenet', target: 'cpu', target_string: MATCH.target, fingerprint: MATCH.fingerprint, engine_version: '0.1.0',
    time: '2025-01-02T12:00:00.000Z', cpu: 'test CPU', model_dir: 'dist/tensortune/mobilenet/cpu', library_sha256: 'a'.repeat(64),
    records: { tuned: 6, default: 2, by_budget: { full: 6 } },
    model: {
      inputs: [{ name: 'data', shape: [1, 224, 224, 3], dtype: 'float32' }], outputs: [{ name: 'logits', shape: [1, 1000], dtype: 'float32' }],
      flops: 1.14e9, params: 4_231_976, batch: 1,
    },
    result: {
      mean_ms: 0.0210, median_ms: 0.0207, max_ms: 0.0231, min_ms: 0.0199, std_ms: 0.0009, threads: 1, repeat: RUNS.length, number: 5000, warmup: 1,
      min_repeat_ms: 100, seed: 0, runs_ms: RUNS, abi_version: 1, cpu_ms: 1000, cores: 2, load_before: 0.1, load_after: 0.2, seconds: 1.2, others_cores: null, warnings: [],
    },
    tuning: tuningFigures({ network: 'mobilenet', tasks: TASKS, entries: entries(LOG), match: { ...MATCH, threads: 1 } }),
    comparison: COMPARISON,
    comparison_age: { time: COMPARISON.time!, from: 'measured', stale: 'it ran another build of the model (its model.so differs from the one benchmarked here): compare again' },
    untuned: {
      model_dir: 'dist/tensortune/mobilenet/reports/cpu.untuned', time: '2025-01-02T12:00:05.000Z', kernels: 8, mean_ms: 0.061, median_ms: 0.0605,
      max_ms: 0.064, min_ms: 0.059, std_ms: 0.001, runs_ms: [0.0605], threads: 1, repeat: 10, number: 2000, warnings: [],
    },
  };
}

/** A history entry of `report()` at `time` with this median (and a warning when `warned`). */
function entry(time: string, median: number, warned = false, tuned = 6): HistoryEntry {
  const r = report().result;
  return {
    time, network: 'mobilenet', target: 'cpu', target_string: MATCH.target, cpu: 'test CPU', cores: 2, threads: 1, load_before: 0.1, load_after: 0.2,
    others_cores: null, repeat: r.repeat, number: r.number, min_repeat_ms: 100, mean_ms: median, median_ms: median, max_ms: median, min_ms: median, std_ms: 0.0004,
    fingerprint: MATCH.fingerprint, engine_version: '0.1.0', warnings: warned ? ['busy machine'] : [],
    records: { tuned, default: 8 - tuned, by_budget: tuned ? { full: tuned } : {} }, library_sha256: 'a'.repeat(64),
  };
}
const HISTORY = [
  entry('2025-01-01T08:00:00.000Z', 0.0611, false, 0), entry('2025-01-01T11:00:00.000Z', 0.0309, true), entry('2025-01-01T15:30:00.000Z', 0.0251),
  entry('2025-01-02T09:10:00.000Z', 0.0224), entry('2025-01-02T10:40:00.000Z', 0.0213), entry('2025-01-02T12:00:00.000Z', 0.0207),
];

const dir = mkdtempSync(path.join(tmpdir(), 'tt-report-layout-'));
const shots = process.env.TENSORTUNE_REPORT_SCREENSHOTS;
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

async function open(name: string, html: string): Promise<Page> {
  const file = path.join(dir, `${name}.html`);
  writeFileSync(file, html);
  const page = await browser!.newPage({ viewport: { width: 1200, height: 900 } });
  await page.goto(pathToFileURL(file).href);
  if (shots) {
    mkdirSync(shots, { recursive: true });
    await page.screenshot({ path: path.join(shots, `report-${name}.png`), fullPage: true });
    writeFileSync(path.join(shots, `report-${name}.html`), html);
  }
  return page;
}

interface Box { x: number; y: number; right: number; bottom: number; text: string }
interface ChartLayout {
  svg: Box;
  /** Tick labels under the x axis and left of the y axis (by position against the axis lines). */
  xTicks: Box[];
  yTicks: Box[];
  axisLabels: Box[];
  bars: Box[];
  rowLabels: Box[];
  reference: Box | null;
  /** The figcaption of the chart's figure, if it has one. */
  caption: Box | null;
}

/** Browser-side: the boxes of one chart's parts, in page pixels. */
const LAYOUT = `(id) => {
  const box = (el) => { const r = el.getBoundingClientRect(); return { x: r.left, y: r.top, right: r.right, bottom: r.bottom, text: el.textContent.trim() }; };
  const svg = document.getElementById(id);
  if (!svg) return null;
  const axes = [...svg.querySelectorAll('line.axis')];
  const xAxis = axes.find((l) => l.getAttribute('y1') === l.getAttribute('y2'));
  const xAxisY = xAxis.getBoundingClientRect().top;
  const ticks = [...svg.querySelectorAll('text.tick')].map(box);
  const caption = svg.closest('figure')?.querySelector('figcaption');
  const ref = svg.querySelector('.reference-label');
  return {
    svg: box(svg), xTicks: ticks.filter((t) => t.y >= xAxisY - 1), yTicks: ticks.filter((t) => t.y < xAxisY - 1),
    axisLabels: [...svg.querySelectorAll('text.axis-label')].map(box), bars: [...svg.querySelectorAll('rect.bar')].map(box),
    rowLabels: [...svg.querySelectorAll('text.row-label')].map((el) => ({ ...box(el), text: [...el.querySelectorAll('tspan')].map((t) => t.textContent).join(' ') })),
    reference: ref ? box(ref) : null, caption: caption ? box(caption) : null,
  };
}`;

const layout = async (page: Page, id: string): Promise<ChartLayout> => {
  const got = await page.evaluate(`(${LAYOUT})(${JSON.stringify(id)})`) as ChartLayout | null;
  if (!got) throw new Error(`no chart #${id} in the page`);
  return got;
};
const overlap = (a: Box, b: Box): boolean => a.x < b.right - 0.5 && b.x < a.right - 0.5 && a.y < b.bottom - 0.5 && b.y < a.bottom - 0.5;
const inside = (a: Box, outer: Box): boolean => a.x >= outer.x - 0.5 && a.right <= outer.right + 0.5 && a.y >= outer.y - 0.5 && a.bottom <= outer.bottom + 0.5;
const show = (b: Box): string => `"${b.text}" [${b.x.toFixed(0)}..${b.right.toFixed(0)} x ${b.y.toFixed(0)}..${b.bottom.toFixed(0)}]`;

/** Ticks on both axes, inside the picture, none over another; the title above the chart. */
function checkAxes(name: string, c: ChartLayout, minX = 2, minY = 3): void {
  assert.ok(c.xTicks.length >= minX, `${name}: ${c.xTicks.length} x labels`);
  assert.ok(c.yTicks.length >= minY, `${name}: ${c.yTicks.length} y ticks`);
  for (const t of [...c.xTicks, ...c.yTicks, ...c.axisLabels]) assert.ok(inside(t, c.svg), `${name}: ${show(t)} inside the chart ${show(c.svg)}`);
  for (const ticks of [c.xTicks, c.yTicks]) {
    ticks.forEach((a, i) => ticks.slice(i + 1).forEach((b) => assert.not.ok(overlap(a, b), `${name}: ${show(a)} overlaps ${show(b)}`)));
  }
  assert.ok(c.caption, `${name}: a title`);
  assert.ok(c.caption!.bottom <= c.svg.y + 0.5, `${name}: its title ${show(c.caption!)} is above the chart (top ${c.svg.y.toFixed(0)})`);
}

test('the page of a model that runs in microseconds: axes, µs, labels clear of each other, titles above the charts', async () => {
  if (!browser) { skip('report layout in Chromium', why); return; }
  const page = await open('microseconds', renderHtml(report(), HISTORY));
  try {
    const text = (await page.locator('body').textContent())!;
    assert.not.match(text, /\de[-+]?\d+ ?(ms|µs)/, 'no time in exponent notation');
    assert.match(text, /max abs err 1\.00e-6/, 'output errors may be');
    assert.match((await page.locator('table.summary').textContent())!, 'median (µs)20.70');

    const runs = await layout(page, 'runs');
    checkAxes('runs', runs);
    assert.equal(runs.yTicks.map((t) => Number.isFinite(Number(t.text))), runs.yTicks.map(() => true), 'y ticks are numbers');
    assert.match(runs.axisLabels.map((l) => l.text).join(' | '), 'time per run (µs)');
    assert.is(runs.bars.length, RUNS.length);
    assert.is(runs.reference!.text, 'median 20.7 µs');
    assert.ok(inside(runs.reference!, runs.svg), `the median label ${show(runs.reference!)} is not cut off (chart ${show(runs.svg)})`);
    for (const b of runs.bars) assert.not.ok(overlap(runs.reference!, b), `the median label ${show(runs.reference!)} overlaps the column ${show(b)}`);

    const history = await layout(page, 'history-plot');
    checkAxes('history', history);
    assert.match(history.axisLabels.map((l) => l.text).join(' | '), 'median (µs)');
    assert.ok(history.xTicks.every((t) => /^\d{4}-\d\d-\d\d \d\d:\d\d$/.test(t.text)), history.xTicks.map((t) => t.text).join(', '));
    assert.match((await page.locator('table.history').textContent())!, '6 tuned (full: 6), 2 defaultengine 0.1.0, model.so aaaaaaaa');
    assert.match((await page.locator('#history-plot circle').first().locator('title').textContent())!, '0 tuned, 8 default; engine 0.1.0; model.so aaaaaaaa');

    for (const id of ['tuning-network-curve', 'tuning-time-curve', 'tuning-task-0', 'tuning-task-5']) checkAxes(id, await layout(page, id), 2, 2);
    // Rounds 10 minutes apart: pauses between tune runs, left out of the tuning time and said.
    assert.match((await layout(page, 'tuning-time-curve')).axisLabels.map((l) => l.text).join(' | '), 'tuning time (min; 2 pause(s) over 5 min left out)');

    const shares = await layout(page, 'tuning-shares');
    const labels = shares.rowLabels.map((l) => l.text);
    assert.is(new Set(labels).size, TASKS.length, `every row reads differently: ${labels.join(' / ')}`);
    for (const t of TASKS) assert.ok(labels.some((l) => l.endsWith(t.desc.slice(-12))), `the shapes of "${t.desc}" stay visible: ${labels.join(' / ')}`);
    shares.rowLabels.forEach((a, i) => {
      assert.ok(a.x >= shares.svg.x - 0.5, `${show(a)} is not cut off on the left`);
      for (const b of shares.bars) assert.not.ok(overlap(a, b), `${show(a)} overlaps a bar ${show(b)}`);
      shares.rowLabels.slice(i + 1).forEach((b) => assert.not.ok(overlap(a, b), `${show(a)} overlaps ${show(b)}`));
    });
    assert.match(shares.axisLabels[0].text, '(µs)');

    const untuned = await layout(page, 'untuned-tuned');
    assert.is(untuned.bars.length, 2);
    assert.match((await page.locator('p.untuned-note').textContent())!, 'Tuned: 20.7 µs, untuned: 60.5 µs, 2.92× faster tuned');
    const facts = (await page.locator('table.model-facts').textContent())!;
    for (const want of ['data [1, 224, 224, 3] float32', '1.14 GFLOP', '4,231,976 values', 'images per second48,309 (batch 1 / median 20.7 µs)', '55072 GFLOP/s']) {
      assert.ok(facts.includes(want), `model facts: "${want}" in ${facts}`);
    }
    const block = (await page.locator('section.tuning').textContent())!;
    assert.match(block, '1 thread(s), measured 2025-01-01T09:00:00.000Z.');
    assert.match((await page.locator('p.stale').textContent())!, 'Stale comparison (measured 2025-01-01T09:00:00.000Z): it ran another build of the model');
  } finally {
    await page.close();
  }
});

test('one run of history is its value, not an empty chart; a model of milliseconds reads in ms', async () => {
  if (!browser) { skip('report layout in Chromium (one run)', why); return; }
  const r = report();
  r.result = { ...r.result, runs_ms: RUNS.map((v) => v * 1000), median_ms: 20.7, mean_ms: 21, max_ms: 23.1, min_ms: 19.9, std_ms: 0.9 };
  delete r.untuned;
  const page = await open('one-run', renderHtml(r, [{ ...entry(r.time, 20.7) }]));
  try {
    assert.is(await page.locator('#history-plot').count(), 0);
    assert.is((await page.locator('p.single-run').textContent())!, 'One run so far: median 20.7 ms on 2025-01-02T12:00:00.000Z. The plot of the medians appears from the second run on.');
    const runs = await layout(page, 'runs');
    checkAxes('runs (ms)', runs);
    assert.is(runs.reference!.text, 'median 20.7 ms');
    assert.match(runs.axisLabels.map((l) => l.text).join(' | '), 'time per run (ms)');
    assert.match((await page.locator('body').textContent())!, 'No measured untuned latency: nx benchmark mobilenet --untuned');
  } finally {
    await page.close();
  }
});

test.run();
