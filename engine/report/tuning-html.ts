// The tuning part of the HTML reports, as pictures with a table beside each: what TVM
// users read in the task scheduler's log (its task table and "Estimated total latency"
// line), over the whole record history. Used inside the benchmark page (executors/
// benchmark/report.ts) and as a page of its own (`tensortune report`). Self-contained: no
// script, no network; every name from user data is escaped.

import type { CompareReport } from '../compare/compare';
import { esc, table } from './html';
import { barChart, fmt, stepChart } from './svg-charts';
import { TUNING_PAUSE_S, type TaskFigures, type TuningFigures } from './tuning-data';
import { duration, inUnit, unitOf, type TimeUnit } from '../units';

/** When a comparison was measured (or its file written, for one that does not say), and why it no longer describes the model, if so. */
export interface ComparisonAge {
  time: string;
  from: 'measured' | 'file written';
  stale?: string;
}

export interface TuningSectionOptions {
  /** The ONNX Runtime comparison, when there is one. */
  comparison?: CompareReport;
  /** Its time and staleness (executors/benchmark/tuning.ts comparisonAge). */
  comparisonAge?: ComparisonAge;
  /** Where the comparison file would be read from, and how to make it: shown when there is none. */
  comparisonHint?: string;
  /** The benchmark's median for the whole compiled model (ms), shown beside the estimate. */
  measuredMs?: number;
}

/** The styles the section needs, for the page's <style>. */
export const TUNING_CSS = `section.tuning figure{margin:1em 0}section.tuning figcaption{font-weight:600;margin-bottom:.3em}
section.tuning .tasks{display:flex;flex-wrap:wrap;gap:1em}section.tuning .tasks figure{margin:0;width:320px}section.tuning .tasks figcaption{font-size:12px;overflow-wrap:break-word}
section.tuning caption{text-align:left;font-weight:600;padding:.3em 0}section.tuning details{margin:.3em 0 1em}
section.tuning .unknown-note{color:#8a5a00}section.tuning .stale{border:2px solid #c0392b;background:#fdecea;padding:.3em .6em}`;

const ms = (v: number | null): string => (v === null ? 'unknown' : duration(v));
/** Values in ms as numbers of `u`, for a chart's axis. */
const scaled = (u: TimeUnit) => (v: number): number => v * u.scale;
const pct = (v: number | null): string => (v === null ? 'unknown' : `${(v * 100).toFixed(1)}%`);
const taskName = (t: Pick<TaskFigures, 'id' | 'desc'>): string => `${t.id}: ${t.desc}`;
/**
 * A task as a bar chart's row: its id and operators on the first line, its shapes (what
 * tells one conv from the next) whole on the second, so no two rows read the same.
 */
const taskRow = (t: TaskFigures): { label: string; detail?: string } => {
  const space = t.desc.indexOf(' ');
  return space < 0 ? { label: `${t.id}: ${t.desc}${bestFrom(t)}` } : { label: `${t.id}: ${t.desc.slice(0, space)}`, detail: `${t.desc.slice(space + 1)}${bestFrom(t)}` };
};
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
    lines.push(`<p class="estimate"><strong>Estimated total latency: ${duration(f.estimated_ms)}</strong>: the sum over the tasks of weight × best measured latency, ` +
      'the objective the task scheduler minimises (TVM prints it as "Estimated total latency" after each round).' +
      `${f.estimated_default_ms !== null ? ` With every task's default schedule it would be ${duration(f.estimated_default_ms)} (${(f.estimated_default_ms / f.estimated_ms).toFixed(2)}× the tuned estimate).` : ''}</p>`);
  } else {
    lines.push(`<p class="estimate unknown-note"><strong>Estimated total latency: unknown</strong>: ${f.unmeasured} of ${f.layers} ${unit(f)} have no valid measurement on this target and machine yet, ` +
      'and the estimate is a sum over every task (TVM prints "-" until then).</p>');
  }
  if (f.layers !== f.tasks.length) {
    lines.push(`<p>${f.tasks.length - f.layers} task(s) are an alternative implementation (Winograd) of another task's layers: compile runs the faster of the two, ` +
      'so the estimate, the shares and default against tuned count each layer group once, with its best member.</p>');
  }
  if (o.measuredMs !== undefined) {
    lines.push(`<p>The benchmark measured ${duration(o.measuredMs)} (median) for the compiled model: it also runs the kernels that are no tuning task (those without a reduction), ` +
      'and its schedules are the best records at the time of its compile, so it need not equal the estimate.</p>');
  }
  return lines.join('\n');
}

