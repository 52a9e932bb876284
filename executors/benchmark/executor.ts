// `nx benchmark <network>`: time the compiled network on this machine with the native
// runner (the CLI's defaults: 10 measurements of at least 100 ms; the target's threads,
// else all cores), print the summary with the threads and load and a warning for each
// reason not to trust it, and write <outDir>/<network>/reports/<target>.json and .html
// (the latest run) and append to <target>.history.jsonl. The report also shows the
// network's tuning from the record store (./tuning.ts), and with `compare: onnxruntime`
// and `untuned: true` ONNX Runtime and the default-schedule build measured alongside
// (./measure-more.ts). Never cached.

import { existsSync } from 'node:fs';
import path from 'node:path';
import type { ExecutorContext } from '@nx/devkit';
import { manifestFiles, readManifest, recordsThreadsWarning } from '../../engine/compile/manifest';
import { checkManifestMemory, configMemoryLimit } from '../../engine/compile/memory-plan';
import { UserError } from '../../engine/errors';
import { BENCH_DEFAULTS, benchSetupLine, runBench, type BenchResult } from '../../engine/native/bench';
import { remoteSetupLine, runRemoteBench } from '../../engine/remote/bench';
import { inputFiles } from '../../engine/runtime/rawfile';
import { checkRunsHere, cpuModel, isGpu, parseTarget } from '../../engine/target';
import { targetRunners } from '../../plugin/config';
import { reporting, resolveFor, workspaceRelative, type ExecutorResult } from '../run';
import { writeReport, type BenchmarkReport } from './report';
import { tuningForReport } from './tuning';
import { tuningLine } from '../../engine/report/tuning-data';
import type { BenchmarkExecutorOptions } from './schema';
import { formatKernelProfile, kernelProfile } from '../../engine/compile/profile';
import type { Manifest } from '../../engine/compile/manifest';
import type { CallProfile } from '../../engine/native/bench';
import { measurePeakGflops } from '../../engine/native/peak';
import { formatSummary } from '../../engine/units';
import { loadOnnxRuntime } from '../../engine/compare/ort';
import { compareForReport, untunedRun } from './measure-more';
import { modelFacts } from './model-facts';

/** The per-kernel rows of a profiled run and the peak they are set against (measured now, at the run's thread count). */
async function profileForReport(calls: readonly CallProfile[], manifest: Manifest, manifestFile: string, threads: number): Promise<NonNullable<BenchmarkReport['profile']>> {
  const peak = await measurePeakGflops(threads, parseTarget(manifest.target));
  return { peak_gflops: peak, rows: kernelProfile(calls, manifest, peak, manifestFile) };
}

