// The TypeScript side of the native ABI (native/include/tensortune.h).

/** Must equal TT_ABI_VERSION in native/include/tensortune.h; the native binaries report
 *  theirs (`tt_bench --version`, the ready line of tt_measure) and are refused if it differs. */
export const ABI_VERSION = 2;

/** tt_tensor_info.dtype codes (TT_FLOAT32, TT_INT32, TT_BOOL). */
export const ABI_DTYPE_CODES = { float32: 0, int32: 1, bool: 2 } as const;

/** Bytes of a name kept in its file name (FILE_NAME_KEEP in native/bench/tt_bench.c). */
const FILE_NAME_KEEP = 64;

/** FNV-1a, 32 bits, of `bytes`, as 8 hex digits. */
function fnv1a32(bytes: Uint8Array): string {
  let h = 0x811c9dc5;
  for (const b of bytes) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

/** The file name (without `.bin`) tt_bench --save-outputs gives an output, as its
 *  file_name_for does: the name's first 64 UTF-8 bytes, each byte outside [A-Za-z0-9._-]
 *  turned into '_' ("", "." and ".." into "_"); a name that had to change gets '-' and the
 *  FNV-1a-32 of all its bytes appended (`a/b:0` -> `a_b_0-<8 hex>`), so it cannot take the
 *  file of another output whose name is already safe. */
export function outputFileName(name: string): string {
  const bytes = new TextEncoder().encode(name);
  let safe = '';
  for (const b of bytes.subarray(0, FILE_NAME_KEEP)) safe += /^[A-Za-z0-9._-]$/.test(String.fromCharCode(b)) && b < 0x80 ? String.fromCharCode(b) : '_';
  if (safe === '' || safe === '.' || safe === '..') safe = '_';
  return safe === name ? safe : `${safe}-${fnv1a32(bytes)}`;
}

/** outputFileName of every output; throws when two outputs would share a file (tt_bench refuses them too). */
export function outputFileNames(names: readonly string[]): string[] {
  const files = names.map(outputFileName);
  files.forEach((f, i) => {
    const j = files.indexOf(f);
    if (j < i) throw new Error(`outputs '${names[j]}' and '${names[i]}' would both be saved as ${f}.bin`);
  });
  return files;
}
