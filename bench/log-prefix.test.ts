import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { TuningRecord } from '../engine/records/record';
import { timedLog } from './log-prefix';

const at = (time: string, id: string): TuningRecord => ({ time, workload_key: id } as unknown as TuningRecord);

test('records by the minute from the first, in time order, undated ones left out', () => {
  const log = timedLog([at('2026-12-02T10:07:30Z', 'c'), at('2026-12-02T10:00:00Z', 'a'), at('not a time', 'x'), at('2026-12-02T10:05:00Z', 'b')])!;
  assert.is(log.count, 3);
  assert.is(log.spanMinutes, 7.5);
  const keys = (m: number): string[] => log.within(m).map((r) => (r as unknown as { workload_key: string }).workload_key);
  assert.equal(keys(0), ['a']);
  assert.equal(keys(5), ['a', 'b'], 'a record at exactly the minute is in');
  assert.equal(keys(7), ['a', 'b']);
  assert.equal(keys(30), ['a', 'b', 'c']);
  assert.is(timedLog([at('', 'y')]), undefined);
});

test.run();
