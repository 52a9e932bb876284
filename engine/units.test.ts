// Durations for people: µs under 1 ms, ms from 1 ms on, no exponent, one unit per table.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { duration, formatSummary, inUnit, MS, unitOf, US } from './units';

test('duration: µs under 1 ms, ms from 1 ms, 4 significant digits and no exponent', () => {
  assert.is(duration(7.81e-4), '0.781 µs');
  assert.is(duration(0.0123), '12.3 µs');
  assert.is(duration(0.99996), '1000 µs');
  assert.is(duration(1), '1 ms');
  assert.is(duration(17.456789), '17.46 ms');
  assert.is(duration(123456), '123456 ms');
  assert.is(duration(0), '0 µs');
});

test('unitOf: the unit of the largest value, so a column or an axis has one', () => {
  assert.is(unitOf([0.002, 0.5]), US);
  assert.is(unitOf([0.002, 1.5]), MS);
  assert.is(unitOf([]), MS);
  assert.is(inUnit(0.5, US), '500');
});

test('formatSummary: tt_bench\'s table, in µs for a model that runs in microseconds', () => {
  const small = formatSummary({ mean_ms: 0.0021, median_ms: 0.002, max_ms: 0.0031, min_ms: 0.0019, std_ms: 0.0001 });
  assert.equal(small.split('\n'), ['Execution time summary:', ' mean (µs)   median (µs)    max (µs)     min (µs)     std (µs)', '    2.10         2.00         3.10         1.90         0.10']);
  const large = formatSummary({ mean_ms: 20, median_ms: 19.5, max_ms: 21, min_ms: 19, std_ms: 0.5 }).split('\n');
  assert.is(large[1], ' mean (ms)   median (ms)    max (ms)     min (ms)     std (ms)');
  assert.is(large[2], '  20.0000      19.5000      21.0000      19.0000       0.5000');
});

test.run();
