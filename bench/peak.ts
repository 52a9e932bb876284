// The machine's peak fp32 FLOP rate, measured rather than looked up: a C loop of
// independent fused multiply-adds on the widest vectors the target has (12 accumulator
// chains hide the FMA latency), compiled with the target's flags and run on 1..N threads.
// Every "% of peak" this repo prints divides by this figure (engine/native/peak.ts).
//
//   npx tsx bench/peak.ts [--threads N] [--target "llvm -mcpu=native"] [--record DIR]
//
// --record DIR writes the readings as a benchmark record there (bench/result-record.ts).

import { measurePeakGflops } from '../engine/native/peak';
import { parseTarget } from '../engine/target';
import { benchArgs } from './args';
import { measuredBase, thisMachine, writeRecord, type PeakRow } from './result-record';

const USAGE = 'npx tsx bench/peak.ts [--threads N] [--target "llvm -mcpu=native"] [--record DIR]';

async function main(): Promise<void> {
  const args = benchArgs('bench/peak.ts', USAGE, { threads: '2', target: 'llvm -mcpu=native', record: '' });
  const target = parseTarget(args.str('target'));
  const max = args.int('threads');
  const results: PeakRow[] = [];
  for (let t = 1; t <= max; t++) {
    const gflops = await measurePeakGflops(t, target);
    results.push({ threads: t, gflops: Number(gflops.toFixed(1)) });
    console.log(`peak fp32 @${t} thread(s), ${target.vectorLanes} lanes: ${gflops.toFixed(1)} GFLOP/s`);
  }
  const recordDir = args.str('record');
  if (recordDir) {
    const machine = { ...thisMachine(), peak: results.map((r) => ({ ...r, when: 'during' as const })) };
    console.log(`record: ${writeRecord({ ...measuredBase('bench/peak.ts', target.text, machine), kind: 'peak', results }, recordDir)}`);
  }
}

if (require.main === module) main().catch((e: unknown) => { console.error(e); process.exitCode = 1; });
