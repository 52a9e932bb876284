// The tuning part of the HTML reports, as pictures with a table beside each: what TVM
// users read in the task scheduler's log (its task table and "Estimated total latency"
// line), over the whole record history. Used inside the benchmark page (executors/
// benchmark/report.ts) and as a page of its own (`tensortune report`). Self-contained: no
// script, no network; every name from user data is escaped.

import type { CompareReport } from '../compare/compare';
import { esc, table } from './html';
import { barChart, fmt, stepChart } from './svg-charts';
import type { TaskFigures, TuningFigures } from './tuning-data';

export interface TuningSectionOptions {
  /** The ONNX Runtime comparison, when there is one. */
  comparison?: CompareReport;
  /** Where the comparison file would be read from, and how to make it: shown when there is none. */
  comparisonHint?: string;
  /** The benchmark's median for the whole compiled model (ms), shown beside the estimate. */
  measuredMs?: number;
}

/** The styles the section needs, for the page's <style>. */
export const TUNING_CSS = `section.tuning figure{margin:1em 0}section.tuning figcaption{font-weight:600;margin-bottom:.3em}
section.tuning .tasks{display:flex;flex-wrap:wrap;gap:1em}section.tuning .tasks figure{margin:0}
section.tuning caption{text-align:left;font-weight:600;padding:.3em 0}section.tuning details{margin:.3em 0 1em}
section.tuning .unknown-note{color:#8a5a00}`;

const ms = (v: number | null): string => (v === null ? 'unknown' : `${fmt(v)} ms`);
const pct = (v: number | null): string => (v === null ? 'unknown' : `${(v * 100).toFixed(1)}%`);
const taskName = (t: Pick<TaskFigures, 'id' | 'desc'>): string => `${t.id}: ${t.desc}`;
/** What the estimate sums over: tasks, or layer groups when some tasks are alternatives of others (tuning-data.ts). */
const unit = (f: TuningFigures): string => (f.layers === f.tasks.length ? 'task(s)' : 'layer group(s)');
/** The tasks that are no alternative: one per layer group, which the estimate sums over. */
const layerTasks = (f: TuningFigures): TaskFigures[] => f.tasks.filter((t) => t.alternative_of === null);
/** Where a layer group's best comes from, when not from its own task: ` (task N)`. */
const bestFrom = (t: TaskFigures): string => (t.layer_best !== null && t.layer_best.id !== t.id ? ` (task ${t.layer_best.id})` : '');

