// `nx compile <network>`: compileNetwork with the best record of each task that the
// workspace store holds for the target and this machine, whichever budget, machine or
// command measured it (tune outputs Nx restored are merged into the store first), default
// schedules elsewhere, into <outDir>/<network>/<target>/. The summary and the manifest say
// which budgets the records came from. With --watch, chokidar watches the config (and the file it extends), the
// model file and the store and recompiles on change; the object cache makes that
// incremental (only kernels whose source changed are rebuilt). It never tunes.

import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type { ExecutorContext } from '@nx/devkit';
import { formatRecordsUsed, recordsUsed } from '../../engine/compile/manifest';
import { configMemoryLimit } from '../../engine/compile/memory-plan';
import { compileNetwork } from '../../engine/app/compile';
import { describeKernels, kernelCounts, taskKeys } from '../../engine/cli/counts';
import { storeLogs } from '../../engine/records/store';
import { remoteFingerprint } from '../../engine/remote/open';
import { isGpu, parseTarget } from '../../engine/target';
import { targetRunners, type BudgetConfig } from '../../plugin/config';
import { tuneOutputFile, type ResolvedRun } from '../../plugin/resolve';
import { abortOnSignals, reporting, resolveFor, workspaceRelative, type ExecutorResult } from '../run';
import { absorbTuneOutputs } from '../store';
import type { CompileExecutorOptions } from './schema';

/**
 * Budgets of the config that were never tuned (nor restored) in this workspace for this
 * network and target, largest first: on a CI machine that usually means `-c <budget>` would
 * restore better records from the remote cache.
 */
function untriedBudgets(run: ResolvedRun): string[] {
  const size = (b: BudgetConfig): number => b.trials ?? (b.trialsPerTask ?? 0) * 1000 + (b.timeLimit ?? 0);
  return Object.entries(run.budgets)
    .filter(([name]) => !existsSync(tuneOutputFile(run.storeDir, run.network, run.targetName, name)))
    .sort((a, b) => size(b[1]) - size(a[1]))
    .map(([name]) => name);
}

async function compileOnce(options: CompileExecutorOptions, ctx: ExecutorContext): Promise<ExecutorResult & { watched: string[] }> {
  let watched: string[] = [path.resolve(ctx.root, options.config)];
  const result = await reporting('compile', async () => {
    const run = resolveFor('compile', options, ctx);
    const target = parseTarget(run.target.target, `targets.${run.targetName}.target`, run.target.host);
    // Records are ranked at the count the model runs at: the option's (refused for a GPU target), else a CPU target's (benchmark's default too).
    const threads = options.threads ?? (isGpu(target) ? undefined : run.target.threads);
    const rel = workspaceRelative(ctx);
    watched = [path.resolve(ctx.root, options.config), ...(run.loaded.base ? [run.loaded.base] : []), run.storeDir, ...(run.modelFile ? [run.modelFile] : [])];
    const warn = (m: string): void => console.warn(`warning: ${m}`);
    mkdirSync(run.storeDir, { recursive: true }); // watched: a log that appears in it later must be seen
    const absorbed = await absorbTuneOutputs(run.storeDir, warn);
    const records = await storeLogs(run.storeDir);
    console.log(`tensortune compile ${run.network}: target ${run.targetName} ("${run.target.target}"), ` +
      `${records.length ? `records: the best of the store ${rel(run.storeDir)} (${records.length} log(s)` +
        `${absorbed ? `, ${absorbed} measurement(s) merged from restored tune outputs` : ''})` : `no tuning records in ${rel(run.storeDir)}: default schedules`}` +
      ` -> ${rel(run.modelDir)}`);
    const started = Date.now();
    // A target measured through runner(s): the records that apply are the device's (it is asked its fingerprint, nothing more).
    const remote = targetRunners(run.target, run.targetName);
    const fingerprint = remote ? await remoteFingerprint(remote.runners, target, remote.where) : undefined;
    const compiled = await compileNetwork({
      ...run.spec, target: run.target.target, host: run.target.host, outDir: run.modelDir, records, strict: options.strict, fingerprint, threads,
      timeoutMs: options.timeout === undefined ? undefined : Math.round(options.timeout * 1000),
      memoryLimit: configMemoryLimit(run.net.maxMemory, options.config, run.network),
      log: (line) => console.log(line), warn,
    });
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    console.log(compiled.opencl
      ? `rendered ${compiled.kernels.length} OpenCL kernel program(s), ${compiled.opencl.launches} launches, in ${seconds} s: ${rel(compiled.library)}`
      : `compiled ${compiled.compiled} kernel(s), reused ${compiled.reused}, in ${seconds} s: ${rel(compiled.library)}`);
    console.log(`records used: ${formatRecordsUsed(recordsUsed(compiled.kernels))} kernel(s)`);
    if (!compiled.opencl && !compiled.cuda) console.log(`the model's ${describeKernels(kernelCounts(compiled.kernels, taskKeys(run.spec, run.target.target)))}`);
    const untried = untriedBudgets(run);
    if (untried.length > 0) {
      console.log(`note: budget(s) ${untried.map((b) => `'${b}'`).join(', ')} never tuned ${run.network} for ${run.targetName} in this workspace; ` +
        `\`nx compile ${run.network} -c ${untried[0]}\` restores that tune from the Nx cache (local or remote) if a machine of this kind ran it, else tunes`);
    }
    return { success: true };
  });
  return { ...result, watched };
}

/**
 * chokidar sees a file appear only in a directory that exists: the directories of the
 * watched files are created, so a log written later (by `nx tune` in another terminal,
 * or to a records path a config change just named) is noticed.
 */
function watchable(files: readonly string[]): string[] {
  for (const f of files) mkdirSync(path.dirname(f), { recursive: true });
  return [...files];
}

export default async function* compileExecutor(options: CompileExecutorOptions, ctx: ExecutorContext): AsyncGenerator<ExecutorResult> {
  let last = await compileOnce(options, ctx);
  yield { success: last.success };
  if (!options.watch) return;

  const { watch } = await import('chokidar');
  const watcher = watch(watchable(last.watched), { ignoreInitial: true, awaitWriteFinish: { stabilityThreshold: 200 } });
  await new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
  console.log(`watching ${last.watched.map((f) => path.relative(ctx.root, f)).join(', ')} (Ctrl-C to stop)`);
  const queue: string[] = [];
  let wake: (() => void) | undefined;
  // In the store, only logs count (not their locks and temporary files).
  const relevant = (file: string): boolean => file.endsWith('.jsonl') || last.watched.includes(path.resolve(file));
  watcher.on('all', (_event, file) => { if (!relevant(file)) return; queue.push(file); wake?.(); });
  const aborter = abortOnSignals();
  const stopped = new Promise<void>((resolve) => aborter.signal.addEventListener('abort', () => resolve(), { once: true }));
  try {
    for (;;) {
      if (queue.length === 0) {
        const woke = new Promise<void>((resolve) => { wake = resolve; });
        if ((await Promise.race([woke.then(() => 'change'), stopped.then(() => 'stop')])) === 'stop') return;
      }
      const changed = [...new Set(queue.splice(0))].map((f) => path.relative(ctx.root, f));
      console.log(`changed: ${changed.join(', ')}; recompiling`);
      last = await compileOnce(options, ctx);
      watcher.add(watchable(last.watched));
      yield { success: last.success };
    }
  } finally {
    aborter.dispose();
    await watcher.close();
  }
}
