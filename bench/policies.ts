// What the cost model buys: the same task tuned at the same trial budget by each search
// policy (evolutionary with the learned model; ga, random and grid without one, as
// AutoTVM's tuners), each from an empty log, one after the other in one run. Prints each
// policy's best latency, its share of the machine's peak (bench/peak.ts, measured in the
// same run) and its ratio to the evolutionary search's best (above 1: slower kernels found).
//
//   npx tsx bench/policies.ts [--trials 128] [--batch-size 32] [--seed 0]
//                             [--policies evolutionary,ga,random,grid] [--task resnet50-conv|depthwise]

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { getNetwork } from '../engine/frontend/networks';
import { extractTasks, type Task } from '../engine/graph/extract';
import { measurePeakGflops } from '../engine/native/peak';
import { resnet50LastConv } from '../engine/search/gpu-fixtures.fixture';
import { POLICY_NAMES } from '../engine/search/policy';
import { tuneTasks } from '../engine/app/tune';
import type { PolicyName } from '../engine/search/types';
import { parseTarget } from '../engine/target';
import { benchArgs } from './args';

const USAGE = 'npx tsx bench/policies.ts [--trials 128] [--batch-size 32] [--seed 0] [--policies evolutionary,ga,random,grid] [--task resnet50-conv|depthwise]';

function taskOf(name: string): Task {
  if (name === 'resnet50-conv') return resnet50LastConv();
  if (name === 'depthwise') {
    const tasks = extractTasks(getNetwork('mobilenet', {}).graph);
    return tasks.find((t) => t.desc.startsWith('depthwise_conv2d_nhwc+add+relu 1x56x56x128'))!;
  }
  throw new Error(`--task: expected resnet50-conv or depthwise, got '${name}'`);
}

async function main(): Promise<void> {
  const args = benchArgs('bench/policies.ts', USAGE, { trials: '128', 'batch-size': '32', seed: '0', policies: 'evolutionary,ga,random,grid', task: 'resnet50-conv' });
  const trials = args.int('trials');
  const batchSize = args.int('batch-size');
  const seed = args.num('seed');
  const policies = args.list('policies') as PolicyName[];
  for (const p of policies) if (!POLICY_NAMES.includes(p)) throw new Error(`--policies: unknown policy '${p}' (expected ${POLICY_NAMES.join(', ')})`);
  const target = 'llvm -mcpu=native';
  const task = taskOf(args.str('task'));
  const dir = mkdtempSync(path.join(tmpdir(), 'tt-policies-'));
  console.log(`task: ${task.desc} (${(task.flops / 1e6).toFixed(1)} MFLOP); ${trials} trials per policy, ${batchSize} per round, seed ${seed}, 1 thread, "${parseTarget(target).text}"`);

  const rows: { policy: PolicyName; best: number | null; wall: number; trials: number }[] = [];
  for (const policy of policies) {
    const result = await tuneTasks(`policy ${policy}`, [task], {
      target, records: path.join(dir, `${policy}.jsonl`), trials, batchSize, policy, seed, measure: { threads: 1 },
    });
    rows.push({ policy, best: result.tasks[0].best_ms, wall: result.wallS, trials: result.trials });
    console.log(`  ${policy}: best ${result.tasks[0].best_ms?.toFixed(4) ?? '-'} ms after ${result.trials} trials (${result.wallS.toFixed(1)} s)`);
  }
  const peak = await measurePeakGflops(1, parseTarget(target));
  const evo = rows.find((r) => r.policy === 'evolutionary')?.best ?? null;
  const gflops = (ms: number): number => task.flops / (ms * 1e-3) / 1e9;
  console.log(`\npeak fp32 at 1 thread (bench/peak.ts, this run): ${peak.toFixed(1)} GFLOPS`);
  console.log('  policy         trials   best (ms)   GFLOPS   % of peak   best / evolutionary');
  for (const r of rows) {
    const ratio = r.best !== null && evo !== null ? (r.best / evo).toFixed(2) : '-';
    const g = r.best !== null ? gflops(r.best) : null;
    console.log(`  ${r.policy.padEnd(12)} ${String(r.trials).padStart(8)}   ${(r.best?.toFixed(4) ?? '-').padStart(9)}   ${(g?.toFixed(1) ?? '-').padStart(6)}   ${(g !== null ? `${((g / peak) * 100).toFixed(1)}%` : '-').padStart(9)}   ${ratio.padStart(19)}`);
  }
}

if (require.main === module) main().catch((e: unknown) => { console.error(e instanceof Error ? e.message : e); process.exitCode = 1; });