function summary(f: TuningFigures, o: TuningSectionOptions): string {
  const budgets = f.budgets.map((b) => `${b.budget}: ${b.trials}`).join(', ');
  const lines = [
    `<p>${f.trials} trial(s) of ${f.tasks.length} task(s) of ${esc(f.network)} on target ${esc(JSON.stringify(f.target))} (machine ${esc(f.fingerprint)}${f.threads !== null ? `, measured at ${f.threads} thread(s)` : ''}), ` +
      `${f.errors} of them without a valid time (build or run errors, wrong answers, timeouts)${budgets ? `; by budget: ${esc(budgets)}` : ''}.</p>`,
  ];
  if (f.estimated_ms !== null) {
    lines.push(`<p class="estimate"><strong>Estimated total latency: ${fmt(f.estimated_ms)} ms</strong>: the sum over the tasks of weight × best measured latency, ` +
      'the objective the task scheduler minimises (TVM prints it as "Estimated total latency" after each round).' +
      `${f.estimated_default_ms !== null ? ` With every task's default schedule it would be ${fmt(f.estimated_default_ms)} ms (${(f.estimated_default_ms / f.estimated_ms).toFixed(2)}× the tuned estimate).` : ''}</p>`);
  } else {
    lines.push(`<p class="estimate unknown-note"><strong>Estimated total latency: unknown</strong>: ${f.unmeasured} of ${f.layers} ${unit(f)} have no valid measurement on this target and machine yet, ` +
      'and the estimate is a sum over every task (TVM prints "-" until then).</p>');
  }
  if (f.layers !== f.tasks.length) {
    lines.push(`<p>${f.tasks.length - f.layers} task(s) are an alternative implementation (Winograd) of another task's layers: compile runs the faster of the two, ` +
      'so the estimate, the shares and default against tuned count each layer group once, with its best member.</p>');
  }
  if (o.measuredMs !== undefined) {
    lines.push(`<p>The benchmark measured ${fmt(o.measuredMs)} ms (median) for the compiled model: it also runs the kernels that are no tuning task (those without a reduction), ` +
      'and its schedules are the best records at the time of its compile, so it need not equal the estimate.</p>');
  }
  return lines.join('\n');
}

function networkCurve(f: TuningFigures): string {
  const c = f.curve;
  const chart = stepChart({
    id: 'tuning-network-curve', title: `${f.network}: estimated total latency against trials`,
    desc: c.complete_at === null ? 'No point: some task has no valid measurement yet.'
      : `Step curve from trial ${c.complete_at} (the first trial after which every task had a valid measurement) to trial ${f.trials}, from ${fmt(c.points[0].ms)} ms to ${fmt(c.points.at(-1)!.ms)} ms.`,
    xLabel: 'trials (all tasks, in measurement order)', yLabel: 'estimated latency (ms)',
    points: c.points.map((p) => ({ x: p.trial, y: p.ms })), xMax: f.trials,
    marker: c.complete_at === null ? undefined : { x: c.complete_at, label: 'every task measured' },
  });
  const note = c.complete_at === null
    ? '<p class="unknown-note">No curve yet: the estimate needs a valid measurement of every task.</p>'
    : `<p>The curve starts at trial ${c.complete_at}, when the last task got its first valid measurement; before it the estimate is unknown. A point is a trial that lowered the estimate; the last point is the last trial.</p>`;
  const rows = c.points.map((p) => [String(p.trial), fmt(p.ms)]);
  return `<h3>Estimated total latency against trials</h3>
<figure>${chart}<figcaption>Estimated total latency (ms) after each trial</figcaption></figure>
${note}
<details><summary>The curve as a table</summary>${table('curve', 'Estimated total latency after each trial that lowered it', ['trial', 'estimated latency (ms)'], rows)}</details>`;
}

function shares(f: TuningFigures): string {
  const order = layerTasks(f).sort((a, b) => (b.weighted_ms ?? -1) - (a.weighted_ms ?? -1) || a.id - b.id);
  const chart = barChart({
    id: 'tuning-shares', title: `${f.network}: each task's part of the estimated latency`,
    desc: 'One bar per task, weight × best latency in ms, largest first; a task without a valid measurement is marked unknown.',
    xLabel: 'weight × best latency (ms)', series: [{ name: 'weight × best', color: '#2f6db5' }],
    rows: order.map((t) => ({ label: `${taskName(t)}${bestFrom(t)}`, values: [t.weighted_ms] })),
    valueLabel: (v, _series, row) => `${fmt(v)} ms (${pct(order[row].share)})`,
  });
  const of = f.estimated_ms === null ? `the sum over the ${f.layers - f.unmeasured} measured ${unit(f)}` : 'the estimated total latency';
  const alternatives = f.tasks.filter((t) => t.alternative_of !== null);
  const rows = [...order, ...alternatives].map((t) => [String(t.id), esc(t.desc), String(t.weight), ms(t.best_ms),
    t.alternative_of === null ? `${ms(t.weighted_ms)}${bestFrom(t)}` : `alternative of task ${t.alternative_of}`, t.alternative_of === null ? pct(t.share) : '',
    String(t.trials), String(t.errors), t.best_ms === null || t.best_ms <= 0 ? 'unknown' : (t.flops / (t.best_ms * 1e-3) / 1e9).toFixed(2)]);
  return `<h3>Each task's share of the estimated latency</h3>
<figure>${chart}<figcaption>weight × best latency per task</figcaption></figure>
<p>A task's share is its weight (how many layers of the network are this task) times its best latency (the faster of it and its alternatives), over ${of}: where the task scheduler expects time to go.</p>
${table('shares', 'Tasks, as the task scheduler\'s table lists them', ['ID', 'task', 'weight', 'best latency', 'weight × best', 'share', 'trials', 'errors', 'GFLOPS'], rows)}`;
}

function defaults(f: TuningFigures): string {
  const layers = layerTasks(f);
  const chart = barChart({
    id: 'tuning-defaults', title: `${f.network}: default schedule against the best tuned one, per task`,
    desc: 'Two bars per task: the default schedule\'s measured latency and the best measured latency, in ms; unknown where the records hold no measurement of the default.',
    xLabel: 'latency of one run (ms)', series: [{ name: 'default schedule', color: '#b0b0b0' }, { name: 'best tuned', color: '#2f6db5' }],
    rows: layers.map((t) => ({ label: `${taskName(t)}${bestFrom(t)}`, values: [t.default.known ? t.default.ms : null, t.layer_best?.ms ?? null] })),
  });
  const unknown = layers.filter((t) => !t.default.known).length;
  const rows = layers.map((t) => [String(t.id), esc(t.desc), t.default.known ? ms(t.default.ms) : `unknown: ${esc(t.default.why)}`, `${ms(t.layer_best?.ms ?? null)}${bestFrom(t)}`,
    t.speedup === null ? 'unknown' : `${t.speedup.toFixed(2)}×`]);
  return `<h3>Default schedule against tuned, per task</h3>
<figure>${chart}<figcaption>Default and best tuned latency per task</figcaption></figure>
<p>The default schedule is what compile uses for a task without a record; tune measures it first (its records have policy <code>default</code>), so tuning never makes a task slower.${
  unknown ? ` <span class="unknown-note">For ${unknown} task(s) the records hold no valid measurement of it: shown as unknown, not estimated.</span>` : ''}</p>
${table('defaults', 'Default against tuned', ['ID', 'task', 'default schedule', 'best tuned', 'speedup'], rows)}`;
}

function taskCurves(f: TuningFigures): string {
  const figures = f.tasks.map((t) => {
    const chart = stepChart({
      id: `tuning-task-${t.id}`, title: `Task ${taskName(t)}: best latency against its trials`,
      desc: t.curve.length === 0 ? 'No valid measurement yet.' : `${t.trials} trial(s); best ${fmt(t.best_ms!)} ms.`,
      xLabel: 'trials of this task', yLabel: 'best latency (ms)', points: t.curve.map((p) => ({ x: p.trial, y: p.ms })), xMax: t.trials,
      width: 320, height: 170,
    });
    const rows = t.curve.map((p) => [String(p.trial), fmt(p.ms)]);
    return `<figure class="task-curve">${chart}<figcaption>Task ${esc(taskName(t))}</figcaption>` +
      `<details><summary>As a table</summary>${table('task-curve', `Task ${t.id}: best latency after each trial that lowered it`, ['trial', 'best latency (ms)'], rows)}</details></figure>`;
  });
  return `<h3>Best latency against trials, per task</h3>
<p>Each task's best valid latency after each of its own trials; a point is an improvement, the last point its last trial. A flat end means the search stopped finding faster programs; the task scheduler then gives its trials to the tasks whose estimated gain is largest.</p>
<div class="tasks">${figures.join('\n')}</div>`;
}

function comparison(f: TuningFigures, o: TuningSectionOptions): string {
  const c = o.comparison;
  if (!c) {
    return `<h3>Against ONNX Runtime</h3>\n<p class="unknown-note">No ONNX Runtime comparison available${o.comparisonHint ? `: ${esc(o.comparisonHint)}` : ''}.</p>`;
  }
  const chart = barChart({
    id: 'tuning-onnxruntime', title: `${f.network}: tensortune against ONNX Runtime`,
    desc: `Median latency of one run, ${c.threads} thread(s): tensortune ${fmt(c.tensortune_median_ms)} ms, ONNX Runtime ${fmt(c.onnxruntime_median_ms)} ms.`,
    xLabel: 'median latency of one run (ms)', series: [{ name: 'median', color: '#2f6db5' }],
    rows: [{ label: 'tensortune', values: [c.tensortune_median_ms] }, { label: `ONNX Runtime ${c.onnxruntime_version}`, values: [c.onnxruntime_median_ms] }],
  });
  const rows = [
    ['ratio', `${c.ratio.toFixed(3)} (tensortune / ONNX Runtime; below 1: tensortune is faster)`],
    ['threads', String(c.threads)], ['interleaved rounds', String(c.rounds)], ['runs per measurement', String(c.number)],
    ['ONNX model', esc(c.onnx_source)], ['top-1 class', c.top1.applies === false ? 'n/a' : c.top1.agree ? 'agrees' : 'DIFFERS'],
    ...c.outputs.map((out) => [`output ${esc(out.name)}`, `max abs err ${out.max_abs_err === null ? 'NaN' : fmt(out.max_abs_err)}, max rel err ${fmt(out.max_rel_err)}`]),
  ];
  return `<h3>Against ONNX Runtime</h3>
<figure>${chart}<figcaption>Median latency, tensortune and ONNX Runtime, same weights, input and threads</figcaption></figure>
${table('onnxruntime', 'The comparison', ['measure', 'value'], rows)}`;
}

/** The tuning section (an <h2> and its parts) for a page. */
export function tuningSection(f: TuningFigures, o: TuningSectionOptions = {}): string {
  return `<section class="tuning" aria-labelledby="tuning-heading">
<h2 id="tuning-heading">Tuning</h2>
${summary(f, o)}
${networkCurve(f)}
${shares(f)}
${defaults(f)}
${taskCurves(f)}
${comparison(f, o)}
</section>`;
}

/** A page of its own (`tensortune report`). */
export function tuningPage(f: TuningFigures, o: TuningSectionOptions = {}): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(f.network)}: tensortune tuning report</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:72em}table{border-collapse:collapse}th,td{padding:.2em .8em;text-align:left;border-bottom:1px solid #ddd}td{font-variant-numeric:tabular-nums}
${TUNING_CSS}</style>
</head><body>
<h1>${esc(f.network)}: tuning</h1>
${tuningSection(f, o)}
</body></html>
`;
}
