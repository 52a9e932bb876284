// What the benchmark report shows of tuning: the network's tuning figures from the
// workspace record store (its logs, and the tune outputs under <records>/nx/ that Nx may
// have restored and no compile merged yet) for the compiled model's target string and
// fingerprint, and the ONNX Runtime comparison saved beside the report, when there is one.

import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { Manifest } from '../../engine/compile/manifest';
import { readComparison } from '../../engine/report/comparison-file';
import { networkTuningFigures } from '../../engine/report/network-figures';
import { tuneOutputsDir, type ResolvedRun } from '../../plugin/resolve';
import type { BenchmarkReport } from './report';

/** `<reportsDir>/<target>.onnxruntime.json`: where the report looks for a comparison. */
export const comparisonFile = (reportsDir: string, target: string): string => path.join(reportsDir, `${target}.onnxruntime.json`);

/** Every `*.jsonl` under the store's tune outputs folder, at any depth. */
function tuneOutputLogs(storeDir: string): string[] {
  const root = tuneOutputsDir(storeDir);
  if (!existsSync(root)) return [];
  return readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.jsonl')).sort().map((f) => path.join(root, f));
}

export async function tuningForReport(
  run: ResolvedRun, manifest: Manifest, rel: (p: string) => string, warn: (m: string) => void,
): Promise<Required<Pick<BenchmarkReport, 'tuning'>> & Pick<BenchmarkReport, 'comparison' | 'comparison_hint'>> {
  const tuning = await networkTuningFigures({
    network: run.network, spec: run.spec, records: [run.storeDir, ...tuneOutputLogs(run.storeDir)],
    // At the thread count compile ranked the records at, where it was given one.
    match: { target: manifest.target, fingerprint: manifest.fingerprint, threads: manifest.records_threads }, warn,
  });
  const file = comparisonFile(run.reportsDir, run.targetName);
  if (existsSync(file)) return { tuning, comparison: readComparison(file) };
  return {
    tuning,
    comparison_hint: `the page shows one from ${rel(file)}, which \`npx tensortune benchmark ${rel(run.modelDir)} --compare onnxruntime --json > ${rel(file)}\` writes`,
  };
}
