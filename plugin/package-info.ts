// This package's root directory and version, found from wherever this module runs (the
// sources in plugin/ or the build in dist/plugin/).

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../engine/package-root';

export const PACKAGE_ROOT = packageRoot();
export const PLUGIN_VERSION = (JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
