// compileNetwork: model reference + target (+ records, once the auto-scheduler lands) ->
// compiled model directory. The CLI's `compile` and the Nx compile executor both call it.

import path from 'node:path';
import { loadModel, type ModelSpec } from '../frontend/load';
import { cacheRoot } from '../native/build';
import { parseTarget } from '../target';
import { compileModel, type CompileResult } from './model';

export interface CompileNetworkOptions extends ModelSpec {
  /** Target string, e.g. "llvm -mcpu=native". */
  target: string;
  outDir: string;
  /** Object cache (default <cacheRoot()>/kernels). */
  cacheDir?: string;
  /** Record log(s) whose best entries replace default schedules. */
  records?: string[];
  /** Fail when a task has no record instead of using its default schedule. */
  strict?: boolean;
  log?: (line: string) => void;
}

export async function compileNetwork(opts: CompileNetworkOptions): Promise<CompileResult> {
  const target = parseTarget(opts.target, 'target');
  const model = loadModel(opts);
  return compileModel({
    name: model.name, graph: model.graph, target, outDir: path.resolve(opts.outDir),
    cacheDir: path.resolve(opts.cacheDir ?? path.join(cacheRoot(), 'kernels')),
    log: opts.log,
  });
}
