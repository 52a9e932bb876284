// The flags every network-building command shares (--layout, --batch, --image-size and
// tvmc's --input-shapes) and tvmc's spellings of the output and record flags (--output/-o,
// --tuning-records): parsed directly, then as a user types them.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeOnnxFile } from '../frontend/onnx/export';
import { getNetwork } from '../frontend/networks';
import { aliased, modelFlags, parseInputShapes } from './command';
import { spawnCli } from './spawn.fixture';

const dir = mkdtempSync(path.join(tmpdir(), 'tt-model-flags-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

const throws = (fn: () => unknown, pattern: RegExp): void => {
  try {
    fn();
  } catch (e) {
    assert.match((e as Error).message, pattern);
    assert.is((e as Error).name, 'UserError');
    return;
  }
  assert.unreachable(`expected an error matching ${String(pattern)}`);
};

test('parseInputShapes: tvmc\'s NAME:[D,...] per input, the name optional, spaces inside brackets allowed', () => {
  assert.equal(parseInputShapes('data:[1,3,224,224]'), [{ name: 'data', shape: [1, 3, 224, 224] }]);
  assert.equal(parseInputShapes('[2, 64, 64, 3]'), [{ shape: [2, 64, 64, 3] }]);
  assert.equal(parseInputShapes('x:0:[1,8] mask:[1, 8]'), [{ name: 'x:0', shape: [1, 8] }, { name: 'mask', shape: [1, 8] }]);
  assert.equal(parseInputShapes('x:[1,16000] sr:[]'), [{ name: 'x', shape: [1, 16000] }, { name: 'sr', shape: [] }], 'a scalar is []');
  for (const bad of ['', '1,3,224,224', 'data:[1,0,4]', 'data:[,]', 'data:[1,2']) {
    throws(() => parseInputShapes(bad), /^bad --input-shapes '.*' \(expected NAME:\[D,D,\.\.\.\] or \[D,D,\.\.\.\] per input, separated by spaces\)$/);
  }
});

test('modelFlags: defaults, --image-size, and --input-shapes giving batch and image size in the layout asked for', () => {
  assert.equal(modelFlags({}, ['mobilenet']), { layout: 'NHWC', batch: 1, imageSize: undefined });
  assert.equal(modelFlags({}, ['mobilenet'], 'NCHW'), { layout: 'NCHW', batch: 1, imageSize: undefined });
  assert.equal(modelFlags({ batch: '2', 'image-size': '64' }, ['mobilenet']), { layout: 'NHWC', batch: 2, imageSize: 64 });
  assert.equal(modelFlags({ 'input-shapes': 'data:[2,64,64,3]' }, ['mobilenet']), { layout: 'NHWC', batch: 2, imageSize: 64 });
  assert.equal(modelFlags({ 'input-shapes': '[1,3,48,48]', layout: 'nchw' }, ['mobilenet']), { layout: 'NCHW', batch: 1, imageSize: 48 });
});

test('modelFlags: mistakes are one line naming the flag and what was expected', () => {
  throws(() => modelFlags({ 'input-shapes': '[1,64,64,3]', batch: '1' }, ['mobilenet']), /^--input-shapes gives the batch and the image size; drop --batch$/);
  throws(() => modelFlags({ 'input-shapes': '[1,3,64,64]' }, ['mobilenet']),
    /^--input-shapes '\[1,3,64,64\]': a builtin network has one NHWC image input with height = width, e.g. \[1,224,224,3\]$/);
  throws(() => modelFlags({ 'input-shapes': 'image:[1,64,64,3]' }, ['mobilenet']), /^--input-shapes 'image:\[1,64,64,3\]': mobilenet has no input 'image' \(its inputs: data\)$/);
  throws(() => modelFlags({ 'input-shapes': '[1,64,64,1]' }, ['mobilenet']),
    /^--input-shapes '\[1,64,64,1\]': mobilenet's input 'data' is \[1,64,64,3\] with --layout NHWC, not \[1,64,64,1\]$/);
  throws(() => modelFlags({ 'image-size': '64' }, ['mobilenet', 'net.onnx']),
    /^--image-size applies to builtin networks; net\.onnx fixes its input size \(--batch sizes a symbolic batch dimension\)$/);
});

test('modelFlags on an ONNX model: --input-shapes is checked against the file\'s inputs', () => {
  const file = path.join(dir, 'small.onnx');
  writeOnnxFile(file, getNetwork('mobilenet', { layout: 'NCHW', imageSize: 32 }).graph, { name: 'small' });
  assert.equal(modelFlags({ 'input-shapes': 'data:[1,3,32,32]' }, [file]), { layout: 'NHWC', batch: 1, imageSize: undefined, inputShapes: [{ name: 'data', shape: [1, 3, 32, 32] }] });
  throws(() => modelFlags({ 'input-shapes': 'data:[1,3,64,64]' }, [file]), /small\.onnx: graph input 'data' is \[1, 3, 32, 32\]; the shape given for it, \[1, 3, 64, 64\], differs in dimension 2$/);
  throws(() => modelFlags({ 'input-shapes': 'image:[1,3,32,32]' }, [file]), /small\.onnx: a shape is given for input 'image', which the graph does not have \(its inputs: data\)$/);
});

test('aliased: a flag under its name or its alias, not both', () => {
  assert.is(aliased({ out: 'a', output: undefined }, 'out', 'output'), 'a');
  assert.is(aliased({ out: undefined, output: 'b' }, 'out', 'output'), 'b');
  assert.is(aliased({ out: undefined, output: undefined }, 'out', 'output'), undefined);
  throws(() => aliased({ out: 'a', output: 'b' }, 'out', 'output'), /^--out and --output are one option \(--output is an alias of --out\); give it once$/);
});

test('as typed: tasks and compile take --image-size; tvmc\'s -o and --output; refusals exit 2 with one line', async () => {
  const tasks = await spawnCli(['tasks', 'mobilenet', '--image-size', '64', '--json']).done;
  assert.is(tasks.code, 0, tasks.err);
  assert.equal((JSON.parse(tasks.out) as { tasks: { shapes: number[][] }[] }).tasks[0].shapes[0], [1, 64, 64, 3]);
  const shapes = await spawnCli(['tasks', 'mobilenet', '--input-shapes', 'data:[1,3,64,64]', '--layout', 'NCHW', '--json']).done;
  assert.is(shapes.code, 0, shapes.err);
  assert.equal((JSON.parse(shapes.out) as { tasks: { shapes: number[][] }[] }).tasks[0].shapes[0], [1, 3, 64, 64]);

  const onnx = path.join(dir, 'm.onnx');
  const exported = await spawnCli(['export', 'mobilenet', '-o', onnx, '--image-size', '32']).done;
  assert.is(exported.code, 0, exported.err);
  assert.match(exported.out, /input data \[1, 3, 32, 32\]/);

  const cases: [string[], RegExp][] = [
    [['compile', onnx, '--image-size', '64', '--out', path.join(dir, 'x')], /^tensortune compile: --image-size applies to builtin networks; .*m\.onnx fixes its input size/],
    [['compile', 'mobilenet', '--out', path.join(dir, 'a'), '-o', path.join(dir, 'b')], /^tensortune compile: --out and --output are one option/],
    [['tune', 'mobilenet', '--records', 'a.jsonl', '--output', 'b.jsonl'], /^tensortune tune: --records and --output are one option \(--output is an alias of --records\); give it once$/],
    [['tune', 'mobilenet', '--output', path.join(dir, 't.jsonl'), '--measures-per-round', '0'], /^tensortune tune: bad --measures-per-round '0' \(expected a positive integer\)$/],
    [['tune', 'mobilenet', '--output', path.join(dir, 't.jsonl'), '--measures-per-round', '2', '--batch-size', '2'], /^tensortune tune: --measures-per-round and --batch-size are one option/],
    [['distill', path.join(dir, 'none.jsonl'), '--network', 'mobilenet', '--input-shapes', '[1,3,224,224]'], /^tensortune distill: --input-shapes '\[1,3,224,224\]': a builtin network has one NHWC image input/],
  ];
  const results = await Promise.all(cases.map(([args]) => spawnCli(args).done));
  for (const [k, [args, pattern]] of cases.entries()) {
    assert.is(results[k].code, 2, `${args.join(' ')}: ${results[k].err}`);
    assert.match(results[k].err.trim(), pattern, args.join(' '));
    assert.is(results[k].err.trim().split('\n').length, 1, results[k].err);
  }
});

test.run();
