// tensortune against ONNX Runtime, the README's results table: for each network (batch 1,
// random weights with non-trivial batch-norm statistics, logits), export it to ONNX,
// compile that file (NHWC inside, NCHW input kept) with default schedules, and with the
// tuned records of --records FILE when given (ranked at each thread count compared, as
// `tensortune compile --threads N`), then compare with ONNX Runtime at each
// thread count (same weights, same seeded input, interleaved rounds, medians). Beside the
// ratio of medians: the paired ratio, the median of each round's ratio (both engines timed
// within a second of each other, so a shared host's slow phases hit both), and the ratio
// of the fastest measurements; how far the three disagree shows how much is the noise.
//
//   npx tsx bench/compare-ort.ts [--networks mobilenet,resnet-18,resnet-50] [--threads 1,2] [--batch 1[,16]]
//                                [--records tuned.jsonl[+more.jsonl][,other.jsonl]] [--image-size N] [--rounds 5] [--target "llvm -mcpu=native"]
//                                [--opset N] [--record DIR]
//
// --record DIR also writes the run as a benchmark record there (bench/result-record.ts; the
// machine's peak measured before and after the run): bench/results to publish it in
// docs/performance.md (`npm run docs:performance`).
//
// The transformers (vit-s16, bert-base) are written at opset 17 (LayerNormalization) unless
// --opset says otherwise (13: LayerNorm decomposed), the others at 14; bert-base's int64
// inputs get tt_bench's 0/1 ids and mask on both sides. Its output is the hidden state, not
// logits: the top-1 column says n/a.
//
// Several logs (comma-separated) give one tuned row each: an A/B of two logs of one network
// (say, before and after a pass appended to it) in one run. Logs joined by `+` are read
// together as one (`--networks bert-base,vit-s16 --records bert.jsonl+vit.jsonl`: each
// network's records from its own log, one tuned row per network).
// Records are matched by workload key: an ONNX export of a builtin network has the same
// tasks as the builtin network, so records tuned on `mobilenet` apply to mobilenet.onnx.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { compareWithOnnxRuntime, minRatio, type CompareReport } from '../engine/compare/compare';
import { compileNetwork } from '../engine/app/compile';
import { parseTarget } from '../engine/target';
import { benchArgs } from './args';
import { benchOpset, inputSizeText, writeNetworkOnnx } from './onnx-network';
import { measurePeaks, roundTo, thisMachine, writeVsOnnxRuntime, type VsReferenceRow } from './result-record';

const USAGE = 'npx tsx bench/compare-ort.ts [--networks mobilenet,resnet-18,resnet-50] [--threads 1,2] [--batch 1[,16]] [--records tuned.jsonl[+more.jsonl][,other.jsonl]] [--image-size N] [--rounds 5] [--target "llvm -mcpu=native"] [--opset N] [--record DIR]';

async function main(): Promise<void> {
  const args = benchArgs('bench/compare-ort.ts', USAGE, { networks: 'mobilenet,resnet-18,resnet-50', threads: '1,2', batch: '1', records: '', 'image-size': '', rounds: '5', target: 'llvm -mcpu=native', opset: '', record: '' });
  const networks = args.list('networks');
  const threads = args.ints('threads');
  const records = args.str('records');
  const imageSize = args.optInt('image-size');
  const sizeText = inputSizeText(imageSize);
  const rounds = args.int('rounds');
  const target = args.str('target');
  const batches = args.ints('batch');
  const opsetFlag = args.str('opset');
  const recordDir = args.str('record');
  const machine = thisMachine();
  if (recordDir) machine.peak = await measurePeaks(threads, parseTarget(target), 'before');
  const results: VsReferenceRow[] = [];
  const work = mkdtempSync(path.join(tmpdir(), 'tt-compare-ort-'));
  const rows: string[] = [];
  try {
    for (const name of networks) for (const batch of batches) {
      const opset = benchOpset(name, opsetFlag ? Number(opsetFlag) : undefined);
      const onnx = writeNetworkOnnx(work, name, imageSize, { batch, opset });
      const variants: { schedules: string; records?: string[]; tuning?: string }[] = [{ schedules: 'default' }];
      for (const variant of records.split(',').filter((f) => f !== '')) {
        const logs = variant.split('+').filter((f) => f !== '');
        const tuning = logs.map((f) => path.basename(f)).join('+');
        variants.push({ schedules: `tuned (${tuning})`, records: logs, tuning });
      }
      for (const [i, v] of variants.entries()) {
        // Default schedules do not depend on the thread count: one build. Records are ranked
        // at the count each run uses (`tensortune compile --threads N`), as a user deploying
        // at that count compiles.
        const builds = new Map<number, string>();
        for (const t of v.records ? threads : [threads[0]]) {
          const outDir = path.join(work, `${name}-b${batch}-${i}-${t}`);
          await compileNetwork({ model: onnx, target, outDir, records: v.records, ...(v.records ? { threads: t } : {}), log: () => undefined });
          builds.set(t, outDir);
        }
        for (const t of threads) {
          const outDir = builds.get(t) ?? builds.get(threads[0])!;
          const r: CompareReport = await compareWithOnnxRuntime({ modelDir: outDir, threads: t, rounds });
          const err = Math.max(...r.outputs.map((o) => o.max_abs_err));
          const scale = Math.max(...r.outputs.map((o) => o.max_abs_value));
          const top1 = r.outputs.every((o) => o.shape[o.shape.length - 1] === 1000) ? (r.top1.agree ? 'yes' : 'NO') : 'n/a';
          const row = `| ${name} | ${batch} | ${v.schedules} | ${t} | ${r.tensortune_median_ms.toFixed(2)} | ${r.onnxruntime_median_ms.toFixed(2)} | ${r.ratio.toFixed(2)} | ${(r.paired_ratio ?? NaN).toFixed(2)} | ${minRatio(r).toFixed(2)} | ${err.toExponential(1)} (of ${scale.toExponential(1)}) | ${top1} |`;
          rows.push(row);
          console.error(row);
          results.push({
            network: name, schedules: v.records ? 'tuned' : 'default', ...(v.tuning ? { tuning: v.tuning } : {}), threads: t, batch,
            oursMs: roundTo(r.tensortune_median_ms), referenceMs: roundTo(r.onnxruntime_median_ms), ratio: roundTo(r.ratio, 3),
            ...(r.paired_ratio ? { paired: roundTo(r.paired_ratio, 3) } : {}), fastest: roundTo(minRatio(r), 3), maxAbsErr: Number(err.toExponential(2)),
            ...(top1 === 'n/a' ? {} : { top1: top1 === 'yes' }),
          });
        }
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  console.log(`tensortune vs ONNX Runtime: ${sizeText}, target "${target}", ${rounds} interleaved rounds, medians`);
  console.log('| network | batch | schedules | threads | tensortune ms | onnxruntime ms | ratio | paired ratio | ratio of fastest | max abs err (of max abs output) | top-1 agrees |');
  console.log('|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) console.log(r);
  if (recordDir) {
    machine.peak!.push(...await measurePeaks(threads, parseTarget(target), 'after'));
    const file = writeVsOnnxRuntime('bench/compare-ort.ts', target, machine, results, `${sizeText}, ${rounds} interleaved rounds, medians`, recordDir);
    console.log(`record: ${file}`);
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
