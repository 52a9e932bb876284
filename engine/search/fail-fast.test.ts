// The fail-fast rule of a tuning run: what is held back, what is released, when it stops.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { UserError } from '../errors';
import { RECORD_FORMAT_VERSION, type TuningRecord } from '../records/record';
import { FailFastGate, messageLine } from './fail-fast';
import type { ErrorClass, MeasureOutcome } from './types';

const CC_MESSAGE = "cc1: error: bad value 'nonexistent-cpu' for '-march=' switch\ncc1: note: valid arguments to '-march=' switch are: nocona core2";

function outcome(error: ErrorClass | null, message = CC_MESSAGE): MeasureOutcome {
  return error === null
    ? { steps: [], costs_ms: [1], error: null, build_ms: 1, run_ms: 1 }
    : { steps: [], costs_ms: [], error, message, build_ms: 1, run_ms: 0 };
}

function batch(...errors: (ErrorClass | null)[]): [MeasureOutcome[], TuningRecord[]] {
  const outcomes = errors.map((e) => outcome(e));
  const records = outcomes.map((o, i): TuningRecord => ({
    v: RECORD_FORMAT_VERSION, engine: '0.1.0', key: 'k', desc: `d${i}`, target: 't', fingerprint: '0123456789abcdef',
    steps: [], costs_ms: o.costs_ms, error: o.error, seed: 0, time: '2024-05-01T10:00:00.000Z',
  }));
  return [outcomes, records];
}

const gate = (): FailFastGate => new FailFastGate('runs/log.jsonl', 'llvm -mcpu=nonexistent-cpu');

test('two batches of four compile errors: stop with the class, the target and the first error line; nothing released', () => {
  const g = gate();
  assert.equal(g.admit(...batch('compile_error', 'compile_error')), []);
  assert.throws(() => g.admit(...batch('compile_error', 'compile_error')), (e: Error) => e instanceof UserError && e.message ===
    'stopped: all 4 candidates of the first 2 batches failed with compile_error and none succeeded on target "llvm -mcpu=nonexistent-cpu" ' +
    "(nothing was written to runs/log.jsonl); first message: cc1: error: bad value 'nonexistent-cpu' for '-march=' switch");
});

test('batches of one candidate: the decision waits for four candidates', () => {
  const g = gate();
  for (let i = 0; i < 3; i++) assert.equal(g.admit(...batch('runtime_error')), []);
  assert.throws(() => g.admit(...batch('runtime_error')), /all 4 candidates of the first 4 batches failed with runtime_error/);
});

test('a success releases everything held, and later failures go straight through', () => {
  const g = gate();
  const [o1, r1] = batch('compile_error', 'compile_error');
  const [o2, r2] = batch('compile_error', null);
  assert.equal(g.admit(o1, r1), []);
  assert.equal(g.admit(o2, r2), [...r1, ...r2]);
  const [o3, r3] = batch('compile_error', 'compile_error');
  assert.equal(g.admit(o3, r3), r3);
  assert.equal(g.admit(...batch('compile_error', 'compile_error')).length, 2);
  assert.equal(g.finish(false), []);
});

test('two error classes: not a broken setup, released', () => {
  const g = gate();
  const [o1, r1] = batch('compile_error', 'compile_error');
  const [o2, r2] = batch('compile_error', 'wrong_answer');
  g.admit(o1, r1);
  assert.equal(g.admit(o2, r2), [...r1, ...r2]);
});

test('a run that ends before the decision: all failed alike stops it; an aborted run writes what it holds; nothing measured is fine', () => {
  const short = gate();
  short.admit(...batch('timeout'));
  assert.throws(() => short.finish(false), /^stopped: the first candidate of the first batch failed with timeout and none succeeded/);
  const aborted = gate();
  const [o, r] = batch('compile_error', 'compile_error');
  aborted.admit(o, r);
  assert.equal(aborted.finish(true), r);
  assert.equal(gate().finish(false), []);
});

test('messageLine: the line that says error, else the first; long lines cut', () => {
  assert.is(messageLine('/tmp/x.c: In function f:\n/tmp/x.c:3:1: error: expected ;\n'), '/tmp/x.c:3:1: error: expected ;');
  assert.is(messageLine('kernel returned 7'), 'kernel returned 7');
  assert.is(messageLine(undefined), '(no message)');
  assert.is(messageLine('e'.repeat(400)).length, 303);
});

test.run();
