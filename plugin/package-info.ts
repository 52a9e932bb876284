// This package's root directory and version, found from wherever this module runs (the
// sources in plugin/ or the build in dist/plugin/).

import { packageRoot, packageVersion } from '../engine/package-root';

export const PACKAGE_ROOT = packageRoot();
export const PLUGIN_VERSION = packageVersion();
