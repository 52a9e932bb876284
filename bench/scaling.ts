// The N-thread speed-up of tensortune and ONNX Runtime next to the machine's own at the same
// moment. On a shared host the second core is not always ours: a 2-thread speed-up read from
// two runs minutes apart moves between 1.5 and 2.2 for both engines (docs/performance.md, session 25).
// So each round times, back to back, the peak FMA loop (engine/native/peak.ts) at 1 and N
// threads, then both engines at 1 and N threads (engine/compare, one interleaved round each).
// The peak loop keeps its data in registers, so its speed-up is about the most N threads
// gave in that round. Printed per network: each engine's speed-up over all rounds (median and
// range), the peak loop's, and each engine's median over the rounds where the peak loop
// scaled by at least QUIET_SHARE of N (the host gave us the cores then; "-" where none did).
//
//   npx tsx bench/scaling.ts [--networks mobilenet,resnet-18,resnet-50] [--rounds 6] [--threads 2]
//                            [--records tuned.jsonl] [--image-size 224] [--target "llvm -mcpu=native"]

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { compareWithOnnxRuntime, median } from '../engine/compare/compare';
import { compileNetwork } from '../engine/compile/network';
import { measurePeakGflops } from '../engine/native/peak';
import { parseTarget } from '../engine/target';
import { benchArgs } from './args';
import { writeNetworkOnnx } from './onnx-network';

const USAGE = 'npx tsx bench/scaling.ts [--networks mobilenet,resnet-18,resnet-50] [--rounds 6] [--threads 2] [--records tuned.jsonl] [--image-size 224] [--target "llvm -mcpu=native"]';

/** A round counts as quiet where the peak loop's N-thread speed-up is at least this share of N. */
const QUIET_SHARE = 0.9;

/** One round's times: ms of each engine and the peak loop's GFLOP/s, at 1 and N threads. */
interface Round { ours: [number, number]; ort: [number, number]; peak: [number, number] }

/** Per-round speed-ups (1-thread ms / N-thread ms; N-thread GFLOP/s / 1-thread for the peak loop). */
function speedups(rounds: Round[]): { ours: number[]; ort: number[]; peak: number[] } {
  return {
    ours: rounds.map((r) => r.ours[0] / r.ours[1]),
    ort: rounds.map((r) => r.ort[0] / r.ort[1]),
    peak: rounds.map((r) => r.peak[1] / r.peak[0]),
  };
}

async function main(): Promise<void> {
  const args = benchArgs('bench/scaling.ts', USAGE, { networks: 'mobilenet,resnet-18,resnet-50', rounds: '6', threads: '2', records: '', 'image-size': '224', target: 'llvm -mcpu=native' });
  const networks = args.list('networks');
  const rounds = args.int('rounds');
  const threads = args.int('threads');
  const records = args.str('records');
  const imageSize = args.int('image-size');
  const target = parseTarget(args.str('target'));
  const work = mkdtempSync(path.join(tmpdir(), 'tt-scaling-'));
  const rows: string[] = [];
  try {
    for (const name of networks) {
      const onnx = writeNetworkOnnx(work, name, imageSize);
      const modelDir = path.join(work, name);
      await compileNetwork({ model: onnx, target: target.text, outDir: modelDir, records: records ? [records] : undefined, log: () => undefined });
      const done: Round[] = [];
      for (let r = 0; r < rounds; r++) {
        // Alternate which thread count goes first, so a slow phase does not always hit one.
        const order = r % 2 ? [threads, 1] : [1, threads];
        const round: Round = { ours: [0, 0], ort: [0, 0], peak: [0, 0] };
        for (const t of order) {
          const i = t === 1 ? 0 : 1;
          round.peak[i] = await measurePeakGflops(t, target);
          const c = await compareWithOnnxRuntime({ modelDir, threads: t, rounds: 1 });
          round.ours[i] = c.tensortune_median_ms;
          round.ort[i] = c.onnxruntime_median_ms;
        }
        done.push(round);
        const s = speedups([round]);
        console.error(`${name} round ${r + 1}: tensortune ${round.ours.map((x) => x.toFixed(2)).join(' / ')} ms (x${s.ours[0].toFixed(2)}), ` +
          `ONNX Runtime ${round.ort.map((x) => x.toFixed(2)).join(' / ')} ms (x${s.ort[0].toFixed(2)}), peak ${round.peak.map((x) => x.toFixed(1)).join(' / ')} GFLOP/s (x${s.peak[0].toFixed(2)})`);
      }
      const s = speedups(done);
      const quiet = s.peak.map((x) => x >= QUIET_SHARE * threads);
      const spread = (xs: number[]): string => `${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)})`;
      const inQuiet = (xs: number[]): string => (quiet.some(Boolean) ? median(xs.filter((_, i) => quiet[i])).toFixed(2) : '-');
      const row = `| ${name} | ${spread(s.ours)} | ${spread(s.ort)} | ${spread(s.peak)} | ${quiet.filter(Boolean).length} | ${inQuiet(s.ours)} | ${inQuiet(s.ort)} |`;
      rows.push(row);
      console.error(row);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  console.log(`${threads}-thread speed-up (1-thread ms / ${threads}-thread ms; median of ${rounds} rounds, range in brackets), ` +
    `${records ? `records ${records}` : 'default schedules'}, batch 1, ${imageSize}x${imageSize}; quiet rounds: the peak loop's speed-up >= ${(QUIET_SHARE * threads).toFixed(2)}`);
  console.log('| network | tensortune | ONNX Runtime | peak loop (the machine) | quiet rounds | tensortune, quiet rounds | ONNX Runtime, quiet rounds |');
  console.log('|---|---|---|---|---|---|---|');
  for (const row of rows) console.log(row);
}

if (require.main === module) main().catch((e: unknown) => { console.error(e); process.exitCode = 1; });
