// The ONNX Runtime comparison the tuning report shows when there is one: a file holding
// what `tensortune benchmark DIR --compare onnxruntime --json` prints on stdout (the JSON
// alone), or an older file whose last line is the JSON below the human summary. The fields
// the report reads are checked with ajv; anything else is one message naming the file and
// the field.

import Ajv, { type ValidateFunction } from 'ajv';
import type { CompareReport } from '../compare/compare';
import { asUserError, UserError } from '../errors';
import { describeSchemaError } from '../schedule/validate-steps';
import { MiB, readRegularFileSync } from '../regular-file';

/** The fields of CompareReport (engine/compare/compare.ts) the report reads. */
const SCHEMA = {
  type: 'object',
  required: ['onnxruntime_version', 'threads', 'rounds', 'number', 'tensortune_median_ms', 'onnxruntime_median_ms', 'ratio', 'outputs', 'top1', 'onnx_source'],
  properties: {
    time: { type: 'string' },
    library_sha256: { type: 'string' },
    onnxruntime_version: { type: 'string' },
    onnx_source: { type: 'string' },
    threads: { type: 'integer', minimum: 1 },
    rounds: { type: 'integer', minimum: 1 },
    number: { type: 'integer', minimum: 1 },
    tensortune_median_ms: { type: 'number', exclusiveMinimum: 0 },
    onnxruntime_median_ms: { type: 'number', exclusiveMinimum: 0 },
    ratio: { type: 'number', exclusiveMinimum: 0 },
    outputs: {
      type: 'array',
      items: {
        type: 'object', required: ['name', 'max_abs_err', 'max_rel_err'],
        properties: { name: { type: 'string' }, max_abs_err: { type: ['number', 'null'] }, max_rel_err: { type: 'number' } },
      },
    },
    top1: { type: 'object', required: ['agree'], properties: { agree: { type: 'boolean' }, applies: { type: 'boolean' } } },
  },
} as const;

let validate: ValidateFunction | undefined;

/** The JSON text of a comparison file: the whole file, else its last line that starts with `{`. */
function jsonText(text: string): string {
  const trimmed = text.trim();
  if (trimmed.startsWith('{') && !trimmed.includes('\n')) return trimmed;
  if (trimmed.startsWith('{')) {
    try { JSON.parse(trimmed); return trimmed; } catch { /* not one JSON document: look for the last line */ }
  }
  const line = trimmed.split('\n').reverse().find((l) => l.trimStart().startsWith('{'));
  return line ?? trimmed;
}

/** Checks a parsed comparison; `file` names it in the message. */
export function checkComparison(value: unknown, file: string): CompareReport {
  validate ??= new Ajv({ strict: false }).compile(SCHEMA);
  if (!validate(value)) {
    throw new UserError(`${file}: not an ONNX Runtime comparison (the JSON of \`tensortune benchmark DIR --compare onnxruntime --json\`): ${describeSchemaError(validate.errors)}`);
  }
  return value as CompareReport;
}

/** Reads and checks a comparison file; a missing or malformed file is a UserError naming it. */
export function readComparison(file: string): CompareReport {
  let text: string;
  try {
    text = readRegularFileSync(file, { what: 'the comparison file', maxBytes: 64 * MiB }).toString('utf8');
  } catch (e) {
    if (e instanceof UserError) throw e;
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new UserError(`${file}: comparison file not found`);
    throw asUserError(e, `cannot read ${file}`) ?? e;
  }
  let value: unknown;
  try {
    value = JSON.parse(jsonText(text));
  } catch {
    throw new UserError(`${file}: not an ONNX Runtime comparison: expected the JSON that \`tensortune benchmark DIR --compare onnxruntime --json\` prints on its last line`);
  }
  return checkComparison(value, file);
}
