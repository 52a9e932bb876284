// `nx tune <network>`: tuneNetwork on the network's log in the workspace records store,
// with the budget of the selected configuration; the engine's progress lines stream into
// Nx's terminal output. Other logs of the store are read (tasks they cover are skipped,
// and their best records are copied into this log so it alone compiles the network).

import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { ExecutorContext } from '@nx/devkit';
import { tuneNetwork } from '../../engine/search/tune';
import { ConfigError, configLabel } from '../../plugin/config';
import { abortOnSignals, reporting, resolveFor, workspaceRelative, type ExecutorResult } from '../run';
import type { TuneExecutorOptions } from './schema';
import { adoptSharedRecords, otherLogs } from './share-records';

export default async function tuneExecutor(options: TuneExecutorOptions, ctx: ExecutorContext): Promise<ExecutorResult> {
  return reporting('tune', async () => {
    const run = resolveFor(options, ctx, options.budget);
    const rel = workspaceRelative(ctx);
    if (run.target.runner !== undefined) {
      throw new ConfigError(configLabel(path.resolve(ctx.root, options.config), ctx.root), `targets.${run.targetName}.runner`,
        'measuring through a runner command is not supported by this engine version yet; remove it to measure on this machine');
    }
    mkdirSync(run.storeDir, { recursive: true });
    const others = await otherLogs(run.storeDir, run.recordsFile);
    const b = run.budget;
    console.log(`tensortune tune ${run.network}: target ${run.targetName} ("${run.target.target}"), budget ${run.budgetName ?? '(engine default)'}` +
      `, log ${rel(run.recordsFile)}${others.length ? `, reading ${others.length} other log(s) of the store` : ''}`);
    const aborter = abortOnSignals();
    try {
      const trialsOverride = options.trials;
      const result = await tuneNetwork({
        model: run.spec,
        target: run.target.target,
        records: run.recordsFile,
        readRecords: others,
        trials: trialsOverride ?? b.trials,
        trialsPerTask: trialsOverride === undefined ? b.trialsPerTask : undefined,
        timeLimitS: b.timeLimit,
        earlyStopping: b.earlyStopping,
        batchSize: b.batchSize,
        policy: b.policy,
        seed: b.seed,
        measure: { ...b.measure, ...(run.target.threads ? { threads: run.target.threads } : {}) },
        log: (line) => console.log(line),
        signal: aborter.signal,
      });
      const copied = await adoptSharedRecords(run.recordsFile, others, result.tasks.map((t) => t.key), run.target.target, (m) => console.warn(`warning: ${m}`));
      if (copied.length) console.log(`copied the best record of ${copied.length} task(s) tuned by other networks of the store into ${rel(run.recordsFile)}`);
      const est = result.estimatedMs === null ? 'n/a (some task has no valid program yet)' : `${result.estimatedMs.toFixed(3)} ms`;
      console.log(`tuned ${result.trials} trial(s) in ${result.wallS.toFixed(1)} s (${result.reason}); estimated latency ${est}`);
      if (result.reason === 'aborted') return { success: false };
      return { success: true };
    } finally {
      aborter.dispose();
    }
  });
}
