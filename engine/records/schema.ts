// Validation of one record line against schemas/record.schema.json (which refers to
// schemas/steps.schema.json for the steps), plus the checks a schema cannot express.

import type { ValidateFunction } from 'ajv';
import { describeSchemaError, loadSchema, schemaValidator } from '../schedule/validate-steps';
import { RECORD_FORMAT_VERSION, type TuningRecord } from './record';

let validate: ValidateFunction | undefined;

export type RecordCheck = { ok: true; record: TuningRecord } | { ok: false; message: string };

/** Checks a parsed JSON value; never throws. */
export function checkRecord(value: unknown): RecordCheck {
  if (!validate) {
    const ajv = schemaValidator();
    const id = 'https://tensortune.dev/schemas/record.schema.json';
    if (!ajv.getSchema(id)) ajv.addSchema(loadSchema('record.schema.json'));
    validate = ajv.getSchema(id)!;
  }
  if (!validate(value)) return { ok: false, message: describeSchemaError(validate.errors, 'record') };
  const record = value as TuningRecord;
  if (record.v > RECORD_FORMAT_VERSION) {
    return { ok: false, message: `record format version ${record.v} is newer than this tensortune reads (${RECORD_FORMAT_VERSION})` };
  }
  // A run takes time: a zero (the schema's exclusiveMinimum) or an infinite cost would rank best or poison a mean.
  if (record.costs_ms.some((c) => !Number.isFinite(c) || c <= 0)) return { ok: false, message: 'record/costs_ms must hold finite numbers > 0' };
  return { ok: true, record };
}
