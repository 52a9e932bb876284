// Progress where no bar shows it (Nx, a pipe): lines fitted to the terminal's width without
// breaking a number, the task table narrowed to it, an alternative's weight naming its task,
// and, through the real tuning loop on a tiny ONNX network, a progress line while a round is
// quiet and every line within the width.

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeTinyModel } from '../../e2e/tiny-model';
import { fitLine, formatTaskTable, outputWidth } from './progress';
import { tuneNetwork } from '../app/tune';

const tokens = (lines: string[]): string[] => lines.join(' ').split(/\s+/).filter(Boolean);

test('a long line breaks between its parts, else between words, never inside one; short lines stay whole', () => {
  const line = 'warm-up task 4 (conv2d_winograd_nhwc+add+relu 1x16x16x3 -> 1x16x16x8): 1 trial(s), 0 error(s), best 0.0122 ms; run: 9/2400 trials, 0%, 0:25 elapsed, ETA 1:58:09';
  assert.equal(fitLine(line, 200), [line]);
  assert.equal(fitLine(line), [line]);
  for (const width of [100, 60, 40]) {
    const lines = fitLine(line, width);
    assert.ok(lines.length > 1, `${width}: broken`);
    assert.ok(lines.every((l) => l.length <= width), `${width}: ${JSON.stringify(lines)}`);
    assert.equal(tokens(lines), tokens([line]), `${width}: every number and word whole, in order`);
  }
  assert.equal(fitLine(line, 100), [
    'warm-up task 4 (conv2d_winograd_nhwc+add+relu 1x16x16x3 -> 1x16x16x8): 1 trial(s), 0 error(s), best',
    '  0.0122 ms; run: 9/2400 trials, 0%, 0:25 elapsed, ETA 1:58:09',
  ]);
  assert.equal(fitLine('a; b; averyveryverylongword', 8), ['a; b;', '  averyveryverylongword'], 'a word longer than the width stays whole');
});

test('the width: a terminal\'s columns; 100 under Nx\'s terminal UI when not known; else none', () => {
  assert.is(outputWidth({ isTTY: true, columns: 132 }, {}), 132);
  assert.is(outputWidth({ isTTY: false }, { NX_TUI: 'true' }), 100);
  assert.is(outputWidth({ isTTY: false }, {}), undefined);
});

test('the task table fits the width, and an alternative\'s weight names the task it implements', () => {
  const rows = [
    { desc: 'conv2d_nhwc+add+relu 1x56x56x64 -> 1x56x56x64 (a long description of the layer)', weight: 3, flops: 231_211_008, trials: 128, best_ms: 0.5 },
    { desc: 'conv2d_winograd_nhwc+add+relu 1x56x56x64 -> 1x56x56x64', weight: 3, flops: 231_211_008, trials: 16, best_ms: 0.45, alternativeOf: 0 },
  ];
  const lines = formatTaskTable(rows, 64, 100);
  assert.ok(lines.every((l) => l.length <= 100 && l.length === lines[0].length), lines.join('\n'));
  const cells = (l: string): string[] => l.split('|').map((c) => c.trim());
  assert.is(cells(lines[3])[6], '3');
  assert.is(cells(lines[4])[6], 'alt 0');
  assert.ok(formatTaskTable(rows)[0].length > 100, 'without a width, the description keeps its 64 columns');
});

test('the tuning loop: progress lines while rounds are quiet, every line within the width, tasks and alternatives counted apart', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tt-progress-fit-'));
  const model = path.join(dir, 'tiny.onnx');
  writeTinyModel(model, 3);
  const lines: string[] = [];
  // A progress line whenever nothing was logged for a millisecond: there is one during every round.
  const result = await tuneNetwork({
    model: { model }, target: 'llvm -mcpu=native', records: path.join(dir, 'tiny.jsonl'), trialsPerTask: 1, batchSize: 1, policy: 'random', confirm: 0,
    progressEveryS: 0.001, width: 100, log: (l) => lines.push(l),
  });
  assert.is(result.trials, 6);
  assert.ok(lines.every((l) => l.length <= 100), lines.filter((l) => l.length > 100).join('\n'));
  assert.match(lines.join(' '), /tiny\.onnx: 4 tasks and 2 Winograd alternatives, 0 measurement\(s\) resumed/);
  const progress = lines.filter((l) => /^(measuring task \d+ \(.*\): 1 candidate\(s\), \d+ s so far|searching); run: \d+\/6 trials, \d+%/.test(l));
  assert.ok(progress.length > 0, lines.join('\n'));
  const rows = lines.filter((l) => /^\|\s+\d+ \|/.test(l)).slice(-6).map((l) => l.split('|').map((c) => c.trim())[6]);
  assert.equal(rows, ['1', '1', '1', '1', 'alt 0', 'alt 1'], 'the Winograd alternatives of the two 3x3 convs');
});

test.run();
