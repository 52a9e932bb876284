// One task of a network timed alone with other register tiles: its default schedule, the
// fastest record of a log (--records), and the default with each tile of --tiles (vector
// channels x rows of the block axis, DefaultOptions.registerTile), at 1 thread, in
// interleaved rounds, two ways: warm (no flush; a task without weights is timed so by tune)
// and with every buffer but the first evicted before each run (the task's inputs and output
// as cold as a flush leaves them); with --each-input, also each input evicted alone (which
// operand's misses cost). Each round measures the peak (bench/peak.ts) and prints
// each schedule's share of it; the last lines are the medians over the rounds.
//
//   npx tsx bench/register-tiles.ts --network vit-s16 --task "batch_matmul+multiply"
//                                   [--tiles 16x7,16x10,32x7] [--records LOG] [--rounds 3] [--each-input]
//
// --task picks the first task whose description starts with it (`tensortune tasks NET`
// lists them). A tile is timed alone here; in the network its inputs arrive as the kernels
// before it left them, which `tensortune benchmark DIR --profile` shows.

import { LocalMeasurer } from '../engine/measure/measurer';
import { measurePeakGflops } from '../engine/native/peak';
import { rankedByWorkload } from '../engine/records/best';
import { readRecordFiles } from '../engine/records/log';
import { defaultSchedule } from '../engine/schedule/defaults';
import type { Step } from '../engine/schedule/steps';
import { getNetwork } from '../engine/frontend/networks';
import { tuningTasks } from '../engine/graph/extract';
import { hardwareFingerprint, parseTarget } from '../engine/target';
import { benchArgs } from './args';
import { interleaved } from './interleaved';

const USAGE = 'npx tsx bench/register-tiles.ts --network vit-s16 --task "batch_matmul+multiply" [--tiles 16x7,16x10,32x7] [--records LOG] [--rounds 3] [--each-input]';
const args = benchArgs('bench/register-tiles.ts', USAGE, { network: 'vit-s16', task: 'batch_matmul+multiply', tiles: '16x7,16x10,16x12', records: '', rounds: '3' }, { switches: ['each-input'] });
const target = parseTarget('llvm -mcpu=native');
const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1];

function parseTile(text: string): { vec: number; rows: number } {
  const m = /^(\d+)x(\d+)$/.exec(text);
  if (!m) throw new Error(`--tiles: '${text}' is not VECxROWS (e.g. 16x7: 16 channels by 7 rows)`);
  return { vec: Number(m[1]), rows: Number(m[2]) };
}

async function main(): Promise<void> {
  const network = args.str('network');
  const prefix = args.str('task');
  const rounds = args.int('rounds');
  const tiles = args.list('tiles').map(parseTile);
  const tasks = tuningTasks(getNetwork(network, { weights: 'zeros' }).graph, target.text).filter((t) => !t.alternative);
  const task = tasks.find((t) => t.desc.startsWith(prefix));
  if (!task) throw new Error(`--task: no task of ${network} starts with '${prefix}'; its tasks: ${tasks.map((t) => t.desc).join('; ')}`);
  const options = { vectorLanes: target.vectorLanes };
  const schedules: [string, Step[]][] = [['default', defaultSchedule(task.dag, options)]];
  if (args.str('records')) {
    const ranked = rankedByWorkload(await readRecordFiles([args.str('records')]), { target: target.text, fingerprint: hardwareFingerprint(target) });
    const best = ranked.get(task.key)?.[0]?.entry.record.steps;
    if (best) schedules.push(['tuned', best]);
    else console.log(`(no record of this task in ${args.str('records')})`);
  }
  for (const t of tiles) schedules.push([`${t.vec}x${t.rows}`, defaultSchedule(task.dag, { ...options, registerTile: t })]);
  console.log(`${task.desc}: ${(task.flops / 1e6).toFixed(1)} MFLOP; 1 thread; % of the peak measured in each round`);
  // Each input evicted alone: the measurer's flush evicts a task's weights (its constant
  // inputs), so the task is timed as if that input were its only weight.
  const alone = args.on('each-input') ? task.dag.inputs.map((t) => ({ name: `${t.name} evicted`, task: { ...task, constInputs: [t.name] }, measurer: new LocalMeasurer(target, { threads: 1, flush: true, repeat: 10 }) })) : [];
  const modes = [
    { name: 'warm', task, measurer: new LocalMeasurer(target, { threads: 1, flush: false, repeat: 10, minRepeatMs: 50 }) },
    ...alone,
    { name: 'all but first evicted', task, measurer: new LocalMeasurer(target, { threads: 1, flush: true, evict: 'all-but-first', repeat: 10 }) },
  ];
  const shares = new Map<string, number[]>();
  try {
    for (let round = 0; round < rounds; round++) {
      const peak = await measurePeakGflops(1, target);
      for (const mode of modes) {
        const ms = await interleaved(mode.measurer, mode.task, schedules.map(([, s]) => s), 1);
        const cells = schedules.map(([name], i) => {
          const t = ms[i];
          if (typeof t !== 'number') return `${name} failed (${t})`;
          const share = (task.flops / (t * 1e-3) / 1e9 / peak) * 100;
          shares.set(`${mode.name}\t${name}`, [...(shares.get(`${mode.name}\t${name}`) ?? []), share]);
          return `${name} ${share.toFixed(1)}%`;
        });
        console.log(`round ${round + 1}, peak ${peak.toFixed(1)} GFLOP/s, ${mode.name}: ${cells.join('  ')}`);
      }
    }
  } finally {
    for (const m of modes) await m.measurer.close();
  }
  for (const mode of modes) {
    console.log(`median, ${mode.name}: ${schedules.map(([name]) => {
      const xs = shares.get(`${mode.name}\t${name}`);
      return `${name} ${xs ? `${median(xs).toFixed(1)}%` : '-'}`;
    }).join('  ')}`);
  }
}

main().catch((e) => {
  console.error(e instanceof Error ? e.message : String(e));
  process.exit(1);
});
