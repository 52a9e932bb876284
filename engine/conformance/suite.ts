// The conformance suite as npm test and `npm run conformance` run it: the cases generated
// (or found in the cache), every case run (run.ts), the per-operator table, the refusal
// reasons and the summary line printed, the results written as JSON, and the results checked
// against the committed baseline (scripts/conformance/baseline.json), or the baseline
// rewritten from them (--update-baseline).

import { existsSync, mkdtempSync, promises as fs, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { cacheRoot } from '../native/build';
import { CONFORMANCE_DIR, findPython, loadCases, casesDir } from './cases';
import { checkBaseline, makeBaseline, outcomeLabel, report, summaryLine, tally, type Baseline, type BaselineCheck, type CaseResult, type Tally } from './classify';
import { runConformance } from './run';

export const BASELINE_FILE = path.join(CONFORMANCE_DIR, 'baseline.json');

export interface SuiteOptions {
  /** Only the cases whose name matches (the baseline check then covers those only; no baseline update). */
  filter?: RegExp;
  /** Where the results go as JSON (default <cacheRoot()>/conformance/results.json). */
  json?: string;
  batchSize?: number;
  parallel?: number;
  threads?: number;
  updateBaseline?: boolean;
  out?: (line: string) => void;
  progress?: (line: string) => void;
}

export type SuiteOutcome =
  | { skipped: string }
  | { tally: Tally; seconds: number; results: CaseResult[]; check: BaselineCheck | undefined; json: string; lines: string[] };

export function readBaseline(file = BASELINE_FILE): Baseline | undefined {
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Baseline) : undefined;
}

/** The lines saying how the results differ from the baseline (empty: nothing to say). */
export function baselineLines(check: BaselineCheck): string[] {
  const out: string[] = [];
  for (const r of check.regressions) out.push(`regression: ${r.name} passed in the baseline, now ${outcomeLabel(r)}${r.reason ? `: ${r.reason}` : ''}`);
  for (const r of check.unexpected) out.push(`${outcomeLabel(r)}: ${r.name} (${r.operator}): ${r.reason ?? ''}`);
  if (check.fixed.length) out.push(`known-bad cases no longer wrong, crashed or hung: ${check.fixed.join(', ')}`);
  if (check.newPasses.length) {
    out.push(`${check.newPasses.length} case(s) pass that the baseline does not list as passing (npm run conformance -- --update-baseline keeps them): ${check.newPasses.slice(0, 20).join(', ')}${check.newPasses.length > 20 ? ', ...' : ''}`);
  }
  if (check.newFrozenPasses.length) {
    out.push(`${check.newFrozenPasses.length} case(s) pass with integer inputs frozen that the baseline does not list (--update-baseline keeps them): ${check.newFrozenPasses.slice(0, 20).join(', ')}${check.newFrozenPasses.length > 20 ? ', ...' : ''}`);
  }
  return out;
}

export async function runSuite(opts: SuiteOptions = {}): Promise<SuiteOutcome> {
  const out = opts.out ?? ((l: string) => process.stdout.write(`${l}\n`));
  const found = await findPython();
  if ('missing' in found) return { skipped: found.missing };
  const root = path.join(cacheRoot(), 'conformance');
  const { dir, index } = await loadCases(found.python, casesDir(root), opts.progress);
  const cases = opts.filter ? index.cases.filter((c) => opts.filter!.test(c.name)) : index.cases;
  const workDir = mkdtempSync(path.join(tmpdir(), 'tt-conformance-'));
  let summary;
  try {
    summary = await runConformance({
      dir, cases, workDir, cacheDir: path.join(root, 'kernels'),
      batchSize: opts.batchSize, parallel: opts.parallel, threads: opts.threads, log: opts.progress,
    });
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
  const { results, seconds } = summary;
  const t = tally(results);
  const lines = [...report(t)];
  const bad = results.filter((r) => r.outcome === 'wrong' || r.outcome === 'crash' || r.outcome === 'hang');
  if (bad.length) {
    lines.push('', 'wrong, crashed and hung cases:');
    for (const r of bad) lines.push(`  ${outcomeLabel(r)}: ${r.name} (${r.operator}): ${r.reason ?? ''}`);
  }
  const json = opts.json ?? path.join(root, 'results.json');
  await fs.mkdir(path.dirname(json), { recursive: true });
  await fs.writeFile(json, `${JSON.stringify({
    onnx_version: index.onnx_version, seconds: Number(seconds.toFixed(1)), libraries: summary.libraries, longest_block_s: Number(summary.longestBlock.toFixed(1)),
    summary: summaryLine(t), counts: t.counts, passed_frozen: t.frozenPassed, operators: t.operators, refusal_reasons: t.reasons, top_refusal_by_operator: t.topReason, results,
  }, null, 2)}\n`);
  let check: BaselineCheck | undefined;
  if (opts.updateBaseline) {
    if (opts.filter) throw new Error('--update-baseline runs every case: drop --filter');
    await fs.writeFile(BASELINE_FILE, `${JSON.stringify(makeBaseline(results, index.onnx_version), null, 2)}\n`);
    lines.push('', `baseline written: ${path.relative(process.cwd(), BASELINE_FILE)}`);
  } else {
    const baseline = readBaseline();
    if (baseline) {
      const names = new Set(cases.map((c) => c.name));
      const scoped: Baseline = opts.filter
        ? { ...baseline, passing: baseline.passing.filter((n) => names.has(n)) }
        : baseline;
      check = checkBaseline(results, scoped);
      const more = baselineLines(check);
      if (more.length) lines.push('', ...more);
    } else {
      lines.push('', `no baseline at ${BASELINE_FILE} (npm run conformance -- --update-baseline writes it)`);
    }
  }
  lines.push('', `results: ${json}`, `wall time: ${seconds.toFixed(1)} s for ${results.length} case(s), ${summary.libraries} model librar${summary.libraries === 1 ? 'y' : 'ies'}; our own code held a worker for at most ${summary.longestBlock.toFixed(1)} s at a stretch`, summaryLine(t));
  for (const l of lines) out(l);
  return { tally: t, seconds, results, check, json, lines };
}
