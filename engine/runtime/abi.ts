// The TypeScript side of the native ABI (native/include/tensortune.h).

/** Must equal TT_ABI_VERSION in native/include/tensortune.h; the native binaries report
 *  theirs (`tt_bench --version`, the ready line of tt_measure) and are refused if it differs. */
export const ABI_VERSION = 1;

/** The file name tt_bench --save-outputs gives an output: every character outside
 *  [A-Za-z0-9._-] becomes '_', and "", "." and ".." become "_". Add ".bin". */
export function outputFileName(name: string): string {
  const safe = name.replace(/[^A-Za-z0-9._-]/g, '_');
  return safe === '' || safe === '.' || safe === '..' ? '_' : safe;
}
