// Names survive, through the CLI (engine/cli.ts main): a model exported with TensorFlow's
// tensor names (input `x:0`, outputs `a/b:0` and `a_b_0`) compiles; its names reach
// model.so and the manifest byte for byte; `benchmark --input x:0=FILE` runs it;
// `--save-outputs` writes each output to a file named after its tensor (a changed name
// gets a hash, so `a/b:0` does not take `a_b_0`'s file); `--compare onnxruntime` finds the
// ONNX file from the manifest (a path relative to the model directory and a sha256, no
// machine path) and agrees with ONNX Runtime (|ours - ort| <= 1e-4 + 1e-4 * |ort|).
// A second model whose names hold quotes, backslashes, trigraphs, control characters,
// UTF-8 and 70 bytes shows that tt_bench and outputFileName agree on every file name.

import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { main } from '../cli';
import { openOrtSession, tryLoadOnnxRuntime } from '../compare/ort';
import { fileSha256, type Manifest } from '../compile/manifest';
import { NetBuilder } from '../frontend/builder';
import { writeOnnxFile } from '../frontend/onnx/export';
import { Graph } from '../graph/graph';
import { outputFileName, outputFileNames } from '../runtime/abi';
import { readFloat32File, writeFloat32File } from '../runtime/rawfile';
import { uniform } from '../runtime/random';
import { skip } from '../skip.fixture';

const dir = mkdtempSync(path.join(tmpdir(), 'tt-cli-names-'));
const ort = tryLoadOnnxRuntime();

async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '', err = '';
  const code = await main(args, { out: (t) => { out += t; }, err: (t) => { err += t; } });
  return { code, out, err };
}

const manifestOf = (modelDir: string): Manifest => JSON.parse(readFileSync(path.join(modelDir, 'manifest.json'), 'utf8')) as Manifest;

/** A workspace-like tree: models/<file>.onnx and dist/<name>/ (the compiled model). */
const ws = path.join(dir, 'ws');
const onnx = path.join(ws, 'models', 'tf.onnx');
const out = path.join(ws, 'dist', 'tf');
const SHAPE = [1, 4, 6, 6];

test.before(() => {
  mkdirSync(path.dirname(onnx), { recursive: true });
  // As TensorFlow exports it: tensor names with ':' and '/'. Two outputs whose safe file
  // names would be the same without the hash.
  const b = new NetBuilder({ batch: 1, layout: 'NCHW', imageSize: 6, seed: 3, randomStats: true, weights: 'random' });
  const conv = b.relu(b.conv2d(b.input(4, 'x:0'), 'conv', { channels: 8, kernel: [3, 3], padding: [1, 1] }));
  b.graph.outputs = [conv, b.globalAvgPool(conv)];
  writeOnnxFile(onnx, b.graph, { outputNames: ['a/b:0', 'a_b_0'] });
});

test.after(() => rmSync(dir, { recursive: true, force: true }));

test('compile: the manifest keeps the ONNX names and stores no machine path', async () => {
  const r = await cli('compile', onnx, '--target', 'llvm', '--out', out);
  assert.is(r.code, 0, r.err);
  assert.is(r.err, '', 'no warning');
  const m = manifestOf(out);
  assert.equal(m.inputs.map((i) => i.name), ['x:0']);
  assert.equal(m.outputs.map((o) => [o.name, o.file]), [['a/b:0', 'a_b_0-069de8c3.bin'], ['a_b_0', 'a_b_0.bin']]);
  assert.is(m.name, 'tf.onnx');
  assert.is(m.model_file, '../../models/tf.onnx');
  assert.is(m.model_sha256, fileSha256(onnx));
  const text = readFileSync(path.join(out, 'manifest.json'), 'utf8');
  assert.not.match(text, dir, 'no absolute path in the manifest');
  const modelC = readFileSync(path.join(out, 'model.c'), 'utf8');
  assert.ok(modelC.includes('{"x\\0720", 4, input_shape0, 0}'), 'x:0 is written with an octal escape');
  assert.ok(modelC.includes('{"a/b\\0720", 4, output_shape0, 0}'));
  assert.not.match(modelC, /\\x/, 'no hex escape in model.c');
});

test('benchmark --input x:0=FILE --save-outputs DIR: outputs saved under names derived from the tensors', async () => {
  const x = uniform(SHAPE.reduce((a, b) => a * b, 1), 9, 0);
  const input = path.join(dir, 'x.bin');
  await writeFloat32File(input, x);
  const saved = path.join(dir, 'saved');
  const r = await cli('benchmark', out, '--input', `x:0=${input}`, '--save-outputs', saved, '--repeat', '1', '--number', '1', '--min-repeat-ms', '0');
  assert.is(r.code, 0, r.err);
  assert.equal(readdirSync(saved).sort(), ['a_b_0-069de8c3.bin', 'a_b_0.bin']);

  const wrong = await cli('benchmark', out, '--input', `x=${input}`, '--repeat', '1');
  assert.is(wrong.code, 2);
  assert.match(wrong.err, /the model has no input named 'x' \(its inputs: x:0\)/);

  if (!ort.module) { skip('ONNX-named outputs: their values against ONNX Runtime', ort.error); return; }
  const session = await openOrtSession(onnx, 1, [SHAPE]);
  const want = await session.run([x]);
  await session.release();
  const got = [await readFloat32File(path.join(saved, 'a_b_0-069de8c3.bin')), await readFloat32File(path.join(saved, 'a_b_0.bin'))];
  want.forEach((w, k) => {
    assert.is(got[k].length, w.length);
    for (let i = 0; i < w.length; i++) {
      if (!(Math.abs(got[k][i] - w[i]) <= 1e-4 + 1e-4 * Math.abs(w[i]))) assert.unreachable(`output ${k} [${i}]: ${got[k][i]} vs ONNX Runtime ${w[i]}`);
    }
  });
});

