// Where a network's time goes, layer by layer, against ONNX Runtime: our per-kernel profile
// (`tensortune benchmark --profile`, each kernel call timed) beside ONNX Runtime's own
// per-node profile (its session option enableProfiling), on the same ONNX export of a
// builtin network, the same thread count, in interleaved rounds (ours, then ONNX Runtime),
// medians per layer over the rounds. The paired ratio column is the median over rounds of
// each round's ratio: on a host that switches speed every few minutes, many short rounds
// (say --rounds 15 --runs 6) give a per-layer figure the switches do not decide.
//
//   npx tsx bench/profile-vs-ort.ts [--network mobilenet] [--records tuned.jsonl] [--threads 1]
//                                   [--rounds 5] [--runs 20] [--image-size N] [--batch 1]
//
// Layers are paired in execution order: each of our kernel calls with the next ONNX Runtime
// node of the same kind (conv, dense/Gemm, pool) and the same number of output elements.
// ONNX Runtime fuses a conv with its batch norm and ReLU into one Conv node, as we fuse them
// into one task, so for the networks here a call pairs with one node. Nodes left unpaired
// (its NCHWc layout reorders, a separate bias Add) and our calls left unpaired are listed
// as such, so the totals add up. Profiling adds a timer read around every node on both
// sides; the per-run totals printed at the end say how far each profile's sum is from the
// engine's unprofiled time.

