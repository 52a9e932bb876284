// The network pass: the end of a network's tune times each task's confirmed schedules where
// compile will run them, inside the compiled network, and appends those timings as the
// task's latest confirmation pass, which compile then ranks by (records/best.ts).
//
// Why: the confirmation pass (app/tune.ts confirmBest) times each schedule alone, with
// the caches flushed. In the network a layer starts with its input warm from the layer
// before and its neighbours' data around it, and some schedules that win alone lose there:
// tuned stride-2 depthwise convs (their padded input copied into a tile
// buffer) were 16-45% slower in the network than alone, while the defaults were not, and
// compile kept them because the pass that ranks them could not see it.
//
// How: variant v of the network gives every task its v-th ranked schedule (the schedules the
// latest pass timed come first; a task with fewer candidates wraps around), so V compiles
// of the network time V schedules of every task at once. The variants run in rounds, in
// alternating order, each a profiled run of the library (tt_bench --profile times every
// kernel call); a task's time in a run is the mean of its calls. A schedule's record holds
// one timing per round and variant that ran it, and every record of the pass carries the
// same `pass` and `scope: "network"`.
//
// A layer that can run as Winograd has two tasks, and compile picks between them by their
// best records (choose-winograd.ts), so both must be timed in the same place: the odd
// variants are compiled with Winograd off (the direct conv everywhere), the even ones
// choose as compile does, and where a layer's Winograd task never ran (compile never chose
// it), neither of its tasks gets network records, so compile still compares the two by
// their timings alone.
//
// TVM has no such pass: its compile applies the best of the records, timed alone.

import { promises as fs, rmSync } from 'node:fs';
import path from 'node:path';
import type { ModelSpec } from '../frontend/load';
import { runBench } from '../native/bench';
import { CONFIRM_POLICY, matchesRecord, rankedByWorkload, type RankedSchedule } from '../records/best';
import { readRecordFiles, type LogEntry } from '../records/log';
import { makeRecord } from '../records/make';
import type { TuningRecord } from '../records/record';
import { recordId } from '../records/store';
import { stepsKey, type Step } from '../schedule/steps';
import { ownedTempDir } from '../temp-dirs';
import { manifestFiles, readManifest } from '../compile/manifest';
import { compileNetwork } from './compile';

/** Rounds of the variants (each variant profiled once per round, the order reversed every other round). */
export const NETWORK_PASS_ROUNDS = 4;
/** Profiled runs of a variant per round: tt_bench's repeats, each of at least this long. */
const REPEATS = 3;
const MIN_REPEAT_MS = 30;

export interface NetworkPassOptions {
  model: ModelSpec;
  /** Canonical target string and fingerprint the records are matched on (a CPU target of this machine). */
  target: string;
  fingerprint: string;
  /**
   * The network's tasks (the tune's), each with its default schedule and, for a Winograd
   * task, the key of the direct task it is the alternative of: the pass times these only.
   */
  tasks: readonly { key: string; defaultSteps: readonly Step[]; alternativeOf?: string }[];
  /** The log the pass reads and appends to. */
  records: string;
  /** Further logs read, never written. */
  readRecords?: string[];
  /** Schedules of each task's ranking timed, besides its default: the variants compiled are at most one more. */
  top: number;
  /** The network's threads in the timed runs (the measurements' threads: 1 by default). */
  threads: number;
  rounds?: number;
  /** Appends the pass's records (to `records`). */
  append: (records: TuningRecord[]) => Promise<void>;
  log?: (line: string) => void;
  warn?: (message: string) => void;
  signal?: AbortSignal;
}

export interface NetworkPassResult {
  /** Networks compiled and timed. */
  variants: number;
  /** Tasks with schedules timed in the network (and records appended). */
  tasks: number;
  /** Records appended. */
  records: number;
  seconds: number;
}

/**
 * The schedules of each task the pass times: the first `top` of compile's ranking and the
 * default (the schedule a tuned one must beat where it runs), by its latest valid record.
 */
function candidatesOf(ranked: Map<string, RankedSchedule<LogEntry>[]>, tasks: NetworkPassOptions['tasks'], top: number): Map<string, TuningRecord[]> {
  const out = new Map<string, TuningRecord[]>();
  for (const task of tasks) {
    const list = ranked.get(task.key);
    if (!list) continue;
    const picked = list.slice(0, top).map((s) => s.entry.record);
    const dflt = stepsKey(task.defaultSteps);
    const defaultRecord = list.find((s) => stepsKey(s.entry.record.steps) === dflt)?.entry.record;
    if (defaultRecord && !picked.includes(defaultRecord)) picked.push(defaultRecord);
    out.set(task.key, picked);
  }
  return out;
}

/**
 * Whether some task's schedules were confirmed alone after the network's last network pass
 * (or there is none): after a tune that confirmed something, and once on a log confirmed
 * before the network pass existed, so re-running a finished tune adds it. A task the pass
 * left without records of its own (a Winograd twin that no variant chose) does not count
 * when its alone pass is older than the network pass.
 */
function needsNetworkPass(entries: readonly LogEntry[], opts: Pick<NetworkPassOptions, 'tasks' | 'target' | 'fingerprint' | 'threads'>): boolean {
  const keys = new Set(opts.tasks.map((t) => t.key));
  let alone = -Infinity, network = -Infinity;
  for (const { record: r } of entries) {
    if (r.policy !== CONFIRM_POLICY || !keys.has(r.key) || !matchesRecord(r, opts)) continue;
    const time = Date.parse(r.time);
    if (r.scope === 'network') network = Math.max(network, time);
    else alone = Math.max(alone, time);
  }
  return alone > network;
}

