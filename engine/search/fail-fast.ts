// Fail fast: a tuning run whose first measured candidates all fail the same way (a target
// the compiler rejects, such as `-mcpu=nonexistent-cpu`, a broken toolchain, kernels that
// always crash) stops with one line naming the error class and the first message, instead
// of spending its budget on errors and writing them to the shared record log.
//
// The rule: once this run has measured at least FAIL_FAST_BATCHES batches and
// FAIL_FAST_CANDIDATES candidates (or has ended, if it measured fewer), and every one of
// them failed with the same error class while none succeeded, the run stops with a
// UserError. Until that is decided the records of those batches are held back; the first
// success, or a second error class, releases them to the log and the gate stays open for
// the rest of the run. Records of a run that stops are not written anywhere (they describe
// the setup, not the schedules). An aborted run (Ctrl-C) writes what it holds.
//
// Every task's first batch starts with its default schedule, which compiles and runs on a
// working setup, so a run whose first batches fail entirely says more about the setup than
// about the search.

import { UserError } from '../errors';
import type { TuningRecord } from '../records/record';
import type { ErrorClass, MeasureOutcome } from './types';

const FAIL_FAST_BATCHES = 2;
const FAIL_FAST_CANDIDATES = 4;
/** Longest compiler or runtime message line shown. */
const MAX_LINE = 300;

/** The line of a message that says what went wrong: the first mentioning an error, else the first. */
export function messageLine(message: string | undefined): string {
  const lines = (message ?? '').split('\n').map((l) => l.trim()).filter((l) => l !== '');
  const line = lines.find((l) => /\berror\b/i.test(l)) ?? lines[0] ?? '(no message)';
  return line.length > MAX_LINE ? `${line.slice(0, MAX_LINE)}...` : line;
}

export class FailFastGate {
  private held: TuningRecord[] = [];
  private open = false;
  private batches = 0;
  private candidates = 0;
  private errorClass: ErrorClass | null = null;
  private firstMessage = '';

  /** `where`: the log's name, for the message. */
  constructor(private readonly where: string, private readonly target: string) {}

  /**
   * One measured batch and its records: returns the records to append now (none while the
   * verdict is pending; everything held once it is favourable). Throws the UserError when
   * the first batches all failed alike.
   */
  admit(outcomes: readonly MeasureOutcome[], records: readonly TuningRecord[]): TuningRecord[] {
    if (this.open) return [...records];
    this.batches += 1;
    this.candidates += outcomes.length;
    for (const o of outcomes) {
      if (o.error === null || (this.errorClass !== null && o.error !== this.errorClass)) return this.release(records);
      if (this.errorClass === null) {
        this.errorClass = o.error;
        this.firstMessage = messageLine(o.message);
      }
    }
    this.held.push(...records);
    if (this.batches >= FAIL_FAST_BATCHES && this.candidates >= FAIL_FAST_CANDIDATES) this.fail();
    return [];
  }

  /** At the end of the run: the records still held (an aborted run's), or the UserError. */
  finish(aborted: boolean): TuningRecord[] {
    if (this.open || this.candidates === 0 || aborted) return this.release([]);
    return this.fail();
  }

  private release(records: readonly TuningRecord[]): TuningRecord[] {
    this.open = true;
    const out = [...this.held, ...records];
    this.held = [];
    return out;
  }

  private fail(): never {
    const n = this.candidates;
    const b = this.batches;
    throw new UserError(
      `stopped: ${n === 1 ? 'the first candidate' : `all ${n} candidates`} of the first ${b === 1 ? 'batch' : `${b} batches`} failed with ` +
      `${this.errorClass} and none succeeded on target "${this.target}" (nothing was written to ${this.where}); first message: ${this.firstMessage}`,
    );
  }
}