import { mkdtempSync, promises as fs, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { manifestFiles, readManifest } from '../engine/compile/manifest';
import { compileNetwork } from '../engine/app/compile';
import { median, pairedRatio } from '../engine/compare/compare';
import { loadOnnxRuntime, type OrtModule, type OrtSession } from '../engine/compare/ort';
import { numElements } from '../engine/ir/tensor';
import { runBench } from '../engine/native/bench';
import { uniform } from '../engine/runtime/random';
import { writeFloat32File } from '../engine/runtime/rawfile';
import { benchArgs } from './args';
import { writeNetworkOnnx } from './onnx-network';

const USAGE = 'npx tsx bench/profile-vs-ort.ts [--network mobilenet] [--records tuned.jsonl] [--threads 1] [--rounds 5] [--runs 20] [--image-size N] [--batch 1]';

/** onnxruntime-node's profiling, which engine/compare/ort.ts does not use. */
type ProfilingOrt = OrtModule & {
  InferenceSession: { create(model: string, options: Record<string, unknown>): Promise<OrtSession & { endProfiling(): void }> };
};

/** One event of ONNX Runtime's profile file (Chrome trace format). */
interface OrtEvent { cat: string; name: string; dur: number; args?: { op_name?: string; output_type_shape?: Record<string, number[]>[] } }

/** What a layer is, to pair our kernels with ONNX Runtime's nodes. */
const kindOfTask = (desc: string): string =>
  /^(conv2d|depthwise|winograd)/.test(desc) ? 'conv' : /^dense/.test(desc) ? 'dense' : /pool/.test(desc) ? 'pool' : desc.split(/[+ ]/)[0];
const kindOfNode = (op: string): string =>
  op === 'Conv' || op === 'FusedConv' ? 'conv' : op === 'Gemm' || op === 'MatMul' || op === 'FusedGemm' ? 'dense' : /Pool$/.test(op) ? 'pool' : op;
const outputsOfTask = (desc: string): number => numElements((desc.split(' -> ')[1] ?? '').split('x').map(Number));

async function main(): Promise<void> {
  const args = benchArgs('bench/profile-vs-ort.ts', USAGE, { network: 'mobilenet', records: '', threads: '1', rounds: '5', runs: '20', 'image-size': '', batch: '1' });
  const name = args.str('network');
  const records = args.str('records');
  const threads = args.int('threads');
  const rounds = args.int('rounds');
  const runs = args.int('runs');
  const imageSize = args.optInt('image-size');
  const batch = args.int('batch');
  const work = mkdtempSync(path.join(tmpdir(), 'tt-profile-vs-ort-'));
  try {
    const onnx = writeNetworkOnnx(work, name, imageSize, { batch });
    const outDir = path.join(work, 'model');
    await compileNetwork({ model: onnx, target: 'llvm -mcpu=native', outDir, records: records ? [records] : undefined, ...(records ? { threads } : {}), log: () => undefined });
    const m = readManifest(outDir);
    const files = manifestFiles(outDir, m);
    const inputs = m.inputs.map((inp, i) => uniform(numElements(inp.shape), 0, i));
    const inputFiles: Record<string, string> = {};
    await Promise.all(m.inputs.map(async (inp, i) => {
      inputFiles[inp.name] = path.join(work, `input${i}.bin`);
      await writeFloat32File(inputFiles[inp.name], inputs[i]);
    }));

    const ort = loadOnnxRuntime() as ProfilingOrt;
    const session = await ort.InferenceSession.create(onnx, {
      intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all',
      enableProfiling: true, profileFilePrefix: path.join(work, 'ort-profile'),
    });
    const feeds = Object.fromEntries(session.inputNames.map((n, i) => [n, new ort.Tensor('float32', inputs[i], m.inputs[i].shape)]));

    // Interleaved rounds: our profile (runs calls), then ONNX Runtime's (runs runs).
    const ours: number[][] = []; // per round, per call: mean ms per run
    const oursRun: number[] = [], ortRun: number[] = [];
    await session.run(feeds); // warm-up: its nodes come before the first model_run event, left out below
    let symbols: string[] = [];
    for (let r = 0; r < rounds; r++) {
      const res = await runBench({ model: files.library, params: files.params, threads, inputs: inputFiles, repeat: 3, number: Math.max(1, Math.round(runs / 3)), minRepeatMs: 0, profile: true });
      ours.push(res.profile!.map((c) => c.ms));
      symbols = res.profile!.map((c) => c.symbol);
      oursRun.push(res.median_ms);
      const t0 = performance.now();
      for (let k = 0; k < runs; k++) await session.run(feeds);
      ortRun.push((performance.now() - t0) / runs);
    }
    session.endProfiling();
    const profileFile = (await fs.readdir(work)).find((f) => f.startsWith('ort-profile') && f.endsWith('.json'));
    if (!profileFile) throw new Error('ONNX Runtime wrote no profile');
    const events = JSON.parse(await fs.readFile(path.join(work, profileFile), 'utf8')) as OrtEvent[];

    // ONNX Runtime's nodes in execution order, each with its timings per round. A run's
    // model_run event is written after its nodes' events, so the nodes before the first one
    // are the warm-up's and the nodes after the n-th one belong to timed run n.
    const nodeTimes = new Map<string, { op: string; outputs: number; us: number[][] }>();
    let seenRuns = 0;
    for (const e of events) {
      if (e.cat === 'Session' && e.name === 'model_run') { seenRuns++; continue; }
      if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time') || seenRuns < 1) continue;
      const node = e.name.slice(0, -'_kernel_time'.length);
      const shape = Object.values(e.args?.output_type_shape?.[0] ?? {})[0] ?? [];
      const entry = nodeTimes.get(node) ?? { op: e.args?.op_name ?? '?', outputs: numElements(shape), us: Array.from({ length: rounds }, () => []) };
      entry.us[Math.min(rounds - 1, Math.floor((seenRuns - 1) / runs))].push(e.dur);
      nodeTimes.set(node, entry);
    }
    const nodes = [...nodeTimes].map(([node, t]) => ({
      node, op: t.op, outputs: t.outputs, ms: median(t.us.flat()) / 1000,
      perRound: t.us.map((us) => (us.length ? median(us) / 1000 : NaN)),
    }));

    // Our calls, each with its median over the rounds and its time in each round.
    const kernels = new Map(m.kernels.map((k) => [k.symbol, k]));
    const calls = symbols.map((symbol, i) => ({
      desc: kernels.get(symbol)?.desc ?? symbol, schedule: kernels.get(symbol)?.schedule ?? '?',
      ms: median(ours.map((r) => r[i])), perRound: ours.map((r) => r[i]),
    }));
    // The paired ratio of a layer: the median over rounds of that round's ratio (compare.ts,
    // one measurement per round), which the host's switches of speed between rounds do not move.
    const paired = (a: readonly number[], b: readonly number[]): number => pairedRatio(a, b, 1);

    // Pair in order.
    const rows: string[] = [];
    let next = 0, oursPaired = 0, theirsPaired = 0;
    const oursPairedRounds = Array<number>(rounds).fill(0), theirsPairedRounds = Array<number>(rounds).fill(0);
    const unpairedOurs: string[] = [];
    for (const c of calls) {
      const want = kindOfTask(c.desc), outputs = outputsOfTask(c.desc);
      const j = nodes.findIndex((n, k) => k >= next && kindOfNode(n.op) === want && n.outputs === outputs);
      if (j < 0) { unpairedOurs.push(`${c.desc} ${c.ms.toFixed(4)} ms`); continue; }
      for (let k = next; k < j; k++) rows.push(`| | | | ${nodes[k].node} (${nodes[k].op}, not paired) | ${nodes[k].ms.toFixed(4)} | | |`);
      const n = nodes[j];
      rows.push(`| ${c.desc} | ${c.schedule} | ${c.ms.toFixed(4)} | ${n.node} (${n.op}) | ${n.ms.toFixed(4)} | ${(c.ms / n.ms).toFixed(2)} | ${paired(c.perRound, n.perRound).toFixed(2)} |`);
      oursPaired += c.ms;
      theirsPaired += n.ms;
      for (let r = 0; r < rounds; r++) { oursPairedRounds[r] += c.perRound[r]; theirsPairedRounds[r] += n.perRound[r]; }
      next = j + 1;
    }
    for (let k = next; k < nodes.length; k++) rows.push(`| | | | ${nodes[k].node} (${nodes[k].op}, not paired) | ${nodes[k].ms.toFixed(4)} | | |`);

    const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);
    console.log(`${name}${records ? ` tuned (${path.basename(records)})` : ', default schedules'}, ${threads} thread(s), ${rounds} interleaved rounds; ` +
      `medians per layer (ours: ${rounds} profiles of ${3 * Math.max(1, Math.round(runs / 3))} runs; ONNX Runtime ${rounds * runs} profiled runs)`);
    console.log('| our task | schedule | ours ms | ONNX Runtime node | ORT ms | ours / ORT | paired ratio |');
    console.log('|---|---|---|---|---|---|---|');
    for (const r of rows) console.log(r);
    console.log(`| paired layers | | ${oursPaired.toFixed(3)} | | ${theirsPaired.toFixed(3)} | ${(oursPaired / theirsPaired).toFixed(3)} | ${paired(oursPairedRounds, theirsPairedRounds).toFixed(3)} |`);
    console.log(`| all | | ${sum(calls.map((c) => c.ms)).toFixed(3)} | | ${sum(nodes.map((n) => n.ms)).toFixed(3)} | ${(sum(calls.map((c) => c.ms)) / sum(nodes.map((n) => n.ms))).toFixed(3)} | |`);
    if (unpairedOurs.length) console.log(`our calls not paired: ${unpairedOurs.join('; ')}`);
    console.log(`whole runs, median of the rounds: ours ${median(oursRun).toFixed(3)} ms (tt_bench times them unprofiled, before its profiled runs), ONNX Runtime ${median(ortRun).toFixed(3)} ms (profiling on) (ratio ${(median(oursRun) / median(ortRun)).toFixed(3)}, paired ratio ${paired(oursRun, ortRun).toFixed(3)})`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
