// The cost of measuring through a runner: one batch of candidates of a mobilenet conv
// task, measured on this machine by the local worker (tt_measure) and through a real sshd
// on loopback by the remote worker (tt_remote), in one run, interleaved (local, ssh, local,
// ssh ...). The device is this machine, so the kernels' own times should agree; what
// differs per candidate is the transport (ssh, the library's bytes in, the outputs back)
// and the worker. Reported: the median (and mean) wall time per candidate of each path
// (run_ms: from the request to the verified result; builds excluded), the ratio and the
// difference of the medians, and the median kernel time each path measured.
//
//   npx tsx bench/remote.ts [--candidates 16] [--rounds 5] [--image-size 224] [--runner CMD]
//                        [--repeat 1] [--min-repeat-ms 0]
// (in some runs with min_repeat_ms 0 the ssh path's kernel times read slower than the local
// ones; with 50 they agreed: see docs/performance.md, "Measuring through a runner")
//
// Needs sshd and ssh (Debian openssh-server); timings on a busy machine move together,
// which is why the two paths alternate.

import { getNetwork } from '../engine/frontend/networks';
import { extractTasks } from '../engine/graph/extract';
import { LearnedCostModel } from '../engine/costmodel/model';
import { LocalMeasurer } from '../engine/measure/measurer';
import { openRemoteDevices } from '../engine/remote/open';
import { sshdMissing, startLoopbackSshd } from '../engine/remote/sshd.fixture';
import { createPolicy } from '../engine/search/policy';
import type { MeasureOutcome } from '../engine/search/types';
import { parseTarget } from '../engine/target';
import { benchArgs } from './args';

const USAGE = 'npx tsx bench/remote.ts [--candidates 16] [--rounds 5] [--image-size 224] [--runner CMD] [--repeat 1] [--min-repeat-ms 0]';

const median = (v: number[]): number => { const s = [...v].sort((a, b) => a - b); return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
const mean = (v: number[]): number => v.reduce((a, b) => a + b, 0) / v.length;

async function main(): Promise<void> {
  const args = benchArgs('bench/remote.ts', USAGE, { candidates: '16', rounds: '5', 'image-size': '224', runner: '', repeat: '1', 'min-repeat-ms': '0' });
  // --runner CMD measures through another runner instead (`sh -c {command}`: the remote worker without ssh).
  const given = args.str('runner');
  const why = given ? undefined : sshdMissing();
  if (why) throw new Error(`bench/remote.ts needs a loopback sshd: ${why}`);
  const count = args.int('candidates');
  const rounds = args.int('rounds');
  const imageSize = args.int('image-size');
  const target = parseTarget('llvm');
  const tasks = extractTasks(getNetwork('mobilenet', { imageSize }).graph);
  // A mid-size pointwise conv: its output (the bytes that travel back) is 1x28x28x256.
  const task = tasks.find((t) => t.desc.startsWith('conv2d_nhwc') && t.desc.includes('x28x28x256')) ?? tasks[4];
  const policy = createPolicy('random', { task, target, costModel: new LearnedCostModel({ seed: 1 }), measured: [], seed: 1 });
  const batch = policy.nextBatch(count);
  // By default one short timed run per candidate, so that run_ms is mostly what is not the kernel:
  // the transport, loading, verification.
  const opts = { repeat: args.int('repeat'), minRepeatMs: args.num('min-repeat-ms'), number: 1, seed: 0, timeoutMs: 10_000, buildJobs: 2 };
  const sshd = given ? undefined : await startLoopbackSshd();
  const runner = given || sshd!.runner;
  const local = new LocalMeasurer(target, opts);
  const t0 = performance.now();
  const remote = await openRemoteDevices([runner], target, 'bench');
  const connectMs = performance.now() - t0;
  const remoteMeasurer = remote.measurer(target, opts);
  const per: Record<'local' | 'remote', { run: number[]; cost: number[]; errors: number }> = {
    local: { run: [], cost: [], errors: 0 }, remote: { run: [], cost: [], errors: 0 },
  };
  const take = (k: 'local' | 'remote', outcomes: MeasureOutcome[]): void => {
    for (const o of outcomes) {
      if (o.error) { per[k].errors++; continue; }
      per[k].run.push(o.run_ms);
      per[k].cost.push(mean(o.costs_ms));
    }
  };
  try {
    // A first pass of each warms the workers, the build caches and the ssh connection.
    await local.measure(task, batch.slice(0, 2));
    await remoteMeasurer.measure(task, batch.slice(0, 2));
    for (let r = 0; r < rounds; r++) {
      take('local', await local.measure(task, batch));
      take('remote', await remoteMeasurer.measure(task, batch));
    }
  } finally {
    await local.close();
    await remote.close();
    await sshd?.stop();
  }
  const l = median(per.local.run), s = median(per.remote.run);
  console.log(`task: ${task.desc}; ${batch.length} candidates x ${rounds} rounds per path (repeat ${opts.repeat}, number ${opts.number}, min_repeat_ms ${opts.minRepeatMs}), interleaved`);
  console.log(`remote = through ${given ? `the runner ${JSON.stringify(given)}` : 'a real sshd on 127.0.0.1'}; first connection (start, install check, info): ${connectMs.toFixed(0)} ms`);
  console.log(`path   candidates  errors  median run_ms/candidate  mean run_ms  median kernel ms`);
  for (const k of ['local', 'remote'] as const) {
    console.log(`${k.padEnd(6)} ${String(per[k].run.length).padStart(10)}  ${String(per[k].errors).padStart(6)}  ${median(per[k].run).toFixed(2).padStart(23)}  ${mean(per[k].run).toFixed(2).padStart(11)}  ${median(per[k].cost).toFixed(4).padStart(16)}`);
  }
  console.log(`remote / local per candidate: ${(s / l).toFixed(2)}x (transport and remote worker: ${s >= l ? '+' : ''}${(s - l).toFixed(2)} ms per candidate)`);
  console.log(`kernel time remote / local (same machine, ~1 unless the load moved): ${(median(per.remote.cost) / median(per.local.cost)).toFixed(2)}`);
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
