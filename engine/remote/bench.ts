// `benchmark --runner`: a compiled model timed on a device. model.so and params.bin travel
// in the request; the device's tt_remote loads the model through the ABI, fills the inputs
// with the seeded random data tt_bench uses, runs tt_common's timing loop and returns the
// per-run times and the summary (computed by tt_common's tt_compute_stats, as tt_bench's).
// The first live device of the runners runs it.

import { promises as fs } from 'node:fs';
import { UserError } from '../errors';
import type { BenchResult } from '../native/bench';
import { ABI_VERSION } from '../runtime/abi';
import { ModelRunError } from '../runtime/errors';
import type { Target } from '../target';
import { checkRemoteBenchTarget, describeDevice } from './open';
import { RemotePool } from './pool';

export interface RemoteBenchOptions {
  runners: readonly string[];
  /** Where the runners came from, for messages (`--runner`, `targets.board.runner`). */
  where: string;
  /** The compiled model's target (its manifest's): the worker is built for it. */
  target: Target;
  model: string;
  params: string;
  repeat: number;
  number?: number;
  minRepeatMs: number;
  threads?: number;
  seed: number;
  /** For the whole request (default 10 minutes: emulators are slow). */
  timeoutMs?: number;
  log?: (line: string) => void;
}

/** The three lines tt_bench prints (each cell centred in 12 columns, as print_row does). */
export function formatSummary(r: Pick<BenchResult, 'mean_ms' | 'median_ms' | 'max_ms' | 'min_ms' | 'std_ms'>): string {
  const row = (cells: string[]): string => cells.map((c) => {
    const pad = Math.max(0, 12 - c.length);
    return `${' '.repeat(Math.floor(pad / 2))}${c}${' '.repeat(pad - Math.floor(pad / 2))}`;
  }).join(' ').trimEnd();
  const values = [r.mean_ms, r.median_ms, r.max_ms, r.min_ms, r.std_ms].map((v) => v.toFixed(4));
  return ['Execution time summary:', row(['mean (ms)', 'median (ms)', 'max (ms)', 'min (ms)', 'std (ms)']), row(values)].join('\n');
}

export async function runRemoteBench(o: RemoteBenchOptions): Promise<BenchResult & { device: string }> {
  checkRemoteBenchTarget(o.target, o.where);
  const pool = new RemotePool(o.runners, o.target, o.where, { log: o.log });
  try {
    const [{ device, info }] = await pool.open();
    const [model, params] = await Promise.all([fs.readFile(o.model), fs.readFile(o.params)]);
    const warmup = 1;
    const fields: (string | [string, Buffer])[] = [
      ['model', model], ['params', params], `repeat ${o.repeat}`, `number ${o.number ?? 5}`, `min_repeat_ms ${o.minRepeatMs}`,
      `warmup ${warmup}`, `seed ${o.seed}`, `timeout_ms ${o.timeoutMs ?? 600_000}`, ...(o.threads ? [`threads ${o.threads}`] : []),
    ];
    const started = performance.now();
    let answer;
    try {
      answer = await device.request('bench', fields, (o.timeoutMs ?? 600_000) + 60_000);
    } catch (e) {
      throw new UserError(`benchmark ${o.where}: ${(e as Error).message}`);
    }
    const r = answer.reply;
    if (!r.ok) throw new ModelRunError(`${o.model} on ${device.label}: ${r.message ?? r.error}`);
    const num = (k: string): number => Number(r[k]);
    const result = {
      mean_ms: num('mean_ms'), median_ms: num('median_ms'), max_ms: num('max_ms'), min_ms: num('min_ms'), std_ms: num('std_ms'),
      threads: r.threads ?? 1, repeat: o.repeat, number: r.number ?? 1, warmup, min_repeat_ms: o.minRepeatMs, seed: o.seed,
      runs_ms: r.runs_ms ?? [], abi_version: ABI_VERSION, cpu_ms: r.cpu_ms ?? -1,
      // The device's (-1: it cannot say): this machine's load says nothing about it.
      cores: info.cores, load_before: num('load_before'), load_after: num('load_after'), seconds: (performance.now() - started) / 1000, others_cores: null,
      warnings: device.runner.emulator ? [`measured under an emulator (${device.runner.template.split(/\s+/)[0]}): these timings are not performance figures`] : [],
      device: `${device.label}: ${describeDevice(info)}`,
    };
    return { ...result, summary: formatSummary(result) };
  } finally {
    await pool.close();
  }
}

/** '1 thread(s) of 2 core(s) on device 1 (...): aarch64, ..., 10 measurement(s) of 5 run(s)' */
export function remoteSetupLine(r: BenchResult & { device?: string }): string {
  return `${r.threads} thread(s) of ${r.cores} core(s) on ${r.device ?? 'the device'}; ${r.repeat} measurement(s) of ${r.number} run(s)` +
    `${r.min_repeat_ms > 0 ? ` (>= ${r.min_repeat_ms} ms each)` : ''}; device load average ${r.load_before.toFixed(2)} before, ${r.load_after.toFixed(2)} after`;
}
