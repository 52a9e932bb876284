// This package's root directory and version, found from wherever this module runs (the
// sources in plugin/ or the build in dist/plugin/).

import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

function findPackageRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file) && (JSON.parse(readFileSync(file, 'utf8')) as { name?: string }).name === 'tensortune') return dir;
    if (path.dirname(dir) === dir) throw new Error(`tensortune: cannot find the package root above ${from}`);
  }
}

export const PACKAGE_ROOT = findPackageRoot(__dirname);
export const PLUGIN_VERSION = (JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
