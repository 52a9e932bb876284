// What tuning buys on an OpenCL device, as ratios measured in one run.
//
//  1. ResNet-50's last 3x3 conv (+ bias + relu, 7x7x512 -> 512, NHWC):
//     its first-generation GPU schedule (engine/schedule/defaults-gpu.ts) vs the best of
//     `--conv-trials` tuning trials on `--target` (default `opencl`), both re-timed here,
//     interleaved; and the same layer on our C backend (default CPU schedule) beside them,
//     at 1 thread and at all cores, so a reader sees what the OpenCL device costs.
//  2. mobilenet (224x224, NHWC): tuned with `--net-trials`, compiled with and without the
//     records, both timed by tt_bench in interleaved rounds (A B A B A B).
//
// On CI and the dev boxes the OpenCL device is PoCL's CPU device: a CPU running work-groups
// as loops, not a GPU (not a Mali). Its figures say what the search finds on that device
// and what the OpenCL path costs against our C backend on the same cores; they say nothing
// about a GPU's speed.
//
//   npx tsx bench/opencl.ts [--target opencl] [--conv-trials 64] [--net-trials 176] [--seed 0]

import { mkdtempSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { compileNetwork } from '../engine/app/compile';
import { LocalMeasurer } from '../engine/measure/measurer';
import { runBench } from '../engine/native/bench';
import { openclDeviceSync } from '../engine/native/opencl';
import { defaultOptionsOf, defaultSchedule } from '../engine/schedule/defaults';
import { tuneNetwork, tuneTasks } from '../engine/app/tune';
import { parseTarget } from '../engine/target';
import { resnet50LastConv } from '../engine/search/gpu-fixtures.fixture';
import { benchArgs } from './args';
import { bestSteps, interleaved } from './interleaved';

const USAGE = 'npx tsx bench/opencl.ts [--target opencl] [--conv-trials 64] [--net-trials 176] [--seed 0]';

async function main(): Promise<void> {
  const args = benchArgs('bench/opencl.ts', USAGE, { target: 'opencl', 'conv-trials': '64', 'net-trials': '176', seed: '0' });
  const targetText = args.str('target');
  const convTrials = args.int('conv-trials');
  const netTrials = args.int('net-trials');
  const seed = args.num('seed');
  const dev = openclDeviceSync();
  if ('error' in dev) throw new Error(`no OpenCL device: ${dev.error}`);
  const target = parseTarget(targetText);
  const cores = availableParallelism();
  console.log(`OpenCL device: ${dev.device.platform} / ${dev.device.device} (${dev.device.type}, ${dev.device.computeUnits} compute units)`);
  console.log(`target "${target.text}"; this machine has ${cores} cores; PoCL's CPU device is a CPU, not a GPU: its figures are not GPU figures`);
  const dir = mkdtempSync(path.join(tmpdir(), 'tt-bench-opencl-'));

  // 1. The 7x7x512 conv.
  const task = resnet50LastConv();
  const gflops = (ms: number | string): string => (typeof ms === 'number' ? `${(task.flops / (ms * 1e-3) / 1e9).toFixed(1)} GFLOPS` : '-');
  const convLog = path.join(dir, 'conv.jsonl');
  const tuned = await tuneTasks('7x7x512 conv', [task], { target: target.text, records: convLog, trials: convTrials, batchSize: 16, seed, measure: { threads: 1 } });
  const best = await bestSteps(convLog);
  if (!best) throw new Error('tuning found no valid schedule for the conv');
  const gpuMeasurer = new LocalMeasurer(target, { threads: 1, seed, repeat: 3, minRepeatMs: 50 });
  const [firstGen, tunedMs] = await interleaved(gpuMeasurer, task, [defaultSchedule(task.dag, defaultOptionsOf(target)), best]);
  await gpuMeasurer.close();
  const cpu = parseTarget('llvm -mcpu=native');
  const cpuDefault = defaultSchedule(task.dag, defaultOptionsOf(cpu));
  const cpuTimes: (number | string)[] = [];
  for (const threads of [1, cores]) {
    const m = new LocalMeasurer(cpu, { threads, seed, repeat: 3, minRepeatMs: 50 });
    cpuTimes.push((await interleaved(m, task, [cpuDefault]))[0]);
    await m.close();
  }
  const fmt = (ms: number | string): string => (typeof ms === 'number' ? `${ms.toFixed(3)} ms` : ms);
  console.log(`\n7x7x512 conv (${(task.flops / 1e6).toFixed(0)} MFLOP), ${tuned.trials} tuning trials in ${tuned.wallS.toFixed(0)} s:`);
  console.log(`  OpenCL first-generation schedule   ${fmt(firstGen).padStart(12)}   ${gflops(firstGen)}`);
  console.log(`  OpenCL tuned                       ${fmt(tunedMs).padStart(12)}   ${gflops(tunedMs)}`);
  console.log(`  C backend, default, 1 thread       ${fmt(cpuTimes[0]).padStart(12)}   ${gflops(cpuTimes[0])}`);
  console.log(`  C backend, default, ${cores} threads      ${fmt(cpuTimes[1]).padStart(12)}   ${gflops(cpuTimes[1])}`);
  if (typeof firstGen === 'number' && typeof tunedMs === 'number') console.log(`  ratio tuned / first-generation (OpenCL): ${(tunedMs / firstGen).toFixed(3)}`);
  if (typeof tunedMs === 'number' && typeof cpuTimes[1] === 'number') console.log(`  ratio OpenCL tuned / C backend default at ${cores} threads: ${(tunedMs / cpuTimes[1]).toFixed(2)}`);

  // 2. mobilenet.
  const model = { model: 'mobilenet', layout: 'NHWC' as const, batch: 1, imageSize: 224 };
  const netLog = path.join(dir, 'mobilenet.jsonl');
  const net = await tuneNetwork({ model, target: target.text, records: netLog, trials: netTrials, batchSize: 16, seed, measure: { threads: 1 } });
  const builds = {
    first: await compileNetwork({ ...model, target: target.text, outDir: path.join(dir, 'first') }),
    tuned: await compileNetwork({ ...model, target: target.text, outDir: path.join(dir, 'tuned'), records: [netLog] }),
  };
  const times = { first: Infinity, tuned: Infinity };
  for (let r = 0; r < 3; r++) {
    for (const which of ['first', 'tuned'] as const) {
      const b = await runBench({ model: builds[which].library, params: builds[which].params, repeat: 5, minRepeatMs: 100 });
      times[which] = Math.min(times[which], b.median_ms);
    }
  }
  console.log(`\nmobilenet 224x224, ${net.trials} tuning trials in ${net.wallS.toFixed(0)} s (estimated total ${net.estimatedMs?.toFixed(1) ?? '-'} ms):`);
  console.log(`  first-generation schedules   ${times.first.toFixed(2)} ms`);
  console.log(`  tuned                        ${times.tuned.toFixed(2)} ms`);
  console.log(`  ratio tuned / first-generation: ${(times.tuned / times.first).toFixed(3)}`);
}

if (require.main === module) main().catch((e: unknown) => { console.error(e); process.exitCode = 1; });
