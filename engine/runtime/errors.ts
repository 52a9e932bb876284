// Errors of the native runtime. UserError (exit code 2 in the CLI) is the engine's own,
// re-exported so that `instanceof` holds everywhere.

export { UserError } from '../errors';

/** A compiled model failed while running (tt_init / tt_run returned an error, or it
 *  crashed). The CLI exits with `exitCode` (3). */
export class ModelRunError extends Error {
  override readonly name = 'ModelRunError';
  readonly exitCode = 3;
}
