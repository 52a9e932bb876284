// The per-kernel profile of a compiled model, as TVM's debug executor prints it: where a
// run's time goes. tt_bench --profile times every kernel call (model.c's tt_run_profiled);
// here the calls are summed per kernel of the manifest and set against the kernel's FLOPs
// and the machine's peak.

import { UserError } from '../errors';
import type { CallProfile } from '../native/bench';
import type { Manifest } from './manifest';
import { fixed, unitOf } from '../units';

export interface KernelProfileRow {
  symbol: string;
  /** The task the kernel computes (`conv2d_nhwc+add+relu 1x56x56x64 -> ...`). */
  desc: string;
  schedule: 'default' | 'tuned';
  /** Calls per run (a kernel shared by several layers is called once for each). */
  calls: number;
  /** Mean ms per run, all its calls together. */
  ms: number;
  /** Share of the sum over all calls. */
  share: number;
  gflops: number;
  /** Share of `peakGflops`, when one was given. */
  peak?: number;
}

/**
 * Per-kernel rows, slowest first. A call to a kernel the manifest does not list (the model
 * and its manifest disagree) is a UserError naming `manifestFile`.
 */
export function kernelProfile(calls: readonly CallProfile[], manifest: Manifest, peakGflops?: number, manifestFile = 'manifest.json'): KernelProfileRow[] {
  const kernels = new Map(manifest.kernels.map((k) => [k.symbol, k]));
  const bySymbol = new Map<string, { calls: number; ms: number }>();
  for (const c of calls) {
    if (!kernels.has(c.symbol)) throw new UserError(`${manifestFile}: the model calls kernel '${c.symbol}', which the manifest does not list: recompile the model`);
    const r = bySymbol.get(c.symbol) ?? { calls: 0, ms: 0 };
    r.calls++;
    r.ms += c.ms;
    bySymbol.set(c.symbol, r);
  }
  const total = calls.reduce((a, c) => a + c.ms, 0);
  return [...bySymbol].map(([symbol, r]) => {
    const k = kernels.get(symbol)!;
    // A model that runs its batch per sample times each call over all its samples.
    const gflops = r.ms > 0 ? (k.flops * r.calls * (manifest.samples ?? 1)) / (r.ms * 1e-3) / 1e9 : 0;
    return {
      symbol, desc: k.desc, schedule: k.schedule, calls: r.calls, ms: r.ms, share: total > 0 ? r.ms / total : 0, gflops,
      ...(peakGflops !== undefined && peakGflops > 0 ? { peak: gflops / peakGflops } : {}),
    };
  }).sort((a, b) => b.ms - a.ms);
}

/** The profile as a table: one line per kernel, then the total. */
export function formatKernelProfile(rows: readonly KernelProfileRow[], peakGflops?: number, threads?: number): string[] {
  const total = rows.reduce((a, r) => a + r.ms, 0);
  // One unit for the column, that of the total (µs for a model that runs under 1 ms).
  const unit = unitOf([total]);
  const peakNote = peakGflops !== undefined ? `; peak ${peakGflops.toFixed(1)} GFLOP/s at ${threads ?? 1} thread(s), measured now` : '';
  const lines = [
    `Per-kernel profile (mean of the profiled runs${peakNote}):`,
    `  ${unit.name.padStart(9)}  ${'share'.padStart(6)}  ${'GFLOP/s'.padStart(8)}  ${'% peak'.padStart(6)}  calls  schedule  task`,
  ];
  for (const r of rows) {
    lines.push(
      `  ${fixed(r.ms, unit).padStart(9)}  ${`${(r.share * 100).toFixed(1)}%`.padStart(6)}  ${r.gflops.toFixed(1).padStart(8)}  ` +
      `${(r.peak !== undefined ? `${(r.peak * 100).toFixed(1)}%` : '-').padStart(6)}  ${String(r.calls).padStart(5)}  ${r.schedule.padEnd(8)}  ${r.desc}`,
    );
  }
  lines.push(`  ${fixed(total, unit).padStart(9)}  total of the kernel calls (the run's time also holds what lies between them)`);
  return lines;
}
