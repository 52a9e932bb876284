// Two builds of one model against each other: a build made by the previous version of
// tensortune against one made by this checkout, say, to measure a change to the code
// generator on a whole network. Each build's library is timed by tt_bench with the same
// seeded input and thread count, in interleaved rounds (A then B, then B then A, ...), so
// that a slow phase of a shared host hits both alike. Per thread count: each build's
// median, the ratio of medians B / A, the paired ratio (the median over rounds of each
// round's B / A, the two runs seconds apart) and the ratio of the fastest runs. Lower is
// better for B.
//
//   npx tsx bench/compare-builds.ts DIR_A DIR_B [--threads 1,2] [--rounds 10] [--repeat 5]
//
// Make the builds with `tensortune compile NET --out DIR` in each checkout (the same model,
// records and target); the script refuses builds of different models or targets.

import { median, pairedRatio } from '../engine/compare/compare';
import { manifestFiles, readManifest } from '../engine/compile/manifest';
import { runBench } from '../engine/native/bench';
import { benchArgs } from './args';

async function main(): Promise<void> {
  const args = benchArgs('bench/compare-builds.ts', 'npx tsx bench/compare-builds.ts DIR_A DIR_B [--threads 1,2] [--rounds 10] [--repeat 5]', { threads: '1,2', rounds: '10', repeat: '5' }, { positionals: 2 });
  const [a, b] = args.positionals.map((dir) => ({ dir, manifest: readManifest(dir) }));
  for (const field of ['name', 'target', 'model_sha256'] as const) {
    if (a.manifest[field] !== b.manifest[field]) throw new Error(`${a.dir} and ${b.dir} are builds of different models or targets: ${field} ${a.manifest[field]} against ${b.manifest[field]}`);
  }
  const rounds = args.int('rounds'), repeat = args.int('repeat');
  console.log(`${a.manifest.name}, ${a.manifest.target}: A = ${a.dir}, B = ${b.dir}; ${rounds} interleaved rounds of ${repeat} measurements each`);
  console.log('| threads | A median ms | B median ms | B / A medians | paired | fastest |');
  console.log('|---|---|---|---|---|---|');
  for (const threads of args.ints('threads')) {
    const runs: [number[], number[]] = [[], []];
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? [0, 1] : [1, 0];
      for (const i of order) {
        const build = [a, b][i];
        const files = manifestFiles(build.dir, build.manifest);
        const res = await runBench({ model: files.library, params: files.params, threads, repeat });
        runs[i].push(...res.runs_ms);
      }
    }
    const [ma, mb] = runs.map(median);
    const fastest = Math.min(...runs[1]) / Math.min(...runs[0]);
    console.log(`| ${threads} | ${ma.toFixed(2)} | ${mb.toFixed(2)} | ${(mb / ma).toFixed(3)} | ${pairedRatio(runs[1], runs[0], repeat).toFixed(3)} | ${fastest.toFixed(3)} |`);
  }
}

main().catch((e) => {
  console.error(e instanceof Error ? e.message : String(e));
  process.exit(1);
});
