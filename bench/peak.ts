// The machine's peak fp32 FLOP rate, measured rather than looked up: a C loop of
// independent fused multiply-adds on the widest vectors the target has (12 accumulator
// chains hide the FMA latency), compiled with the target's flags and run on 1..N threads.
// Every "% of peak" this repo prints divides by this figure (engine/native/peak.ts).
//
//   npx tsx bench/peak.ts [--threads N] [--target "llvm -mcpu=native"]

import { measurePeakGflops } from '../engine/native/peak';
import { parseTarget } from '../engine/target';

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const flag = (name: string): string | undefined => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
  const target = parseTarget(flag('--target') ?? 'llvm -mcpu=native');
  const max = Number(flag('--threads') ?? 2);
  for (let t = 1; t <= max; t++) {
    console.log(`peak fp32 @${t} thread(s), ${target.vectorLanes} lanes: ${(await measurePeakGflops(t, target)).toFixed(1)} GFLOP/s`);
  }
}

if (require.main === module) main().catch((e: unknown) => { console.error(e); process.exitCode = 1; });
