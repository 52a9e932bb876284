// The flags of the bench scripts, read with node's parseArgs in strict mode: an unknown
// flag or a missing value is an error (a mistyped `--round 10` used to run the default
// silently, and `--help` ran the whole benchmark), `--help` prints the script's usage, and
// numbers are checked before anything runs. Flags with a value have a default; switches
// (no value) are off unless given; a repeated flag collects every value given.

import { parseArgs } from 'node:util';

export interface BenchArgs {
  /** The flag's value as given, or its default. */
  str(name: string): string;
  /** A comma-separated list, empty entries dropped. */
  list(name: string): string[];
  /** A positive integer. */
  int(name: string): number;
  /** A positive integer, or undefined when the flag is empty (its default: "use the script's own choice"). */
  optInt(name: string): number | undefined;
  /** A comma-separated list of positive integers. */
  ints(name: string): number[];
  /** A non-negative number. */
  num(name: string): number;
  /** Whether a switch was given. */
  on(name: string): boolean;
  /** Every value of a repeated flag, in order (none when not given). */
  all(name: string): string[];
  readonly positionals: readonly string[];
}

/** What a script takes besides flags with a value: bare arguments, switches, repeated flags. */
export interface BenchArgsShape {
  positionals?: number;
  switches?: readonly string[];
  repeated?: readonly string[];
}

/** A bad flag: the message names the script, the flag and what was expected. */
export class BenchArgsError extends Error {}

/**
 * Reads `argv` against `defaults` (flag name without dashes → default value) and `shape`.
 * Returns 'help' for --help or -h. Throws BenchArgsError for an unknown flag, a flag
 * without its value, a value given to a switch, or a wrong count of bare arguments; the
 * number readers throw it for a value that is not one.
 */
export function parseBenchArgs(script: string, defaults: Record<string, string>, shape: BenchArgsShape, argv: readonly string[]): BenchArgs | 'help' {
  if (argv.includes('--help') || argv.includes('-h')) return 'help';
  const positionals = shape.positionals ?? 0;
  let parsed: { values: Record<string, string | boolean | (string | boolean)[] | undefined>; positionals: string[] };
  try {
    const options = {
      ...Object.fromEntries(Object.entries(defaults).map(([k, d]) => [k, { type: 'string' as const, default: d }])),
      ...Object.fromEntries((shape.switches ?? []).map((k) => [k, { type: 'boolean' as const, default: false }])),
      ...Object.fromEntries((shape.repeated ?? []).map((k) => [k, { type: 'string' as const, multiple: true, default: [] as string[] }])),
    };
    parsed = parseArgs({ args: [...argv], options, allowPositionals: positionals > 0, strict: true });
  } catch (e) {
    throw new BenchArgsError(`${script}: ${(e as Error).message}`);
  }
  if (parsed.positionals.length !== positionals) throw new BenchArgsError(`${script}: expected ${positionals} argument(s) besides the flags, got ${parsed.positionals.length}`);
  const str = (name: string): string => {
    if (!(name in defaults)) throw new Error(`${script}: flag --${name} is not declared`);
    return String(parsed.values[name]);
  };
  const number = (name: string, text: string, integer: boolean): number => {
    const n = Number(text);
    const ok = text.trim() !== '' && Number.isFinite(n) && (integer ? Number.isInteger(n) && n > 0 : n >= 0);
    if (!ok) throw new BenchArgsError(`${script}: --${name}: expected ${integer ? 'a positive integer' : 'a non-negative number'}, got "${text}"`);
    return n;
  };
  const list = (name: string): string[] => str(name).split(',').map((s) => s.trim()).filter(Boolean);
  const declared = (name: string, kind: readonly string[] | undefined): void => {
    if (!kind?.includes(name)) throw new Error(`${script}: flag --${name} is not declared as that kind`);
  };
  return {
    str,
    list,
    int: (name) => number(name, str(name), true),
    optInt: (name) => (str(name) === '' ? undefined : number(name, str(name), true)),
    ints: (name) => list(name).map((t) => number(name, t, true)),
    num: (name) => number(name, str(name), false),
    on: (name) => (declared(name, shape.switches), parsed.values[name] === true),
    all: (name) => (declared(name, shape.repeated), (parsed.values[name] as string[]).map(String)),
    positionals: parsed.positionals,
  };
}

/**
 * parseBenchArgs on this process's arguments, for a script's first line: prints `usage` and
 * exits 0 for --help; prints the error and `usage` and exits 2 for a bad flag, there or in a
 * later number reader.
 */
export function benchArgs(script: string, usage: string, defaults: Record<string, string>, shape: BenchArgsShape = {}): BenchArgs {
  const exitWith = (e: unknown): never => {
    if (!(e instanceof BenchArgsError)) throw e;
    console.error(`${e.message}\nusage: ${usage}`);
    process.exit(2);
  };
  let args: BenchArgs | 'help';
  try {
    args = parseBenchArgs(script, defaults, shape, process.argv.slice(2));
  } catch (e) {
    return exitWith(e);
  }
  if (args === 'help') {
    console.log(`usage: ${usage}`);
    process.exit(0);
  }
  const checked = args;
  const guard = <T>(read: (name: string) => T) => (name: string): T => {
    try {
      return read(name);
    } catch (e) {
      return exitWith(e);
    }
  };
  return { ...checked, int: guard(checked.int), ints: guard(checked.ints), num: guard(checked.num) };
}