export default async function benchmarkExecutor(options: BenchmarkExecutorOptions, ctx: ExecutorContext): Promise<ExecutorResult> {
  return reporting('benchmark', async () => {
    const run = resolveFor('benchmark', options, ctx);
    // A target with runner(s) runs its model on the device (engine/remote/bench.ts), with random input.
    const remote = targetRunners(run.target, run.targetName);
    const target = parseTarget(run.target.target, `targets.${run.targetName}.target`, run.target.host);
    if (!remote) checkRunsHere(target, 'benchmark', `targets.${run.targetName}.host`);
    if (remote && (options.input !== undefined || options.saveOutputs !== undefined)) {
      throw new UserError(`${remote.where}: a model benchmarked on a device gets random input: drop --input and --save-outputs`);
    }
    if (remote && (options.compare !== undefined || options.untuned)) {
      throw new UserError(`${remote.where}: --compare and --untuned run the model on this machine; a target measured through a runner takes neither`);
    }
    if (options.profile && (remote || isGpu(target))) {
      throw new UserError(`--profile: per-kernel profiles are for CPU models run on this machine; targets.${run.targetName} is ${remote ? 'measured through a runner' : `"${run.target.target}"`}`);
    }
    // Before timing anything: without onnxruntime-node, one line saying how to install it.
    if (options.compare !== undefined) loadOnnxRuntime();
    const rel = workspaceRelative(ctx);
    const manifestFile = path.join(run.modelDir, 'manifest.json');
    if (!existsSync(manifestFile)) throw new UserError(`${rel(manifestFile)} not found: run nx compile ${run.network} first`);
    const manifest = readManifest(run.modelDir);
    checkManifestMemory(manifest, rel(manifestFile), configMemoryLimit(run.net.maxMemory, options.config, run.network)); // before the runner allocates anything
    const files = manifestFiles(run.modelDir, manifest);
    const result: BenchResult & { device?: string } = remote ? await runRemoteBench({
      runners: remote.runners, where: remote.where, target: parseTarget(manifest.target, `${rel(manifestFile)} target`),
      model: files.library, params: files.params, repeat: options.repeat ?? BENCH_DEFAULTS.repeat, number: options.number,
      minRepeatMs: options.minRepeatMs ?? BENCH_DEFAULTS.minRepeatMs, threads: options.threads ?? run.target.threads,
      seed: options.seed ?? 0, log: (line) => console.log(line),
    }) : await runBench({
      model: files.library,
      params: files.params,
      repeat: options.repeat ?? BENCH_DEFAULTS.repeat,
      number: options.number,
      minRepeatMs: options.minRepeatMs ?? BENCH_DEFAULTS.minRepeatMs,
      threads: options.threads ?? run.target.threads,
      seed: options.seed, inputs: inputFiles(options.input ?? [], ctx.root),
      saveOutputs: options.saveOutputs === undefined ? undefined : path.resolve(ctx.root, options.saveOutputs),
      profile: options.profile,
    });
    if (!remote) result.warnings.push(...recordsThreadsWarning(manifest, result.threads, `set threads: ${result.threads} on targets.${run.targetName} in the config, which nx compile ranks at and nx benchmark runs at`));
    console.log(`${run.network} on ${run.targetName} ("${manifest.target}")`);
    console.log(formatSummary(result));
    console.log(result.device !== undefined ? remoteSetupLine(result) : benchSetupLine(result));
    for (const w of result.warnings) console.warn(`warning: ${w}`);
    const profile = result.profile ? await profileForReport(result.profile, manifest, rel(manifestFile), result.threads) : undefined;
    if (profile) console.log(formatKernelProfile(profile.rows, profile.peak_gflops, result.threads).join('\n'));
    const { summary: _summary, profile: _calls, ...numbers } = result;
    const untuned = options.untuned ? await untunedRun(run, {
      repeat: options.repeat ?? BENCH_DEFAULTS.repeat, number: options.number, minRepeatMs: options.minRepeatMs ?? BENCH_DEFAULTS.minRepeatMs,
      threads: result.threads, seed: options.seed, inputs: inputFiles(options.input ?? [], ctx.root),
    }, result.median_ms, rel) : undefined;
    if (options.compare !== undefined) await compareForReport(run, result.threads, rel);
    const tuning = await tuningForReport(run, manifest, rel, (m) => console.warn(`warning: ${m}`));
    console.log(tuningLine(tuning.tuning));
    const report: BenchmarkReport = {
      network: run.network, target: run.targetName, target_string: manifest.target, fingerprint: manifest.fingerprint,
      engine_version: manifest.engine_version, time: new Date().toISOString(), cpu: result.device ?? cpuModel(), model_dir: rel(run.modelDir), result: numbers,
      model: modelFacts(manifest), library_sha256: manifest.library_sha256,
      ...(manifest.records ? { records: manifest.records } : {}),
      ...tuning,
      ...(untuned ? { untuned } : {}),
      ...(profile ? { profile } : {}),
    };
    const written = writeReport(run.reportsDir, report);
    console.log(`wrote ${rel(written.json)} and ${rel(written.html)}, appended to ${rel(written.history)}`);
    return { success: true };
  });
}
