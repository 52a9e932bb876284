// `nx benchmark <network>`: time the compiled network on this machine with the native
// runner and write <outDir>/<network>/reports/<target>.json and .html. Never cached.

import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ExecutorContext } from '@nx/devkit';
import { manifestFiles, readManifest } from '../../engine/compile/manifest';
import { UserError } from '../../engine/errors';
import { runBench } from '../../engine/native/bench';
import { reporting, resolveFor, workspaceRelative, type ExecutorResult } from '../run';
import { renderHtml, type BenchmarkReport } from './report';
import type { BenchmarkExecutorOptions } from './schema';

export default async function benchmarkExecutor(options: BenchmarkExecutorOptions, ctx: ExecutorContext): Promise<ExecutorResult> {
  return reporting('benchmark', async () => {
    const run = resolveFor(options, ctx);
    const rel = workspaceRelative(ctx);
    const manifestFile = path.join(run.modelDir, 'manifest.json');
    if (!existsSync(manifestFile)) throw new UserError(`${rel(manifestFile)} not found: run nx compile ${run.network} first`);
    const manifest = readManifest(run.modelDir);
    const files = manifestFiles(run.modelDir, manifest);
    const result = await runBench({
      model: files.library,
      params: files.params,
      repeat: options.repeat,
      number: options.number,
      minRepeatMs: options.minRepeatMs,
      threads: options.threads ?? run.target.threads,
    });
    console.log(`${run.network} on ${run.targetName} ("${manifest.target}")`);
    console.log(result.summary);
    const { summary: _summary, ...numbers } = result;
    const report: BenchmarkReport = {
      network: run.network, target: run.targetName, target_string: manifest.target, fingerprint: manifest.fingerprint,
      engine_version: manifest.engine_version, time: new Date().toISOString(), model_dir: rel(run.modelDir), result: numbers,
    };
    mkdirSync(run.reportsDir, { recursive: true });
    const json = path.join(run.reportsDir, `${run.targetName}.json`);
    const html = path.join(run.reportsDir, `${run.targetName}.html`);
    writeFileSync(json, `${JSON.stringify(report, null, 2)}\n`);
    writeFileSync(html, renderHtml(report));
    console.log(`wrote ${rel(json)} and ${rel(html)}`);
    return { success: true };
  });
}
