// Two builds of one model against each other: a build made by the previous version of
// tensortune against one made by this checkout, say, to measure a change to the code
// generator on a whole network. Each build's library is timed by tt_bench with the same
// seeded input and thread count, in interleaved rounds (A then B, then B then A, ...), so
// that a slow phase of a shared host hits both alike. Per thread count: each build's
// median, the ratio of medians B / A, the paired ratio (the median over rounds of each
// round's B / A, the two runs seconds apart) and the ratio of the fastest runs. Lower is
// better for B.
//
//   npx tsx bench/compare-builds.ts DIR_A DIR_B [--threads 1,2] [--rounds 10] [--repeat 5] [--profile]
//
// --profile: each round also runs both builds with every kernel call timed (`tensortune
// benchmark --profile`), and per thread count the kernels whose time moved most are
// printed: each one's median ms per run over the rounds in A and in B, and B / A. A change
// to one kernel's schedule shows there even when the network's time moves less than the
// host's noise.
//
// Make the builds with `tensortune compile NET --out DIR` in each checkout (the same model,
// records and target); the script refuses builds of different models or targets.

import { createHash } from 'node:crypto';
import { median, pairedRatio } from '../engine/compare/compare';
import { manifestFiles, readManifest, type Manifest } from '../engine/compile/manifest';
import { kernelProfile } from '../engine/compile/profile';
import { runBench } from '../engine/native/bench';
import { benchArgs } from './args';

async function main(): Promise<void> {
  const args = benchArgs('bench/compare-builds.ts', 'npx tsx bench/compare-builds.ts DIR_A DIR_B [--threads 1,2] [--rounds 10] [--repeat 5] [--profile]', { threads: '1,2', rounds: '10', repeat: '5' }, { positionals: 2, switches: ['profile'] });
  const [a, b] = args.positionals.map((dir) => {
    const manifest = readManifest(dir);
    return { dir, manifest, files: manifestFiles(dir, manifest) };
  });
  for (const field of ['name', 'target', 'model_sha256'] as const) {
    if (a.manifest[field] !== b.manifest[field]) throw new Error(`${a.dir} and ${b.dir} are builds of different models or targets: ${field} ${a.manifest[field]} against ${b.manifest[field]}`);
  }
  const rounds = args.int('rounds'), repeat = args.int('repeat');
  console.log(`${a.manifest.name}, ${a.manifest.target}: A = ${a.dir}, B = ${b.dir}; ${rounds} interleaved rounds of ${repeat} measurements each`);
  console.log('| threads | A median ms | B median ms | B / A medians | paired | fastest |');
  console.log('|---|---|---|---|---|---|');
  const profiles: string[] = [];
  for (const threads of args.ints('threads')) {
    const runs: [number[], number[]] = [[], []];
    const kernels: [KernelTimes, KernelTimes] = [new Map(), new Map()];
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? [0, 1] : [1, 0];
      for (const i of order) {
        const { files } = [a, b][i];
        const res = await runBench({ model: files.library, params: files.params, threads, repeat });
        runs[i].push(...res.runs_ms);
      }
      if (args.on('profile')) {
        for (const i of order) {
          const { dir, manifest, files } = [a, b][i];
          const res = await runBench({ model: files.library, params: files.params, threads, repeat: 3, profile: true });
          addKernelTimes(kernels[i], manifest, res.profile ?? [], dir);
        }
      }
    }
    const [ma, mb] = runs.map(median);
    const fastest = Math.min(...runs[1]) / Math.min(...runs[0]);
    console.log(`| ${threads} | ${ma.toFixed(2)} | ${mb.toFixed(2)} | ${(mb / ma).toFixed(3)} | ${pairedRatio(runs[1], runs[0], repeat).toFixed(3)} | ${fastest.toFixed(3)} |`);
    if (args.on('profile')) profiles.push(...kernelTable(threads, kernels));
  }
  if (profiles.length > 0) console.log(`\n${profiles.join('\n')}`);
}

/** Each kernel's label and its ms per profiled run, by workload key (addKernelTimes). */
type KernelTimes = Map<string, { label: string; ms: number[] }>;

/** Kernels per table: those whose median moved most. */
const KERNEL_ROWS = 12;

/**
 * Adds one profiled run's ms per kernel to `into`, keyed by the kernel's workload key (the
 * same task in both builds, whatever its schedule) and labelled by its description and calls
 * per run. Two tasks can share a description (ViT's attention output and MLP output layers
 * are both `dense+add+add 1x197x384 -> 1x197x384`, 12 calls each): the label then also names
 * a digest of the key, so that neither row mixes the two.
 */
function addKernelTimes(into: KernelTimes, manifest: Manifest, calls: Parameters<typeof kernelProfile>[0], dir: string): void {
  const keyOf = new Map(manifest.kernels.map((k) => [k.symbol, k.key]));
  const rows = kernelProfile(calls, manifest, undefined, `${dir}/manifest.json`);
  const labels = rows.map((row) => `${row.desc} (x${row.calls})`);
  rows.forEach((row, i) => {
    const key = keyOf.get(row.symbol) ?? row.symbol;
    const shared = labels.filter((l) => l === labels[i]).length > 1;
    const label = shared ? `${labels[i]} [key ${createHash('sha256').update(key).digest('hex').slice(0, 8)}]` : labels[i];
    const entry = into.get(key) ?? { label, ms: [] };
    entry.ms.push(row.ms);
    into.set(key, entry);
  });
}

/** The per-kernel table of one thread count: medians over the rounds, the kernels that moved most first, then the sums. */
function kernelTable(threads: number, [ka, kb]: [KernelTimes, KernelTimes]): string[] {
  const rows = [...new Set([...ka.keys(), ...kb.keys()])].map((key) => {
    const a = ka.has(key) ? median(ka.get(key)!.ms) : 0, b = kb.has(key) ? median(kb.get(key)!.ms) : 0;
    return { task: (ka.get(key) ?? kb.get(key))!.label, a, b };
  }).sort((x, y) => Math.abs(y.b - y.a) - Math.abs(x.b - x.a));
  const sum = (k: 'a' | 'b'): number => rows.reduce((t, r) => t + r[k], 0);
  const ratio = (a: number, b: number): string => (a > 0 && b > 0 ? (b / a).toFixed(3) : '-');
  return [
    `Per-kernel medians at ${threads} thread(s) (ms per run; the ${KERNEL_ROWS} that moved most; a kernel only one build has shows '-'):`,
    '| kernel | A ms | B ms | B / A |',
    '|---|---|---|---|',
    ...rows.slice(0, KERNEL_ROWS).map((r) => `| ${r.task} | ${r.a.toFixed(3)} | ${r.b.toFixed(3)} | ${ratio(r.a, r.b)} |`),
    `| all ${rows.length} kernels, summed | ${sum('a').toFixed(2)} | ${sum('b').toFixed(2)} | ${ratio(sum('a'), sum('b'))} |`,
    '',
  ];
}

main().catch((e) => {
  console.error(e instanceof Error ? e.message : String(e));
  process.exit(1);
});
