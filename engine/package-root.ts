// The tensortune package's root directory (package.json, native/, schemas/), found upwards
// from wherever this module runs: engine/ under tsx, dist/engine/ once compiled.

import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

let root: string | undefined;

export function packageRoot(): string {
  if (root) return root;
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file) && (JSON.parse(readFileSync(file, 'utf8')) as { name?: string }).name === 'tensortune') return (root = dir);
    if (path.dirname(dir) === dir) throw new Error(`tensortune: cannot find the package root above ${__dirname}`);
  }
}

/** The version in the package's package.json. */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}
