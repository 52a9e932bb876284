// What `nx benchmark` measures beside the compiled model when asked. `compare: onnxruntime`:
// ONNX Runtime on the same weights, input and thread count (engine/compare), saved as
// <target>.onnxruntime.json where the report reads it. `untuned: true`: the network compiled
// with default schedules only (no records, what `compile` makes before any tuning) into
// <reports>/<target>.untuned and timed with the same options right after the tuned model,
// so the report sets a measured end-to-end untuned latency beside the tuned one (the
// per-task default-against-tuned figures are estimates from single kernels).

import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { compareWithOnnxRuntime, formatCompareReport } from '../../engine/compare/compare';
import { manifestFiles, readManifest } from '../../engine/compile/manifest';
import { compileNetwork } from '../../engine/app/compile';
import { runBench, type BenchOptions } from '../../engine/native/bench';
import { duration } from '../../engine/units';
import type { ResolvedRun } from '../../plugin/resolve';
import type { UntunedRun } from './report';
import { comparisonFile } from './tuning';

/** Compares the compiled model with ONNX Runtime at `threads` and writes the comparison file the report reads. */
export async function compareForReport(run: ResolvedRun, threads: number, rel: (p: string) => string): Promise<void> {
  const report = await compareWithOnnxRuntime({ modelDir: run.modelDir, threads, log: (line) => console.log(line) });
  console.log(formatCompareReport(report));
  const file = comparisonFile(run.reportsDir, run.targetName);
  mkdirSync(run.reportsDir, { recursive: true });
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`wrote ${rel(file)}`);
}

/** The timing options both builds share (the tuned run's thread count included). */
export type SharedBenchOptions = Omit<BenchOptions, 'model' | 'params' | 'saveOutputs' | 'profile' | 'binary'>;

/** Compiles the default-schedule build and times it with `bench`; `tunedMs` is the tuned model's median, for the log line. */
export async function untunedRun(run: ResolvedRun, bench: SharedBenchOptions, tunedMs: number, rel: (p: string) => string): Promise<UntunedRun> {
  const outDir = path.join(run.reportsDir, `${run.targetName}.untuned`);
  console.log(`untuned: compiling ${run.network} with default schedules only into ${rel(outDir)}`);
  await compileNetwork({
    ...run.spec, target: run.target.target, host: run.target.host, outDir,
    log: () => undefined, warn: (m) => console.warn(`warning: untuned build: ${m}`),
  });
  const manifest = readManifest(outDir);
  const files = manifestFiles(outDir, manifest);
  const r = await runBench({ ...bench, model: files.library, params: files.params });
  console.log(`untuned (default schedules): median ${duration(r.median_ms)}; tuned: median ${duration(tunedMs)} (${(r.median_ms / tunedMs).toFixed(2)}x faster tuned)`);
  for (const w of r.warnings) console.warn(`warning: untuned run: ${w}`);
  return {
    model_dir: rel(outDir), time: new Date().toISOString(), kernels: manifest.kernels.length,
    mean_ms: r.mean_ms, median_ms: r.median_ms, max_ms: r.max_ms, min_ms: r.min_ms, std_ms: r.std_ms,
    runs_ms: r.runs_ms, threads: r.threads, repeat: r.repeat, number: r.number, warnings: r.warnings,
  };
}
