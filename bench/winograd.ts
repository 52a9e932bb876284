// Direct conv vs Winograd on resnet-18's 3x3 stride-1 layers, default schedules, measured
// in one run by the measurer (verified against the reference), one thread: per layer the
// time of each and the ratio Winograd / direct (< 1: Winograd faster).
//
//   npx tsx bench/winograd.ts [--network resnet-18] [--repeat 5]

import { getNetwork } from '../engine/frontend/networks';
import { extractTasks } from '../engine/graph/extract';
import { LocalMeasurer } from '../engine/measure/measurer';
import { defaultSchedule } from '../engine/schedule/defaults';
import { parseTarget } from '../engine/target';
import { benchArgs } from './args';

const args = benchArgs('bench/winograd.ts', 'npx tsx bench/winograd.ts [--network resnet-18] [--repeat 5]', { network: 'resnet-18', repeat: '5' });
const network = args.str('network');
const target = parseTarget('llvm -mcpu=native');
const tasks = extractTasks(getNetwork(network, { weights: 'zeros' }).graph, { winograd: true });
const measurer = new LocalMeasurer(target, { repeat: args.int('repeat'), minRepeatMs: 20, buildJobs: 2, threads: 1 });
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1];

(async () => {
  console.log(`| layer (${network}, default schedules, 1 thread) | weight | direct ms | Winograd ms | tile | Winograd / direct |`);
  console.log('|---|---|---|---|---|---|');
  let totalD = 0, totalW = 0;
  try {
    for (const w of tasks.filter((t) => t.alternative)) {
      const d = tasks.find((t) => t.key === w.alternative!.of)!;
      const ms: number[] = [];
      for (const t of [d, w]) {
        const [o] = await measurer.measure(t, [defaultSchedule(t.dag, { vectorLanes: target.vectorLanes })]);
        if (o.error) throw new Error(`${t.desc}: ${o.error} ${o.message}`);
        ms.push(median(o.costs_ms));
      }
      totalD += d.weight * ms[0];
      totalW += d.weight * Math.min(ms[0], ms[1]);
      console.log(`| ${d.desc} | ${d.weight} | ${ms[0].toFixed(3)} | ${ms[1].toFixed(3)} | F(${w.shapes[1][0] - 2}x${w.shapes[1][0] - 2}) | ${(ms[1] / ms[0]).toFixed(2)} |`);
    }
  } finally {
    await measurer.close();
  }
  console.log(`Σ weight × time of these layers: direct ${totalD.toFixed(2)} ms, faster of the two per layer ${totalW.toFixed(2)} ms (ratio ${(totalW / totalD).toFixed(2)})`);
})();
