// Two threads, quiet and contended: for each network (default schedules, or --records),
// tensortune and ONNX Runtime at 1 and 2 threads on a quiet machine, then at 2 threads while
// a third process burns one core, all through the same interleaved comparison
// (engine/compare). Prints each engine's 2-thread speed-up (1-thread ms / 2-thread ms) and
// how much a busy core slows each (contended ms / quiet ms), so both are ratios from one run.
// --variants runs the whole set once per environment of the model runner, e.g.
// "default,TT_POOL_SPIN_US=0" (the kernels' thread pool, native/pool/tt_pool.c, reads
// TT_POOL_SPIN_US; ONNX Runtime ignores them). Join several variables of one variant with '+'.
//
//   npx tsx bench/contention.ts [--networks mobilenet,resnet-18] [--rounds 3] [--records FILE]
//                               [--variants default,TT_POOL_SPIN_US=0] [--image-size N]

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { compareWithOnnxRuntime, type CompareReport } from '../engine/compare/compare';
import { compileNetwork } from '../engine/app/compile';
import { benchArgs } from './args';
import { inputSizeText, writeNetworkOnnx } from './onnx-network';

const USAGE = 'npx tsx bench/contention.ts [--networks mobilenet,resnet-18] [--rounds 3] [--records FILE] [--variants default,TT_POOL_SPIN_US=0] [--image-size N]';

/** A process that keeps one core busy until killed. */
function burnOneCore(): ChildProcess {
  return spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
}

/** Runs `f` with `env` set in this process's environment (inherited by the model runner). */
async function withEnv<T>(env: Record<string, string>, f: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    return await f();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

async function main(): Promise<void> {
  const args = benchArgs('bench/contention.ts', USAGE, { networks: 'mobilenet,resnet-18', rounds: '3', records: '', variants: 'default', 'image-size': '' });
  const networks = args.list('networks');
  const rounds = args.int('rounds');
  const records = args.str('records');
  const imageSize = args.optInt('image-size');
  const sizeText = inputSizeText(imageSize);
  const variants = args.list('variants').map((v) => {
    if (v === 'default') return { name: v, env: {} as Record<string, string> };
    const env = Object.fromEntries(v.split('+').map((kv) => kv.split('=') as [string, string]));
    return { name: v, env };
  });
  const work = mkdtempSync(path.join(tmpdir(), 'tt-contention-'));
  const rows: string[] = [];
  try {
    for (const name of networks) {
      const onnx = writeNetworkOnnx(work, name, imageSize);
      const modelDir = path.join(work, name);
      await compileNetwork({ model: onnx, target: 'llvm -mcpu=native', outDir: modelDir, records: records ? [records] : undefined, log: () => undefined });
      for (const v of variants) {
        const run = (threads: number): Promise<CompareReport> => withEnv(v.env, () => compareWithOnnxRuntime({ modelDir, threads, rounds }));
        const one = await run(1);
        const two = await run(2);
        const burner = burnOneCore();
        let busy: CompareReport;
        try {
          busy = await run(2);
        } finally {
          burner.kill('SIGKILL');
        }
        const r = (a: number, b: number): string => (a / b).toFixed(2);
        const row = `| ${name} | ${v.name} | ${one.tensortune_median_ms.toFixed(2)} / ${two.tensortune_median_ms.toFixed(2)} / ${busy.tensortune_median_ms.toFixed(2)} | ` +
          `${one.onnxruntime_median_ms.toFixed(2)} / ${two.onnxruntime_median_ms.toFixed(2)} / ${busy.onnxruntime_median_ms.toFixed(2)} | ` +
          `${r(one.tensortune_median_ms, two.tensortune_median_ms)} | ${r(one.onnxruntime_median_ms, two.onnxruntime_median_ms)} | ` +
          `${r(busy.tensortune_median_ms, two.tensortune_median_ms)} | ${r(busy.onnxruntime_median_ms, two.onnxruntime_median_ms)} | ` +
          `${r(two.tensortune_median_ms, two.onnxruntime_median_ms)} / ${r(busy.tensortune_median_ms, busy.onnxruntime_median_ms)} |`;
        rows.push(row);
        console.error(row);
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  console.log(`2 threads quiet and contended (a third process burning one core): batch 1, ${sizeText}, ${records ? `records ${records}` : 'default schedules'}, ${rounds} interleaved rounds, medians`);
  console.log('| network | runner env | tensortune ms 1T / 2T / 2T busy | ORT ms 1T / 2T / 2T busy | tensortune 2T speed-up | ORT 2T speed-up | tensortune busy slowdown | ORT busy slowdown | ours/ORT 2T quiet / busy |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const row of rows) console.log(row);
}

if (require.main === module) main().catch((e: unknown) => { console.error(e); process.exitCode = 1; });