function networkCurve(f: TuningFigures): string {
  const c = f.curve;
  const u = unitOf(c.points.map((p) => p.ms));
  const chart = stepChart({
    id: 'tuning-network-curve', title: `${f.network}: estimated total latency against trials`,
    desc: c.complete_at === null ? 'No point: some task has no valid measurement yet.'
      : `Step curve from trial ${c.complete_at} (the first trial after which every task had a valid measurement) to trial ${f.trials}, from ${duration(c.points[0].ms)} to ${duration(c.points.at(-1)!.ms)}.`,
    xLabel: 'trials (all tasks, in measurement order)', yLabel: `estimated latency (${u.name})`,
    points: c.points.map((p) => ({ x: p.trial, y: scaled(u)(p.ms) })), xMax: f.trials,
    marker: c.complete_at === null ? undefined : { x: c.complete_at, label: 'every task measured' },
  });
  const note = c.complete_at === null
    ? '<p class="unknown-note">No curve yet: the estimate needs a valid measurement of every task.</p>'
    : `<p>The curve starts at trial ${c.complete_at}, when the last task got its first valid measurement; before it the estimate is unknown. A point is a trial that lowered the estimate; the last point is the last trial.</p>`;
  const rows = c.points.map((p) => [String(p.trial), p.elapsed_s === undefined ? '' : clock(p.elapsed_s), inUnit(p.ms, u)]);
  return `<h3>Estimated total latency against trials</h3>
<figure><figcaption>Estimated total latency (${u.name}) after each trial</figcaption>${chart}</figure>
${note}
${timeCurve(f, u)}
<details><summary>The curve as a table</summary>${table('curve', 'Estimated total latency after each trial that lowered it', ['trial', 'tuning time', `estimated latency (${u.name})`], rows)}</details>`;
}

/** `45 s`, `12.5 min`, `3.2 h`. */
const clock = (s: number): string => (s < 120 ? `${Math.round(s)} s` : s < 7200 ? `${(s / 60).toFixed(1)} min` : `${(s / 3600).toFixed(1)} h`);

/** The estimate against tuning time (the records' measurement times, pauses between tune runs left out). */
function timeCurve(f: TuningFigures, u: TimeUnit): string {
  const c = f.curve;
  if (c.complete_at === null || c.points.some((p) => p.elapsed_s === undefined)) return '';
  const minutes = c.tuning_s >= 120;
  const x = (s: number): number => (minutes ? s / 60 : s);
  const chart = stepChart({
    id: 'tuning-time-curve', title: `${f.network}: estimated total latency against tuning time`,
    desc: `The same curve against the time the trials were measured at: ${clock(c.tuning_s)} of tuning from ${c.first_time} to ${c.last_time}${c.pauses ? `, ${c.pauses} pause(s) left out` : ''}.`,
    xLabel: `tuning time (${minutes ? 'min' : 's'}${c.pauses ? `; ${c.pauses} pause(s) over ${TUNING_PAUSE_S / 60} min left out` : ''})`, yLabel: `estimated latency (${u.name})`,
    points: c.points.map((p) => ({ x: x(p.elapsed_s!), y: scaled(u)(p.ms) })), xMax: x(c.tuning_s),
  });
  return `<figure><figcaption>Estimated total latency (${u.name}) against tuning time</figcaption>${chart}</figure>
<p>Tuning time is the time between consecutive trials, from the records' measurement times (${esc(c.first_time ?? '')} to ${esc(c.last_time ?? '')}): ${clock(c.tuning_s)} in all${
  c.pauses ? `; ${c.pauses} gap(s) of more than ${TUNING_PAUSE_S / 60} minutes between trials are pauses between tune runs and are left out` : ''}. Trials measured in parallel share their time.</p>`;
}

