// `tensortune report` on a small ONNX network and a log written by the record log's own
// writer: the task table and the estimate as text, the figures as JSON, the HTML page with
// a hostile model file name escaped; bad input is one line naming the flag or file, exit 2.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { main } from '../cli';
import { NetBuilder } from '../frontend/builder';
import { writeOnnxFile } from '../frontend/onnx/export';
import { loadModel } from '../frontend/load';
import { appendRecords } from '../records/log';
import type { TuningRecord } from '../records/record';
import type { TuningFigures } from '../report/tuning-data';
import { duration } from '../units';
import { tuningTasks } from '../graph/extract';

const dir = mkdtempSync(path.join(tmpdir(), 'tt-cli-report-'));
const model = path.join(dir, '<script>alert(1)<', 'net.onnx');
const log = path.join(dir, 'log.jsonl');
const FP = 'f00df00d';

async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '', err = '';
  const code = await main(['report', ...argv], { out: (t) => { out += t; }, err: (t) => { err += t; } });
  return { code, out, err };
}

test.before(async () => {
  const { mkdirSync } = await import('node:fs');
  mkdirSync(path.dirname(model), { recursive: true });
  const b = new NetBuilder({ batch: 1, layout: 'NCHW', imageSize: 8, seed: 1, randomStats: true, weights: 'random' });
  b.graph.outputs = [b.dense(b.flatten(b.globalAvgPool(b.relu(b.conv2d(b.input(4), 'conv', { channels: 8, kernel: [3, 3], padding: [1, 1] })))), 'fc', 10)];
  writeOnnxFile(model, b.graph);
  // The tasks tune searches: the conv's Winograd alternative too.
  const tasks = tuningTasks(loadModel({ model }).graph, 'llvm');
  const rec = (key: string, s: number, cost: number, policy?: string): TuningRecord => ({
    v: 1, engine: '0.1.0', key, desc: 'd', target: 'llvm', fingerprint: FP, steps: [], costs_ms: [cost], error: null, seed: 0,
    time: new Date(Date.UTC(2025, 0, 1, 0, 0, s)).toISOString(), ...(policy ? { policy } : {}),
  });
  await appendRecords(log, [...tasks.map((t, i) => rec(t.key, i, 2, 'default')), rec(tasks[0].key, 10, 1)]);
});
test.after(() => rmSync(dir, { recursive: true, force: true }));

test('text, JSON and the page', async () => {
  const text = await run(model, '--records', log, '--target', 'llvm', '--fingerprint', FP);
  assert.is(text.code, 0, text.err);
  const figures = JSON.parse((await run(model, '--records', dir, '--target', 'llvm', '--fingerprint', FP, '--json')).out) as TuningFigures;
  // A layer group (a task and its Winograd alternative) counts once in the estimate.
  assert.is(figures.tasks.filter((t) => t.alternative_of !== null).length, 1, 'the 3x3 conv has a Winograd task');
  const weights = figures.tasks.filter((t) => t.alternative_of === null).reduce((a, t) => a + t.weight, 0);
  assert.is(figures.trials, figures.tasks.length + 1);
  assert.is(figures.estimated_ms, 2 * weights - figures.tasks[0].weight);
  assert.is(figures.estimated_default_ms, 2 * weights);
  assert.match(text.out, /^\| +ID +\| Task Description/m);
  assert.ok(text.out.includes(`tuning: ${figures.trials} trial(s) of ${figures.tasks.length} task(s) in the records for this target and machine, estimated total latency ${duration(figures.estimated_ms!)}\n`));

  const page = path.join(dir, 'page.html');
  const html = await run(model, '--records', log, '--target', 'llvm', '--fingerprint', FP, '--out', page);
  assert.is(html.code, 0, html.err);
  assert.ok(html.out.endsWith(`wrote ${page}\n`));
  const content = readFileSync(page, 'utf8');
  assert.not.ok(content.includes('<script>'), 'the model path is escaped');
  assert.ok(content.includes('&#60;script&#62;alert(1)&#60;'));
  assert.is(content.match(/<svg /g)?.length, 4 + figures.tasks.length, 'curves against trials and tuning time, shares, defaults and one curve per task');
});

test('records of two thread counts: the newest count, with one warning; --threads picks another', async () => {
  const tasks = tuningTasks(loadModel({ model }).graph, 'llvm');
  const counts = path.join(dir, 'counts', 'two.jsonl');
  const { mkdirSync } = await import('node:fs');
  mkdirSync(path.dirname(counts), { recursive: true });
  const rec = (s: number, threads: number, cost: number): TuningRecord => ({
    v: 1, engine: '0.1.0', key: tasks[0].key, desc: 'd', target: 'llvm', fingerprint: FP, steps: [], costs_ms: [cost], error: null, seed: 0,
    time: new Date(Date.UTC(2025, 0, 1, 0, 0, s)).toISOString(), threads,
  });
  await appendRecords(counts, [rec(1, 1, 4), rec(2, 1, 3), rec(3, 2, 1)]);
  const newest = await run(model, '--records', counts, '--target', 'llvm', '--fingerprint', FP, '--json');
  assert.is(newest.code, 0, newest.err);
  const f = JSON.parse(newest.out) as TuningFigures;
  assert.equal([f.threads, f.trials, f.tasks[0].best_ms], [2, 1, 1], 'the 2-thread record only');
  assert.is(newest.err.match(/warning/g)?.length, 1, newest.err);
  assert.match(newest.err, /^tensortune report: warning: the records were measured at 1, 2 thread\(s\), whose timings do not compare: showing those at 2 /);
  const one = await run(model, '--records', counts, '--target', 'llvm', '--fingerprint', FP, '--threads', '1');
  assert.is([one.code, one.err].join(''), '0');
  assert.match(one.out, /tuning: 2 trial\(s\) of \d+ task\(s\) in the records for this target and machine at 1 thread\(s\)/);
});

test('bad input: one line naming what is wrong, exit 2', async () => {
  const broken = path.join(dir, 'compare.json');
  writeFileSync(broken, '{"ratio": 1}\n');
  const cases: [string[], string][] = [
    [[model], 'tensortune report: --records PATH is required (a record log or a store folder; repeatable)\n'],
    [[model, '--records', path.join(dir, 'nowhere.jsonl')], `tensortune report: --records ${path.join(dir, 'nowhere.jsonl')}: no such file or folder\n`],
    [[model, '--records', log, '--fingerprint', 'XYZ'], "tensortune report: --fingerprint XYZ: expected 8 to 64 lowercase hex digits, as 'tensortune fingerprint' prints\n"],
    [[model, '--records', log, '--fingerprint', FP, '--compare', broken],
      `tensortune report: ${broken}: not an ONNX Runtime comparison (the JSON of \`tensortune benchmark DIR --compare onnxruntime --json\`): (top level) must have required property 'onnxruntime_version'\n`],
    [[model, '--records', log, '--fingerprint', FP, '--out', path.join(dir, 'no', 'page.html')], `tensortune report: --out ${path.join(dir, 'no', 'page.html')}: its folder does not exist\n`],
    [[], 'tensortune report: expected one <network> or model file, got 0 (networks: '],
  ];
  for (const [argv, message] of cases) {
    const r = await run(...argv);
    assert.is(r.code, 2, argv.join(' '));
    assert.ok(r.err.startsWith(message), `${r.err} should start with ${message}`);
    assert.is(r.err.split('\n').length, 2, 'one line');
  }
});

test.run();
