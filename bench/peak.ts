// The machine's peak fp32 FLOP rate, measured rather than looked up: a C loop of
// independent fused multiply-adds on the widest vectors the target has (12 accumulator
// chains hide the FMA latency), compiled with the target's flags and run on 1..N threads.
// Every "% of peak" this repo prints divides by this figure (engine/native/peak.ts).
//
//   npx tsx bench/peak.ts [--threads N] [--target "llvm -mcpu=native"]

import { measurePeakGflops } from '../engine/native/peak';
import { parseTarget } from '../engine/target';
import { benchArgs } from './args';

const USAGE = 'npx tsx bench/peak.ts [--threads N] [--target "llvm -mcpu=native"]';

async function main(): Promise<void> {
  const args = benchArgs('bench/peak.ts', USAGE, { threads: '2', target: 'llvm -mcpu=native' });
  const target = parseTarget(args.str('target'));
  const max = args.int('threads');
  for (let t = 1; t <= max; t++) {
    console.log(`peak fp32 @${t} thread(s), ${target.vectorLanes} lanes: ${(await measurePeakGflops(t, target)).toFixed(1)} GFLOP/s`);
  }
}

if (require.main === module) main().catch((e: unknown) => { console.error(e); process.exitCode = 1; });