function shares(f: TuningFigures): string {
  const order = layerTasks(f).sort((a, b) => (b.weighted_ms ?? -1) - (a.weighted_ms ?? -1) || a.id - b.id);
  const u = unitOf(order.flatMap((t) => (t.weighted_ms === null ? [] : [t.weighted_ms])));
  const chart = barChart({
    id: 'tuning-shares', title: `${f.network}: each task's part of the estimated latency`,
    desc: `One bar per task, weight × best latency in ${u.name}, largest first; a task without a valid measurement is marked unknown.`,
    xLabel: `weight × best latency (${u.name})`, series: [{ name: 'weight × best', color: '#2f6db5' }],
    rows: order.map((t) => ({ ...taskRow(t), values: [t.weighted_ms === null ? null : scaled(u)(t.weighted_ms)] })),
    valueLabel: (v, _series, row) => `${fmt(v)} ${u.name} (${pct(order[row].share)})`,
  });
  const of = f.estimated_ms === null ? `the sum over the ${f.layers - f.unmeasured} measured ${unit(f)}` : 'the estimated total latency';
  const alternatives = f.tasks.filter((t) => t.alternative_of !== null);
  const rows = [...order, ...alternatives].map((t) => [String(t.id), esc(t.desc), String(t.weight), ms(t.best_ms),
    t.alternative_of === null ? `${ms(t.weighted_ms)}${bestFrom(t)}` : `alternative of task ${t.alternative_of}`, t.alternative_of === null ? pct(t.share) : '',
    String(t.trials), String(t.errors), t.best_ms === null || t.best_ms <= 0 ? 'unknown' : (t.flops / (t.best_ms * 1e-3) / 1e9).toFixed(2)]);
  return `<h3>Each task's share of the estimated latency</h3>
<figure><figcaption>weight × best latency per task</figcaption>${chart}</figure>
<p>A task's share is its weight (how many layers of the network are this task) times its best latency (the faster of it and its alternatives), over ${of}: where the task scheduler expects time to go.</p>
${table('shares', 'Tasks, as the task scheduler\'s table lists them', ['ID', 'task', 'weight', 'best latency', 'weight × best', 'share', 'trials', 'errors', 'GFLOPS'], rows)}`;
}

function defaults(f: TuningFigures): string {
  const layers = layerTasks(f);
  const u = unitOf(layers.flatMap((t) => [...(t.default.known ? [t.default.ms] : []), ...(t.layer_best ? [t.layer_best.ms] : [])]));
  const chart = barChart({
    id: 'tuning-defaults', title: `${f.network}: default schedule against the best tuned one, per task`,
    desc: `Two bars per task: the default schedule's measured latency and the best measured latency, in ${u.name}; unknown where the records hold no measurement of the default.`,
    xLabel: `latency of one run (${u.name})`, series: [{ name: 'default schedule', color: '#b0b0b0' }, { name: 'best tuned', color: '#2f6db5' }],
    rows: layers.map((t) => ({ ...taskRow(t), values: [t.default.known ? scaled(u)(t.default.ms) : null, t.layer_best ? scaled(u)(t.layer_best.ms) : null] })),
    valueLabel: (v) => `${fmt(v)} ${u.name}`,
  });
  const unknown = layers.filter((t) => !t.default.known).length;
  const rows = layers.map((t) => [String(t.id), esc(t.desc), t.default.known ? ms(t.default.ms) : `unknown: ${esc(t.default.why)}`, `${ms(t.layer_best?.ms ?? null)}${bestFrom(t)}`,
    t.speedup === null ? 'unknown' : `${t.speedup.toFixed(2)}×`]);
  return `<h3>Default schedule against tuned, per task</h3>
<figure><figcaption>Default and best tuned latency per task</figcaption>${chart}</figure>
<p>The default schedule is what compile uses for a task without a record; tune measures it first (its records have policy <code>default</code>), so tuning never makes a task slower.${
  unknown ? ` <span class="unknown-note">For ${unknown} task(s) the records hold no valid measurement of it: shown as unknown, not estimated.</span>` : ''}</p>
${table('defaults', 'Default against tuned', ['ID', 'task', 'default schedule', 'best tuned', 'speedup'], rows)}`;
}

