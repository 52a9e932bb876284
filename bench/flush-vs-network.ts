// Which way of timing a kernel alone tracks the network (issue 13, item 7): for each task of
// a network, its default schedule and compile's choice from a record log are timed by the
// measurer three ways: as tune does on CPUs (the task's weights evicted from the caches
// before each run, its activations left as the run before left them: measurer.ts
// coldInputs), with every buffer but the first evicted (TVM's enable_cpu_cache_flush), and
// with no flush; and in the two compiled networks (default and tuned) by the per-kernel
// profile, all at 1 thread, in interleaved rounds; medians. A timing mode agrees on a task
// when it orders the two schedules as the network does.
//
//   npx tsx bench/flush-vs-network.ts --records LOG [--network mobilenet] [--rounds 3]

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { readManifest } from '../engine/compile/manifest';
import { compileNetwork } from '../engine/app/compile';
import { kernelProfile } from '../engine/compile/profile';
import { getNetwork } from '../engine/frontend/networks';
import { LocalMeasurer } from '../engine/measure/measurer';
import { runBench } from '../engine/native/bench';
import { rankedByWorkload } from '../engine/records/best';
import { readRecordFiles } from '../engine/records/log';
import { defaultSchedule } from '../engine/schedule/defaults';
import { stepsKey, type Step } from '../engine/schedule/steps';
import { tuningTasks } from '../engine/graph/extract';
import { hardwareFingerprint, parseTarget } from '../engine/target';
import { benchArgs } from './args';

const args = benchArgs('bench/flush-vs-network.ts', 'npx tsx bench/flush-vs-network.ts --records LOG [--network mobilenet] [--rounds 3]', { records: '', network: 'mobilenet', rounds: '3' });
if (!args.str('records')) throw new Error('--records LOG: the tuned log to compare with the defaults');
const records = path.resolve(args.str('records'));
const network = args.str('network');
const rounds = args.int('rounds');
const target = parseTarget('llvm -mcpu=native');
const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
const median = (xs: readonly number[] | undefined): number => (xs?.length ? [...xs].sort((a, b) => a - b)[xs.length >> 1] : NaN);
const MODES = ['weights cold', 'all but first', 'no flush'] as const;
const COLUMNS = [...MODES.flatMap((m) => [`${m} default`, `${m} tuned`]), 'network default', 'network tuned'];

/** Per-call ms of each kernel of a compiled network, by workload key (one profiled bench run, summed per kernel as `benchmark --profile` does). */
async function networkTimes(dir: string): Promise<Map<string, number>> {
  const manifest = readManifest(dir);
  const run = await runBench({ model: path.join(dir, 'model.so'), params: path.join(dir, 'params.bin'), threads: 1, profile: true, repeat: 5 });
  const keyOf = new Map(manifest.kernels.map((k) => [k.symbol, k.key]));
  return new Map(kernelProfile(run.profile ?? [], manifest).map((row) => [keyOf.get(row.symbol)!, row.ms / row.calls]));
}

async function main(): Promise<void> {
  const graph = getNetwork(network, { weights: 'zeros' }).graph;
  const tasks = tuningTasks(graph, target.text).filter((t) => !t.alternative);
  const ranked = rankedByWorkload(await readRecordFiles([records]), { target: target.text, fingerprint: hardwareFingerprint(target) });
  const work = mkdtempSync(path.join(tmpdir(), 'tt-flush-vs-network-'));
  const measurers = [
    new LocalMeasurer(target, { flush: true, threads: 1 }),
    new LocalMeasurer(target, { flush: true, evict: 'all-but-first', threads: 1 }),
    new LocalMeasurer(target, { flush: false, threads: 1 }),
  ];
  const times = new Map<string, Map<string, number[]>>();
  const add = (key: string, column: string, ms: number): void => {
    const row = times.get(key) ?? new Map<string, number[]>();
    row.set(column, [...(row.get(column) ?? []), ms]);
    times.set(key, row);
  };
  try {
    const dirs = { default: path.join(work, 'default'), tuned: path.join(work, 'tuned') };
    await compileNetwork({ model: network, target: target.text, outDir: dirs.default, log: () => undefined });
    await compileNetwork({ model: network, target: target.text, outDir: dirs.tuned, records: [records], log: () => undefined });
    for (let round = 0; round < rounds; round++) {
      for (const task of tasks) {
        const dflt = defaultSchedule(task.dag, { vectorLanes: target.vectorLanes });
        const best = ranked.get(task.key)?.[0]?.entry.record.steps;
        const schedules: [string, Step[]][] = [['default', dflt], ...(best && stepsKey(best) !== stepsKey(dflt) ? [['tuned', best] as [string, Step[]]] : [])];
        for (const [m, mode] of MODES.entries()) {
          const measurer = measurers[m]!;
          for (const [which, steps] of schedules) {
            const [o] = await measurer.measure(task, [steps]);
            if (o.error === null) add(task.key, `${mode} ${which}`, mean(o.costs_ms));
          }
        }
      }
      for (const which of ['default', 'tuned'] as const) for (const [key, ms] of await networkTimes(dirs[which])) add(key, `network ${which}`, ms);
    }
  } finally {
    for (const m of measurers) await m.close();
    rmSync(work, { recursive: true, force: true });
  }
  console.log(`${network}, ${path.basename(records)}: ms per call at 1 thread, medians of ${rounds} interleaved rounds`);
  console.log(`| task | ${COLUMNS.join(' | ')} |`);
  console.log(`|---|${COLUMNS.map(() => '---').join('|')}|`);
  let compared = 0;
  const agrees = MODES.map(() => 0);
  const sums = COLUMNS.map(() => 0); // over the tasks timed in every column
  for (const task of tasks) {
    const row = COLUMNS.map((c) => median(times.get(task.key)?.get(c)));
    const filled = row.map((x, c) => (Number.isNaN(x) && c % 2 === 1 ? row[c - 1]! : x)); // a tuned column left empty: its default
    if (filled.every((x) => !Number.isNaN(x))) filled.forEach((x, c) => { sums[c]! += task.weight * x; });
    console.log(`| ${task.desc} | ${row.map((x) => (Number.isNaN(x) ? '-' : x.toFixed(3))).join(' | ')} |`);
    if (Number.isNaN(row[1])) continue; // compile's choice is the default
    compared += 1;
    const network = Math.sign(row[2 * MODES.length + 1]! - row[2 * MODES.length]!);
    MODES.forEach((_, m) => { if (Math.sign(row[2 * m + 1]! - row[2 * m]!) === network) agrees[m]! += 1; });
  }
  console.log(`tasks whose tuned schedule is not the default: ${compared}; ordered as in the network: ${MODES.map((m, i) => `${m} ${agrees[i]}`).join(', ')}`);
  const net = sums.length - 2;
  console.log(`sum over the network's kernel calls, as a share of the network's (default, tuned): ${MODES.map((m, i) => `${m} ${(sums[2 * i]! / sums[net]!).toFixed(3)}, ${(sums[2 * i + 1]! / sums[net + 1]!).toFixed(3)}`).join('; ')}`);
}

void main();
