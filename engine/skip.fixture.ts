// A test that cannot run here (a tool not installed, no privilege to mount a file system,
// not Linux) calls skip() and returns. uvu would count it as passed; the line skip() prints,
// `skip: <test>: <reason>`, is what scripts/test.js counts, so npm test's closing line
// (`N passed, N failed, N skipped`) reports it as skipped and lists it with its reason.

/** Reports `test` (a test, or the part of one that returns early) as skipped, and why. */
export function skip(test: string, reason: string | undefined): void {
  // Own line: uvu prints its progress dots without a line break.
  process.stdout.write(`\nskip: ${test}: ${reason ?? 'no reason given'}\n`);
}
