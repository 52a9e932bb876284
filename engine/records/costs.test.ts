// A record's costs are times: zero or non-finite costs are refused when written, skipped with
// the other bad lines when read, and never ranked best.

import { mkdtempSync, promises as fs, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { bestRecords } from './best';
import { appendRecords, readRecords } from './log';
import { makeRecord } from './make';
import { RECORD_FORMAT_VERSION, type TuningRecord } from './record';
import { checkRecord } from './schema';

const work = mkdtempSync(path.join(tmpdir(), 'tt-record-costs-test-'));
const KEY = '["0123456789abcdef0123456789abcdef", [1, 16], [1, 16]]';

function rec(costs: number[], lengths = 4): TuningRecord {
  return {
    v: RECORD_FORMAT_VERSION, engine: '0.1.0', key: KEY, desc: 'add 1x16', target: 'llvm -mcpu=native', fingerprint: '0123456789abcdef',
    steps: [{ s: 'split', stage: 'T_add', iter: 'ax1', lengths: [lengths] }], costs_ms: costs, error: null, seed: 1, time: '2024-05-01T10:00:00.000Z',
  };
}

test('the schema refuses a zero, a negative or a non-finite cost and names costs_ms', () => {
  for (const costs of [[0], [1, 0], [-1], [Infinity], [Number.NaN]]) {
    const check = checkRecord(rec(costs));
    assert.not.ok(check.ok, JSON.stringify(costs));
    if (!check.ok) assert.match(check.message, /record\/costs_ms(\/\d+)? must (be > 0|be number|hold finite numbers > 0)/);
  }
  assert.ok(checkRecord(rec([1e-6])).ok, 'a tiny positive time is a time');
});

test('a costs_ms [0] line is skipped with the warning for bad lines, the good ones all kept, and it is not ranked best', async () => {
  const f = path.join(work, 'zero.jsonl');
  const good1 = rec([2], 4), good2 = rec([3], 2);
  await fs.writeFile(f, [JSON.stringify(good1), JSON.stringify(rec([0], 8)), JSON.stringify(good2), ''].join('\n'));
  const warnings: string[] = [];
  const { entries, skipped } = await readRecords(f, { warn: (m) => warnings.push(m) });
  assert.equal(entries.map((e) => e.record), [good1, good2]);
  assert.equal(skipped, [2]);
  assert.is(warnings.length, 1);
  assert.ok(warnings[0].includes(f) && warnings[0].includes('line 2'), warnings[0]);
  assert.equal([...bestRecords(entries).values()].map((e) => e.record.costs_ms), [[2]]);
});

test('appendRecords refuses a zero cost; a zero-time outcome becomes an error record, so the batch still appends', async () => {
  const f = path.join(work, 'append.jsonl');
  try {
    await appendRecords(f, [rec([0])]);
    assert.unreachable();
  } catch (e) {
    assert.match((e as Error).message, /record 0 is invalid: record\/costs_ms\/0 must be > 0/);
  }
  const ctx = { task: { key: KEY, desc: 'add 1x16' }, target: 'llvm -mcpu=native', fingerprint: '0123456789abcdef', seed: 1 };
  const steps = rec([1]).steps;
  const zero = makeRecord({ steps, costs_ms: [0, 0], error: null, build_ms: 1, run_ms: 1 }, ctx);
  const fine = makeRecord({ steps, costs_ms: [0.5], error: null, build_ms: 1, run_ms: 1 }, ctx);
  assert.is(zero.error, 'runtime_error');
  assert.equal(zero.costs_ms, []);
  assert.match(zero.message ?? '', /timed at 0 ms/);
  await appendRecords(f, [zero, fine]);
  const { entries, skipped } = await readRecords(f);
  assert.equal(skipped, []);
  assert.equal(entries.map((e) => e.record.error), ['runtime_error', null]);
});

test.after(() => rmSync(work, { recursive: true, force: true }));
test.run();
