// compileNetwork: model reference + target (+ record logs) -> compiled model directory.
// The CLI's `compile` and the Nx compile executor both call it. With records, every task
// gets the best record measured on this target and machine (apply-records.ts); the rest
// keep their default schedules, or `strict` fails naming them.

import path from 'node:path';
import { UserError } from '../errors';
import { loadModel, type ModelSpec } from '../frontend/load';
import { tasksOfGroups } from '../graph/extract';
import { partition, type FusedGroup } from '../graph/fuse';
import { optimize } from '../graph/passes';
import { kernelThreads, samplePlan, type SamplePlan } from '../graph/per-sample';
import { cacheRoot } from '../native/build';
import { readRecordFiles } from '../records/log';
import { defaultSchedule } from '../schedule/defaults';
import { hardwareFingerprint, isGpu, kindOf, parseTarget } from '../target';
import { applyRecords } from '../compile/apply-records';
import { chooseWinograd } from '../compile/choose-winograd';
import type { MemoryLimit } from '../compile/memory-plan';
import { compileModel, type CompileResult } from '../compile/model';

export interface CompileNetworkOptions extends ModelSpec {
  /** Target string, e.g. "llvm -mcpu=native". */
  target: string;
  /** GPU targets: the host target string (default "llvm", this machine; "llvm -mtriple=..." cross-compiles the host library). */
  host?: string;
  outDir: string;
  /** Object cache (default <cacheRoot()>/kernels). */
  cacheDir?: string;
  /** Record log(s) whose best entries replace default schedules. */
  records?: string[];
  /** Fail when a task has no record instead of using its default schedule. */
  strict?: boolean;
  /** CPU targets: rank records at the thread count the model will run at (apply-records.ts); unset: each task's newest count. */
  threads?: number;
  /** CPU targets: run a 3x3 stride-1 conv as Winograd where its best record beats the direct conv's, or by TVM's rule without records (default true; choose-winograd.ts). */
  winograd?: boolean;
  /** Time limit of each compiler call (default COMPILER_TIMEOUT_MS); a tuned kernel past it falls back to its default schedule. */
  timeoutMs?: number;
  /** The hardware fingerprint records must match, when not this machine's: a device's behind a runner (engine/remote). */
  fingerprint?: string;
  /** The most memory the model may need to run (memory-plan.ts; default DEFAULT_MAX_MEMORY_BYTES). */
  memoryLimit?: MemoryLimit;
  log?: (line: string) => void;
  /** Warnings (broken record lines, records that no longer apply, tuned kernels that did not compile); default stderr. */
  warn?: (message: string) => void;
}

export async function compileNetwork(opts: CompileNetworkOptions): Promise<CompileResult> {
  const target = parseTarget(opts.target, 'target', opts.host);
  if (opts.threads !== undefined && isGpu(target)) throw new UserError(`--threads applies to CPU targets: the records of ${target.text} do not depend on host threads`);
  const model = loadModel(opts);
  // Optimised and partitioned once: the tasks the records apply to are the groups compiled.
  // A CPU model may run its batch one sample at a time (per-sample.ts), as tuningTasks' tasks assume.
  const plan: SamplePlan = isGpu(target) ? { graph: optimize(model.graph), samples: 1 } : samplePlan(optimize(model.graph));
  if (plan.samples > 1) opts.log?.(`batch: runs its ${plan.samples} samples one at a time (docs/tuning.md, "Batches")`);
  // A model that runs a sample per thread runs each kernel on one: its records rank at 1.
  const rankAt = opts.threads === undefined ? undefined : kernelThreads(plan.samples, opts.threads);
  if (rankAt !== undefined && rankAt !== opts.threads) opts.log?.(`records: ranked at ${rankAt} thread(s), as each of the ${opts.threads} threads runs whole samples with one-thread kernels`);
  let graph = plan.graph;
  let groups: readonly FusedGroup[] = plan.groups ?? partition(graph);
  const fingerprint = opts.fingerprint ?? hardwareFingerprint(target);
  let schedules;
  let directCosts: ReadonlyMap<string, number> = new Map();
  // Read once: both the direct schedules and the Winograd choice rank these records.
  const files = opts.records ?? [];
  const entries = files.length > 0 ? await readRecordFiles(files, { warn: opts.warn }) : [];
  if (files.length > 0 || opts.strict) {
    const applied = await applyRecords({
      tasks: tasksOfGroups(graph, groups), target: target.text, fingerprint,
      files, entries, threads: rankAt, strict: opts.strict, log: opts.log, warn: opts.warn,
      defaultOf: (task) => defaultSchedule(task.dag, kindOf(target).defaultOptions(target)),
    });
    schedules = applied.schedules;
    directCosts = applied.costs;
  }
  // CPU targets: a 3x3 stride-1 conv layer runs as Winograd where its record is faster, or
  // without a Winograd record where TVM's rule says so (choose-winograd.ts).
  if (!isGpu(target) && opts.winograd !== false) {
    const choice = await chooseWinograd(graph, groups, directCosts, { target: target.text, fingerprint, threads: rankAt, files, entries, warn: opts.warn, strict: opts.strict }, target.vectorLanes);
    ({ graph, groups } = choice);
    if (choice.schedules.size > 0) {
      schedules ??= new Map();
      for (const [key, s] of choice.schedules) schedules.set(key, s);
    }
    if (choice.eligible > 0) {
      opts.log?.(`winograd: ${choice.used} of ${choice.eligible} eligible layer(s) use Winograd` + choice.chosen.map((line) => `\n  ${line}`).join(''));
    }
  }
  // The manifest names an ONNX file by its base name, its path relative to the output and its
  // sha256: no machine path travels in a cached or copied model directory.
  return compileModel({
    name: model.file ? path.basename(model.file) : model.name, modelFile: model.file, outputNames: model.outputs,
    graph: model.graph, target, outDir: path.resolve(opts.outDir),
    cacheDir: path.resolve(opts.cacheDir ?? path.join(cacheRoot(), 'kernels')),
    schedules, partitioned: { graph, groups }, samples: plan.samples, fingerprint, timeoutMs: opts.timeoutMs, memoryLimit: opts.memoryLimit, log: opts.log, warn: opts.warn,
    ...(files.length > 0 && opts.threads !== undefined ? { recordsThreads: opts.threads } : {}),
  });
}
