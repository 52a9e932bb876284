// `nx tune <network>`: tuneNetwork with the budget of the selected configuration, whose
// fields the options override for one run (`--trials-per-task 3`, `--policy random`: the
// names and units of `tensortune tune`); the engine's progress lines stream into Nx's
// terminal output. First the tune outputs Nx
// restored are merged into the workspace store (executors/store.ts); the search then
// resumes from the network's store log, appends every measurement to it, and reads the
// store's other logs (tasks they cover are warm-started or skipped). Last, the target's
// own Nx output is rewritten: every measurement the store holds for the network's tasks
// on this target and machine, which is what the cache carries to other machines.
// Ctrl-C (or SIGTERM) stops at once: Nx kills the task's processes 5 s later, so the batch
// in flight is dropped rather than finished; every batch measured before it is in the store
// log, the summary is printed as `tensortune tune` prints it, and the task fails (Nx caches
// nothing, and its output is left as it was: the next run merges the store and writes it).

import { mkdirSync } from 'node:fs';
import type { ExecutorContext } from '@nx/devkit';
import { openRemoteDevices, remoteFingerprint } from '../../engine/remote/open';
import { hardwareFingerprint, parseTarget } from '../../engine/target';
import { reportInternal } from '../../engine/compile/internal-error';
import { configMemoryLimit } from '../../engine/compile/memory-plan';
import { UserError } from '../../engine/errors';
import { fitLine, outputWidth, PROGRESS_EVERY_S, summaryLine } from '../../engine/search/progress';
import { describeTasks } from '../../engine/app/tune';
import type { MeasureOptions } from '../../engine/search/types';
import { targetRunners, type BudgetConfig } from '../../plugin/config';
import { abortOnSignals, reporting, resolveFor, workspaceRelative, type ExecutorResult, type Interruptible } from '../run';
import { executorOptions, flagOf } from '../options';
import { closeQuietly, nxTerminal, writeAfterNx, type NxTerminal } from '../interrupt';
import { absorbTuneOutputs, otherLogs, writeTuneOutput } from '../store';
import { describeShard, shardingOf, tuneRun, writeMergedOutput } from './shards';
import type { TuneExecutorOptions } from './schema';

/** What tuneNetwork gets of the budget and of the options that override it (the options win). */
export function budgetFor(b: BudgetConfig, o: TuneExecutorOptions, targetThreads?: number) {
  // A trial count on the command line replaces the budget's (trials and trialsPerTask together).
  const counted = o.trials !== undefined || o.trialsPerTask !== undefined;
  const m = b.measure ?? {};
  const seconds = o.timeout ?? m.timeout;
  const measure: Partial<MeasureOptions> = Object.fromEntries(Object.entries({
    number: o.number ?? m.number, repeat: o.repeat ?? m.repeat, minRepeatMs: o.minRepeatMs ?? m.minRepeatMs,
    timeoutMs: seconds !== undefined ? Math.round(seconds * 1000) : m.timeoutMs,
    flush: o.flush ?? m.flush, buildJobs: o.buildJobs ?? m.buildJobs, threads: o.threads ?? targetThreads,
  }).filter(([, v]) => v !== undefined));
  return {
    trials: counted ? o.trials : b.trials,
    trialsPerTask: counted ? o.trialsPerTask : b.trialsPerTask,
    timeLimitS: o.timeLimit ?? b.timeLimit,
    earlyStopping: o.earlyStopping ?? b.earlyStopping,
    confirm: o.confirm ?? b.confirm,
    networkPass: o.networkPass ?? b.networkPass,
    batchSize: o.measuresPerRound ?? b.measuresPerRound ?? b.batchSize,
    warmupTrials: o.warmupTrials ?? b.warmupTrials,
    policy: o.policy ?? b.policy,
    seed: o.seed ?? b.seed,
    measure,
  };
}

/** The options of schema.json that choose the run; all the others override the budget. */
const RUN_CHOICE: readonly string[] = ['config', 'network', 'settings', 'configTarget', 'budget', 'shard'];
/** The budget options given for this run, as flags in schema order (for the log line). */
const overridesOf = (o: TuneExecutorOptions): string[] => executorOptions('tune').filter((k) => !RUN_CHOICE.includes(k)).flatMap((k) => {
  const v = o[k as keyof TuneExecutorOptions];
  return v === undefined ? [] : [`${flagOf(k)}${v === true ? '' : ` ${String(v)}`}`];
});

export default async function tuneExecutor(options: TuneExecutorOptions, ctx: ExecutorContext): Promise<ExecutorResult> {
  // From the start: a Ctrl-C while the store is read must not kill the process mid-merge.
  const aborter = abortOnSignals('tensortune tune: stopping ({signal}): the batch in flight is dropped, every batch measured before it stays in the store');
  // Opened now: once a Ctrl-C made Nx exit, nothing names the terminal the user sees (../interrupt.ts).
  const terminal = nxTerminal();
  try {
    // An engine error (a bug) is one line naming the task it was tuning, as in `tensortune tune`.
    return await reporting('tune', () => tuneOnce(options, ctx, aborter, terminal).catch((e: unknown) => {
      reportInternal('tune', `tuning ${options.network}`, e, (text) => console.error(text.trimEnd()));
      return { success: false };
    }));
  } finally {
    aborter.dispose();
    closeQuietly(terminal?.fd);
  }
}

