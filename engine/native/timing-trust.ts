// Whether a benchmark's figures can be trusted, judged as hyperfine and pyperf judge theirs:
// from the per-measurement times and from what else the machine was doing while they were
// taken. Pure (numbers in, reasons out), so that tests feed it synthetic series; runBench
// (bench.ts) samples the machine and the CLI, the Nx executor and the report show the reasons.

export interface TimingContext {
  /** Time per run of each measurement (ms). */
  runs_ms: readonly number[];
  /** Threads the model ran on. */
  threads: number;
  /** Cores of the machine (online CPUs). */
  cores: number;
  /** The 1-minute load average (os.loadavg()[0]) before and after the run. */
  load_before: number;
  load_after: number;
  /** How long the run took (s): the benchmark's own share of load_after. */
  seconds: number;
  /** Cores' worth of CPU time other processes used while it ran (the busy time of all
   *  cores minus the benchmark's own CPU time, over its duration); undefined if unknown. */
  others_cores?: number;
}

const TRUST_LIMITS = {
  /** pyperf's check: a standard deviation of 10% of the mean or more is unstable. */
  relativeStd: 0.1,
  /** hyperfine's outlier rule (src/outlier_detection.rs, after Iglewicz and Hoaglin): a
   *  modified Z-score |x - median| / MAD above 1.4826 * 10, i.e. about 10 standard deviations. */
  outlierScore: 1.4826 * 10,
  /** The MAD counts as at least this fraction of the median (hyperfine: machine epsilon).
   *  Measurements of many runs each vary by tenths of a percent, and a run 2% slow is no
   *  reason for a warning: so an outlier is at least 7.4% away from the median. */
  madFloor: 0.005,
  /** Other processes may want this many cores more than the benchmark leaves idle (a
   *  quiet machine's daemons, the shell) before the figures are suspect. */
  loadSlack: 0.5,
  /** others_cores is trusted over runs at least this long (os.cpus() counts 10 ms ticks). */
  minCpuSeconds: 0.5,
} as const;

/** The median (the mean of the two middle values for an even count). */
export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** Three significant digits, as a person reads a time: 3.21, 41.2, 182. */
const ms = (v: number): string => (v >= 1000 ? v.toFixed(0) : v.toPrecision(3));
const load = (v: number): string => v.toFixed(2);

/** The measurements hyperfine's rule calls outliers (with the MAD floor above). */
export function outliers(runs: readonly number[]): number[] {
  if (runs.length < 3) return [];
  const med = median(runs);
  const mad = Math.max(median(runs.map((x) => Math.abs(x - med))), TRUST_LIMITS.madFloor * med, Number.EPSILON);
  return runs.filter((x) => Math.abs(x - med) / mad > TRUST_LIMITS.outlierScore);
}

/** Why the figures of one benchmark run should not be trusted; empty when nothing is wrong. */
export function timingWarnings(c: TimingContext): string[] {
  const reasons: string[] = [];
  const n = c.runs_ms.length;
  if (n >= 2) {
    const mean = c.runs_ms.reduce((s, x) => s + x, 0) / n;
    const std = Math.sqrt(c.runs_ms.reduce((s, x) => s + (x - mean) ** 2, 0) / n);
    if (mean > 0 && std / mean >= TRUST_LIMITS.relativeStd)
      reasons.push(`unstable timings: the standard deviation (${ms(std)} ms) is ${Math.round((100 * std) / mean)}% of the mean ` +
        `(${ms(mean)} ms), ${100 * TRUST_LIMITS.relativeStd}% or more; rerun on a quiet machine`);
  }
  const odd = outliers(c.runs_ms);
  if (odd.length > 0)
    reasons.push(`${odd.length} of ${n} measurements are outliers (${odd.map(ms).join(', ')} ms against a median of ${ms(median(c.runs_ms))} ms): ` +
      'something else ran at times; rerun on a quiet machine');
  const idle = Math.max(0, c.cores - c.threads);
  const advice = `rerun on a quiet machine${c.threads > 1 ? ' or with fewer threads' : ''}`;
  const loads = `load average ${load(c.load_before)} before, ${load(c.load_after)} after`;
  const leaves = `${c.threads} thread(s) on ${c.cores} core(s) leave ${idle} idle`;
  if (c.threads > c.cores)
    reasons.push(`${c.threads} threads on ${c.cores} cores: the model's threads take turns on the cores; use --threads ${c.cores} or fewer`);
  if (c.others_cores !== undefined && c.seconds >= TRUST_LIMITS.minCpuSeconds) {
    if (c.others_cores > idle + TRUST_LIMITS.loadSlack)
      reasons.push(`busy machine: other processes used ${c.others_cores.toFixed(1)} cores while it ran and its ${leaves} (${loads}); ` +
        `they took cores from it: ${advice}`);
  } else {
    // The 1-minute load average lags: judge it before the run, and after the run less what
    // the run itself added (its threads, runnable for `seconds` of the average's 60).
    const own = c.threads * (1 - Math.exp(-c.seconds / 60));
    if (Math.max(c.load_before, c.load_after - own) > idle + TRUST_LIMITS.loadSlack)
      reasons.push(`busy machine: ${loads} the run, and its ${leaves}: other processes want its cores; ` +
        advice);
  }
  return reasons;
}
