// Inline SVG charts for the HTML reports: a best-so-far step curve, horizontal bars,
// columns (one per measurement, with a reference line) and a line of points over runs.
// Written here on purpose, as a few small functions, instead of a charting library: the
// pages must be self-contained (no script, no network, no CDN) and open from a CI
// artifact as they are, and these two chart kinds need little more than a linear scale
// and "nice" ticks. Every chart has a <title> and <desc> (role="img"), axis labels as
// text, and the page puts a table with the same numbers beside it.

import { esc } from './html';

export interface Point { x: number; y: number }

/** A linear map from [d0, d1] to [r0, r1] (a zero-width domain maps to the middle). */
export function linear(d0: number, d1: number, r0: number, r1: number): (v: number) => number {
  return (v) => (d1 === d0 ? (r0 + r1) / 2 : r0 + ((v - d0) / (d1 - d0)) * (r1 - r0));
}

/** About `count` round tick values (1, 2 or 5 × 10^k apart) from 0 to at least `max`. */
export function niceTicks(max: number, count = 5): number[] {
  if (!(max > 0) || !Number.isFinite(max)) return [0, 1];
  const raw = max / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw)!;
  const ticks: number[] = [];
  for (let i = 0; ; i++) {
    const v = Number((i * step).toPrecision(12));
    ticks.push(v);
    if (v >= max) break;
  }
  return ticks;
}

/** A number for an axis or a label: up to 4 significant digits, no exponent for ordinary sizes. */
export function fmt(v: number): string {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e5 || a < 1e-3) return v.toExponential(2);
  return String(Number(v.toPrecision(4)));
}

const px = (v: number): string => v.toFixed(1);

interface Frame { width: number; height: number; left: number; right: number; top: number; bottom: number }

function svgOpen(id: string, f: Frame, title: string, desc: string, cls: string): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" class="chart ${cls}" id="${id}" width="${f.width}" height="${f.height}" viewBox="0 0 ${f.width} ${f.height}" ` +
    `role="img" aria-labelledby="${id}-title ${id}-desc"><title id="${id}-title">${esc(title)}</title><desc id="${id}-desc">${esc(desc)}</desc>`;
}

export interface StepChart {
  /** Unique in the page: [a-z0-9-]. */
  id: string;
  title: string;
  /** What the chart shows, for screen readers. */
  desc: string;
  xLabel: string;
  yLabel: string;
  /** Best-so-far values, x increasing: drawn as a step curve with a marker per point. */
  points: readonly Point[];
  /** The x axis spans 0..xMax (at least the last point). */
  xMax: number;
  /** A dashed vertical line with a label (e.g. where a curve starts). */
  marker?: { x: number; label: string };
  width?: number;
  height?: number;
}

/**
 * A step curve: the value holds until the next point (a best-so-far never changes
 * between improvements). The path is `M x0 y0` then `H xi V yi` per further point, so it
 * has one vertex per point; each point is also a circle with its numbers as a tooltip.
 */
export function stepChart(c: StepChart): string {
  const f: Frame = { width: c.width ?? 640, height: c.height ?? 240, left: 64, right: 16, top: 14, bottom: 44 };
  const xMax = Math.max(c.xMax, ...c.points.map((p) => p.x), 1);
  const yTicks = niceTicks(Math.max(...c.points.map((p) => p.y), 0), f.height < 200 ? 3 : 5);
  const xTicks = niceTicks(xMax, f.width < 400 ? 3 : 6).filter((t) => t <= xMax);
  const x = linear(0, xMax, f.left, f.width - f.right);
  const y = linear(0, yTicks.at(-1)!, f.height - f.bottom, f.top);
  const parts = [svgOpen(c.id, f, c.title, c.desc, 'step-chart')];
  parts.push(...axes(f, xTicks.map((t) => ({ at: x(t), label: fmt(t) })), yTicks.map((t) => ({ at: y(t), label: fmt(t) })), c.xLabel, c.yLabel));
  if (c.marker) {
    const at = x(c.marker.x);
    // The label goes on the side of the line with more room: right of it in the left half of
    // the plot, left of it (anchored at its end) in the right half, so it stays inside the SVG.
    const right = at <= (f.left + f.width - f.right) / 2;
    parts.push(`<line class="marker" x1="${px(at)}" y1="${f.top}" x2="${px(at)}" y2="${f.height - f.bottom}" stroke="#888" stroke-dasharray="3 3"/>` +
      `<text class="marker-label" x="${px(right ? at + 4 : at - 4)}" y="${f.top + 10}" font-size="10" fill="#555" text-anchor="${right ? 'start' : 'end'}">${esc(c.marker.label)}</text>`);
  }
  if (c.points.length > 0) {
    const d = c.points.map((p, i) => (i === 0 ? `M${px(x(p.x))} ${px(y(p.y))}` : `H${px(x(p.x))} V${px(y(p.y))}`)).join(' ');
    parts.push(`<path class="curve" d="${d}" fill="none" stroke="#2f6db5" stroke-width="1.5"/>`);
    parts.push(...c.points.map((p) => `<circle class="point" cx="${px(x(p.x))}" cy="${px(y(p.y))}" r="2.5" fill="#2f6db5"><title>${esc(`${c.xLabel} ${fmt(p.x)}: ${fmt(p.y)}`)}</title></circle>`));
  } else {
    parts.push(`<text class="empty" x="${px((f.left + f.width - f.right) / 2)}" y="${px((f.top + f.height - f.bottom) / 2)}" text-anchor="middle" font-size="12" fill="#555">no value yet</text>`);
  }
  parts.push('</svg>');
  return parts.join('');
}

