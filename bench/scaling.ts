// The N-thread speed-up of tensortune and ONNX Runtime next to the machine's own at the same
// moment. On a shared host the second core is not always ours, and the host changes speed
// from one second to the next: a speed-up read from a 1-thread run and an N-thread run a few
// seconds apart moved between 1.1 and 2.5 for both engines on a shared 2-core VM.
// So each engine's runs at 1 and N threads are taken in pairs, back to back, in one process
// (tt_bench --alternate-threads; two ONNX Runtime sessions, one per count), and an engine's
// speed-up in a round is the median over its pairs of (1-thread time / N-thread time). Each
// round also times the peak FMA loop (engine/native/peak.ts) at 1 and N threads: it keeps its
// data in registers, so its speed-up is about the most N threads gave in that round. Printed
// per network: each engine's speed-up (median of the rounds, and their range), the peak
// loop's, and each engine's median over the rounds where the peak loop scaled by at least
// QUIET_SHARE of N (the host gave us the cores then; "-" where none did).
//
//   npx tsx bench/scaling.ts [--networks mobilenet,resnet-18,resnet-50] [--rounds 6] [--threads 2]
//                            [--pairs 8] [--records tuned.jsonl] [--image-size N] [--target "llvm -mcpu=native"] [--record DIR]
//
// --record DIR also writes the run as a benchmark record there (bench/result-record.ts).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { median } from '../engine/compare/compare';
import { openOrtSession, timeOrtRuns, type OrtRunner } from '../engine/compare/ort';
import { manifestFiles, readManifest } from '../engine/compile/manifest';
import { compileNetwork } from '../engine/app/compile';
import { numElements } from '../engine/ir/tensor';
import { pairedSpeedup, runBench } from '../engine/native/bench';
import { measurePeakGflops } from '../engine/native/peak';
import { uniform } from '../engine/runtime/random';
import { parseTarget } from '../engine/target';
import { benchArgs } from './args';
import { inputSizeText, writeNetworkOnnx } from './onnx-network';
import { measuredBase, onnxRuntimeVersion, thisMachine, writeRecord, type SpeedupRow } from './result-record';

const USAGE = 'npx tsx bench/scaling.ts [--networks mobilenet,resnet-18,resnet-50] [--rounds 6] [--threads 2] [--pairs 8] [--records tuned.jsonl] [--image-size N] [--target "llvm -mcpu=native"] [--record DIR]';

/** Each measurement lasts at least this long (ms), on both engines. */
const MIN_MEASUREMENT_MS = 50;

/** A round counts as quiet where the peak loop's N-thread speed-up is at least this share of N. */
const QUIET_SHARE = 0.9;

/** One round's speed-ups (1-thread time / N-thread time; N-thread GFLOP/s / 1-thread for the peak loop). */
interface Round { ours: number; ort: number; peak: number }

/**
 * ONNX Runtime's speed-up, as tt_bench --alternate-threads takes ours: `pairs` measurements
 * on the 1-thread session and as many on the N-thread one, in pairs back to back (which goes
 * first alternates), each count with its own warm-up and runs per measurement.
 */
async function ortPairedSpeedup(one: OrtRunner, many: OrtRunner, inputs: Float32Array[], pairs: number): Promise<number> {
  const numbers: number[] = [];
  for (const session of [one, many]) {
    await session.run(inputs); // warm-up
    const ms = await timeOrtRuns(session, inputs, 1);
    numbers.push(Math.max(1, Math.ceil(MIN_MEASUREMENT_MS / Math.max(ms, 1e-3))));
  }
  const ratios: number[] = [];
  for (let k = 0; k < pairs; k++) {
    const ms = [0, 0];
    for (const i of k % 2 ? [1, 0] : [0, 1]) ms[i] = await timeOrtRuns(i === 0 ? one : many, inputs, numbers[i]);
    ratios.push(ms[0] / ms[1]);
  }
  return median(ratios);
}

