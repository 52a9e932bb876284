import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ProgressReporter, formatBar, formatEstimate, formatProgress, formatTaskTable, runBudget, summaryLine } from './progress';
import type { TuneNetworkResult } from './types';

const ROWS = [
  { desc: 'conv2d_nhwc+add+relu 1x7x7x512 -> 1x7x7x512', weight: 3, flops: 231_211_008, trials: 128, best_ms: 0.5 },
  { desc: 'softmax 1x1000 -> 1x1000', weight: 1, flops: 5000, trials: 64, best_ms: null },
];

test('the table has TVM\'s columns plus the weight; latency and GFLOPS from the best cost', () => {
  const lines = formatTaskTable(ROWS);
  assert.match(lines[1], /^\|\s+ID\s+\| Task Description\s+\| Latency \(ms\) \| Speed \(GFLOPS\) \| Trials \| Weight \|$/);
  const conv = lines[3].split('|').map((c) => c.trim());
  assert.equal(conv.slice(1, 7), ['0', ROWS[0].desc, '0.500', '462.42', '128', '3']);
  const softmax = lines[4].split('|').map((c) => c.trim());
  assert.equal(softmax.slice(3, 7), ['-', '-', '64', '1']);
  assert.ok(lines.every((l) => l.length === lines[0].length), 'all rows are aligned');
});

test('long descriptions are cut to the column', () => {
  const [, , , row] = formatTaskTable([{ ...ROWS[0], desc: 'x'.repeat(100) }], 20);
  assert.ok(row.includes(`| ${'x'.repeat(17)}... |`));
});

test('the footer reads as TVM\'s, with - until every task has a valid program', () => {
  assert.is(formatEstimate(10.0164, 3992, 1130.6, 15), 'Estimated total latency: 10.016 ms\tTrials: 3992\tUsed time : 1131 s\tNext ID: 15');
  assert.is(formatEstimate(null, 64, 3, null), 'Estimated total latency: - ms\tTrials: 64\tUsed time : 3 s');
});

test('the bar: fraction of the trial or time budget, whichever is further, and an ETA', () => {
  assert.is(formatBar({ trials: 100, elapsedS: 30 }, { trials: 400 }, 8), '[##......] 100/400 trials  25%  0:30 elapsed  ETA 1:30');
  assert.is(formatBar({ trials: 10, elapsedS: 90 }, { trials: 400, timeLimitS: 120 }, 4), '[###.] 10/400 trials  75%  1:30 elapsed  ETA 0:30');
  assert.match(formatBar({ trials: 0, elapsedS: 0 }, {}, 4), 'ETA --:--');
});

test('the run\'s budget: the smaller of the total and the per-task budgets, less what the log holds', () => {
  assert.equal(runBudget([64, 0, 200], { trialsPerTask: 200 }), { trials: 336, timeLimitS: undefined });
  assert.equal(runBudget([64, 0, 200], { trials: 300, trialsPerTask: 200 }), { trials: 36, timeLimitS: undefined });
  assert.equal(runBudget([10], { timeLimitS: 60 }), { trials: undefined, timeLimitS: 60 });
});

test('the progress of a log line: trials of the budget, percent, elapsed and ETA; only the elapsed time without a budget', () => {
  assert.is(formatProgress({ trials: 100, elapsedS: 30 }, { trials: 400 }), '100/400 trials, 25%, 0:30 elapsed, ETA 1:30');
  assert.is(formatProgress({ trials: 10, elapsedS: 3000 }, { trials: 400, timeLimitS: 3600 }), '10/400 trials, 83%, 50:00 elapsed, ETA 10:00');
  assert.is(formatProgress({ trials: 10, elapsedS: 75 }, {}), '10 trials, 1:15 elapsed');
});

const RESULT: TuneNetworkResult = {
  tasks: [{ key: 'k0', desc: ROWS[0].desc, weight: 3, trials: 128, best_ms: 0.5 }],
  trials: 64, estimatedMs: 1.5, wallS: 12.3, reason: 'budget',
};

function capture(mode: { json?: boolean; quiet?: boolean; bar?: boolean }) {
  const out: string[] = [], err: string[] = [];
  const r = new ProgressReporter({
    out: (t) => out.push(t), err: (t) => err.push(t), json: false, quiet: false, bar: false,
    budget: { trialsPerTask: 200 }, now: () => 0, ...mode,
  });
  return { r, out, err };
}

const START = { type: 'start' as const, tasks: [{ id: 0, key: 'k0', desc: ROWS[0].desc, weight: 3, flops: ROWS[0].flops, measured: 64 }] };

test('--json: one JSON line per event and nothing else', () => {
  const { r, out, err } = capture({ json: true, bar: true });
  assert.is(r.log, undefined);
  r.onEvent(START);
  r.onEvent({ type: 'round', task: 0, trials: 64, best_ms: 0.5, errors: 0, total_trials: 128, estimated_ms: 1.5 });
  r.finish(RESULT);
  assert.is(out.length, 2);
  assert.equal(JSON.parse(out[1]), { type: 'round', task: 0, trials: 64, best_ms: 0.5, errors: 0, total_trials: 128, estimated_ms: 1.5 });
  assert.equal(err, []);
});

test('quiet (CI): no log, then the final table, footer and summary', () => {
  const { r, out } = capture({ quiet: true });
  assert.is(r.log, undefined);
  r.onEvent(START);
  r.finish(RESULT);
  const text = out.join('');
  assert.match(text, /\|\s+462\.42 \|/);
  assert.match(text, 'Estimated total latency: 1.500 ms\tTrials: 128\tUsed time : 12 s');
  assert.match(text, 'tuning stopped (budget): 64 new trial(s) in 12.3 s; estimated total latency 1.500 ms');
});

test('summary: where the wall time went, the network pass apart from the search', () => {
  assert.is(summaryLine({ ...RESULT, timing: { measureS: 10.2 } }),
    'tuning stopped (budget): 64 new trial(s) in 12.3 s (10.2 s measuring, 2.1 s = 17% searching, cost model, records and setup); estimated total latency 1.500 ms');
  assert.is(summaryLine({ ...RESULT, wallS: 20, timing: { measureS: 10 }, networkPass: { variants: 3, tasks: 1, records: 6, seconds: 8 } }),
    'tuning stopped (budget): 64 new trial(s) in 20.0 s (10.0 s measuring, 8.0 s the network pass, 2.0 s = 10% searching, cost model, records and setup); estimated total latency 1.500 ms');
  // A run that measured nothing (everything resumed) has nothing to split.
  assert.is(summaryLine({ ...RESULT, trials: 0, timing: { measureS: 0 } }), 'tuning stopped (budget): 0 new trial(s) in 12.3 s; estimated total latency 1.500 ms');
});

test('terminal: the bar is redrawn per round on stderr and cleared before each log line', () => {
  const { r, out, err } = capture({ bar: true });
  r.onEvent(START);
  r.onEvent({ type: 'round', task: 0, trials: 34, best_ms: 0.5, errors: 0, total_trials: 98, estimated_ms: 1.5 });
  // the per-task budget of 200 with 64 resumed leaves 136 trials to run
  assert.match(err[err.length - 1], '34/136 trials  25%');
  r.log!('a line');
  assert.equal(out, ['a line\n']);
  assert.is(err[err.length - 2], '\r\x1b[K');
  r.finish(RESULT);
  assert.is(out[out.length - 1], `${summaryLine(RESULT)}\n`);
});

test.run();
