// Untuned (default-schedule) networks against this machine's measured peak: for each of
// mobilenet, resnet-18 and resnet-50 (NHWC, batch 1) the cold compile time (empty object
// cache), the incremental compile time (same model again: nothing to compile), and the
// median latency at 1 and 2 threads with the GFLOP/s and % of peak it amounts to.
//
//   npx tsx bench/models.ts [--networks mobilenet,resnet-18] [--threads 1,2] [--repeat 20]

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { compileNetwork } from '../engine/app/compile';
import { loadModel } from '../engine/frontend/load';
import { extractTasks } from '../engine/graph/extract';
import { runBench } from '../engine/native/bench';
import { measurePeakGflops } from '../engine/native/peak';
import { parseTarget } from '../engine/target';
import { benchArgs } from './args';

const USAGE = 'npx tsx bench/models.ts [--networks mobilenet,resnet-18,resnet-50] [--threads 1,2] [--repeat 20] [--target "llvm -mcpu=native"]';

/** FLOPs of one inference: Σ over tasks of weight × FLOPs (elementwise-only groups are not counted). */
export function networkFlops(model: string): number {
  const { graph } = loadModel({ model, weights: 'zeros' });
  return extractTasks(graph).reduce((s, t) => s + t.weight * t.flops, 0);
}

async function main(): Promise<void> {
  const args = benchArgs('bench/models.ts', USAGE, { networks: 'mobilenet,resnet-18,resnet-50', threads: '1,2', repeat: '20', target: 'llvm -mcpu=native' });
  const networks = args.list('networks');
  const threads = args.ints('threads');
  const repeat = args.int('repeat');
  const targetText = args.str('target');
  const target = parseTarget(targetText);
  const work = mkdtempSync(path.join(tmpdir(), 'tt-bench-models-'));
  try {
    const peak = new Map<number, number>();
    for (const t of threads) peak.set(t, await measurePeakGflops(t, target));
    console.log(`target: ${targetText} (${target.vectorLanes} lanes)`);
    console.log(`measured peak fp32: ${threads.map((t) => `${peak.get(t)!.toFixed(1)} GFLOP/s @${t}`).join(', ')}`);
    const rows: string[][] = [['network', 'GFLOP', 'cold compile s', 'incr. compile s', ...threads.flatMap((t) => [`median ms @${t}`, `GFLOP/s @${t}`, `% peak @${t}`])]];
    for (const model of networks) {
      const cacheDir = path.join(work, 'cache');
      rmSync(cacheDir, { recursive: true, force: true });
      const outDir = path.join(work, model);
      let t0 = performance.now();
      const cold = await compileNetwork({ model, target: targetText, outDir, cacheDir });
      const coldS = (performance.now() - t0) / 1000;
      t0 = performance.now();
      const again = await compileNetwork({ model, target: targetText, outDir, cacheDir });
      const incrS = (performance.now() - t0) / 1000;
      if (again.compiled !== 0) throw new Error(`${model}: the second compile compiled ${again.compiled} kernels`);
      const gflop = networkFlops(model) / 1e9;
      const row = [model, gflop.toFixed(2), coldS.toFixed(1), incrS.toFixed(2)];
      for (const t of threads) {
        const r = await runBench({ model: cold.library, params: cold.params, threads: t, repeat, minRepeatMs: 200 });
        const rate = gflop / (r.median_ms / 1000);
        row.push(r.median_ms.toFixed(2), rate.toFixed(1), `${((100 * rate) / peak.get(t)!).toFixed(1)}%`);
      }
      rows.push(row);
      console.error(`${model}: done`);
    }
    const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
    for (const r of rows) console.log(r.map((x, c) => x.padStart(widths[c])).join('  '));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (require.main === module) main().catch((e: unknown) => { console.error(e); process.exitCode = 1; });
