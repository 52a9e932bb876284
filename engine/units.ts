// Durations for people: a model that runs in microseconds must not print `0.000 ms` nor
// `7.81e-4 ms`. Values under 1 ms are shown in µs, others in ms, with 4 significant
// digits; a table or an axis takes one unit for all its values (the unit of its largest),
// so its column or ticks compare at a glance. JSON output stays in ms (`*_ms` fields).

export interface TimeUnit {
  /** `ms` or `µs`. */
  name: 'ms' | 'µs';
  /** Multiplier from ms to this unit. */
  scale: number;
}

export const MS: TimeUnit = { name: 'ms', scale: 1 };
export const US: TimeUnit = { name: 'µs', scale: 1000 };

/** The unit for values up to `maxMs`: µs below 1 ms, else ms. */
export const unitFor = (maxMs: number): TimeUnit => (Number.isFinite(maxMs) && Math.abs(maxMs) < 1 ? US : MS);

/** The unit for a set of values (that of the largest; ms when there is none). */
export const unitOf = (valuesMs: readonly number[]): TimeUnit => unitFor(valuesMs.reduce((a, v) => (Number.isFinite(v) ? Math.max(a, Math.abs(v)) : a), 0) || 1);

/** A number with up to 4 significant digits, no exponent (0.0001234 stays as 0.0001234). */
export function digits(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e4) return String(Math.round(v));
  return String(Number(v.toPrecision(4)));
}

/** A value in ms, written in `unit` without the unit name. */
export const inUnit = (ms: number, unit: TimeUnit): string => digits(ms * unit.scale);

/** A duration in ms for people: `12.35 ms`, `781.2 µs`, `0.52 µs`. */
export const duration = (ms: number): string => {
  const u = unitFor(ms);
  return `${inUnit(ms, u)} ${u.name}`;
};

/** A duration for a fixed-width text column: `%.4f` in `unit` (tt_bench's table, in µs for small values). */
export const fixed = (ms: number, unit: TimeUnit): string => (ms * unit.scale).toFixed(unit === US ? 2 : 4);

/** The execution time summary as tt_bench prints it (each cell centred in 12 columns), in the unit of the median. */
export function formatSummary(r: { mean_ms: number; median_ms: number; max_ms: number; min_ms: number; std_ms: number }): string {
  const unit = unitFor(r.median_ms);
  const row = (cells: string[]): string => cells.map((c) => {
    const pad = Math.max(0, 12 - c.length);
    return `${' '.repeat(Math.floor(pad / 2))}${c}${' '.repeat(pad - Math.floor(pad / 2))}`;
  }).join(' ').trimEnd();
  const values = [r.mean_ms, r.median_ms, r.max_ms, r.min_ms, r.std_ms].map((v) => fixed(v, unit));
  return ['Execution time summary:', row(['mean', 'median', 'max', 'min', 'std'].map((h) => `${h} (${unit.name})`)), row(values)].join('\n');
}
