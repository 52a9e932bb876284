import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HOST_RATE_MIN_SAMPLES, HOST_RATE_TOLERANCE, HOST_RATE_WINDOW, HostRate, keepRetake, offSpeed } from './host-rate';

/** A tracker that has seen `n` candidates probed at `rate`. */
function seen(n: number, rate: number): HostRate {
  const h = new HostRate();
  for (let i = 0; i < n; i++) h.observe([rate, rate]);
  return h;
}

test('nothing is judged before HOST_RATE_MIN_SAMPLES candidates were probed', () => {
  const h = new HostRate();
  for (let i = 0; i < HOST_RATE_MIN_SAMPLES; i++) assert.is(h.observe([i % 2 ? 10 : 1, 5]), 1, `candidate ${i}`);
  assert.ok(h.usual() !== undefined);
});

test('a probe off the usual rate by more than the tolerance, faster or slower, marks its measurement', () => {
  const h = seen(HOST_RATE_MIN_SAMPLES, 5);
  assert.is(h.usual(), 5);
  const fast = h.observe([8, 8]);
  assert.ok(Math.abs(fast - 1.6) < 1e-12, String(fast));
  assert.ok(offSpeed(fast));
  const slow = seen(HOST_RATE_MIN_SAMPLES, 5).observe([5, 2.5]);
  assert.is(slow, 2, 'the farther of the two probes counts (the phase changed during the runs)');
  assert.ok(offSpeed(slow));
  const near = seen(HOST_RATE_MIN_SAMPLES, 5).observe([5.5, 4.6]);
  assert.ok(near <= HOST_RATE_TOLERANCE && !offSpeed(near), String(near));
});

test('the usual rate follows the machine: a lasting new speed becomes the usual one within the window', () => {
  const h = seen(HOST_RATE_WINDOW, 5);
  assert.ok(offSpeed(h.observe([9, 9])));
  for (let i = 0; i < HOST_RATE_WINDOW; i++) h.observe([9, 9]);
  assert.is(h.usual(), 9);
  assert.is(h.observe([9, 9]), 1);
  assert.ok(offSpeed(h.observe([5, 5])));
});

test('which timing a retaken candidate keeps: the one nearer the usual speed where either was off it; else the slower', () => {
  assert.is(keepRetake({ mean: 1.0, off: 1.8 }, { mean: 2.0, off: 1.05 }), 'again', 'a fast phase\'s timing gives way');
  assert.is(keepRetake({ mean: 2.0, off: 1.05 }, { mean: 1.0, off: 1.8 }), 'first', 'and a retake in the phase does not replace an on-speed one');
  assert.is(keepRetake({ mean: 3.0, off: 1.6 }, { mean: 2.9, off: 1.4 }), 'again', 'both off: the nearer');
  assert.is(keepRetake({ mean: 1.0, off: 1.1 }, { mean: 1.9, off: 1.0 }), 'again', 'a new best that does not hold keeps the slower timing');
  assert.is(keepRetake({ mean: 1.0, off: 1.0 }, { mean: 0.98, off: 1.1 }), 'first', 'one that holds keeps its own');
});

test.run();
