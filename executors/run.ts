// What the three executors share: resolve a run from the config named in the options,
// and turn a failure into one clear message plus `{ success: false }` (a user's mistake
// without a stack trace; a bug with one).

import path from 'node:path';
import type { ExecutorContext } from '@nx/devkit';
import { asUserError } from '../engine/errors';
import { ModelRunError } from '../engine/runtime/errors';
import { loadConfig } from '../plugin/config';
import { resolveRun, type ResolvedRun } from '../plugin/resolve';

export interface NetworkExecutorOptions {
  /** The tensortune config file, relative to the workspace root. */
  config: string;
  /** The network (key in the config's networks). */
  network: string;
  /** A target name from the config (default: defaults.target, else the first). */
  target?: string;
}

export type ExecutorResult = { success: boolean };

export function resolveFor(options: NetworkExecutorOptions, ctx: ExecutorContext, budget?: string): ResolvedRun {
  return resolveRun(loadConfig(options.config, ctx.root), ctx.root, options.network, options.target, budget);
}

/** A path for messages: relative to the workspace root (`.` for the root itself). */
export const workspaceRelative = (ctx: ExecutorContext) => (p: string): string => path.relative(ctx.root, p) || '.';

/** Run `body`; a UserError, a system error about the user's files (asUserError) or a
 *  ModelRunError becomes one line on stderr and `{ success: false }`, as in the CLI. */
export async function reporting(name: string, body: () => Promise<ExecutorResult>): Promise<ExecutorResult> {
  try {
    return await body();
  } catch (e) {
    const user = e instanceof ModelRunError ? e : asUserError(e);
    if (user) {
      console.error(`tensortune ${name}: ${user.message}`);
      return { success: false };
    }
    console.error(e);
    return { success: false };
  }
}

/** Ctrl-C / SIGTERM abort the run cleanly (records stay intact). */
export function abortOnSignals(): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const stop = (): void => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return { signal: controller.signal, dispose: () => { process.off('SIGINT', stop); process.off('SIGTERM', stop); } };
}
