// What every `tensortune` subcommand module exports, and the argument helpers they share.
// A subcommand parses its own flags (node:util parseArgs) and reports a user's mistake
// by throwing a UserError; the dispatcher (engine/cli.ts) prints it and exits 2.

import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UserError } from '../errors';
import { didYouMean } from '../suggest';

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
}

export interface Command {
  readonly name: string;
  /** One line for the command list. */
  readonly summary: string;
  /** Returns the exit code. */
  run(argv: readonly string[], io: CliIo): number | Promise<number>;
}

type Options = NonNullable<ParseArgsConfig['options']>;
type StrictConfig<O extends Options> = { args: string[]; options: O; allowPositionals: true; strict: true };
/** What parseArgs returns for these options (named through parseArgs, whose result type is not exported). */
export type ParsedFlags<O extends Options> = ReturnType<typeof parseArgs<StrictConfig<O>>>;

/** parseArgs with strict flags; its errors become UserErrors naming the flags expected. */
export function parseFlags<O extends Options>(argv: readonly string[], options: O): ParsedFlags<O> {
  const expected = Object.entries(options)
    .map(([name, o]) => `--${name}${o.type === 'string' ? ' <value>' : ''}`)
    .join(', ');
  try {
    return parseArgs({ args: [...argv], options, allowPositionals: true, strict: true });
  } catch (e) {
    const code = (e as { code?: string }).code ?? '';
    if (!code.startsWith('ERR_PARSE_ARGS')) throw e;
    const unknown = /Unknown option '([^']+)'/.exec((e as Error).message);
    if (unknown) {
      const hint = didYouMean(unknown[1], Object.keys(options).map((name) => `--${name}`));
      throw new UserError(`unknown option '${unknown[1]}' (expected: ${expected})${hint ? `; ${hint}` : ''}`);
    }
    const missing = /Option '(--[\w-]+)[^']*' argument missing/.exec((e as Error).message);
    if (missing) throw new UserError(`option ${missing[1]} needs a value`);
    throw new UserError(`${(e as Error).message.replace(/\.$/, '')} (expected: ${expected})`);
  }
}

/** A positive integer flag value. */
export function positiveInt(flag: string, value: string | undefined, dflt: number): number {
  if (value === undefined) return dflt;
  if (!/^[1-9]\d*$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new UserError(`bad ${flag} '${value}' (expected a positive integer)`);
  }
  return Number(value);
}

/** A non-negative integer flag value. */
export function nonNegativeInt(flag: string, value: string | undefined, dflt: number): number {
  if (value === undefined) return dflt;
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new UserError(`bad ${flag} '${value}' (expected a non-negative integer)`);
  }
  return Number(value);
}

/** A flag parser (positiveInt, nonNegativeInt) giving undefined for an absent flag. */
const optional = (parse: typeof positiveInt) => (flag: string, value: string | undefined): number | undefined =>
  value === undefined ? undefined : parse(flag, value, 0);
/** A positive integer flag value, or undefined when the flag is absent. */
export const optionalInt = optional(positiveInt);
/** A non-negative integer flag value, or undefined when the flag is absent. */
export const optionalNonNegativeInt = optional(nonNegativeInt);

/** A positive number flag value (seconds, say), or undefined when the flag is absent. */
export function positiveNumber(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d*\.?\d+$/.test(value) || !(n > 0)) throw new UserError(`bad ${flag} '${value}' (expected a positive number)`);
  return n;
}

/** One of a fixed set of values (case-insensitive), returned as spelled in `allowed`. */
export function oneOf<T extends string>(flag: string, value: string | undefined, allowed: readonly T[], dflt: T): T {
  if (value === undefined) return dflt;
  const hit = allowed.find((a) => a.toLowerCase() === value.toLowerCase());
  if (!hit) throw new UserError(`bad ${flag} '${value}' (expected one of: ${allowed.join(', ')})`);
  return hit;
}
