// Tune mobilenet (NHWC, batch 1) with a fixed trial budget,
// compile it with the records and with default schedules, and print tuned vs default
// latency (tt_bench, same threads), the wall time of tuning, trials per second, and the
// share of tuning wall time spent outside the measurer (search, cost model, records).
// `--policy random` at the same budget shows what the cost model buys. `--network` tunes
// another builtin network the same way, and `--workload KEY` (repeatable) only the tasks it
// names, by workload key or its hash as `tensortune tune --workload` takes them (say a
// Winograd task, to see its search's cost).
//
//   npx tsx bench/tune-mobilenet.ts [--trials 704] [--batch-size 32] [--policy evolutionary|random]
//                                   [--image-size N] [--threads 1] [--records FILE] [--seed 0] [--flush | --no-flush]
//                                   [--no-prefetch]  (search each batch only when its round starts)
//                                   [--network mobilenet] [--workload KEY]...

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { compileNetwork } from '../engine/app/compile';
import { runBench } from '../engine/native/bench';
import { selectWorkloads } from '../engine/cli/tune';
import { loadModel } from '../engine/frontend/load';
import { tuneTasks } from '../engine/app/tune';
import { tuningTasks } from '../engine/graph/extract';
import type { PolicyName } from '../engine/search/types';
import { benchArgs } from './args';

const USAGE = 'npx tsx bench/tune-mobilenet.ts [--trials 704] [--batch-size 32] [--policy evolutionary] [--network mobilenet] [--workload KEY ...] [--image-size N] [--threads 1] [--seed 0] [--flush | --no-flush] [--no-prefetch] [--records FILE]';

async function main(): Promise<void> {
  const args = benchArgs('bench/tune-mobilenet.ts', USAGE,
    { trials: '704', 'batch-size': '32', policy: 'evolutionary', 'image-size': '', threads: '1', seed: '0', network: 'mobilenet', records: '' },
    { switches: ['flush', 'no-flush', 'no-prefetch'], repeated: ['workload'] });
  const trials = args.int('trials');
  const batchSize = args.int('batch-size');
  const policy = args.str('policy') as PolicyName;
  // The network's own input size unless given (bert-base and dcgan read no image and refuse one).
  const imageSize = args.optInt('image-size');
  const threads = args.int('threads');
  const seed = args.num('seed');
  // Default: tune's own (caches flushed on CPUs); --flush / --no-flush force it.
  const flush = args.on('no-flush') ? false : args.on('flush') ? true : undefined;
  const prefetch = !args.on('no-prefetch');
  const network = args.str('network');
  const workloads = args.all('workload');
  const target = 'llvm -mcpu=native';
  const dir = mkdtempSync(path.join(tmpdir(), `tt-tune-${network}-`));
  const records = args.str('records') || path.join(dir, `${network}.jsonl`);
  const model = { model: network, layout: 'NHWC' as const, batch: 1, imageSize };
  // --workload names tasks as `tensortune tune --workload` does (a workload key or its hash).
  const { name, tasks } = workloads.length > 0 ? selectWorkloads(model, target, workloads)
    : { name: network, tasks: tuningTasks(loadModel(model).graph, target) };

  console.log(`${network}${imageSize === undefined ? '' : ` ${imageSize}x${imageSize}`} NHWC: ${tasks.length} task(s), ${trials} trials, ${batchSize} per round, policy ${policy}, ${threads} thread(s)${flush === false ? ', caches not flushed' : flush ? ', caches flushed between runs' : ''}${prefetch ? '' : ', no prefetch'}; log ${records}`);
  const result = await tuneTasks(name, tasks, {
    target, records, trials, batchSize, policy, seed, measure: { threads, flush }, prefetch,
    log: (line) => { if (line.startsWith('Estimated total latency')) console.log(line); },
  });

  // Default and tuned are timed alternately (A B A B A B) so that load on a shared machine
  // hits both alike; each figure is the lowest of the three medians, with the overall minimum.
  const compileTo = async (recordsUsed: string[] | undefined, out: string) =>
    compileNetwork({ ...model, target, outDir: path.join(dir, out), records: recordsUsed });
  const builds = { default: await compileTo(undefined, 'default'), tuned: await compileTo([records], 'tuned') };
  const times = { default: { median: Infinity, min: Infinity }, tuned: { median: Infinity, min: Infinity } };
  for (let i = 0; i < 3; i++) {
    for (const which of ['default', 'tuned'] as const) {
      const b = await runBench({ model: builds[which].library, params: builds[which].params, threads, repeat: 10, minRepeatMs: 100 });
      times[which].median = Math.min(times[which].median, b.median_ms);
      times[which].min = Math.min(times[which].min, b.min_ms);
    }
  }
  const tunedKernels = builds.tuned.kernels.filter((k) => k.schedule === 'tuned').length;

  const t = result.timing;
  const outside = result.wallS - t.measureS;
  console.log(`\npolicy ${policy}, stopped: ${result.reason}`);
  console.log(`tuning wall time        ${result.wallS.toFixed(1)} s for ${result.trials} trials = ${(result.trials / result.wallS).toFixed(2)} trials/s`);
  console.log(`  inside the measurer   ${t.measureS.toFixed(1)} s (candidate builds ${t.buildS.toFixed(1)} s, runs ${t.runS.toFixed(1)} s, as reported per candidate)`);
  console.log(`  outside measurement   ${outside.toFixed(1)} s = ${((outside / result.wallS) * 100).toFixed(1)}% (search, cost model, records ${t.recordS.toFixed(1)} s, setup)`);
  console.log(`estimated total latency ${result.estimatedMs === null ? '-' : `${result.estimatedMs.toFixed(3)} ms`} (sum of weight x best task latency)`);
  console.log(`default schedules       median ${times.default.median.toFixed(3)} ms, min ${times.default.min.toFixed(3)} ms (tt_bench, ${threads} thread(s))`);
  console.log(`tuned (${tunedKernels}/${builds.tuned.kernels.length} kernels)     median ${times.tuned.median.toFixed(3)} ms, min ${times.tuned.min.toFixed(3)} ms`);
  console.log(`speed-up over default   ${(times.default.median / times.tuned.median).toFixed(2)}x (medians), ${(times.default.min / times.tuned.min).toFixed(2)}x (minima)`);
}

if (require.main === module) main().catch((e: unknown) => { console.error(e); process.exitCode = 1; });
