// Compiled files in tensortune's caches (kernel objects, candidate libraries, the native
// tools) are trusted only when they match the seal written beside them when they were built:
// `<file>.seal` holds the file's size and sha256. A file without its seal, or one that no
// longer matches it (emptied, truncated, overwritten), counts as missing and is built again.
// Each check has a synchronous twin for buildNativeSync (build.ts), with the same format.

import { createHash, randomBytes } from 'node:crypto';
import { promises as fs, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';

/** The seal of a cached file. */
const sealOf = (file: string): string => `${file}.seal`;

/** Where the seal is written before it is renamed into place. */
const sealTmpOf = (file: string): string => `${sealOf(file)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;

/** `<size> <sha256>` of a file's bytes; undefined for an empty one. */
const sealText = (bytes: Buffer): string | undefined =>
  bytes.length > 0 ? `${bytes.length} ${createHash('sha256').update(bytes).digest('hex')}` : undefined;

/** The seal a non-empty file would get; undefined for an empty or unreadable one. */
async function fingerprint(file: string): Promise<string | undefined> {
  return fs.readFile(file).then(sealText, () => undefined);
}

function fingerprintSync(file: string): string | undefined {
  try {
    return sealText(readFileSync(file));
  } catch {
    return undefined;
  }
}

/** Whether `file` is in the cache, not empty, and matches its seal. */
export async function cachedFileOk(file: string): Promise<boolean> {
  const [sealed, actual] = await Promise.all([fs.readFile(sealOf(file), 'utf8').catch(() => undefined), fingerprint(file)]);
  return actual !== undefined && sealed?.trim() === actual;
}

export function cachedFileOkSync(file: string): boolean {
  let sealed: string;
  try {
    sealed = readFileSync(sealOf(file), 'utf8');
  } catch {
    return false;
  }
  const actual = fingerprintSync(file);
  return actual !== undefined && sealed.trim() === actual;
}

/**
 * Moves a freshly built `tmp` to `file` (a rename: readers never see half a file) and seals
 * it. Returns false, removing `tmp`, when the compiler left an empty file.
 */
export async function sealIntoCache(tmp: string, file: string): Promise<boolean> {
  const actual = await fingerprint(tmp);
  if (!actual) {
    await fs.rm(tmp, { force: true });
    return false;
  }
  const sealTmp = sealTmpOf(file);
  await fs.writeFile(sealTmp, `${actual}\n`);
  await fs.rename(tmp, file);
  await fs.rename(sealTmp, sealOf(file));
  return true;
}

export function sealIntoCacheSync(tmp: string, file: string): boolean {
  const actual = fingerprintSync(tmp);
  if (!actual) {
    rmSync(tmp, { force: true });
    return false;
  }
  const sealTmp = sealTmpOf(file);
  writeFileSync(sealTmp, `${actual}\n`);
  renameSync(tmp, file);
  renameSync(sealTmp, sealOf(file));
  return true;
}
