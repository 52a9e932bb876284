// What the benchmark report shows of tuning: the network's tuning figures from the
// workspace record store (its logs, and the tune outputs under <records>/nx/ that Nx may
// have restored and no compile merged yet) for the compiled model's target string and
// fingerprint, and the ONNX Runtime comparison saved beside the report, when there is one,
// with when it was measured and whether it is of another build (comparisonAge).

import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import type { CompareReport } from '../../engine/compare/compare';
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
): Promise<Required<Pick<BenchmarkReport, 'tuning'>> & Pick<BenchmarkReport, 'comparison' | 'comparison_hint' | 'comparison_age'>> {
  const tuning = await networkTuningFigures({
    network: run.network, spec: run.spec, records: [run.storeDir, ...tuneOutputLogs(run.storeDir)],
    // At the thread count compile ranked the records at, where it was given one.
    match: { target: manifest.target, fingerprint: manifest.fingerprint, threads: manifest.records_threads }, warn,
  });
  const file = comparisonFile(run.reportsDir, run.targetName);
  if (existsSync(file)) {
    const comparison = readComparison(file);
    return { tuning, comparison, comparison_age: comparisonAge(comparison, file, manifest, run.modelDir) };
  }
  return {
    tuning,
    comparison_hint: `the page shows one from ${rel(file)}, which \`nx benchmark ${run.network} --compare onnxruntime\` or \`npx tensortune benchmark ${rel(run.modelDir)} --compare onnxruntime --json > ${rel(file)}\` writes`,
  };
}

/**
 * When a comparison was measured and whether it is of the model benchmarked now. A
 * comparison names the model.so it ran (library_sha256): another hash is another build.
 * One written before it carried the hash is judged by time: measured (or its file written)
 * before the compiled model's manifest was, the model may have changed since.
 */
export function comparisonAge(c: CompareReport, file: string, manifest: Pick<Manifest, 'library_sha256'>, modelDir: string): NonNullable<BenchmarkReport['comparison_age']> {
  const time = c.time ?? statSync(file).mtime.toISOString();
  const from = c.time !== undefined ? 'measured' : 'file written';
  if (c.library_sha256 !== undefined) {
    return c.library_sha256 === manifest.library_sha256 ? { time, from } : { time, from, stale: 'it ran another build of the model (its model.so differs from the one benchmarked here): compare again' };
  }
  const manifestFile = path.join(modelDir, 'manifest.json');
  const compiled = existsSync(manifestFile) ? statSync(manifestFile).mtime.toISOString() : undefined;
  if (compiled !== undefined && Date.parse(time) < Date.parse(compiled)) return { time, from, stale: `older than the compiled model (compiled ${compiled}): compare again` };
  return { time, from };
}
