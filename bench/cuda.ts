// The CUDA backend on this machine's NVIDIA GPU, as ratios measured in one run.
//
//  1. ResNet-50's last 3x3 conv (+ bias + relu, 7x7x512 -> 512, NHWC):
//     its first-generation GPU schedule (engine/schedule/defaults-gpu.ts) and the best of
//     `--conv-trials` tuning trials, re-timed here in interleaved rounds (device time, CUDA
//     events), against PyTorch's cuDNN conv2d + bias + relu on the same GPU
//     (bench/torch-reference.py, fp32, TF32 off).
//  2. resnet-18 (batch 1, 224x224, random weights and batch-norm statistics, exported to
//     ONNX): tuned with `--net-trials` (and at most `--net-time-limit` seconds), compiled
//     with default schedules and with the records. Each build is checked against ONNX
//     Runtime on the CPU (max abs error against the largest logit, top-1) and against our
//     own CPU build of the same file, then timed by tt_bench in interleaved rounds (host
//     time of tt_run: input copied in, every kernel, logits copied out) against PyTorch
//     eager resnet-18 on the same GPU, timed the same way.
//
//   npx tsx bench/cuda.ts [--parts conv,resnet-18] [--conv-trials 64] [--net-trials 400]
//                         [--net-time-limit 600] [--seed 0] [--python python3] [--keep DIR] [--json FILE]
//
// --keep DIR keeps the record logs and compiled models there, and a second run with the same
// DIR resumes tuning from its logs. Without a GPU it stops in one line. ratio = ours /
// PyTorch: below 1 we are faster.

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { compareWithOnnxRuntime, top1 } from '../engine/compare/compare';
import { readManifest } from '../engine/compile/manifest';
import { compileNetwork } from '../engine/app/compile';
import { LocalMeasurer } from '../engine/measure/measurer';
import { runBench } from '../engine/native/bench';
import { cudaDeviceSync } from '../engine/native/cuda';
import { outputFileName } from '../engine/runtime/abi';
import { readFloat32File } from '../engine/runtime/rawfile';
import { defaultOptionsOf, defaultSchedule } from '../engine/schedule/defaults';
import type { Step } from '../engine/schedule/steps';
import { resnet50LastConv } from '../engine/search/gpu-fixtures.fixture';
import { tuneNetwork, tuneTasks } from '../engine/app/tune';
import { parseTarget, type Target } from '../engine/target';
import { benchArgs } from './args';
import { bestSteps, interleaved } from './interleaved';
import { writeNetworkOnnx } from './onnx-network';

const USAGE = 'npx tsx bench/cuda.ts [--parts conv,resnet-18] [--conv-trials 64] [--net-trials 400] [--net-time-limit 600] [--seed 0] [--python python3] [--keep DIR] [--json FILE]';

interface TorchTimes { device: string; torch: string; cudnn: number; conv_ms: number; resnet18_device_ms: number; resnet18_host_ms: number }

/** PyTorch's times from bench/torch-reference.py, or why there are none. */
function torchTimes(python: string): TorchTimes | { error: string } {
  try {
    const out = execFileSync(python, [path.join(__dirname, 'torch-reference.py')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000 });
    return JSON.parse(out.trim().split('\n').pop()!) as TorchTimes;
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    return { error: (err.stderr?.trim().split('\n').pop() ?? err.message).slice(0, 300) };
  }
}

async function main(): Promise<void> {
  const args = benchArgs('bench/cuda.ts', USAGE, { parts: 'conv,resnet-18', 'conv-trials': '64', 'net-trials': '400', 'net-time-limit': '600', seed: '0', python: 'python3', keep: '', json: '' });
  const convTrials = args.int('conv-trials');
  const netTrials = args.int('net-trials');
  const netTimeLimit = args.num('net-time-limit');
  const seed = args.num('seed');
  const python = args.str('python');
  const jsonFile = args.str('json');
  const parts = args.list('parts');
  const found = cudaDeviceSync();
  if ('error' in found) {
    console.error(`bench/cuda.ts: no CUDA GPU here: ${found.error}`);
    process.exitCode = 1;
    return;
  }
  const target = parseTarget('cuda');
  const dir = args.str('keep') || mkdtempSync(path.join(tmpdir(), 'tt-bench-cuda-'));
  mkdirSync(dir, { recursive: true });
  const summary: Record<string, unknown> = { gpu: found.device.name, driver: found.device.driverVersion, target: target.text };
  console.log(`GPU: ${found.device.name} (driver ${found.device.driverVersion}), target "${target.text}"`);

  const torch = torchTimes(python);
  summary.torch = torch;
  if ('error' in torch) console.log(`PyTorch: not available (${torch.error}); no ratios against it`);
  else console.log(`PyTorch ${torch.torch}, cuDNN ${torch.cudnn}, fp32 with TF32 off`);

  if (parts.includes('conv')) await benchConv(target, dir, torch, seed, convTrials, summary);
  if (parts.includes('resnet-18')) await benchResnet18(target, dir, torch, seed, netTrials, netTimeLimit, summary);
  if (jsonFile) writeFileSync(jsonFile, `${JSON.stringify(summary, null, 2)}\n`);
}

