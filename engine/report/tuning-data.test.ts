// The tuning report's figures on small synthetic logs with exact expected numbers: trial
// order by time (ties in store order), duplicates counted once, other targets, machines
// and workloads ignored, the estimated latency from the trial where every task has a valid
// measurement, each task's curve, share, default cost and speedup, and the budgets.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { LogEntry } from '../records/log';
import type { TuningRecord } from '../records/record';
import { reportMatch, tuningFigures, type ReportTask } from './tuning-data';

const KEY_A = '["aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", [1, 8], [1, 8]]';
const KEY_B = '["bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", [1, 4], [1, 4]]';
const TASKS: ReportTask[] = [
  { key: KEY_A, desc: 'conv2d_nhwc+relu 1x8 -> 1x8', weight: 2, flops: 1000 },
  { key: KEY_B, desc: 'dense 1x4 -> 1x4', weight: 1, flops: 500 },
];
const MATCH = { target: 'llvm', fingerprint: 'f00df00d' };

/** A record of `key` measured at second `s`: `costs` (ms) or an error. */
function rec(key: string, s: number, costs: number[] | 'error', extra: Partial<TuningRecord> = {}): TuningRecord {
  return {
    v: 1, engine: '0.1.0', key, desc: '', target: MATCH.target, fingerprint: MATCH.fingerprint, steps: [],
    costs_ms: costs === 'error' ? [] : costs, error: costs === 'error' ? 'runtime_error' : null, seed: 0,
    time: `2025-01-01T00:00:${String(s).padStart(2, '0')}.000Z`, ...extra,
  };
}
const entries = (records: TuningRecord[], file = 'a.jsonl'): LogEntry[] => records.map((record, i) => ({ record, file, line: i + 1 }));

test('two tasks over eight trials: the estimate from trial 4, curves, shares, defaults and budgets', () => {
  const log = [
    rec(KEY_A, 1, [4], { policy: 'default', budget: 'full' }),
    rec(KEY_A, 2, [2, 4], { budget: 'full' }),          // mean 3
    rec(KEY_B, 3, 'error', { budget: 'full' }),
    rec(KEY_B, 4, [10], { policy: 'default', budget: 'full' }),
    rec(KEY_A, 5, [5]),
    rec(KEY_B, 6, [6]),
    rec(KEY_A, 7, [2.5]),
    rec(KEY_B, 8, 'error'),
  ];
  // The store order is not the time order; a copy of one measurement sits in a second log;
  // another target, another machine and another workload are not this network's trials.
  const store = [
    ...entries([log[4], log[0], log[6], log[2], log[1]]),
    ...entries([log[7], log[3], log[5], log[1]], 'nx/net/cpu.full.jsonl'),
    ...entries([
      rec(KEY_A, 9, [0.1], { target: 'llvm -mcpu=skylake' }), rec(KEY_A, 9, [0.1], { fingerprint: '12345678' }),
      rec('["cccccccccccccccccccccccccccccccc", [1]]', 9, [0.1]),
    ], 'other.jsonl'),
  ];
  const f = tuningFigures({ network: 'net', tasks: TASKS, entries: store, match: MATCH });
  assert.is(f.trials, 8);
  assert.is(f.errors, 2);
  assert.equal(f.curve, {
    complete_at: 4, tuning_s: 7, pauses: 0, first_time: log[0].time, last_time: log[7].time,
    points: [{ trial: 4, ms: 16, elapsed_s: 3 }, { trial: 6, ms: 12, elapsed_s: 5 }, { trial: 7, ms: 11, elapsed_s: 6 }, { trial: 8, ms: 11, elapsed_s: 7 }],
  });
  assert.is(f.estimated_ms, 11);
  assert.is(f.estimated_default_ms, 18); // 2 × 4 + 1 × 10
  assert.is(f.unmeasured, 0);
  const [a, b] = f.tasks;
  assert.equal(a.curve, [{ trial: 1, ms: 4 }, { trial: 2, ms: 3 }, { trial: 4, ms: 2.5 }]);
  assert.equal([a.trials, a.errors, a.best_ms, a.weighted_ms], [4, 0, 2.5, 5]);
  assert.equal(b.curve, [{ trial: 2, ms: 10 }, { trial: 3, ms: 6 }, { trial: 4, ms: 6 }]);
  assert.equal([b.trials, b.errors, b.best_ms, b.weighted_ms], [4, 2, 6, 6]);
  assert.is(a.share, 5 / 11);
  assert.is(b.share, 6 / 11);
  assert.equal(a.default, { known: true, ms: 4, measurements: 1 });
  assert.is(a.speedup, 1.6);
  assert.is(b.speedup, 10 / 6);
  assert.equal(f.budgets, [{ budget: 'full', trials: 4 }, { budget: 'tensortune tune', trials: 4 }]);
});

