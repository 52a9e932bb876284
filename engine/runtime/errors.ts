// Errors that carry the process exit code a CLI or executor should end with.

/** A mistake of the user or their environment (bad flag, bad file, no compiler): one clear
 *  line naming the file or field and what was expected, never a stack trace. Exit code 2. */
export class UserError extends Error {
  override readonly name = 'UserError';
  constructor(
    message: string,
    readonly exitCode = 2,
  ) {
    super(message);
  }
}

/** A compiled model failed while running (tt_init / tt_run returned an error, or it
 *  crashed). Exit code 3. */
export class ModelRunError extends Error {
  override readonly name = 'ModelRunError';
  readonly exitCode = 3;
}
