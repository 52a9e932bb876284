// Test helper run as a separate process by log.test.ts: appends `count` records to `file`,
// one appendRecords call each, tagged with `tag` in `desc` and numbered by `seed`.

import { appendRecords } from './log';
import { RECORD_FORMAT_VERSION, type TuningRecord } from './record';

const [file, tag, countText] = process.argv.slice(2);

async function main(): Promise<void> {
  for (let i = 0; i < Number(countText); i++) {
    const record: TuningRecord = {
      v: RECORD_FORMAT_VERSION, engine: '0.1.0', key: '["0123456789abcdef0123456789abcdef", [1, 4], [1, 4]]', desc: `${tag} ${'x'.repeat(i % 4 * 250)}`,
      target: 'llvm -mcpu=native', fingerprint: '0123456789abcdef',
      steps: [{ s: 'split', stage: 'T_add', iter: 'ax1', lengths: [2] }], costs_ms: [i + 1], error: null, seed: i, time: new Date().toISOString(),
    };
    await appendRecords(file!, [record]);
  }
}

main().catch((e: unknown) => { console.error(e); process.exitCode = 1; });
