// docs/onnx-operators.md is what scripts/onnx-operators.ts generates from the importer's
// table: a converter added, removed or given another attribute changes the page, and this
// fails until `npm run docs:ops` rewrites it.

import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DOC_FILE, LIMITS, operatorsMarkdown } from '../../../scripts/onnx-operators';
import { SUPPORTED_OPS } from './import';

test('docs/onnx-operators.md is up to date (else: npm run docs:ops)', () => {
  assert.fixture(readFileSync(DOC_FILE, 'utf8'), operatorsMarkdown());
});

test('one row per supported operator; every limit belongs to one', () => {
  const rows = operatorsMarkdown().split('\n').filter((l) => /^\| [A-Z]/.test(l)).slice(1).map((l) => l.split('|')[1].trim()); // after the header row
  assert.equal(rows, [...SUPPORTED_OPS]);
  for (const op of Object.keys(LIMITS)) assert.ok(SUPPORTED_OPS.includes(op), `LIMITS names ${op}, which the importer does not convert`);
});

test.run();