/** 1. The 7x7x512 conv: first-generation and tuned schedules against PyTorch's cuDNN. */
async function benchConv(target: Target, dir: string, torch: TorchTimes | { error: string }, seed: number, convTrials: number, summary: Record<string, unknown>): Promise<void> {
  const task = resnet50LastConv();
  const gflops = (ms: number | string): string => (typeof ms === 'number' ? `${(task.flops / (ms * 1e-3) / 1e9).toFixed(0)} GFLOP/s` : '');
  const convLog = path.join(dir, 'conv.jsonl');
  const tuned = await tuneTasks('7x7x512 conv', [task], { target: target.text, records: convLog, trials: convTrials, batchSize: 32, seed, log: (l) => console.error(l) });
  const best = await bestSteps(convLog);
  const schedules: Step[][] = [defaultSchedule(task.dag, defaultOptionsOf(target))];
  if (best) schedules.push(best);
  const measurer = new LocalMeasurer(target, { seed, repeat: 5, minRepeatMs: 50 });
  const conv = await interleaved(measurer, task, schedules);
  await measurer.close();
  const fmt = (ms: number | string | undefined): string => (typeof ms === 'number' ? `${ms.toFixed(4)} ms` : String(ms ?? '-'));
  console.log(`\n7x7x512 conv (${(task.flops / 1e6).toFixed(0)} MFLOP), ${tuned.trials} tuning trials in ${tuned.wallS.toFixed(0)} s:`);
  console.log(`  first-generation schedule          ${fmt(conv[0]).padStart(14)}   ${gflops(conv[0])}`);
  console.log(`  tuned                              ${fmt(conv[1]).padStart(14)}   ${gflops(conv[1])}`);
  if (!('error' in torch)) console.log(`  PyTorch cuDNN conv2d+bias+relu     ${fmt(torch.conv_ms).padStart(14)}   ${gflops(torch.conv_ms)}`);
  summary.conv = { trials: tuned.trials, wall_s: tuned.wallS, first_generation_ms: conv[0], tuned_ms: conv[1], torch_ms: 'error' in torch ? null : torch.conv_ms };
  if (typeof conv[1] === 'number' && typeof conv[0] === 'number') console.log(`  ratio tuned / first-generation: ${(conv[1] / conv[0]).toFixed(3)}`);
  if (typeof conv[1] === 'number' && !('error' in torch)) console.log(`  ratio tuned / PyTorch cuDNN: ${(conv[1] / torch.conv_ms).toFixed(3)}`);
}

