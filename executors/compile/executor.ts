// `nx compile <network>`: compileNetwork with the network's tuned log (best record per
// task, default schedules elsewhere) into <outDir>/<network>/<target>/. With --watch,
// chokidar watches the config, the model file and the log and recompiles on change; the
// object cache makes that incremental (only kernels whose source changed are rebuilt).
// It never tunes.

import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type { ExecutorContext } from '@nx/devkit';
import { compileNetwork } from '../../engine/compile/network';
import { UserError } from '../../engine/errors';
import { abortOnSignals, reporting, resolveFor, workspaceRelative, type ExecutorResult } from '../run';
import type { CompileExecutorOptions } from './schema';

async function compileOnce(options: CompileExecutorOptions, ctx: ExecutorContext): Promise<ExecutorResult & { watched: string[] }> {
  let watched: string[] = [path.resolve(ctx.root, options.config)];
  const result = await reporting('compile', async () => {
    const run = resolveFor(options, ctx);
    const rel = workspaceRelative(ctx);
    watched = [path.resolve(ctx.root, options.config), run.recordsFile, ...(run.modelFile ? [run.modelFile] : [])];
    const records = existsSync(run.recordsFile) ? [run.recordsFile] : [];
    if (records.length === 0 && options.strict) {
      throw new UserError(`--strict: no tuning log ${rel(run.recordsFile)} for ${run.network} on ${run.targetName} (run nx tune ${run.network} first)`);
    }
    console.log(`tensortune compile ${run.network}: target ${run.targetName} ("${run.target.target}"), ` +
      `${records.length ? `records ${rel(run.recordsFile)}` : 'no tuning log: default schedules'} -> ${rel(run.modelDir)}`);
    const started = Date.now();
    const compiled = await compileNetwork({
      ...run.spec, target: run.target.target, outDir: run.modelDir, records, strict: options.strict,
      log: (line) => console.log(line),
    });
    console.log(`compiled ${compiled.compiled} kernel(s), reused ${compiled.reused}, in ${((Date.now() - started) / 1000).toFixed(1)} s: ${rel(compiled.library)}`);
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
  watcher.on('all', (_event, file) => { queue.push(file); wake?.(); });
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
