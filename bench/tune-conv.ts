// Tune ResNet-50's last 3x3 convolution (7x7x512 -> 512, stride 1, padding 1, + bias + relu; NHWC, batch 1) with a fixed trial
// budget at 1 thread, and print its best GFLOPS, the share of the machine's measured peak
// (bench/peak.ts) and the best latency after each round (latency vs trials).
//
//   npx tsx bench/tune-conv.ts [--trials 256] [--batch-size 64] [--policy evolutionary]
//                              [--records FILE (default: a fresh temporary log)] [--seed 0]

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { LocalMeasurer } from '../engine/measure/measurer';
import { measurePeakGflops } from '../engine/native/peak';
import { defaultSchedule } from '../engine/schedule/defaults';
import { resnet50LastConv } from '../engine/search/gpu-fixtures.fixture';
import { tuneTasks } from '../engine/app/tune';
import type { PolicyName, TuneEvent } from '../engine/search/types';
import { parseTarget } from '../engine/target';
import { benchArgs } from './args';

const USAGE = 'npx tsx bench/tune-conv.ts [--trials 256] [--batch-size 64] [--policy evolutionary] [--records FILE (default: a fresh temporary log)] [--seed 0]';

async function main(): Promise<void> {
  const args = benchArgs('bench/tune-conv.ts', USAGE, { trials: '256', 'batch-size': '64', policy: 'evolutionary', records: '', seed: '0' });
  const trials = args.int('trials');
  const batchSize = args.int('batch-size');
  const policy = args.str('policy') as PolicyName;
  const seed = args.num('seed');
  const target = 'llvm -mcpu=native';
  const records = args.str('records') || path.join(mkdtempSync(path.join(tmpdir(), 'tt-tune-conv-')), 'conv.jsonl');
  const task = resnet50LastConv();
  console.log(`task: ${task.desc}  (${(task.flops / 1e6).toFixed(1)} MFLOP)  key ${task.key}`);
  console.log(`budget: ${trials} trials, ${batchSize} per round, policy ${policy}, 1 thread, target "${parseTarget(target).text}"; log ${records}`);

  const curve: { trials: number; best_ms: number | null }[] = [];
  let run = 0;
  const result = await tuneTasks('7x7x512 conv', [task], {
    target, records, trials, batchSize, policy, seed, measure: { threads: 1 },
    onEvent: (e: TuneEvent) => {
      if (e.type !== 'round') return;
      run += e.trials;
      curve.push({ trials: run, best_ms: e.best_ms });
      console.log(`  round: ${run} trials, best ${e.best_ms === null ? '-' : `${e.best_ms.toFixed(4)} ms`}, ${e.errors} error(s) in this round`);
    },
  });
  const peak = await measurePeakGflops(1, parseTarget(target));
  const reference = new LocalMeasurer(parseTarget(target), { threads: 1, seed });
  const [dflt] = await reference.measure(task, [defaultSchedule(task.dag, { vectorLanes: parseTarget(target).vectorLanes })]);
  await reference.close();
  const defaultMs = dflt.error === null ? dflt.costs_ms.reduce((a, b) => a + b, 0) / dflt.costs_ms.length : null;
  const gflops = (ms: number | null): string => (ms === null ? '-' : (task.flops / (ms * 1e-3) / 1e9).toFixed(1));
  const pct = (ms: number | null): string => (ms === null ? '-' : `${((task.flops / (ms * 1e-3) / 1e9 / peak) * 100).toFixed(1)}%`);

  console.log('\nbest latency vs trials');
  console.log('  trials   best (ms)   GFLOPS   % of peak');
  for (const p of curve) {
    console.log(`  ${String(p.trials).padStart(6)}   ${(p.best_ms === null ? '-' : p.best_ms.toFixed(4)).padStart(9)}   ${gflops(p.best_ms).padStart(6)}   ${pct(p.best_ms).padStart(9)}`);
  }
  const best = result.tasks[0].best_ms;
  console.log(`\npeak fp32 at 1 thread (bench/peak.ts): ${peak.toFixed(1)} GFLOPS`);
  console.log(`default schedule: ${defaultMs === null ? `failed (${dflt.error})` : `${defaultMs.toFixed(4)} ms = ${gflops(defaultMs)} GFLOPS = ${pct(defaultMs)} of peak`}`);
  console.log(`tuned: ${best === null ? 'no valid program' : `${best.toFixed(4)} ms = ${gflops(best)} GFLOPS = ${pct(best)} of peak`} after ${result.trials} trials`);
  const t = result.timing;
  console.log(`wall ${result.wallS.toFixed(1)} s (${(result.trials / result.wallS).toFixed(2)} trials/s); in the measurer ${t.measureS.toFixed(1)} s; outside it ${(result.wallS - t.measureS).toFixed(1)} s (${(((result.wallS - t.measureS) / result.wallS) * 100).toFixed(0)}%)`);
}

if (require.main === module) main().catch((e: unknown) => { console.error(e); process.exitCode = 1; });
