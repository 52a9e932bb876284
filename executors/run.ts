// What the three executors share: resolve a run from the config named in the options,
// refusing options they do not know (./options.ts), and turn a failure into one clear
// message plus `{ success: false }` (a user's mistake without a stack trace; a bug with
// one). What Nx itself takes from the command line (-c, --target) is checked before any
// task runs, by the plugin's preTasksExecution (plugin/pre-tasks.ts).

import path from 'node:path';
import type { ExecutorContext } from '@nx/devkit';
import { asUserError } from '../engine/errors';
import { ModelRunError } from '../engine/runtime/errors';
import { internalErrorLine, internalStack } from '../engine/compile/internal-error';
import { configLabel, loadConfig } from '../plugin/config';
import { resolveRun, type ResolvedRun } from '../plugin/resolve';
import { closeQuietly, nxDiscardsOutput, parentStdout, writeLines } from './interrupt';
import { checkOptions, type ExecutorName } from './options';

export interface NetworkExecutorOptions {
  /** The tensortune config file, relative to the workspace root. */
  config: string;
  /** The network (key in the config's networks). */
  network: string;
  /** A target name from the config (default: defaults.target, else the first); `-c <target>` sets it. Not `target`: Nx owns --target. */
  configTarget?: string;
  /** Set by the plugin: a digest of the config entries the network depends on (part of Nx's hash). */
  settings?: string;
}

export type ExecutorResult = { success: boolean };

/**
 * The run an executor's options name, once they passed checkOptions. `budget` is the tune
 * executor's budget option.
 */
export function resolveFor(name: ExecutorName, options: NetworkExecutorOptions, ctx: ExecutorContext, budget?: string): ResolvedRun {
  const loaded = loadConfig(options.config, ctx.root);
  const run = resolveRun(loaded, ctx.root, options.network, options.configTarget, budget);
  checkOptions(name, options, {
    config: configLabel(loaded.file, ctx.root), network: run.network, configTarget: run.targetName, modelDir: workspaceRelative(ctx)(run.modelDir),
  });
  return run;
}

/** A path for messages: relative to the workspace root (`.` for the root itself). */
export const workspaceRelative = (ctx: ExecutorContext) => (p: string): string => path.relative(ctx.root, p) || '.';

/** Run `body`; a UserError, a system error about the user's files (asUserError) or a
 *  ModelRunError becomes one line on stderr and `{ success: false }`, as in the CLI; any
 *  other error one line saying it is an internal error (its stack with TENSORTUNE_DEBUG=1). */
export async function reporting(name: string, body: () => Promise<ExecutorResult>): Promise<ExecutorResult> {
  try {
    return await body();
  } catch (e) {
    const user = e instanceof ModelRunError ? e : asUserError(e);
    if (user) {
      console.error(`tensortune ${name}: ${user.message}`);
      return { success: false };
    }
    // Anything else is a bug of ours: one line naming what was being done, as the CLI prints it.
    console.error(internalErrorLine(name, e, `running nx ${name}`));
    if (process.env.TENSORTUNE_DEBUG === '1') console.error(internalStack(e));
    return { success: false };
  }
}

/** What an executor that can be interrupted holds: the abort signal, and where its lines go. */
export interface Interruptible {
  signal: AbortSignal;
  /** A line on stdout; once a Ctrl-C under Nx stopped the run, on the Nx process's stdout as well (./interrupt.ts). */
  log(line: string): void;
  dispose(): void;
}

/**
 * Ctrl-C, SIGTERM and SIGHUP abort the run cleanly (records stay intact); the first prints
 * `stopping`, when given. The handlers stay until dispose: later signals are Nx stopping the
 * task's process tree (SIGTERM, 5 s before SIGKILL), and a handler removed after its first
 * signal lets signal-exit (loaded by Nx's task runner) re-raise that signal and kill the
 * process before it has recorded and said anything.
 */
export function abortOnSignals(stopping?: string): Interruptible {
  const controller = new AbortController();
  let echo: number | undefined;
  const log = (line: string): void => {
    console.log(line);
    if (echo !== undefined) writeLines(echo, `${line}\n`);
  };
  const stop = (signal: NodeJS.Signals): void => {
    if (controller.signal.aborted) return;
    if (nxDiscardsOutput(signal)) echo = parentStdout();
    controller.abort();
    if (stopping) log(stopping.replace('{signal}', signal));
  };
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  for (const s of signals) process.on(s, stop);
  return {
    signal: controller.signal,
    log,
    dispose: () => {
      for (const s of signals) process.off(s, stop);
      closeQuietly(echo);
      echo = undefined;
    },
  };
}
