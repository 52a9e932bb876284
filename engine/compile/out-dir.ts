// The output folder of `compile`, written whole. The new model is built in a sibling folder
// `.<name>.new-<pid>-XXXXXX`, which then takes the place of <name> by renames: the old folder,
// if any, first moves aside to `.<name>.old-<pid>-XXXXXX` and is removed afterwards. A reader
// sees the old complete set, the new one, or (between the two renames) no folder; never a new
// model.so beside an old manifest. What a killed compile leaves beside the folder is removed
// by the next compile into it. The folder must be compile's own: one that holds other files
// is refused, not replaced.
//
// Compiles into one folder at once: the last to finish wins. A compile whose rename finds the
// folder back in place (another compile put its model there in between) moves that one aside
// too and renames again, so every compile ends with a complete model in the folder, and
// nothing of theirs is left beside it.

import { promises as fs } from 'node:fs';
import path from 'node:path';
import { UserError } from '../errors';
import { pidAlive } from '../temp-dirs';

/** What compile writes into its folder, and the temp files older versions left there. */
const OWN_FILE = /^(model\.c|model\.so|params\.bin|manifest\.json|kernels\.cl|kernels\.cu|kernels\.sm_\d+\.cubin)(\.tmp[-.\w]*)?$/;

/** The part of a sibling's name after `.<name>.`: `new-<pid>-XXXXXX` or `old-<pid>-XXXXXX`. */
const LEFTOVER = /^(new|old)-(\d+)-[A-Za-z0-9]{6}$/;

/** Siblings this process is using now; one with this pid and not here was left by an earlier process with the same pid. */
const inUse = new Set<string>();

/** Removes the `.new-` / `.old-` siblings of `outDir` whose compile process is gone. */
async function sweepLeftovers(outDir: string): Promise<void> {
  const parent = path.dirname(outDir);
  const prefix = `.${path.basename(outDir)}.`;
  for (const name of await fs.readdir(parent)) {
    const m = name.startsWith(prefix) ? LEFTOVER.exec(name.slice(prefix.length)) : null;
    if (!m) continue;
    const pid = Number(m[2]), full = path.join(parent, name);
    if (pid === process.pid ? inUse.has(full) : pidAlive(pid)) continue;
    // Another compile may be sweeping the same leftover: what it removed first is not an error.
    await fs.rm(full, { recursive: true, force: true, maxRetries: 3 }).catch(() => undefined);
  }
}

/** How many times a compile moves a folder that other compiles keep putting in place aside before it gives up. */
const MAX_REPLACE_ATTEMPTS = 20;

/** Refuses an existing `outDir` that is not a folder of compile's own; whether it exists. */
export async function checkOutDir(outDir: string): Promise<boolean> {
  let entries: string[];
  try {
    entries = await fs.readdir(outDir);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return false;
    if (code === 'ENOTDIR') throw new UserError(`${outDir}: not a folder (expected the output folder of 'tensortune compile', or a new one)`);
    throw e;
  }
  const foreign = entries.filter((e) => !OWN_FILE.test(e)).sort();
  if (foreign.length > 0) {
    const listed = foreign.slice(0, 5).join(', ') + (foreign.length > 5 ? `, ... (${foreign.length} in all)` : '');
    throw new UserError(`${outDir}: holds files that compile did not write (${listed}); compile replaces the whole folder, so give it a folder of its own`);
  }
  return true;
}

/**
 * Builds the new content of `outDir` with `fill` (given the folder to write into, with the
 * same parent as `outDir`), then puts it in place of `outDir` as a whole.
 */
export async function replaceOutDir<T>(outDir: string, fill: (dir: string) => Promise<T>): Promise<T> {
  const exists = await checkOutDir(outDir);
  const parent = path.dirname(outDir), base = path.basename(outDir);
  await fs.mkdir(parent, { recursive: true });
  await sweepLeftovers(outDir);
  const fresh = await fs.mkdtemp(path.join(parent, `.${base}.new-${process.pid}-`));
  inUse.add(fresh);
  const moved: string[] = [];
  try {
    const result = await fill(fresh);
    await fs.chmod(fresh, 0o755); // mkdtemp makes it private; the model folder is not
    for (let attempt = 0; ; attempt++) {
      // What is in place now (the old model, or one another compile just put there) moves aside.
      if (attempt === 0 ? exists : await checkOutDir(outDir)) {
        const old = await fs.mkdtemp(path.join(parent, `.${base}.old-${process.pid}-`));
        inUse.add(old);
        moved.push(old);
        try {
          await fs.rename(outDir, old); // replaces the empty `old`
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e; // ENOENT: moved or removed meanwhile
        }
      }
      try {
        await fs.rename(fresh, outDir);
        return result;
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw e;
        if (attempt + 1 >= MAX_REPLACE_ATTEMPTS) {
          throw new UserError(`${outDir}: other compiles into the same folder kept replacing it (${MAX_REPLACE_ATTEMPTS} times); it holds one of their models, not this compile's`);
        }
      }
    }
  } finally {
    for (const dir of [fresh, ...moved]) {
      await fs.rm(dir, { recursive: true, force: true, maxRetries: 3 }).catch(() => undefined); // fresh: gone after its rename
      inUse.delete(dir);
    }
  }
}
