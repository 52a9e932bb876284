// The CLI as a user runs it: spawn bin/tensortune.js and check output and exit codes.

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const BIN = path.resolve(__dirname, '..', 'bin', 'tensortune.js');

function cli(...args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args]);
    let out = '', err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => { out += d; });
    child.stderr.setEncoding('utf8').on('data', (d: string) => { err += d; });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

test('tasks mobilenet --json: 22 tasks, weights 30, shapes in key order', async () => {
  const r = await cli('tasks', 'mobilenet', '--layout', 'NHWC', '--json');
  assert.is(r.code, 0, r.err);
  const report = JSON.parse(r.out) as { network: string; tasks: { key: string; desc: string; weight: number; flops: number; shapes: number[][] }[] };
  assert.is(report.network, 'mobilenet');
  assert.is(report.tasks.length, 22);
  assert.is(report.tasks.reduce((a, t) => a + t.weight, 0), 30);
  const t = report.tasks.find((x) => x.desc === 'conv2d_nhwc+add+relu 1x56x56x64 -> 1x56x56x128')!;
  assert.equal(Object.keys(t), ['key', 'desc', 'weight', 'flops', 'shapes']);
  assert.equal(t.shapes, [[1, 56, 56, 64], [1, 1, 64, 128], [1, 1, 1, 128], [1, 56, 56, 128]]);
  assert.is(t.key, '["6d628209072e3e3dd8f49359935acea6", [1, 56, 56, 64], [1, 1, 64, 128], [1, 1, 1, 128], [1, 56, 56, 128]]');
});

test('tasks mobilenet: text as the seed prints it, then the totals', async () => {
  const r = await cli('tasks', 'mobilenet', '--batch', '1');
  assert.is(r.code, 0, r.err);
  assert.ok(r.out.startsWith('========== Task 0  (workload key: ["07f9fcad27bdd3233f86fe35a5185d33", [1, 224, 224, 3],'));
  assert.ok(r.out.includes('T_relu(ax0, ax1, ax2, ax3) = max(T_add[ax0, ax1, ax2, ax3], 0f)\n\n========== Task 1  (workload key: '));
  assert.ok(r.out.trimEnd().endsWith('22 tasks, sum of weights 30'));
});

const ERRORS: [string[], RegExp][] = [
  [['tasks', 'mobilenet2'], /^tensortune tasks: unknown network 'mobilenet2' \(expected a model.onnx file or one of: mobilenet, resnet-18, .*\); did you mean mobilenet\?\n$/],
  [['tune', 'mobilnet', '--records', 'never-written.jsonl'], /^tensortune tune: unknown network "mobilnet" \(expected one of: mobilenet, .*\); did you mean mobilenet\?\n$/],
  [['tune', 'mobilenet', '--trails', '3'], /^tensortune tune: unknown option '--trails' \(expected: .*\); did you mean --trials\?\n$/],
  [['tnue', 'mobilenet'], /^tensortune: unknown command 'tnue' \(expected one of: tasks, tune, .*\); did you mean tune\?\n$/],
  [['tasks', 'mobilenet', '--layout', 'NCWH'], /^tensortune tasks: bad --layout 'NCWH' \(expected one of: NHWC, NCHW\)\n$/],
  [['tasks', 'mobilenet', '--batch', '0'], /^tensortune tasks: bad --batch '0' \(expected a positive integer\)\n$/],
  [['tasks', 'mobilenet', '--batch', '2.5'], /^tensortune tasks: bad --batch '2.5' \(expected a positive integer\)\n$/],
  [['tasks', 'mobilenet', '--batch'], /^tensortune tasks: option --batch needs a value\n$/],
  [['tasks', 'mobilenet', '--fast'], /^tensortune tasks: unknown option '--fast' \(expected: --layout <value>, --batch <value>, --image-size <value>, --input-shapes <value>, --json, --help\)\n$/],
  [['tasks'], /^tensortune tasks: missing <network> \(expected one of: mobilenet, .*\)\n$/],
  [['tasks', 'mobilenet', 'resnet-18'], /^tensortune tasks: expected one <network>, got 2: mobilenet resnet-18\n$/],
  [['tune-everything'], /^tensortune: unknown command 'tune-everything' \(expected one of: tasks.*\)\n$/],
  [['compile', 'mobilenet', '--out', 'never-written', '--threads', '0'], /^tensortune compile: bad --threads '0' \(expected a positive integer\)\n$/],
  [['compile', 'mobilenet', '--out', 'never-written', '--target', 'cuda -arch=sm_80', '--threads', '2'], /^tensortune compile: --threads applies to CPU targets: the records of cuda -arch=sm_80 do not depend on host threads\n$/],
];

test('bad input: one line naming what was expected, exit code 2, no stack trace', async () => {
  const results = await Promise.all(ERRORS.map(([args]) => cli(...args)));
  for (const [k, [args, message]] of ERRORS.entries()) {
    const r = results[k];
    assert.is(r.code, 2, args.join(' '));
    assert.match(r.err, message, args.join(' '));
    assert.is(r.out, '');
  }
});

test('--version: the package\'s version', async () => {
  const r = await cli('--version');
  assert.is(r.code, 0, r.err);
  const { version } = JSON.parse(readFileSync(path.resolve(__dirname, '..', 'package.json'), 'utf8')) as { version: string };
  assert.is(r.out, `tensortune ${version}\n`);
});

test('help', async () => {
  const [r, top, bare] = await Promise.all([cli('tasks', '--help'), cli('--help'), cli()]);
  assert.is(r.code, 0);
  assert.match(r.out, /^Usage: tensortune tasks <network\|model\.onnx>/);
  assert.is(top.code, 0);
  assert.match(top.out, /tasks +list the tuning tasks/);
  assert.is(bare.code, 2);
  assert.match(bare.err, /^Usage: tensortune <command>/);
});

test.run();