test('benchmark --compare onnxruntime: the report names the outputs; the ONNX file is found relative to a moved workspace', async () => {
  if (!ort.module) { skip('benchmark --compare onnxruntime with ONNX-named outputs', ort.error); return; }
  const moved = path.join(dir, 'moved');
  cpSync(ws, moved, { recursive: true });
  const modelDir = path.join(moved, 'dist', 'tf');
  const r = await cli('benchmark', modelDir, '--compare', 'onnxruntime', '--rounds', '1', '--repeat', '1', '--number', '1', '--json');
  assert.is(r.code, 0, r.err);
  const report = JSON.parse(r.out) as { onnx: string; onnx_source: string; outputs: { name: string; max_abs_err: number; max_abs_value: number }[]; top1: { agree: boolean } };
  assert.is(report.onnx, path.join(moved, 'models', 'tf.onnx'), 'the moved copy, not the original');
  assert.is(report.onnx_source, 'manifest');
  assert.equal(report.outputs.map((o) => o.name), ['a/b:0', 'a_b_0']);
  for (const o of report.outputs) assert.ok(o.max_abs_err <= 1e-4 + 1e-4 * o.max_abs_value, `${o.name}: max abs err ${o.max_abs_err}`);
  assert.ok(report.top1.agree);
  assert.match(r.err, /\n {2}output a\/b:0 \[1, 8, 6, 6\]: max abs err /); // with --json, the text is on stderr

  // A model file that changed since the compile is refused, not compared.
  writeFileSync(path.join(moved, 'models', 'tf.onnx'), Buffer.concat([readFileSync(onnx), Buffer.from([0])]));
  const changed = await cli('benchmark', modelDir, '--compare', 'onnxruntime', '--rounds', '1');
  assert.is(changed.code, 2);
  assert.match(changed.err, /tf\.onnx: changed since .* was compiled from it \(sha256 differs\); compile it again, or pass --onnx FILE\n$/);
  assert.is(changed.err.split('\n').length, 2, 'one line');
});

test('any byte of a name but NUL survives into model.so, the manifest and the saved file names', async () => {
  const inputName = 'in "put" \\x3a0 ??/ é:0';
  const outputNames = ['a/b:0', 'a_b_0', '..', 'é', 'x'.repeat(70), 'tab\there\n"q" \\ ??/ ??=', '\x01\x1f\x7f~', 'ok.name-1'];
  const g = new Graph();
  const x = g.input(inputName, [1, 4]);
  g.outputs = outputNames.map((_, k) => g.op('add', [x, g.constant(`c${k}`, [1, 4], new Float32Array(4).fill(k))]));
  const file = path.join(dir, 'weird.onnx');
  writeOnnxFile(file, g, { outputNames });
  const modelDir = path.join(dir, 'weird');
  const c = await cli('compile', file, '--target', 'llvm', '--out', modelDir);
  assert.is(c.code, 0, c.err);
  const m = manifestOf(modelDir);
  assert.equal(m.inputs.map((i) => i.name), [inputName]);
  assert.equal(m.outputs.map((o) => o.name), outputNames);
  const files = outputFileNames(outputNames).map((f) => `${f}.bin`);
  assert.equal(m.outputs.map((o) => o.file), files);
  assert.is(new Set(files).size, outputNames.length);
  assert.ok(files.every((f) => /^[A-Za-z0-9._-]+$/.test(f) && f.length <= 80), files.join(' '));
  assert.is(outputFileName('ok.name-1'), 'ok.name-1', 'a safe name is kept as it is');

  const input = path.join(dir, 'weird-x.bin');
  await writeFloat32File(input, Float32Array.of(0.5, 1.5, -2, 3));
  const saved = path.join(dir, 'weird-saved');
  const r = await cli('benchmark', modelDir, '--input', `${inputName}=${input}`, '--save-outputs', saved, '--repeat', '1', '--number', '1', '--min-repeat-ms', '0');
  assert.is(r.code, 0, r.err);
  assert.equal(readdirSync(saved).sort(), [...files].sort(), 'tt_bench names the files as outputFileName does');
  for (const [k, f] of files.entries()) {
    assert.equal(Array.from(await readFloat32File(path.join(saved, f))), [0.5 + k, 1.5 + k, -2 + k, 3 + k], f);
  }
});

test('compile refuses a name with a NUL byte in one line', async () => {
  const g = new Graph();
  const x = g.input('x\0y', [1, 4]);
  g.outputs = [g.op('relu', [x])];
  const file = path.join(dir, 'nul.onnx');
  writeOnnxFile(file, g);
  const r = await cli('compile', file, '--target', 'llvm', '--out', path.join(dir, 'nul'));
  assert.is(r.code, 2);
  assert.is(r.err, 'tensortune compile: input "x\\u0000y": a tensor name cannot hold a NUL byte (the model ABI\'s names are C strings)\n');
});

test.run();