/** 2. resnet-18: tuned and default builds checked against ONNX Runtime and our CPU build, timed against PyTorch eager. */
async function benchResnet18(target: Target, dir: string, torch: TorchTimes | { error: string }, seed: number, netTrials: number, netTimeLimit: number, summary: Record<string, unknown>): Promise<void> {
  const onnx = writeNetworkOnnx(dir, 'resnet-18', 224);
  const netLog = path.join(dir, 'resnet-18.cuda.jsonl');
  const net = await tuneNetwork({ model: { model: onnx }, target: target.text, records: netLog, trials: netTrials, timeLimitS: netTimeLimit, batchSize: 64, seed, log: (l) => console.error(l) });
  const quiet = { log: () => undefined };
  const builds = {
    default: await compileNetwork({ model: onnx, target: target.text, outDir: path.join(dir, 'r18-default'), ...quiet }),
    tuned: await compileNetwork({ model: onnx, target: target.text, outDir: path.join(dir, 'r18-tuned'), records: [netLog], ...quiet }),
    cpu: await compileNetwork({ model: onnx, target: 'llvm -mcpu=native', outDir: path.join(dir, 'r18-cpu'), ...quiet }),
  };
  const logged = readFileSync(netLog, 'utf8').split('\n').filter((l) => l.trim() !== '').length;
  console.log(`\nresnet-18 224x224, ${net.trials} tuning trials in ${net.wallS.toFixed(0)} s (${net.reason}; ${logged} measurements in the log with earlier runs'; estimated total ${net.estimatedMs?.toFixed(3) ?? '-'} ms)`);
  const check: Record<string, unknown> = {};
  // Against ONNX Runtime on the CPU (the numerical reference), and against our CPU build.
  const out = readManifest(path.dirname(builds.cpu.manifest)).outputs[0];
  const outputsOf = async (which: keyof typeof builds): Promise<Float32Array> => {
    const saved = path.join(dir, `outputs-${which}`);
    await runBench({ model: builds[which].library, params: builds[which].params, repeat: 1, number: 1, minRepeatMs: 0, seed, saveOutputs: saved });
    return readFloat32File(path.join(saved, `${outputFileName(out.name)}.bin`));
  };
  const cpuOut = await outputsOf('cpu');
  for (const which of ['default', 'tuned'] as const) {
    const ort = await compareWithOnnxRuntime({ modelDir: path.dirname(builds[which].manifest), threads: 1, rounds: 1, seed });
    const mine = await outputsOf(which);
    let err = 0, peak = 0;
    for (let i = 0; i < cpuOut.length; i++) { err = Math.max(err, Math.abs(mine[i] - cpuOut[i])); peak = Math.max(peak, Math.abs(cpuOut[i])); }
    const o = ort.outputs[0];
    const line = {
      ort_max_abs_err: o.max_abs_err, ort_max_abs_logit: o.max_abs_value, ort_within_1e4: o.max_abs_err <= 1e-4 * o.max_abs_value, ort_top1_agrees: ort.top1.agree,
      cpu_max_abs_err: err, cpu_max_abs_logit: peak, cpu_within_1e4: err <= 1e-4 * peak, cpu_top1_agrees: top1(mine, mine.length)[0] === top1(cpuOut, cpuOut.length)[0],
    };
    check[which] = line;
    console.log(`  ${which.padEnd(7)} vs ONNX Runtime (CPU): max abs err ${o.max_abs_err.toExponential(2)} of ${o.max_abs_value.toExponential(2)} (${line.ort_within_1e4 ? 'within' : 'NOT within'} 1e-4 of it), top-1 ${ort.top1.agree ? 'agrees' : 'DIFFERS'}; ` +
      `vs our CPU build: ${err.toExponential(2)}, top-1 ${line.cpu_top1_agrees ? 'agrees' : 'DIFFERS'}`);
  }
  const times = { default: Infinity, tuned: Infinity };
  for (let r = 0; r < 5; r++) {
    for (const which of ['default', 'tuned'] as const) {
      const b = await runBench({ model: builds[which].library, params: builds[which].params, repeat: 10, minRepeatMs: 100, seed });
      times[which] = Math.min(times[which], b.median_ms);
    }
  }
  console.log(`  default schedules  ${times.default.toFixed(3)} ms per tt_run (input in, kernels, logits out)`);
  console.log(`  tuned              ${times.tuned.toFixed(3)} ms`);
  console.log(`  ratio tuned / default: ${(times.tuned / times.default).toFixed(3)}`);
  if (!('error' in torch)) {
    console.log(`  PyTorch eager      ${torch.resnet18_host_ms.toFixed(3)} ms per call, timed the same way (device time alone: ${torch.resnet18_device_ms.toFixed(3)} ms)`);
    console.log(`  ratio tuned / PyTorch eager: ${(times.tuned / torch.resnet18_host_ms).toFixed(3)}`);
  }
  summary.resnet18 = { trials: net.trials, logged, wall_s: net.wallS, reason: net.reason, estimated_ms: net.estimatedMs, default_ms: times.default, tuned_ms: times.tuned, check };
}

if (require.main === module) main().catch((e: unknown) => { console.error(e); process.exitCode = 1; });