interface Tick { at: number; label: string }

/** The two axes with their ticks, tick labels and axis labels (class axis-label). */
function axes(f: Frame, xTicks: readonly Tick[], yTicks: readonly Tick[], xLabel: string, yLabel: string): string[] {
  const bottom = f.height - f.bottom;
  const out = [
    `<line class="axis" x1="${f.left}" y1="${bottom}" x2="${f.width - f.right}" y2="${bottom}" stroke="#333"/>`,
    `<line class="axis" x1="${f.left}" y1="${f.top}" x2="${f.left}" y2="${bottom}" stroke="#333"/>`,
  ];
  for (const t of xTicks) {
    out.push(`<line x1="${px(t.at)}" y1="${bottom}" x2="${px(t.at)}" y2="${bottom + 4}" stroke="#333"/><text class="tick" x="${px(t.at)}" y="${bottom + 15}" font-size="10" text-anchor="middle">${esc(t.label)}</text>`);
  }
  for (const t of yTicks) {
    out.push(`<line x1="${f.left - 4}" y1="${px(t.at)}" x2="${f.left}" y2="${px(t.at)}" stroke="#333"/><line x1="${f.left}" y1="${px(t.at)}" x2="${f.width - f.right}" y2="${px(t.at)}" stroke="#eee"/>` +
      `<text class="tick" x="${f.left - 6}" y="${px(t.at + 3)}" font-size="10" text-anchor="end">${esc(t.label)}</text>`);
  }
  out.push(`<text class="axis-label x" x="${px((f.left + f.width - f.right) / 2)}" y="${f.height - 6}" font-size="11" text-anchor="middle">${esc(xLabel)}</text>`);
  out.push(`<text class="axis-label y" transform="translate(12 ${px((f.top + bottom) / 2)}) rotate(-90)" font-size="11" text-anchor="middle">${esc(yLabel)}</text>`);
  return out;
}

export interface BarRow {
  label: string;
  /** A second line under the label, in smaller type (a task's shapes under its operator); whole rows grow to fit it. */
  detail?: string;
  /** One bar per series, in the chart's series order; null: unknown, drawn as a note. */
  values: readonly (number | null)[];
}

export interface BarChart {
  id: string;
  title: string;
  desc: string;
  xLabel: string;
  /** Names and colours of the bars of each row (a legend when more than one). */
  series: readonly { name: string; color: string }[];
  rows: readonly BarRow[];
  /** Text after each bar (default: the value). */
  valueLabel?: (value: number, series: number, row: number) => string;
  width?: number;
}

/** The longest row label line a bar chart writes whole: its 244 px at 11 px type, ~6.7 px a character. */
const ROW_LABEL_CHARS = 36;

/**
 * `label` cut to `max` characters in the middle: the start (a task's id and operator) and
 * the end (its shapes, which tell one conv from the next) stay, so no two rows of a chart
 * read the same; the whole label is the row's tooltip.
 */
export function middleTruncate(label: string, max: number): string {
  if (label.length <= max) return label;
  const head = Math.ceil((max - 1) * 0.4);
  return `${label.slice(0, head)}…${label.slice(label.length - (max - 1 - head))}`;
}

