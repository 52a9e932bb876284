// Whether the machine ran at its usual speed while a candidate was timed, and which of two
// timings of a candidate to keep.
//
// On a shared machine a core's speed moves in phases that last seconds: on a 2-vCPU cloud
// VM the same kernel ran 1.6-2x faster in rare phases (likely while the
// other tenant on the vCPU's physical core idled). A candidate timed in such a phase keeps
// a time no later measurement of it repeats: in a 15-minute mobilenet tune, 20 candidates
// of the 14x14x512 1x1 conv timed back to back were recorded at 1.0 ms, while the
// confirmation pass timed the same schedules at 2.1 ms, so the search chased those
// schedules, the cost model learned from them and the task looked half as costly to the
// task scheduler as it was. A laptop's clock moving with its temperature, or another
// process preempting the worker, does the same.
//
// So the worker (native/measure/tt_measure.c, `probe_ms`) runs a fixed floating-point loop
// for PROBE_MS just before and just after each candidate's timed runs and reports the loop's
// rate; the measurer keeps the rates of the last HOST_RATE_WINDOW candidates, and a
// candidate whose rate before or after its runs strayed from their median by more than
// HOST_RATE_TOLERANCE is timed again at the end of its batch (measurer.ts), up to
// MAX_RETAKES times; so is, once, a candidate timed under NEW_BEST_SHARE of its task's
// fastest time. The timing kept is chosen by keepRetake: the records hold real
// measurements, never rescaled ones. Pure, so tests feed it synthetic rates.

import { median } from '../native/timing-trust';

/** How long the probe runs before and after each candidate's timed runs (ms). */
export const PROBE_MS = 0.5;

/** The usual rate is the median of the probes of this many candidates, the most recent. */
export const HOST_RATE_WINDOW = 32;

/** Candidates probed before any measurement is judged (the first ones always count). */
export const HOST_RATE_MIN_SAMPLES = 8;

/**
 * A probe off the usual rate by more than this factor (either way) marks its measurement as
 * taken at another speed. The probe itself varies by a few percent between back-to-back runs
 * on a quiet machine; the phases it is there to catch move it by 1.6x and more.
 */
export const HOST_RATE_TOLERANCE = 1.3;

/** Times a candidate timed off-speed is timed again, at most. */
export const MAX_RETAKES = 2;

/**
 * A candidate timed at less than this share of its task's fastest time before its batch is
 * timed once more, whatever its probe said: a new best has to hold up. The probe missed
 * some phases (a 15-minute mobilenet tune with it still recorded 12 candidates
 * of the 14x14x512 conv back to back at 0.91-1.12 ms, which the confirmation pass timed at
 * 1.7), and a phantom best costs the most: the search refines it, the cost model learns it,
 * the task scheduler takes the task for cheaper than it is. A real new best by that margin
 * is rare after a task's first rounds, so this costs little.
 */
export const NEW_BEST_SHARE = 0.8;

/** What the retakes did over a run (LocalMeasurer.hostMoves). */
export interface HostMoves {
  /** Timings taken again because the machine ran off its usual speed... */
  retaken: number;
  /** ...and candidates that kept an off-speed timing after MAX_RETAKES retakes. */
  keptOffSpeed: number;
  /** New bests (NEW_BEST_SHARE) timed again... */
  newBests: number;
  /** ...and those whose second timing was more than 1 / NEW_BEST_SHARE slower than the first. */
  newBestsNotHeld: number;
}

/** One timing of a candidate: its mean (ms) and how far off the usual speed its probe was. */
export interface Timing { mean: number; off: number }

/**
 * Which of two timings of one candidate to keep: where either was taken off speed, the one
 * taken nearer the usual speed; where both were on speed (a new best timed again), the
 * slower: a time the candidate reached once and not again is not its time.
 */
export function keepRetake(first: Timing, again: Timing): 'first' | 'again' {
  if (offSpeed(first.off) || offSpeed(again.off)) return again.off < first.off ? 'again' : 'first';
  return again.mean > first.mean ? 'again' : 'first';
}

export class HostRate {
  private readonly recent: number[] = [];

  /** The usual rate: the median of the recent probes; undefined until HOST_RATE_MIN_SAMPLES candidates were probed. */
  usual(): number | undefined {
    return this.recent.length >= 2 * HOST_RATE_MIN_SAMPLES ? median(this.recent) : undefined;
  }

  /**
   * Judges one measurement by its probes (before and after its runs) against the usual rate
   * so far, then adds them to the window. Returns the factor by which the farther probe
   * strayed (1: on the usual rate, or nothing to judge by yet).
   */
  observe(rates: readonly [number, number]): number {
    const usual = this.usual();
    const off = usual === undefined ? 1 : Math.max(...rates.map((r) => Math.max(r / usual, usual / r)));
    for (const r of rates) this.recent.push(r);
    while (this.recent.length > 2 * HOST_RATE_WINDOW) this.recent.shift();
    return off;
  }
}

/** Whether a measurement whose probes strayed by `off` was taken at another speed than the usual. */
export function offSpeed(off: number): boolean {
  return off > HOST_RATE_TOLERANCE;
}
