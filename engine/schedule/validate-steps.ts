// Validation of step lists that come from outside the process (record logs, files), before
// any of them is replayed: schemas/steps.schema.json, checked with ajv. The schema restricts
// every name to identifier characters and bounds every number, so a record cannot smuggle
// text into generated C (the lowering additionally rebuilds every C name with cName).

import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../package-root';
import type { Step } from './steps';

/** A schema of the package's schemas/ parsed from its file. */
export function loadSchema(file: string): Record<string, unknown> {
  return JSON.parse(readFileSync(path.join(packageRoot(), 'schemas', file), 'utf8')) as Record<string, unknown>;
}

let ajv: Ajv | undefined;

/** One ajv instance for the engine's schemas (steps and records refer to each other by $id). */
export function schemaValidator(): Ajv {
  if (!ajv) {
    ajv = new Ajv({ allErrors: false, discriminator: true, strict: true });
    ajv.addSchema(loadSchema('steps.schema.json'));
  }
  return ajv;
}

let validateStepList: ValidateFunction | undefined;

/** ajv's first error as one phrase: `/3/lengths/0 must be integer`. */
export function describeSchemaError(errors: ErrorObject[] | null | undefined, root = ''): string {
  const e = errors?.[0];
  if (!e) return 'does not match the schema';
  const where = `${root}${e.instancePath}` || '(top level)';
  const extra = e.keyword === 'additionalProperties' ? ` '${String((e.params as { additionalProperty?: string }).additionalProperty)}'`
    : e.keyword === 'enum' ? ` (${((e.params as { allowedValues?: unknown[] }).allowedValues ?? []).map((x) => JSON.stringify(x)).join(', ')})`
      : '';
  return `${where} ${e.message ?? 'is invalid'}${extra}`;
}

export type StepsCheck = { ok: true; steps: Step[] } | { ok: false; message: string };

/** Checks that `value` is a well-formed step list; never throws. */
export function checkSteps(value: unknown): StepsCheck {
  validateStepList ??= schemaValidator().getSchema('https://tensortune.dev/schemas/steps.schema.json')!;
  if (validateStepList(value)) return { ok: true, steps: value as Step[] };
  return { ok: false, message: describeSchemaError(validateStepList.errors, 'steps') };
}
