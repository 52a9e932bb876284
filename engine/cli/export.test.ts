// `tensortune export` and the flag checks of `benchmark --compare`, through main().

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { main } from '../cli';
import { loadModel } from '../frontend/load';
import { OnnxModelBuilder } from '../frontend/onnx/model-builder';

async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '', err = '';
  const code = await main(args, { out: (t) => { out += t; }, err: (t) => { err += t; } });
  return { code, out, err };
}

let dir = '';
test.before(() => { dir = mkdtempSync(path.join(tmpdir(), 'tt-export-cli-')); });
test.after(() => { rmSync(dir, { recursive: true, force: true }); });

test('export mobilenet --layout NHWC --logits: an NHWC-input ONNX model that loads back with the same input shape', async () => {
  const file = path.join(dir, 'm.onnx');
  const r = await cli('export', 'mobilenet', '--out', file, '--layout', 'NHWC', '--image-size', '32', '--batch', '2', '--logits');
  assert.is(r.code, 0, r.err);
  assert.match(r.out, /input data \[2, 32, 32, 3\]/);
  const m = loadModel({ model: file });
  assert.equal(m.inputs, [{ name: 'data', shape: [2, 32, 32, 3], dtype: 'float32' }]);
  assert.is(m.name, file);
  assert.ok(!m.graph.nodes.some((n) => n.op === 'softmax'), '--logits drops the softmax');
});

test('export: bad flags are one-line errors with exit code 2', async () => {
  for (const [args, pattern] of [
    [['export', 'mobilenet'], /--out FILE is required/],
    [['export', 'mobilenet', '--out', 'x.txt'], /expected a file name ending in \.onnx/],
    [['export', 'nope', '--out', 'x.onnx'], /unknown network "nope"/],
    [['export', 'mobilenet', '--out', 'x.onnx', '--layout', 'NCWH'], /bad --layout 'NCWH'/],
  ] as const) {
    const r = await cli(...args);
    assert.is(r.code, 2, args.join(' '));
    assert.match(r.err, pattern);
  }
});

test('compile of a broken .onnx: one message naming the file and every unsupported node', async () => {
  const file = path.join(dir, 'bad.onnx');
  writeFileSync(file, new OnnxModelBuilder().input('x', [1, 4]).node('TfIdfVectorizer', ['x'], ['e'], {}, 'tfidf1').node('StringNormalizer', ['e'], ['y'], {}, 'norm1').output('y').build());
  const r = await cli('compile', file, '--out', path.join(dir, 'out'));
  assert.is(r.code, 2, r.err);
  assert.match(r.err, new RegExp(`${file.replace(/[.\\/]/g, '\\$&')}: cannot import 2 node\\(s\\)`));
  assert.match(r.err, /TfIdfVectorizer 'tfidf1': operator is not supported/);
  assert.match(r.err, /StringNormalizer 'norm1': operator is not supported/);
  assert.not.match(r.err, /\n\s+at /, 'no stack trace');
});

test('benchmark --compare: flag checks', async () => {
  const r1 = await cli('benchmark', dir, '--compare', 'tvm');
  assert.is(r1.code, 2);
  assert.match(r1.err, /bad --compare 'tvm' \(expected one of: onnxruntime\)/);
  const r2 = await cli('benchmark', dir, '--onnx', 'm.onnx');
  assert.is(r2.code, 2);
  assert.match(r2.err, /--onnx and --rounds go with --compare onnxruntime/);
  const r3 = await cli('benchmark', dir, '--compare', 'onnxruntime');
  assert.is(r3.code, 2);
  assert.match(r3.err, /no compiled model here \(no manifest\.json; expected a folder written by 'tensortune compile' or 'nx compile'\)/);
});

test.run();
