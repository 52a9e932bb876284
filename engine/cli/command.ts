// What every `tensortune` subcommand module exports, and the argument helpers they share.
// A subcommand parses its own flags (node:util parseArgs) and reports a user's mistake
// by throwing a UserError; the dispatcher (engine/cli.ts) prints it and exits 2.

import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UserError } from '../errors';
import { didYouMean } from '../suggest';
import { isOnnxPath, loadModel } from '../frontend/load';
import { NO_IMAGE_NETWORKS } from '../frontend/networks';
import type { Layout } from '../topi/nn';

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

/**
 * A flag given under its name or under an alias (tvmc's spelling: --output, --tuning-records);
 * giving two of them at once is a mistake.
 */
export function aliased<V extends object, K extends keyof V & string>(values: V, name: K, ...aliases: K[]): V[K] {
  const given = [name, ...aliases].filter((n) => values[n] !== undefined);
  if (given.length > 1) throw new UserError(`--${given[0]} and --${given[1]} are one option (${aliases.map((a) => `--${a}`).join(', ')} ${aliases.length > 1 ? 'are aliases' : 'is an alias'} of --${name}); give it once`);
  return values[given[0] ?? name];
}

/** The model flags of every command that builds a network: tasks, tune, compile, export, distill. */
export const MODEL_FLAGS = {
  layout: { type: 'string' }, batch: { type: 'string' }, 'image-size': { type: 'string' }, 'input-shapes': { type: 'string' },
} as const;

/** The usage lines of MODEL_FLAGS, descriptions from `column`. */
export function modelFlagsUsage(defaultLayout: Layout, column = 22): string {
  const line = (flag: string, text: string): string => `  ${flag.padEnd(column - 3)} ${text}\n`;
  return line('--layout NHWC|NCHW', `data layout (default ${defaultLayout})`) +
    line('--batch N', 'batch size (default 1)') +
    line('--image-size N', "input height = width of a builtin network (default: the network's, 224 or 299)") +
    line('--input-shapes S', `tvmc's spelling of the two: "data:[1,${defaultLayout === 'NHWC' ? '224,224,3' : '3,224,224'}]" (the name is optional;`) +
    line('', "checked against the model's inputs, also an ONNX model's)");
}

export interface ModelFlags {
  layout: Layout;
  batch: number;
  /** Builtin networks only. */
  imageSize?: number;
  /** Model files only: --input-shapes as given (they fix symbolic dimensions; the importer checks them). */
  inputShapes?: { name?: string; shape: number[] }[];
}

/** `"data:[1,3,224,224] mask:[1,8]"` (tvmc's --input-shapes) -> names (optional) and shapes. */
export function parseInputShapes(text: string): { name?: string; shape: number[] }[] {
  const tokens = text.trim().replace(/\s*,\s*/g, ',').replace(/\[\s+/g, '[').replace(/\s+\]/g, ']').split(/\s+/).filter(Boolean);
  const bad = (): UserError => new UserError(`bad --input-shapes '${text}' (expected NAME:[D,D,...] or [D,D,...] per input, separated by spaces)`);
  if (tokens.length === 0) throw bad();
  return tokens.map((token) => {
    // `[]` is a scalar's shape.
    const m = /^(?:([^[\]]+):)?\[((?:[1-9]\d*(?:,[1-9]\d*)*)?)\]$/.exec(token);
    if (!m) throw bad();
    return { ...(m[1] === undefined ? {} : { name: m[1] }), shape: m[2] === '' ? [] : m[2].split(',').map(Number) };
  });
}

/**
 * --layout, --batch, --image-size and --input-shapes for the models named (builtin names or
 * .onnx paths). --image-size applies to builtin networks only (a model file fixes its input
 * size); --input-shapes gives the batch (first dimension) and, for a builtin network, the
 * image size, and is checked against each model's inputs.
 */
export function modelFlags(
  values: { layout?: string; batch?: string; 'image-size'?: string; 'input-shapes'?: string },
  models: readonly string[], defaultLayout: Layout = 'NHWC',
): ModelFlags {
  const layout = oneOf('--layout', values.layout, ['NHWC', 'NCHW'] as const, defaultLayout);
  const files = models.filter(isOnnxPath);
  if (values['input-shapes'] === undefined) {
    const imageSize = optionalInt('--image-size', values['image-size']);
    if (imageSize !== undefined && files.length > 0) {
      throw new UserError(`--image-size applies to builtin networks; ${files[0]} fixes its input size (--batch sizes a symbolic batch dimension)`);
    }
    return { layout, batch: positiveInt('--batch', values.batch, 1), imageSize };
  }
  if (values.batch !== undefined || values['image-size'] !== undefined) {
    throw new UserError(`--input-shapes gives the batch and the image size; drop --${values.batch !== undefined ? 'batch' : 'image-size'}`);
  }
  const text = values['input-shapes'];
  const shapes = parseInputShapes(text);
  const batch = shapes[0].shape[0] ?? 1;
  let imageSize: number | undefined;
  if (models.some((m) => !isOnnxPath(m) && !NO_IMAGE_NETWORKS.includes(m))) {
    const s = shapes[0].shape;
    const [h, w] = layout === 'NHWC' ? [s[1], s[2]] : [s[2], s[3]];
    if (shapes.length !== 1 || s.length !== 4 || h !== w) {
      throw new UserError(`--input-shapes '${text}': a builtin network has one ${layout} image input with height = width, e.g. [${layout === 'NHWC' ? `${batch},224,224,3` : `${batch},3,224,224`}]`);
    }
    imageSize = h;
  }
  for (const model of models) {
    // A model file takes the shapes (the importer checks them against its inputs); a builtin network is checked here.
    const { name, inputs } = loadModel({ model, layout, batch, imageSize, weights: 'zeros', ...(isOnnxPath(model) ? { inputShapes: shapes } : {}) });
    const show = (s: readonly number[]): string => `[${s.join(',')}]`;
    if (inputs.length !== shapes.length) throw new UserError(`--input-shapes '${text}' gives ${shapes.length} input(s); ${name} has ${inputs.length}: ${inputs.map((i) => `${i.name}:${show(i.shape)}`).join(' ')}`);
    for (const [i, s] of shapes.entries()) {
      const input = s.name === undefined ? inputs[i] : inputs.find((x) => x.name === s.name);
      if (!input) throw new UserError(`--input-shapes '${text}': ${name} has no input '${s.name}' (its inputs: ${inputs.map((x) => x.name).join(', ')})`);
      if (show(input.shape) !== show(s.shape)) {
        throw new UserError(`--input-shapes '${text}': ${name}'s input '${input.name}' is ${show(input.shape)}${isOnnxPath(model) ? '' : ` with --layout ${layout}`}, not ${show(s.shape)}`);
      }
    }
  }
  return { layout, batch, imageSize, ...(files.length > 0 ? { inputShapes: shapes } : {}) };
}
