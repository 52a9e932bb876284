// What the GPU benches (opencl.ts, cuda.ts) share: the best schedule of a one-task log, and
// schedules re-timed in interleaved rounds so that a slow phase of the machine hits all alike.

import type { LocalMeasurer } from '../engine/measure/measurer';
import { bestRecords } from '../engine/records/best';
import { readRecordFiles } from '../engine/records/log';
import type { Step } from '../engine/schedule/steps';

const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

/** The steps of the fastest valid record of a one-task log. */
export async function bestSteps(log: string): Promise<Step[] | undefined> {
  const [best] = bestRecords(await readRecordFiles([log])).values();
  return best?.record.steps;
}

/** Each schedule timed in `rounds` interleaved rounds by `measurer`; the lowest mean per schedule, or the error of a failed one. */
export async function interleaved(measurer: LocalMeasurer, task: Parameters<LocalMeasurer['measure']>[0], schedules: Step[][], rounds = 3): Promise<(number | string)[]> {
  const out: (number | string)[] = schedules.map(() => Infinity);
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < schedules.length; i++) {
      const [o] = await measurer.measure(task, [schedules[i]]);
      if (o.error !== null) out[i] = `${o.error}: ${o.message ?? ''}`;
      else if (typeof out[i] === 'number') out[i] = Math.min(out[i] as number, mean(o.costs_ms));
    }
  }
  return out;
}
