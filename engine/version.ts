// The engine's version, read once from the package's package.json (the one place it is
// written). Records, compiled models' manifests, `tensortune fingerprint`, `--version` and
// the plugin's cache keys all take it from here, so a release changes them together.

import { packageVersion } from './package-root';

export const ENGINE_VERSION: string = packageVersion();
