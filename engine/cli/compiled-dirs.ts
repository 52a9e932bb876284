// `tensortune benchmark models/mobilenet`: the folder a user gives is often a network's
// Nx project folder, not the compiled model. compile's output goes elsewhere
// (<outDir>/<network>/<target>, outDir dist/tensortune by default), so when DIR holds no
// manifest.json, say so and point at the compiled folders of the workspace that name it.

import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { UserError } from '../errors';

/** The Nx workspace around `dir` (the nearest folder above it, or it, holding nx.json). */
function workspaceOf(dir: string): string | undefined {
  for (let d = dir; ; d = path.dirname(d)) {
    if (existsSync(path.join(d, 'nx.json'))) return d;
    if (path.dirname(d) === d) return undefined;
  }
}

/** Folders under `root` (at most `depth` levels down, node_modules and dot folders left out) that hold a manifest.json. */
function manifestsUnder(root: string, depth: number): string[] {
  if (existsSync(path.join(root, 'manifest.json'))) return [root];
  if (depth === 0) return [];
  let names: string[];
  try {
    names = readdirSync(root, { withFileTypes: true }).filter((e) => e.isDirectory() && !e.name.startsWith('.') && e.name !== 'node_modules').map((e) => e.name);
  } catch {
    return [];
  }
  return names.sort().flatMap((name) => manifestsUnder(path.join(root, name), depth - 1));
}

/** Compiled model folders of the workspace around `dir` whose path names `dir`'s last segment (dist/tensortune/mobilenet/cpu for models/mobilenet). */
export function compiledFoldersFor(dir: string): string[] {
  const ws = workspaceOf(path.resolve(dir));
  if (!ws) return [];
  const name = path.basename(path.resolve(dir));
  return manifestsUnder(path.join(ws, 'dist'), 4).filter((d) => path.relative(ws, d).split(path.sep).includes(name));
}

/** Throws a UserError when `dir` holds no compiled model, naming the compiled folders that may be meant. */
export function checkCompiledDir(dir: string): void {
  const abs = path.resolve(dir);
  if (existsSync(path.join(abs, 'manifest.json'))) return;
  const what = `${dir}: no compiled model here (no manifest.json; expected a folder written by 'tensortune compile' or 'nx compile')`;
  const found = compiledFoldersFor(abs).map((d) => path.relative(process.cwd(), d) || '.');
  if (found.length > 0) {
    throw new UserError(`${what}; the compiled ${path.basename(abs)} is in ${found.join(', ')}: tensortune benchmark ${found[0]}`);
  }
  if (workspaceOf(abs) && existsSync(abs)) {
    throw new UserError(`${what}; in an Nx workspace, 'nx compile <network>' writes it to <outDir>/<network>/<target> (outDir: dist/tensortune unless the config says otherwise)`);
  }
  throw new UserError(what);
}
