// Errors that report a user's mistake (bad option, unknown name, bad file) or a problem of
// the user's machine (a directory they cannot write, a full disk): entry points print
// their message alone, on one line, without a stack trace, and exit non-zero.

import { getSystemErrorMap } from 'node:util';

export class UserError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UserError';
  }
}

/** errno codes that say something about the user's files or machine (permissions, a full
 *  disk, a path that is not what it should be) rather than about tensortune. ENOENT is not
 *  one of them: a file tensortune itself should have made or shipped is missing. */
const ENVIRONMENT_CODES = new Set([
  'EACCES', 'EPERM', 'EEXIST', 'ENOSPC', 'EDQUOT', 'EROFS', 'ENOTDIR', 'EISDIR', 'EFBIG', 'ENAMETOOLONG', 'ELOOP',
  'EMFILE', 'ENFILE', 'EIO', 'EBUSY', 'ETXTBSY',
]);

const FALLBACK_CAUSES: Record<string, string> = { EDQUOT: 'disk quota exceeded' };

/** `no space left on device (ENOSPC)`: the system's text for the error's errno, and its code. */
function systemErrorCause({ code, errno }: NodeJS.ErrnoException & { code: string }): string {
  const text = (typeof errno === 'number' ? getSystemErrorMap().get(errno)?.[1] : undefined) ?? FALLBACK_CAUSES[code];
  return text ? `${text} (${code})` : code;
}

/**
 * The error as a UserError when it is one, or when it is a system error about the user's
 * files (ENVIRONMENT_CODES): `<what>: <cause><after>`, where `what` defaults to the failed call
 * and its path (`cannot open '/x/log.jsonl'`). Undefined for anything else: a bug keeps its stack.
 */
export function asUserError(e: unknown, what?: string, after = ''): UserError | undefined {
  if (e instanceof UserError) return e;
  const err = e as NodeJS.ErrnoException & { code: string; dest?: string };
  if (!(e instanceof Error) || !ENVIRONMENT_CODES.has(err.code ?? '')) return undefined;
  const call = err.syscall ?? 'a system call';
  const where = what ?? (err.path ? `cannot ${call} '${err.path}'${err.dest ? ` to '${err.dest}'` : ''}` : `${call} failed`);
  return new UserError(`${where}: ${systemErrorCause(err)}${after}`);
}
