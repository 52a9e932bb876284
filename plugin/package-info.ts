// This package's root directory and version, found from wherever this module runs (the
// sources in plugin/ or the build in dist/plugin/).

import { packageRoot } from '../engine/package-root';
import { ENGINE_VERSION } from '../engine/version';

export const PACKAGE_ROOT = packageRoot();
/** The plugin ships with the engine: one version, engine/version.ts's. */
export const PLUGIN_VERSION = ENGINE_VERSION;
