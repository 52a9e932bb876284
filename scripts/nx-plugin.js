// This repository's own Nx plugin entry (nx.json): the package's plugin from dist/, built
// first where a fresh clone has none. The package has no install script to build it
// (npm would list a `prepare` for every workspace that installs tensortune), so a clone's
// `npm ci && npx nx benchmark mobilenet` builds here, once; `npm run build` after editing.
'use strict';
const { existsSync } = require('node:fs');
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const root = path.join(__dirname, '..');
// copy-assets writes the schemas last: with them in place the build is whole.
if (!existsSync(path.join(root, 'dist', 'executors', 'tune', 'schema.json'))) {
  process.stderr.write('tensortune: no build in dist/ yet: npm run build\n');
  const r = spawnSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: ['ignore', 2, 2] });
  if (r.error || r.status !== 0) throw new Error(`tensortune: npm run build failed (${r.error ? r.error.message : `exit ${r.status}`}); run it in ${root} to see why`);
}
module.exports = require(path.join(root, 'dist', 'plugin', 'index.js'));
