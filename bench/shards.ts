// What sharding costs on one machine. Tunes mobilenet with one fixed budget, through
// Nx in fresh workspaces that install the packed plugin: as one `tune` target, and as
// `shards: N` (tune--0 ... tune--N-1, then the merge) with `--parallel 1`, alternately for
// `--rounds` rounds (A B A B, so that a busy phase of a shared machine hits both), and prints
// the wall time of each `nx run-many -t tune` and the ratio of the fastest of each (the
// overhead of sharding: N model loads, Nx tasks and measurement workers instead of one). The
// default budget is per task (`--trials-per-task`), so both spend the same trials on the
// same tasks; `--trials N` gives a total instead, which the shards split by their share of
// the estimated cost and the one scheduler spends where its gradient says (so the runs then
// differ in what they measure too). Each workspace has its own store and object cache (the
// native tools built before the clock starts), so no run reuses another's work.
//
//   npx tsx bench/shards.ts [--trials-per-task 4 | --trials 88] [--shards 4] [--image-size 224]
//                           [--measures-per-round 8] [--rounds 2]

import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { benchArgs } from './args';

const USAGE = 'npx tsx bench/shards.ts [--trials-per-task 4 | --trials 88] [--shards 4] [--image-size 224] [--measures-per-round 8] [--rounds 2]';
const REPO = path.resolve(__dirname, '..');

function run(cmd: string, argv: string[], cwd: string, env: NodeJS.ProcessEnv = {}): string {
  const r = spawnSync(cmd, argv, { cwd, env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 256 << 20 });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${cmd} ${argv.join(' ')} exited ${r.status}:\n${(r.stdout + r.stderr).slice(-4000)}`);
  return r.stdout + r.stderr;
}

const config = (budget: string, perRound: number, imageSize: number, shards?: number): string => `records: .tensortune/records
targets:
  cpu:
    target: llvm -mcpu=native
    threads: 1
budgets:
  bench:
    ${budget}
    measuresPerRound: ${perRound}
networks:
  mobilenet:
    model: mobilenet
    imageSize: ${imageSize}
${shards ? `    shards: ${shards}\n` : ''}`;

function main(): void {
  // Without --trials the budget is per task; --trials (a total) wins when both are given.
  const args = benchArgs('bench/shards.ts', USAGE, { trials: '', 'trials-per-task': '4', shards: '4', 'image-size': '224', 'measures-per-round': '8', rounds: '2' });
  const budget = args.str('trials') ? `trials: ${args.int('trials')}` : `trialsPerTask: ${args.int('trials-per-task')}`;
  const rounds = args.int('rounds');
  const shards = args.int('shards');
  const imageSize = args.int('image-size');
  const perRound = args.int('measures-per-round');
  const base = mkdtempSync(path.join(tmpdir(), 'tt-bench-shards-'));
  try {
    run('npm', ['run', 'build', '--silent'], REPO);
    const [info] = JSON.parse(run('npm', ['pack', '--ignore-scripts', '--json', '--silent', '--pack-destination', base], REPO).replace(/^[^[]*/, '')) as { filename: string }[];
    const nxVersion = (JSON.parse(readFileSync(path.join(REPO, 'node_modules', 'nx', 'package.json'), 'utf8')) as { version: string }).version;
    const install = path.join(base, 'install');
    mkdirSync(install);
    writeFileSync(path.join(install, 'package.json'), JSON.stringify({ name: 'bench', private: true, devDependencies: { nx: nxVersion, tensortune: `file:../${info.filename}` } }));
    run('npm', ['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], install, { ONNXRUNTIME_NODE_INSTALL: 'skip' });

    const results: { name: string; wallS: number; trials: number }[] = [];
    const variants = [['one target', undefined], [`${shards} shards`, shards]] as const;
    for (const [round, [name, n]] of Array.from({ length: rounds }, (_, r) => variants.map((v) => [r, v] as const)).flat()) {
      const ws = path.join(base, `${n ? 'sharded' : 'one'}-${round}`);
      mkdirSync(ws);
      symlinkSync(path.join(install, 'node_modules'), path.join(ws, 'node_modules'), 'dir');
      writeFileSync(path.join(ws, 'package.json'), JSON.stringify({ name: `bench-${n ?? 1}`, private: true }));
      writeFileSync(path.join(ws, 'nx.json'), JSON.stringify({ plugins: ['tensortune/plugin'], cacheDirectory: '.nx/cache', neverConnectToCloud: true }));
      writeFileSync(path.join(ws, 'tensortune.config.yaml'), config(budget, perRound, imageSize, n));
      const env = {
        NX_DAEMON: 'false', NX_NO_CLOUD: 'true', NX_TUI: 'false', CI: 'true', FORCE_COLOR: '0',
        TENSORTUNE_CACHE_DIR: path.join(ws, 'object-cache'),
      };
      // The native tools are built on first use: here, before the clock starts.
      run(process.execPath, [path.join(ws, 'node_modules', 'tensortune', 'bin', 'tensortune.js'), 'tune', 'mobilenet', '--image-size', '32', '--trials', '1',
        '--records', path.join(ws, 'warm.jsonl')], ws, env);
      const t0 = process.hrtime.bigint();
      const out = run(process.execPath, [path.join(ws, 'node_modules', 'nx', 'dist', 'bin', 'nx.js'), 'run-many', '-t', 'tune', '--parallel', '1', '--skip-nx-cache', '--outputStyle=static'], ws, env);
      const wallS = Number(process.hrtime.bigint() - t0) / 1e9;
      const store = path.join(ws, '.tensortune', 'records');
      const measured = readdirSync(store).filter((f) => f.endsWith('.jsonl'))
        .reduce((a, f) => a + readFileSync(path.join(store, f), 'utf8').split('\n').filter((l) => l.trim()).length, 0);
      const tasks = [...out.matchAll(/^> nx run (\S+)/gm)].map((m) => m[1]);
      results.push({ name, wallS, trials: measured });
      console.log(`round ${round + 1}: ${name.padEnd(12)} ${wallS.toFixed(1).padStart(7)} s wall, ${measured} trials measured, Nx tasks: ${tasks.join(' ')}`);
    }
    const fastest = (name: string): { wallS: number; trials: number } => results.filter((r) => r.name === name).sort((a, b) => a.wallS - b.wallS)[0];
    const [one, sharded] = [fastest(variants[0][0]), fastest(variants[1][0])];
    console.log(`\nmobilenet ${imageSize}x${imageSize}, budget ${budget} (${perRound} per round), --parallel 1 on this machine, fastest of ${rounds} round(s) each:`);
    console.log(`wall time as ${variants[1][0]} / as one target = ${(sharded.wallS / one.wallS).toFixed(3)}` +
      ` (${sharded.wallS.toFixed(1)} s / ${one.wallS.toFixed(1)} s; per trial measured: ${((sharded.wallS / sharded.trials) / (one.wallS / one.trials)).toFixed(3)})`);
  } finally {
    if (process.env.TENSORTUNE_BENCH_KEEP === '1') console.log(`kept ${base}`);
    else rmSync(base, { recursive: true, force: true });
  }
}

main();