function taskCurves(f: TuningFigures): string {
  const figures = f.tasks.map((t) => {
    const u = unitOf(t.curve.map((p) => p.ms));
    const chart = stepChart({
      id: `tuning-task-${t.id}`, title: `Task ${taskName(t)}: best latency against its trials`,
      desc: t.curve.length === 0 ? 'No valid measurement yet.' : `${t.trials} trial(s); best ${duration(t.best_ms!)}.`,
      xLabel: 'trials of this task', yLabel: `best latency (${u.name})`, points: t.curve.map((p) => ({ x: p.trial, y: scaled(u)(p.ms) })), xMax: t.trials,
      width: 320, height: 170,
    });
    const rows = t.curve.map((p) => [String(p.trial), inUnit(p.ms, u)]);
    // The caption above the chart, its width: a long task name wraps instead of widening the figure.
    return `<figure class="task-curve"><figcaption title="${esc(taskName(t))}">Task ${esc(taskName(t))}</figcaption>${chart}` +
      `<details><summary>As a table</summary>${table('task-curve', `Task ${t.id}: best latency after each trial that lowered it`, ['trial', `best latency (${u.name})`], rows)}</details></figure>`;
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
  const u = unitOf([c.tensortune_median_ms, c.onnxruntime_median_ms]);
  const chart = barChart({
    id: 'tuning-onnxruntime', title: `${f.network}: tensortune against ONNX Runtime`,
    desc: `Median latency of one run, ${c.threads} thread(s): tensortune ${duration(c.tensortune_median_ms)}, ONNX Runtime ${duration(c.onnxruntime_median_ms)}.`,
    xLabel: `median latency of one run (${u.name})`, series: [{ name: 'median', color: '#2f6db5' }],
    rows: [{ label: 'tensortune', values: [scaled(u)(c.tensortune_median_ms)] }, { label: `ONNX Runtime ${c.onnxruntime_version}`, values: [scaled(u)(c.onnxruntime_median_ms)] }],
    valueLabel: (v) => `${fmt(v)} ${u.name}`,
  });
  const age = o.comparisonAge;
  const when = age ? `${age.from === 'measured' ? 'measured' : 'file written (the comparison does not say when it was measured)'} ${age.time}`
    : c.time !== undefined ? `measured ${c.time}` : 'time of measurement not recorded';
  const rows = [
    ['ratio', `${c.ratio.toFixed(3)} (tensortune / ONNX Runtime; below 1: tensortune is faster)${c.paired_ratio === undefined ? '' : `; paired by round ${c.paired_ratio.toFixed(3)}`}`],
    ['threads', `${c.threads} (both engines)`], ['when', esc(when)], ['interleaved rounds', String(c.rounds)], ['runs per measurement', String(c.number)],
    ['ONNX model', esc(c.onnx_source)], ['top-1 class', c.top1.applies === false ? 'n/a' : c.top1.agree ? 'agrees' : 'DIFFERS'],
    ...c.outputs.map((out) => [`output ${esc(out.name)}`, `max abs err ${out.max_abs_err === null ? 'NaN' : fmt(out.max_abs_err)}, max rel err ${fmt(out.max_rel_err)}`]),
  ];
  const stale = age?.stale ? `<p class="stale" role="alert"><strong>Stale comparison</strong> (${esc(when)}): ${esc(age.stale)}.</p>\n` : '';
  return `<h3>Against ONNX Runtime</h3>
${stale}<p class="comparison-when">${c.threads} thread(s), ${esc(when)}.</p>
<figure><figcaption>Median latency, tensortune and ONNX Runtime, same weights, input and threads</figcaption>${chart}</figure>
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