async function main(): Promise<void> {
  const args = benchArgs('bench/scaling.ts', USAGE, { networks: 'mobilenet,resnet-18,resnet-50', rounds: '6', threads: '2', pairs: '8', records: '', 'image-size': '', target: 'llvm -mcpu=native', record: '' });
  const networks = args.list('networks');
  const rounds = args.int('rounds');
  const threads = args.int('threads');
  const pairs = args.int('pairs');
  const records = args.str('records');
  const imageSize = args.optInt('image-size');
  const sizeText = inputSizeText(imageSize);
  const target = parseTarget(args.str('target'));
  const work = mkdtempSync(path.join(tmpdir(), 'tt-scaling-'));
  const rows: string[] = [];
  const results: SpeedupRow[] = [];
  const peaks: { threads: number; gflops: number; when: 'during' }[] = [];
  try {
    for (const name of networks) {
      const onnx = writeNetworkOnnx(work, name, imageSize);
      const modelDir = path.join(work, name);
      await compileNetwork({ model: onnx, target: target.text, outDir: modelDir, records: records ? [records] : undefined, threads: records ? threads : undefined, log: () => undefined });
      const m = readManifest(modelDir);
      const files = manifestFiles(modelDir, m);
      const inputs = m.inputs.map((inp, i) => uniform(numElements(inp.shape), 0, i));
      const shapes = m.inputs.map((i) => i.shape);
      const sessions = [await openOrtSession(onnx, 1, shapes), await openOrtSession(onnx, threads, shapes)];
      const done: Round[] = [];
      try {
        for (let r = 0; r < rounds; r++) {
          // Alternate which thread count goes first, so a slow phase does not always hit one.
          const peak = [0, 0];
          for (const t of r % 2 ? [threads, 1] : [1, threads]) peak[t === 1 ? 0 : 1] = await measurePeakGflops(t, target);
          peaks.push(...[1, threads].map((t, i) => ({ threads: t, gflops: Number(peak[i].toFixed(1)), when: 'during' as const })));
          const ours = await runBench({ model: files.library, params: files.params, threads: 1, alternateThreads: threads, repeat: pairs, minRepeatMs: MIN_MEASUREMENT_MS });
          const round: Round = { ours: pairedSpeedup(ours), ort: await ortPairedSpeedup(sessions[0], sessions[1], inputs, pairs), peak: peak[1] / peak[0] };
          done.push(round);
          console.error(`${name} round ${r + 1}: tensortune x${round.ours.toFixed(2)} (${median(ours.runs_ms).toFixed(2)} / ${median(ours.alternate!.runs_ms).toFixed(2)} ms), ` +
            `ONNX Runtime x${round.ort.toFixed(2)}, peak ${peak.map((x) => x.toFixed(1)).join(' / ')} GFLOP/s (x${round.peak.toFixed(2)})`);
        }
      } finally {
        await Promise.all(sessions.map((s) => s.release()));
      }
      const quiet = done.map((r) => r.peak >= QUIET_SHARE * threads);
      const of = (key: keyof Round): number[] => done.map((r) => r[key]);
      const spread = (xs: number[]): string => `${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)})`;
      const inQuiet = (xs: number[]): string => (quiet.some(Boolean) ? median(xs.filter((_, i) => quiet[i])).toFixed(2) : '-');
      const row = `| ${name} | ${spread(of('ours'))} | ${spread(of('ort'))} | ${spread(of('peak'))} | ${quiet.filter(Boolean).length} | ${inQuiet(of('ours'))} | ${inQuiet(of('ort'))} |`;
      rows.push(row);
      console.error(row);
      const r2 = (x: number): number => Number(x.toFixed(2));
      const range = (xs: number[]): [number, number] => [r2(Math.min(...xs)), r2(Math.max(...xs))];
      results.push({ network: name, schedules: records ? 'tuned' : 'default', threads, ours: r2(median(of('ours'))), oursRange: range(of('ours')),
        reference: r2(median(of('ort'))), referenceRange: range(of('ort')), machine: r2(median(of('peak'))), rounds });
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  console.log(`${threads}-thread speed-up (1-thread time / ${threads}-thread time, the median of ${pairs} back-to-back pairs per round; median of ${rounds} rounds, range in brackets), ` +
    `${records ? `records ${records} (ranked at ${threads} threads)` : 'default schedules'}, batch 1, ${sizeText}; quiet rounds: the peak loop's speed-up >= ${(QUIET_SHARE * threads).toFixed(2)}`);
  console.log('| network | tensortune | ONNX Runtime | peak loop (the machine) | quiet rounds | tensortune, quiet rounds | ONNX Runtime, quiet rounds |');
  console.log('|---|---|---|---|---|---|---|');
  for (const row of rows) console.log(row);
  const recordDir = args.str('record');
  if (recordDir) {
    const ort = onnxRuntimeVersion();
    const file = writeRecord({ ...measuredBase('bench/scaling.ts', target.text, { ...thisMachine(), peak: peaks }), kind: 'speedup',
      reference: { name: 'ONNX Runtime', ...(ort ? { version: ort } : {}) }, results, notes: `median of ${pairs} back-to-back pairs per round, ${sizeText}` }, recordDir);
    console.log(`record: ${file}`);
  }
}

if (require.main === module) main().catch((e: unknown) => { console.error(e); process.exitCode = 1; });