/** Horizontal bars, a group of one bar per series for each row, labelled on the left. */
export function barChart(c: BarChart): string {
  const labelWidth = 250;
  const barH = 12, gap = 2, rowGap = 8;
  const twoLines = c.rows.some((r) => r.detail !== undefined);
  const rowH = Math.max(c.series.length * (barH + gap), twoLines ? 26 : 0) + rowGap;
  const legend = c.series.length > 1 ? 18 : 0;
  const f: Frame = { width: c.width ?? 720, height: 0, left: labelWidth, right: 90, top: 8 + legend, bottom: 40 };
  f.height = f.top + c.rows.length * rowH + f.bottom;
  const known = c.rows.flatMap((r) => r.values.filter((v): v is number => v !== null));
  const ticks = niceTicks(Math.max(...known, 0), 5);
  const x = linear(0, ticks.at(-1)!, f.left, f.width - f.right);
  const valueLabel = c.valueLabel ?? ((v: number) => fmt(v));
  const parts = [svgOpen(c.id, f, c.title, c.desc, 'bar-chart')];
  parts.push(...axes(f, ticks.map((t) => ({ at: x(t), label: fmt(t) })), [], c.xLabel, ''));
  if (legend) {
    c.series.forEach((s, k) => parts.push(`<rect x="${f.left + k * 140}" y="4" width="10" height="10" fill="${s.color}"/><text x="${f.left + k * 140 + 14}" y="13" font-size="11">${esc(s.name)}</text>`));
  }
  c.rows.forEach((row, i) => {
    const top = f.top + i * rowH;
    const whole = row.detail === undefined ? row.label : `${row.label} ${row.detail}`;
    const middle = top + (rowH - rowGap) / 2;
    const lines = row.detail === undefined
      ? `<tspan x="${f.left - 6}" y="${px(middle + 4)}">${esc(middleTruncate(row.label, ROW_LABEL_CHARS))}</tspan>`
      : `<tspan x="${f.left - 6}" y="${px(middle - 2)}">${esc(middleTruncate(row.label, ROW_LABEL_CHARS))}</tspan>` +
        `<tspan class="row-detail" x="${f.left - 6}" y="${px(middle + 10)}" font-size="10" fill="#444">${esc(middleTruncate(row.detail, ROW_LABEL_CHARS + 4))}</tspan>`;
    parts.push(`<text class="row-label" font-size="11" text-anchor="end">${lines}<title>${esc(whole)}</title></text>`);
    row.values.forEach((v, k) => {
      const y = top + (rowH - rowGap - c.series.length * (barH + gap)) / 2 + k * (barH + gap);
      const s = c.series[k];
      if (v === null) {
        parts.push(`<text class="unknown" x="${f.left + 4}" y="${px(y + barH - 2)}" font-size="10" fill="#888">${esc(s.name)}: unknown</text>`);
        return;
      }
      const w = Math.max(x(v) - f.left, 0.5);
      parts.push(`<rect class="bar" x="${f.left}" y="${px(y)}" width="${px(w)}" height="${barH}" fill="${s.color}"><title>${esc(`${whole}, ${s.name}: ${valueLabel(v, k, i)}`)}</title></rect>` +
        `<text x="${px(f.left + w + 4)}" y="${px(y + barH - 2)}" font-size="10">${esc(valueLabel(v, k, i))}</text>`);
    });
  });
  parts.push('</svg>');
  return parts.join('');
}

export interface ColumnChart {
  id: string;
  title: string;
  desc: string;
  xLabel: string;
  yLabel: string;
  /** One column per value, left to right, labelled 1, 2, ... (every few when there are many). */
  values: readonly number[];
  /** Text of each column's tooltip. */
  tooltip: (value: number, index: number) => string;
  /** A dashed horizontal line across the columns (a median), labelled in the right margin, clear of the columns. */
  line?: { value: number; label: string };
  width?: number;
  height?: number;
}

