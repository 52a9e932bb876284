// `npm run conformance [-- --update-baseline] [--filter REGEX] [--json FILE] [--batch N] [--parallel N] [--threads N]`:
// the ONNX backend node test suite (suite.ts). Exits 1 when a case that passed in the
// baseline no longer passes, or a case comes out wrong, crashes or hangs that the baseline
// does not list as known; 0 otherwise, and when python3 with the pinned onnx is missing
// (it says so in one line).

import { parseArgs } from 'node:util';
import { runSuite } from './suite';

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      'update-baseline': { type: 'boolean' }, filter: { type: 'string' }, json: { type: 'string' },
      batch: { type: 'string' }, parallel: { type: 'string' }, threads: { type: 'string' }, quiet: { type: 'boolean' },
    },
  });
  const int = (v: string | undefined): number | undefined => (v === undefined ? undefined : Number(v));
  const result = await runSuite({
    filter: values.filter ? new RegExp(values.filter) : undefined, json: values.json, updateBaseline: values['update-baseline'],
    batchSize: int(values.batch), parallel: int(values.parallel), threads: int(values.threads),
    progress: values.quiet ? undefined : (l) => process.stderr.write(`${l}\n`),
  });
  if ('skipped' in result) {
    process.stdout.write(`conformance: skipped: ${result.skipped}\n`);
    return 0;
  }
  return result.check && !result.check.ok ? 1 : 0;
}

main().then((code) => { process.exitCode = code; }, (e: unknown) => {
  process.stderr.write(`conformance: ${e instanceof Error ? e.stack ?? e.message : String(e)}\n`);
  process.exitCode = 2;
});
