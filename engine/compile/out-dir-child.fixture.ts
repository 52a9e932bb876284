// Test helper run as a separate process by out-dir.test.ts: replaces `outDir` with a model
// folder tagged `tag` (every file says it), and holds its rename back until `count` helpers
// have filled theirs (each touches `<barrier>/<tag>`), so that their renames race.

import { existsSync, promises as fs, readdirSync } from 'node:fs';
import path from 'node:path';
import { replaceOutDir } from './out-dir';

const [outDir, tag, barrier, countText] = process.argv.slice(2) as [string, string, string, string];

async function main(): Promise<void> {
  await replaceOutDir(outDir, async (dir) => {
    for (const name of ['model.so', 'params.bin', 'manifest.json']) await fs.writeFile(path.join(dir, name), tag);
    await fs.writeFile(path.join(barrier, tag), '');
    const deadline = Date.now() + 30_000;
    while (readdirSync(barrier).length < Number(countText) && Date.now() < deadline && existsSync(barrier)) await new Promise((r) => setTimeout(r, 2));
  });
  process.stdout.write(`${tag} done\n`);
}

main().catch((e: unknown) => { process.stderr.write(`${(e as Error).stack ?? String(e)}\n`); process.exitCode = 1; });
