// An error of tensortune itself (a bug, not the user's model or machine) met while compiling
// or tuning, carrying what it was working on: the kernel or task. Compile and tune print it
// in one line with that context and a hint to report it, and exit with INTERNAL_EXIT_CODE;
// TENSORTUNE_DEBUG=1 prints the stack as well.

import { asUserError, UserError } from '../errors';
import { ModelRunError } from '../runtime/errors';

/** sysexits' EX_SOFTWARE: an internal software error (2 is a user's mistake, 3 a failing model). */
export const INTERNAL_EXIT_CODE = 70;

export const REPORT_HINT = 'this is a bug in tensortune: please report it with the model and this line (TENSORTUNE_DEBUG=1 prints the stack)';

export class InternalError extends Error {
  override readonly name = 'InternalError';
  /** What was being done: `compiling the kernel of conv2d+add 1x8x8x4 -> 1x8x8x16`. */
  readonly where: string;
  readonly original: unknown;
  constructor(where: string, original: unknown) {
    super(`${where}: ${firstLine(original)}`);
    this.where = where;
    this.original = original;
  }
}

const firstLine = (e: unknown): string => {
  const text = e instanceof Error ? `${e.name && e.name !== 'Error' ? `${e.name}: ` : ''}${e.message}` : String(e);
  return text.split('\n')[0].trim() || '(no message)';
};

/** Whether `e` is the user's (a UserError or a failing model), which keeps its own message. */
const isUsers = (e: unknown): boolean => e instanceof UserError || e instanceof ModelRunError;

/** Runs `fn`; an error that is neither the user's nor already placed becomes an InternalError naming `where()`. */
export function inContext<T>(where: () => string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (isUsers(e) || e instanceof InternalError) throw e;
    let at: string;
    try { at = where(); } catch { at = 'compiling a kernel'; }
    throw new InternalError(at, e);
  }
}

/**
 * The one line `tensortune <command>` prints for an error that is not the user's:
 * `internal error while compiling the kernel of <task>: TypeError: ...; this is a bug ...`.
 * Undefined for the user's errors (the CLI's dispatcher reports those).
 */
export function internalErrorLine(command: string, e: unknown, doing: string): string | undefined {
  if (isUsers(e)) return undefined;
  const where = e instanceof InternalError ? e.where : doing;
  const what = e instanceof InternalError ? firstLine(e.original) : firstLine(e);
  return `tensortune ${command}: internal error while ${where}: ${what}; ${REPORT_HINT}`;
}

/** The stack of `e` (its original's, for an InternalError), for TENSORTUNE_DEBUG=1. */
export function internalStack(e: unknown): string {
  const original = e instanceof InternalError ? e.original : e;
  return original instanceof Error && original.stack ? original.stack : String(original);
}

/**
 * For a command's catch: rethrows the user's errors (UserError, a system error about their
 * files, a failing model: the dispatcher prints those in one line); prints anything else as
 * internalErrorLine (and its stack with TENSORTUNE_DEBUG=1) and returns INTERNAL_EXIT_CODE.
 */
export function reportInternal(command: string, doing: string, e: unknown, err: (text: string) => void): number {
  if (asUserError(e)) throw e;
  const line = internalErrorLine(command, e, doing);
  if (line === undefined) throw e;
  err(`${line}\n`);
  if (process.env.TENSORTUNE_DEBUG === '1') err(`${internalStack(e)}\n`);
  return INTERNAL_EXIT_CODE;
}
