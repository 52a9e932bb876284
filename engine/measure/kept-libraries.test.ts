// KeptLibraries: which timed libraries a measurer removes. Each task keeps its fastest
// verified candidates; failed ones, slower ones and those pushed out by faster ones go;
// a library two tasks keep stays until neither does.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { ComputeDAG } from '../ir/dag';
import type { MeasureOutcome } from '../search/types';
import type { BuiltCandidate } from './builder';
import { KeptLibraries } from './kept-libraries';

const dagA = {} as ComputeDAG, dagB = {} as ComputeDAG;
const built = (lib: string): BuiltCandidate => ({ steps: [], lib, symbol: 'tt_candidate', build_ms: 1 });
const timed = (ms: number): MeasureOutcome => ({ steps: [], costs_ms: [ms, ms], error: null, build_ms: 1, run_ms: 1 });
const failed: MeasureOutcome = { steps: [], costs_ms: [], error: 'wrong_answer', message: 'differs', build_ms: 1, run_ms: 1 };

test('a batch: the fastest verified libraries stay, the rest and every failed one go', () => {
  const kept = new KeptLibraries(2);
  const gone = kept.afterBatch(dagA, [built('a.so'), built('b.so'), built('c.so'), built('d.so')], [timed(3), failed, timed(1), timed(2)]);
  assert.equal(gone.sort(), ['a.so', 'b.so']);
  assert.ok(kept.holds('c.so') && kept.holds('d.so'));
});

test('a faster candidate later pushes the slowest kept one out; a library timed again keeps its best time', () => {
  const kept = new KeptLibraries(2);
  kept.afterBatch(dagA, [built('c.so'), built('d.so')], [timed(1), timed(2)]);
  assert.equal(kept.afterBatch(dagA, [built('d.so'), built('e.so')], [timed(5), timed(1.5)]), ['d.so'], 'd (best 2) is now third');
  assert.ok(kept.holds('c.so') && kept.holds('e.so') && !kept.holds('d.so'));
  assert.equal(kept.afterBatch(dagA, [built('c.so')], [timed(9)]), [], 'c timed again, slower: still kept at its best, nothing goes');
  assert.equal(kept.afterBatch(dagA, [], []), []);
});

test('a build error has no library; a library two tasks keep stays until neither does', () => {
  const kept = new KeptLibraries(1);
  const error: BuiltCandidate = { steps: [], error: 'compile_error', message: 'x', build_ms: 1 };
  assert.equal(kept.afterBatch(dagA, [error, built('s.so')], [{ ...failed, error: 'compile_error' }, timed(1)]), []);
  assert.equal(kept.afterBatch(dagB, [built('s.so')], [timed(4)]), []);
  assert.equal(kept.afterBatch(dagA, [built('t.so')], [timed(0.5)]), [], 'dagA drops s, dagB still keeps it');
  assert.ok(kept.holds('s.so'));
  assert.equal(kept.afterBatch(dagB, [built('u.so')], [timed(2)]), ['s.so']);
});

test.run();