async function tuneOnce(options: TuneExecutorOptions, ctx: ExecutorContext, aborter: Interruptible, terminal: NxTerminal | undefined): Promise<ExecutorResult> {
  const run = resolveFor('tune', options, ctx, options.budget);
  const rel = workspaceRelative(ctx);
  // A network with shards: tune--<k> tunes shard k, tune merges them (./shards.ts).
  const sharding = shardingOf(run, options.shard, ctx.root);
  if (process.env.TENSORTUNE_REQUIRE_CACHED_TUNE === '1' && sharding?.shard !== undefined) {
    throw new UserError(`${run.network}: no cached tune for shard ${sharding.shard.index} (${run.network}:tune--${sharding.shard.index}), target ${run.targetName}${run.budgetName ? `, budget ${run.budgetName}` : ''} ` +
      'on a machine of this kind (local or remote Nx cache), and TENSORTUNE_REQUIRE_CACHED_TUNE=1 forbids searching here: run it on such a machine with the shared remote cache, or unset it');
  }
  if (process.env.TENSORTUNE_REQUIRE_CACHED_TUNE === '1' && !sharding) {
    // Not an input of the hash, on purpose: CI sets it and still hits the tuning machines' cache entries.
    const c = `${run.network}${run.budgetName ? ` -c ${run.targetName}-${run.budgetName}` : ''}`;
    throw new UserError(`${run.network}: no cached tune for target ${run.targetName}${run.budgetName ? `, budget ${run.budgetName}` : ''} on a machine of this kind ` +
      `(local or remote Nx cache), and TENSORTUNE_REQUIRE_CACHED_TUNE=1 forbids searching here: run \`nx tune ${c}\` on such a machine with the shared remote cache, or unset it`);
  }
  mkdirSync(run.storeDir, { recursive: true });
  const warn = (m: string): void => console.warn(`warning: ${m}`);
  const absorbed = await absorbTuneOutputs(run.storeDir, warn);
  if (absorbed > 0) console.log(`merged ${absorbed} measurement(s) from restored tune outputs into the store ${rel(run.storeDir)}`);
  const target = parseTarget(run.target.target, `targets.${run.targetName}.target`, run.target.host);
  // A target measured on a device through its runner(s): the device's fingerprint keys the records (engine/remote).
  const remote = targetRunners(run.target, run.targetName);
  const log = aborter.log;
  const width = outputWidth(process.stdout);
  const say = (line: string): void => { for (const l of fitLine(line, width)) log(l); };
  if (sharding && !sharding.shard) {
    // The merge measures nothing: of the device, only its fingerprint.
    const fingerprint = remote ? await remoteFingerprint(remote.runners, target, remote.where, { log }) : hardwareFingerprint(target);
    const merged = await writeMergedOutput(run.storeDir, sharding, { target: target.text, fingerprint }, warn);
    console.log(`tensortune tune ${run.network}: ${describeShard(sharding)}; output ${rel(sharding.output)}: best records for ${merged.best} of ${sharding.tasks.length} task(s)` +
      `${merged.missing.length ? `; no valid record yet for: ${merged.missing.map((t) => t.desc).join('; ')}` : ''}`);
    return { success: true };
  }
  const device = remote ? await openRemoteDevices(remote.runners, target, remote.where, { log }) : undefined;
  const others = await otherLogs(run.storeDir, run.recordsFile);
  const overrides = overridesOf(options);
  say(`tensortune tune ${run.network}: target ${run.targetName} ("${run.target.target}"), budget ${run.budgetName ?? '(engine default)'}` +
    `${overrides.length ? ` with ${overrides.join(' ')}` : ''}${sharding ? `, ${describeShard(sharding)}` : ''}` +
    `, log ${rel(run.recordsFile)}${others.length ? `, reading ${others.length} other log(s) of the store` : ''}`);
  try {
    if (sharding?.shard?.tasks.length === 0) console.log('no task of the network hashes to this shard: nothing to tune');
    const result = sharding?.shard?.tasks.length === 0 ? undefined : await tuneRun(sharding, {
      model: run.spec,
      target: run.target.target,
      host: run.target.host,
      records: run.recordsFile,
      readRecords: others,
      device,
      ...budgetFor(run.budget, options, run.target.threads),
      budget: run.budgetName,
      memoryLimit: configMemoryLimit(run.net.maxMemory, options.config, run.network),
      log,
      signal: aborter.signal,
      dropBatchOnAbort: true,
      // Nx shows no bar: a line at a steady pace, fitted to its terminal (or its UI's pane).
      progressEveryS: PROGRESS_EVERY_S,
      width,
    });
    if (result?.reason === 'aborted') {
      // The store log holds the run's trials; the output is rewritten by a run that ends.
      const lines = [`the store log ${rel(run.recordsFile)} holds the trials; \`nx tune ${options.network}\` resumes from it`, summaryLine(result)];
      for (const l of lines) log(l);
      // Nx in a terminal has exited and shows none of them: they go to that terminal.
      await writeAfterNx(terminal, lines.map((l) => `${l}\n`).join(''));
      return { success: false };
    }
    const match = { target: target.text, fingerprint: device?.fingerprint ?? hardwareFingerprint(target) };
    const output = sharding?.output ?? run.tuneOutput;
    const tuned = sharding?.shard ? sharding.shard.tasks : result!.tasks;
    const keys = tuned.map((t) => t.key);
    const out = await writeTuneOutput(run.storeDir, output, keys, match, warn);
    say(`output ${rel(output)}: ${out.records} measurement(s) of ${sharding?.shard ? 'this shard\'s' : 'this network\'s'} tasks, best records for ${out.best} of its ${describeTasks(tuned)}`);
    if (!result) return { success: true };
    console.log(summaryLine(result));
    return { success: true };
  } finally {
    await device?.close();
  }
}
