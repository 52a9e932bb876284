// How long a tune took to catch ONNX Runtime: the network compiled with the records its
// log held after each of the given minutes (timed from the log's first record), each
// build compared with ONNX Runtime in the same run (interleaved rounds, medians, the paired
// ratio beside), the default schedules first (minute 0). The first minute whose ratio is at
// or under 1.0 is the tune's time to ONNX Runtime's speed.
//
//   npx tsx bench/tune-curve.ts --network bert-base --records bert.jsonl [--at 5,10,15,20,30]
//                               [--threads 1] [--batch 1] [--rounds 3] [--target "llvm -mcpu=native"] [--record DIR]
//
// The log is one tune's output (`tensortune tune NET --records LOG --time-limit S`): a log
// that several tunes appended to measures from the first one's start. Each prefix is
// ranked at --threads, as `tensortune compile --threads N` ranks. --record DIR writes the
// rows as a benchmark record (tuning "LOG, first M min"), the peak measured before and after.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { compareWithOnnxRuntime } from '../engine/compare/compare';
import { compileNetwork } from '../engine/app/compile';
import { readRecords } from '../engine/records/log';
import { writeRecordsFile } from '../engine/records/store';
import { parseTarget } from '../engine/target';
import { benchArgs } from './args';
import { timedLog } from './log-prefix';
import { benchOpset, writeNetworkOnnx } from './onnx-network';
import { measurePeaks, roundTo, thisMachine, writeVsOnnxRuntime, type VsReferenceRow } from './result-record';

const USAGE = 'npx tsx bench/tune-curve.ts --network NET --records LOG [--at 5,10,15,20,30] [--threads 1] [--batch 1] [--rounds 3] [--target "llvm -mcpu=native"] [--record DIR]';

async function main(): Promise<void> {
  const args = benchArgs('bench/tune-curve.ts', USAGE, { network: '', records: '', at: '5,10,15,20,30', threads: '1', batch: '1', rounds: '3', target: 'llvm -mcpu=native', record: '' });
  const network = args.str('network');
  const log = args.str('records');
  if (!network || !log) throw new Error(`bench/tune-curve.ts: --network and --records are required\n${USAGE}`);
  const minutes = args.ints('at');
  const threads = args.int('threads');
  const batch = args.int('batch');
  const rounds = args.int('rounds');
  const target = args.str('target');
  const recordDir = args.str('record');

  const { entries } = await readRecords(log);
  const timed = timedLog(entries.map((e) => e.record));
  if (!timed) throw new Error(`${log}: no records with a time stamp`);
  console.error(`${log}: ${timed.count} records over ${timed.spanMinutes.toFixed(1)} min`);

  const machine = thisMachine();
  if (recordDir) machine.peak = await measurePeaks([threads], parseTarget(target), 'before');
  const work = mkdtempSync(path.join(tmpdir(), 'tt-tune-curve-'));
  const rows: { minutes: number; trials: number; ours: number; ort: number; ratio: number; paired?: number; err: number }[] = [];
  const results: VsReferenceRow[] = [];
  try {
    const onnx = writeNetworkOnnx(work, network, undefined, { batch, opset: benchOpset(network) });
    for (const m of [0, ...minutes]) {
      const prefix = timed.within(m);
      const outDir = path.join(work, `${network}-${m}`);
      let records: string[] | undefined;
      if (m > 0) {
        records = [path.join(work, `first-${m}-min.jsonl`)];
        await writeRecordsFile(records[0]!, prefix);
      }
      await compileNetwork({ model: onnx, target, outDir, ...(records ? { records, threads } : {}), log: () => undefined });
      const r = await compareWithOnnxRuntime({ modelDir: outDir, threads, rounds });
      const err = Math.max(...r.outputs.map((o) => o.max_abs_err));
      const row = { minutes: m, trials: m > 0 ? prefix.length : 0, ours: r.tensortune_median_ms, ort: r.onnxruntime_median_ms, ratio: r.ratio, paired: r.paired_ratio, err };
      rows.push(row);
      console.error(`${m} min: ${row.trials} records, ${row.ours.toFixed(2)} / ${row.ort.toFixed(2)} ms, ratio ${row.ratio.toFixed(3)} (paired ${(row.paired ?? NaN).toFixed(3)})`);
      results.push({
        network, schedules: m > 0 ? 'tuned' : 'default', ...(m > 0 ? { tuning: `${path.basename(log)}, first ${m} min` } : {}), threads, batch,
        oursMs: roundTo(row.ours), referenceMs: roundTo(row.ort), ratio: roundTo(row.ratio, 3), ...(row.paired ? { paired: roundTo(row.paired, 3) } : {}), maxAbsErr: Number(err.toExponential(2)),
      });
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  console.log(`${network}, batch ${batch}, ${threads} thread(s), the records of ${path.basename(log)} after each minute (from its first record), against ONNX Runtime; ${rounds} interleaved rounds, medians`);
  console.log('| minutes | records | tensortune ms | onnxruntime ms | ratio | paired ratio | max abs err |');
  console.log('|---|---|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.minutes === 0 ? '0 (default)' : r.minutes} | ${r.trials} | ${r.ours.toFixed(2)} | ${r.ort.toFixed(2)} | ${r.ratio.toFixed(3)} | ${(r.paired ?? NaN).toFixed(3)} | ${r.err.toExponential(1)} |`);
  const first = rows.find((r) => r.ratio <= 1);
  console.log(first ? `time to 1.0x ONNX Runtime: ${first.minutes === 0 ? 'the default schedules' : `${first.minutes} min`}` : `not at 1.0x ONNX Runtime after ${minutes[minutes.length - 1]} min`);
  if (recordDir) {
    machine.peak!.push(...await measurePeaks([threads], parseTarget(target), 'after'));
    const file = writeVsOnnxRuntime('bench/tune-curve.ts', target, machine, results, `the tune's records after each minute from its first; ${rounds} interleaved rounds, medians`, recordDir);
    console.log(`record: ${file}`);
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