test('at a thread count: the records measured at it and those that do not say; the other counts are left out', () => {
  const log = [rec(KEY_A, 1, [4], { threads: 1 }), rec(KEY_A, 2, [1], { threads: 2 }), rec(KEY_B, 3, [2]), rec(KEY_B, 4, [0.5], { threads: 2 })];
  const at1 = tuningFigures({ network: 'net', tasks: TASKS, entries: entries(log), match: { ...MATCH, threads: 1 } });
  assert.equal([at1.trials, at1.threads, at1.tasks.map((t) => t.best_ms)], [2, 1, [4, 2]]);
  const any = tuningFigures({ network: 'net', tasks: TASKS, entries: entries(log), match: MATCH });
  assert.equal([any.trials, any.threads, any.tasks.map((t) => t.best_ms)], [4, null, [1, 0.5]]);
});

test('without a count, records of several counts: the newest record\'s count, with a warning; one count: nothing chosen', () => {
  const log = [rec(KEY_A, 1, [4], { threads: 1 }), rec(KEY_A, 3, [1], { threads: 2 }), rec(KEY_B, 2, [2]), rec(KEY_B, 4, [0.5], { threads: 1 })];
  const chosen = reportMatch(entries(log), TASKS, MATCH);
  assert.is(chosen.match.threads, 1, 'the newest record (time 4) was measured at 1 thread');
  assert.match(chosen.warning ?? '', /measured at 1, 2 thread\(s\), whose timings do not compare: showing those at 1 \(the newest tune's\).*--threads N/);
  const f = tuningFigures({ network: 'net', tasks: TASKS, entries: entries(log), match: chosen.match });
  assert.equal([f.trials, f.threads, f.tasks.map((t) => t.best_ms)], [3, 1, [4, 0.5]]);
  assert.equal(reportMatch(entries(log), TASKS, { ...MATCH, threads: 2 }), { match: { ...MATCH, threads: 2 } }, 'a count given is kept');
  const one = [rec(KEY_A, 1, [4], { threads: 2 }), rec(KEY_B, 2, [2])];
  assert.equal(reportMatch(entries(one), TASKS, MATCH), { match: MATCH }, 'one count: every record, threads null');
  const otherTask = [...one, rec('other-task', 3, [1], { threads: 1 })];
  assert.equal(reportMatch(entries(otherTask), TASKS, MATCH), { match: MATCH }, 'counts of other networks\' tasks do not count');
});

test('equal times keep the store order', () => {
  const same = [rec(KEY_A, 1, [3]), rec(KEY_A, 1, [2]), rec(KEY_B, 1, [1]), rec(KEY_A, 1, [1])];
  const f = tuningFigures({ network: 'net', tasks: TASKS, entries: entries(same), match: MATCH });
  assert.equal(f.tasks[0].curve, [{ trial: 1, ms: 3 }, { trial: 2, ms: 2 }, { trial: 3, ms: 1 }]);
  assert.equal(f.curve.points, [{ trial: 3, ms: 5, elapsed_s: 0 }, { trial: 4, ms: 3, elapsed_s: 0 }]);
});

test('before every task has a valid measurement: no estimate, shares of the measured tasks, defaults unknown with the reason', () => {
  const log = [rec(KEY_A, 1, [4]), rec(KEY_B, 2, 'error', { policy: 'default' }), rec(KEY_A, 3, [2])];
  const f = tuningFigures({ network: 'net', tasks: TASKS, entries: entries(log), match: MATCH });
  assert.is(f.estimated_ms, null);
  assert.equal([f.curve.complete_at, f.curve.points], [null, []]);
  assert.is(f.unmeasured, 1);
  assert.is(f.tasks[0].share, 1);
  assert.is(f.tasks[1].share, null);
  assert.is(f.tasks[1].best_ms, null);
  assert.equal(f.tasks[1].curve, []);
  assert.equal(f.tasks[0].default, { known: false, why: 'no measurement of the default schedule in the records' });
  assert.equal(f.tasks[1].default, { known: false, why: 'the default schedule was measured but failed (runtime_error)' });
  assert.is(f.tasks[0].speedup, null);
  assert.is(f.estimated_default_ms, null);
});

test('tuning time: gaps between trials count, a pause of more than 5 minutes between tune runs does not', () => {
  const at = (iso: string, key: string, ms: number): TuningRecord => ({ ...rec(key, 0, [ms]), time: iso });
  const log = [
    at('2025-01-01T10:00:00.000Z', KEY_A, 4), at('2025-01-01T10:00:30.000Z', KEY_B, 2), // 30 s
    at('2025-01-01T10:02:00.000Z', KEY_A, 3), // 90 s more
    at('2025-01-03T09:00:00.000Z', KEY_B, 1), // two days later: a pause, left out
    at('2025-01-03T09:01:00.000Z', KEY_A, 2), // 60 s more
  ];
  const f = tuningFigures({ network: 'net', tasks: TASKS, entries: entries(log), match: MATCH });
  assert.equal([f.curve.tuning_s, f.curve.pauses, f.curve.first_time, f.curve.last_time], [180, 1, log[0].time, log[4].time]);
  assert.equal(f.curve.points, [
    { trial: 2, ms: 10, elapsed_s: 30 }, { trial: 3, ms: 8, elapsed_s: 120 }, { trial: 4, ms: 7, elapsed_s: 120 }, { trial: 5, ms: 5, elapsed_s: 180 },
  ]);
});

test('no records at all: zero trials, every figure unknown', () => {
  const f = tuningFigures({ network: 'net', tasks: TASKS, entries: [], match: MATCH });
  assert.equal([f.trials, f.errors, f.estimated_ms, f.unmeasured, f.budgets], [0, 0, null, 2, []]);
  assert.equal(f.tasks.map((t) => t.curve), [[], []]);
});

test('the default schedule measured twice: the faster of its valid measurements', () => {
  const log = [rec(KEY_A, 1, [4], { policy: 'default' }), rec(KEY_A, 2, [3.5], { policy: 'default' }), rec(KEY_A, 3, 'error', { policy: 'default' })];
  const f = tuningFigures({ network: 'net', tasks: TASKS, entries: entries(log), match: MATCH });
  assert.equal(f.tasks[0].default, { known: true, ms: 3.5, measurements: 2 });
  assert.is(f.tasks[0].speedup, 1);
});

test('a Winograd alternative: its layers count once, with the faster of the two tasks', () => {
  const KEY_W = '["wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww", [1, 8], [1, 8]]';
  const tasks: ReportTask[] = [TASKS[0], TASKS[1], { key: KEY_W, desc: 'conv2d_winograd_nhwc+relu 1x8 -> 1x8', weight: 2, flops: 600, alternative: { of: KEY_A } }];
  const log = [
    rec(KEY_A, 1, [4], { policy: 'default' }),
    rec(KEY_B, 2, [10], { policy: 'default' }), // every layer measured: 2 × 4 + 10
    rec(KEY_W, 3, [5], { policy: 'default' }), // slower than the direct task: the estimate holds
    rec(KEY_W, 4, [3]), // the layer now runs as Winograd: 2 × 3 + 10
    rec(KEY_A, 5, [3.5]), // the direct task improves, still slower than Winograd
    rec(KEY_B, 6, [6]),
  ];
  const f = tuningFigures({ network: 'net', tasks, entries: entries(log), match: MATCH });
  assert.equal(f.curve.points, [{ trial: 2, ms: 18, elapsed_s: 1 }, { trial: 4, ms: 16, elapsed_s: 3 }, { trial: 6, ms: 12, elapsed_s: 5 }]);
  assert.equal([f.estimated_ms, f.estimated_default_ms, f.layers, f.unmeasured, f.trials], [12, 18, 2, 0, 6]);
  const [a, b, w] = f.tasks;
  assert.equal([a.best_ms, a.alternative_of, a.layer_best, a.weighted_ms, a.share, a.speedup], [3.5, null, { ms: 3, id: 2 }, 6, 0.5, 4 / 3]);
  assert.equal([b.layer_best, b.weighted_ms, b.share, b.speedup], [{ ms: 6, id: 1 }, 6, 0.5, 10 / 6]);
  assert.equal([w.best_ms, w.alternative_of, w.layer_best, w.weighted_ms, w.share, w.speedup], [3, 0, null, null, null, null]);
  assert.equal(w.curve, [{ trial: 1, ms: 5 }, { trial: 2, ms: 3 }]);
  assert.equal(w.default, { known: true, ms: 5, measurements: 1 });

  // Only the alternative measured: its layer group has a value, the other one does not.
  const partial = tuningFigures({ network: 'net', tasks, entries: entries([rec(KEY_W, 1, [3])]), match: MATCH });
  assert.equal([partial.estimated_ms, partial.unmeasured, partial.tasks[0].layer_best, partial.tasks[0].share], [null, 1, { ms: 3, id: 2 }, 1]);
});

test.run();