/** Variant v's schedule of a task: its v-th candidate, wrapping around for a task with fewer. */
const pick = <T>(list: readonly T[], v: number): T => list[v % list.length];

/** Undefined when there was nothing to time (or the run was aborted). */
export async function networkPass(opts: NetworkPassOptions): Promise<NetworkPassResult | undefined> {
  const started = Date.now();
  const log = opts.log ?? (() => undefined);
  const rounds = opts.rounds ?? NETWORK_PASS_ROUNDS;
  const files = [...(opts.readRecords ?? []), opts.records];
  const entries = await readRecordFiles(files, { warn: opts.warn });
  const candidates = candidatesOf(rankedByWorkload(entries, opts), opts.tasks, opts.top);
  const variants = Math.max(0, ...[...candidates.values()].map((c) => c.length));
  if (variants < 2 || !needsNetworkPass(entries, opts)) return undefined;

  const work = ownedTempDir('tt-network-pass');
  try {
    // Compile each variant from a log that holds only its schedules: one record per task.
    const libs: { library: string; params: string; kernels: Map<string, { key: string; record?: string }>; want: Map<string, string> }[] = [];
    for (let v = 0; v < variants; v++) {
      if (opts.signal?.aborted) return undefined;
      const variantLog = path.join(work, `variant${v}.jsonl`);
      await fs.writeFile(variantLog, [...candidates.values()].map((c) => `${JSON.stringify(pick(c, v))}\n`).join(''));
      const outDir = path.join(work, `variant${v}`);
      // Its warnings are not the user's: the variant's log lacks the defaults' records on
      // purpose, and a tuned kernel that fails to compile runs its default, which the
      // record check below leaves out.
      await compileNetwork({
        ...opts.model, target: opts.target, fingerprint: opts.fingerprint, outDir, records: [variantLog],
        winograd: v % 2 === 0, log: () => undefined, warn: () => undefined,
      });
      const m = readManifest(outDir);
      // The record id each task's kernel carries when it runs the candidate (hashed once).
      const want = new Map([...candidates].map(([key, c]) => [key, recordId(pick(c, v))]));
      libs.push({ ...manifestFiles(outDir, m), kernels: new Map(m.kernels.map((k) => [k.symbol, { key: k.key, record: k.record }])), want });
    }

    // timings.get(key)[v]: the task's per-call ms in each run of variant v (only where the
    // kernel is the candidate's: a tuned kernel that failed to compile ran its default).
    const timings = new Map<string, number[][]>();
    for (let r = 0; r < rounds; r++) {
      const order = [...libs.keys()];
      if (r % 2 === 1) order.reverse();
      for (const v of order) {
        if (opts.signal?.aborted) return undefined;
        const res = await runBench({ model: libs[v].library, params: libs[v].params, threads: opts.threads, repeat: REPEATS, minRepeatMs: MIN_REPEAT_MS, profile: true });
        const perKey = new Map<string, number[]>();
        for (const call of res.profile ?? []) {
          const k = libs[v].kernels.get(call.symbol);
          if (!k) continue;
          if (k.record === undefined || k.record !== libs[v].want.get(k.key)) continue;
          perKey.set(k.key, [...(perKey.get(k.key) ?? []), call.ms]);
        }
        for (const [key, ms] of perKey) {
          const rows = timings.get(key) ?? Array.from({ length: variants }, () => []);
          rows[v].push(ms.reduce((a, b) => a + b, 0) / ms.length);
          timings.set(key, rows);
        }
      }
    }

    // A layer's two implementations are compared by network timings only if both ran.
    for (const t of opts.tasks) {
      if (t.alternativeOf !== undefined && timings.has(t.key) !== timings.has(t.alternativeOf)) {
        timings.delete(t.key);
        timings.delete(t.alternativeOf);
      }
    }

    // One record per schedule timed, with its timings of every round and variant.
    const pass = new Date(started).toISOString();
    const out: TuningRecord[] = [];
    let tasks = 0;
    for (const [key, rows] of timings) {
      const list = candidates.get(key)!;
      const costs = new Map<string, { record: TuningRecord; ms: number[] }>();
      rows.forEach((ms, v) => {
        if (ms.length === 0) return;
        const record = pick(list, v);
        const id = stepsKey(record.steps);
        costs.set(id, { record, ms: [...(costs.get(id)?.ms ?? []), ...ms] });
      });
      tasks += 1;
      for (const { record, ms } of costs.values()) {
        out.push(makeRecord({ steps: record.steps, costs_ms: ms, error: null, build_ms: 0, run_ms: 0 }, {
          task: { key, desc: record.desc }, target: opts.target, fingerprint: opts.fingerprint, seed: record.seed, threads: opts.threads,
          policy: CONFIRM_POLICY, pass, scope: 'network',
        }));
      }
    }
    await opts.append(out);
    const seconds = (Date.now() - started) / 1000;
    log(`network pass: ${variants} variant(s) of the network compiled and profiled ${rounds} time(s) each; ` +
      `${out.length} schedule(s) of ${tasks} task(s) timed where they run, in ${seconds.toFixed(1)} s; compile ranks them by these timings`);
    return { variants, tasks, records: out.length, seconds };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
