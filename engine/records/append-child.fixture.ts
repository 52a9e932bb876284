// Test helper run as a separate process by log.test.ts and distill.test.ts: appends `count`
// records to `file`, one appendRecords call each, tagged with `tag` in `desc`, numbered by
// `seed`, and prints each seed on stdout once it is appended. Options: `--distinct` gives
// every record its own workload key (so each is the only record of its group); `--until F`
// stops early once the file F exists.

import { existsSync } from 'node:fs';
import { appendRecords } from './log';
import { RECORD_FORMAT_VERSION, type TuningRecord } from './record';

const [file, tag, countText, ...flags] = process.argv.slice(2);
const distinct = flags.includes('--distinct');
const until = flags.includes('--until') ? flags[flags.indexOf('--until') + 1] : undefined;

async function main(): Promise<void> {
  for (let i = 0; i < Number(countText) && !(until && existsSync(until)); i++) {
    const n = distinct ? i + 4 : 4;
    const record: TuningRecord = {
      v: RECORD_FORMAT_VERSION, engine: '0.1.0', key: `["0123456789abcdef0123456789abcdef", [1, ${n}], [1, ${n}]]`, desc: `${tag} ${'x'.repeat(i % 4 * 250)}`,
      target: 'llvm -mcpu=native', fingerprint: '0123456789abcdef',
      steps: [{ s: 'split', stage: 'T_add', iter: 'ax1', lengths: [2] }], costs_ms: [i + 1], error: null, seed: i, time: new Date().toISOString(),
    };
    await appendRecords(file!, [record]);
    process.stdout.write(`${i}\n`);
  }
}

main().catch((e: unknown) => { console.error(e); process.exitCode = 1; });
