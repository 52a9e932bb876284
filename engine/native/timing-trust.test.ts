// The trust decision on synthetic timing series: the cases of the issue (a median of
// 41.2 ms with a std of 64.0; 354-421 ms at 2 threads beside two busy processes; 6.3 ms at
// 1 thread beside one), hyperfine's own outlier test vectors, and the load rules (the
// CPU others used during the run over a lagging load average). No clock is read.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { outliers, timingWarnings, type TimingContext } from './timing-trust';

/** A quiet 2-core machine: 2 threads, load 0.05, 2 s of run, nobody else on the cores. */
const quiet = (runs_ms: number[], over: Partial<TimingContext> = {}): TimingContext =>
  ({ runs_ms, threads: 2, cores: 2, load_before: 0.05, load_after: 0.1, seconds: 2, others_cores: 0.02, ...over });

/** 3.2 ms with a few tenths of a percent of jitter, as 10 measurements of 100 ms give. */
const STEADY = [3.201, 3.204, 3.199, 3.21, 3.202, 3.198, 3.206, 3.2, 3.203, 3.205];

test('a steady series on a quiet machine: no warning', () => {
  assert.equal(timingWarnings(quiet(STEADY)), []);
  assert.equal(timingWarnings(quiet([3.2])), [], 'one measurement: nothing to judge but the load');
});

test('the issue\'s run of 5 with a median of 41.2 ms and a std of 64.0: unstable (too spread for outliers)', () => {
  const w = timingWarnings(quiet([3.4, 3.6, 41.2, 148, 136]));
  assert.equal(w, ['unstable timings: the standard deviation (63.3 ms) is 95% of the mean (66.4 ms), 10% or more; rerun on a quiet machine']);
});

test('spread: a std of 10% of the mean warns (pyperf\'s rule), 9% does not', () => {
  // two values a and b, std = |a - b| / 2, mean = (a + b) / 2
  assert.match(timingWarnings(quiet([9, 11, 9, 11]))[0], /the standard deviation \(1\.00 ms\) is 10% of the mean \(10\.0 ms\)/);
  assert.equal(timingWarnings(quiet([9.1, 10.9, 9.1, 10.9])), []);
});

test('one slow measurement in a steady series is an outlier; the spread alone would not have said so', () => {
  const runs = [...STEADY.slice(0, 9), 4.16]; // 30% slow: a std of 8.7% of the mean
  const w = timingWarnings(quiet(runs));
  assert.equal(w, ['1 of 10 measurements are outliers (4.16 ms against a median of 3.20 ms): something else ran at times; ' +
    'rerun on a quiet machine']);
  assert.equal(outliers([...STEADY.slice(0, 9), 3.27]), [], 'a run 2% slow is not one (the MAD floor of 0.5% of the median)');
});

test('outliers: hyperfine\'s test vectors (src/outlier_detection.rs) give its counts', () => {
  assert.equal(outliers([]), []);
  assert.equal(outliers([50]), []);
  assert.equal(outliers([1000, 0]), []);
  assert.equal(outliers([0.5, 0.3, 0.29, 0.31, 0.3]), [0.5]);
  const normal = [2.33269488, 1.42195907, -0.57527698, -0.31293437, 2.2948158, 0.75813273, -1.0712388, -0.96394741, -1.15897446, 1.10976285]
    .map((x) => x + 100); // shifted to positive times (the MAD floor is relative to the median)
  assert.equal(outliers(normal), []);
  assert.equal(outliers([...normal, 120, 0]), [120, 0], 'hyperfine adds 20 and -500');
  assert.equal(outliers([10, 10, 10, 10, 10, 10, 10, 100]), [100], 'a MAD of 0');
  assert.equal(outliers([10, 10, 10, 10, 10, 10, 10, 100, 100]), [100, 100]);
});

test('two busy processes on 2 cores, the model on 2 threads (the issue\'s 354-421 ms): a busy-machine warning', () => {
  const runs = [354, 371, 402, 388, 421, 365, 379, 395, 360, 410];
  const w = timingWarnings({ runs_ms: runs, threads: 2, cores: 2, load_before: 2.04, load_after: 2.31, seconds: 4.2, others_cores: 1.02 });
  assert.equal(w, ['busy machine: other processes used 1.0 cores while it ran and its 2 thread(s) on 2 core(s) leave 0 idle ' +
    '(load average 2.04 before, 2.31 after); they took cores from it: rerun on a quiet machine or with fewer threads']);
});

test('one busy process on 2 cores, the model on 1 thread: the idle core is enough, no warning', () => {
  const runs = [6.31, 6.29, 6.33, 6.3, 6.28, 6.32, 6.3, 6.31, 6.29, 6.3];
  assert.equal(timingWarnings({ runs_ms: runs, threads: 1, cores: 2, load_before: 1.01, load_after: 1.05, seconds: 1.4, others_cores: 1.0 }), []);
  // the same load with 2 threads wants the busy core too
  const w = timingWarnings({ runs_ms: runs, threads: 2, cores: 2, load_before: 1.01, load_after: 1.05, seconds: 1.4, others_cores: 1.0 });
  assert.is(w.length, 1);
  assert.match(w[0], /^busy machine: other processes used 1\.0 cores/);
});

test('load: what others did during the run outweighs the lagging load average, either way', () => {
  // A tune just ended: the 1-minute average still says 1.9, but the cores were free during the run.
  assert.equal(timingWarnings(quiet(STEADY, { load_before: 1.9, load_after: 1.85, others_cores: 0.1 })), []);
  // Busy loops started seconds ago: the average has not caught up, the CPU time has.
  assert.match(timingWarnings(quiet(STEADY, { load_before: 0.2, load_after: 0.3, others_cores: 1.9 }))[0], /^busy machine: other processes used 1\.9 cores/);
  // Half a core of daemons is tolerated.
  assert.equal(timingWarnings(quiet(STEADY, { others_cores: 0.5 })), []);
});

test('load without the CPU time of others (unknown, or a run too short to count it): the load average decides', () => {
  const w = timingWarnings(quiet(STEADY, { load_before: 2.1, load_after: 2.2, others_cores: undefined }));
  assert.equal(w, ['busy machine: load average 2.10 before, 2.20 after the run, and its 2 thread(s) on 2 core(s) leave 0 idle: ' +
    'other processes want its cores; rerun on a quiet machine or with fewer threads']);
  assert.is(timingWarnings(quiet(STEADY, { load_before: 2.1, seconds: 0.2, others_cores: 0 })).length, 1, 'a 0.2 s run: its CPU count is too coarse');
  // After a 10 s run on 2 threads, 0.31 of load_after is the run itself.
  assert.equal(timingWarnings(quiet(STEADY, { load_before: 0.1, load_after: 0.8, seconds: 10, others_cores: undefined })), []);
  assert.is(timingWarnings(quiet(STEADY, { load_before: 0.1, load_after: 0.9, seconds: 10, others_cores: undefined })).length, 1);
  assert.equal(timingWarnings(quiet(STEADY, { threads: 1, load_before: 1.4, load_after: 1.4, others_cores: undefined })), [], '1 idle core');
});

test('more threads than cores: the model competes with itself', () => {
  const w = timingWarnings(quiet(STEADY, { threads: 4, others_cores: 0 }));
  assert.equal(w, ['4 threads on 2 cores: the model\'s threads take turns on the cores; use --threads 2 or fewer']);
});

test.run();