/** Vertical columns with y ticks from 0, x labels by index, and an optional reference line. */
export function columnChart(c: ColumnChart): string {
  const f: Frame = { width: c.width ?? 640, height: c.height ?? 220, left: 64, right: c.line ? 120 : 16, top: 14, bottom: 44 };
  const yTicks = niceTicks(Math.max(...c.values, c.line?.value ?? 0, 0), 5);
  const y = linear(0, yTicks.at(-1)!, f.height - f.bottom, f.top);
  const plot = f.width - f.right - f.left;
  const n = Math.max(c.values.length, 1);
  const bw = plot / n;
  // Index labels at least 24 px apart: 1, then every k-th column.
  const every = Math.max(1, Math.ceil(24 / bw));
  const xTicks = c.values.flatMap((_, i) => (i % every === 0 ? [{ at: f.left + (i + 0.5) * bw, label: String(i + 1) }] : []));
  const parts = [svgOpen(c.id, f, c.title, c.desc, 'column-chart')];
  parts.push(...axes(f, xTicks, yTicks.map((t) => ({ at: y(t), label: fmt(t) })), c.xLabel, c.yLabel));
  c.values.forEach((v, i) => {
    const top = y(v);
    parts.push(`<rect class="bar" x="${px(f.left + i * bw + Math.min(1, bw * 0.1))}" y="${px(top)}" width="${px(Math.max(bw - 2 * Math.min(1, bw * 0.1), 0.5))}" height="${px(f.height - f.bottom - top)}" fill="#4a7ab8"><title>${esc(c.tooltip(v, i))}</title></rect>`);
  });
  if (c.line) {
    const at = y(c.line.value);
    parts.push(`<line class="reference" x1="${f.left}" y1="${px(at)}" x2="${f.width - f.right}" y2="${px(at)}" stroke="#c0392b" stroke-dasharray="4 3"/>` +
      `<text class="reference-label" x="${f.width - f.right + 6}" y="${px(at + 4)}" font-size="11" fill="#c0392b">${esc(c.line.label)}</text>`);
  }
  parts.push('</svg>');
  return parts.join('');
}

export interface RunPoint {
  y: number;
  /** Tooltip text. */
  title: string;
  /** Drawn as an open red ring (a run with warnings) instead of a dot. */
  flagged?: boolean;
}

export interface LineChart {
  id: string;
  title: string;
  desc: string;
  xLabel: string;
  yLabel: string;
  /** Points in order, evenly spaced left to right. */
  points: readonly RunPoint[];
  /** The x label of point i (a date), written under a few of them. */
  xTickLabel: (index: number) => string;
  width?: number;
  height?: number;
}

/** Points joined by a line, evenly spaced (runs in order), y ticks from 0, a few x labels; for two points or more. */
export function lineChart(c: LineChart): string {
  const f: Frame = { width: c.width ?? 640, height: c.height ?? 200, left: 64, right: 40, top: 14, bottom: 44 };
  const yTicks = niceTicks(Math.max(...c.points.map((p) => p.y), 0), 4);
  const y = linear(0, yTicks.at(-1)!, f.height - f.bottom, f.top);
  const last = Math.max(c.points.length - 1, 1);
  const x = linear(0, last, f.left + 20, f.width - f.right - 20);
  // About one label per 130 px (a date and time is ~90 px at 10 px type), always the first and the last.
  const slots = Math.max(1, Math.floor((f.width - f.left - f.right) / 130));
  const step = Math.max(1, Math.ceil(last / slots));
  const labelled = new Set<number>([0, c.points.length - 1]);
  // A label a whole step from the last one, so the last label never crowds the one before.
  for (let i = step; i < c.points.length - 1; i += step) if (c.points.length - 1 - i >= step) labelled.add(i);
  const xTicks = [...labelled].sort((a, b) => a - b).map((i) => ({ at: x(i), label: c.xTickLabel(i) }));
  const parts = [svgOpen(c.id, f, c.title, c.desc, 'line-chart')];
  parts.push(...axes(f, xTicks, yTicks.map((t) => ({ at: y(t), label: fmt(t) })), c.xLabel, c.yLabel));
  parts.push(`<polyline class="curve" points="${c.points.map((p, i) => `${px(x(i))},${px(y(p.y))}`).join(' ')}" fill="none" stroke="#9db4d6"/>`);
  parts.push(...c.points.map((p, i) => `<circle class="point${p.flagged ? ' flagged' : ''}" cx="${px(x(i))}" cy="${px(y(p.y))}" r="4" fill="${p.flagged ? '#fff' : '#4a7ab8'}" ` +
    `stroke="${p.flagged ? '#c0392b' : '#4a7ab8'}" stroke-width="2"><title>${esc(p.title)}</title></circle>`));
  parts.push('</svg>');
  return parts.join('');
}
