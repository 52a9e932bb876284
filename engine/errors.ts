// Errors that report a user's mistake (bad option, unknown name, bad file): entry points
// print their message alone, without a stack trace, and exit non-zero.

export class UserError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UserError';
  }
}
