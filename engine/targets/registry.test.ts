// A target kind added as one module plus its registration (trace-kind.fixture.ts), touching
// no other backend's file: parsed from its target string, its candidates built with its
// hooks and verified by the measuring worker against the reference evaluator, a model
// compiled through its record that runs and matches the reference; then removed again.
//
// Tolerance: float32 kernels sum in another order than the float64 reference, so outputs may
// differ by at most 1e-4 of the largest magnitude (as compile/model.test.ts).

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { OPENCL_DIALECT } from '../codegen/opencl';
import { compileModel } from '../compile/model';
import { readManifest } from '../compile/manifest';
import { UserError } from '../errors';
import { loadOnnx } from '../frontend/onnx/import';
import { OnnxModelBuilder } from '../frontend/onnx/model-builder';
import { runGraph } from '../graph/run';
import { renderCandidate } from '../measure/builder';
import { convKernels } from '../measure/conv-kernels.fixture';
import { LocalMeasurer } from '../measure/measurer';
import { runBench } from '../native/bench';
import { readFloat32File, writeFloat32File } from '../runtime/rawfile';
import { uniform } from '../runtime/random';
import { hardwareFingerprint, isGpu, kindOf, parseTarget, registerTargetKind, targetKinds } from './registry';
import { calls, TRACE_KIND } from './trace-kind.fixture';

const work = mkdtempSync(path.join(tmpdir(), 'tt-target-kind-test-'));
const BUILT_IN = `'llvm' (e.g. "llvm -mcpu=native"), 'opencl' (e.g. "opencl -device=mali") or 'cuda' (e.g. "cuda -arch=sm_80")`;

const refusal = (f: () => unknown): string => {
  try {
    f();
  } catch (e) {
    assert.instance(e, UserError);
    return (e as Error).message;
  }
  throw new Error('expected a UserError');
};

test('before registration the kind is unknown, and the message lists the built-in kinds', () => {
  assert.is(refusal(() => parseTarget('trace -lanes=4')), `target: unsupported target kind 'trace'; expected ${BUILT_IN}`);
});

let unregister: (() => void) | undefined;

test('registered: parsed from its target string, its record found by the target, messages name it', () => {
  unregister = registerTargetKind(TRACE_KIND);
  const t = parseTarget(' trace  -lanes=8 ', '--target');
  assert.equal({ text: t.text, kind: t.kind, lanes: t.vectorLanes }, { text: 'trace -lanes=8', kind: 'trace', lanes: 8 });
  assert.is(kindOf(t), TRACE_KIND);
  assert.not.ok(isGpu(t));
  assert.is(parseTarget('trace').text, 'trace -lanes=4', 'the default width, normalised');
  assert.is(refusal(() => parseTarget('trace -lanes=3', '--target')), `--target: bad option '-lanes=3' in "trace -lanes=3"; expected -lanes=N with N one of 1, 4, 8, 16`);
  assert.ok(refusal(() => parseTarget('tpu')).endsWith(`'cuda' (e.g. "cuda -arch=sm_80") or 'trace' (e.g. "trace -lanes=4")`));
  assert.equal(targetKinds().map((k) => k.name), ['llvm', 'opencl', 'cuda', 'trace']);
  assert.throws(() => registerTargetKind(TRACE_KIND), /the target kind 'trace' is registered already/);
  assert.throws(() => registerTargetKind({ ...TRACE_KIND, name: 'c' }), /the target kind 'c' is registered already/, "an alias of llvm's is taken too");
  assert.throws(() => registerTargetKind({ ...TRACE_KIND, name: 'trace2', dialect: OPENCL_DIALECT }), /'trace2' is a cpu kind with a gpu dialect/);
  const print = hardwareFingerprint(t);
  assert.match(print, /^[0-9a-f]{16}$/);
  assert.is(hardwareFingerprint(parseTarget('trace -lanes=8')), print, 'stable');
  assert.is.not(hardwareFingerprint(parseTarget('trace -lanes=4')), print, 'another width, another fingerprint');
  assert.ok(calls.includes('parse') && calls.includes('identity'));
});

test("candidates: rendered and linked by the kind's hooks, the default schedule verified by the measuring worker", async () => {
  const target = parseTarget('trace -lanes=4');
  const { conv, defaults } = convKernels(target);
  calls.length = 0;
  const rendered = renderCandidate(conv.dag, defaults, target, new Set(conv.constInputs));
  assert.ok(rendered.ok, 'the defaults render');
  const kernel = rendered.code.slice(rendered.code.indexOf('#include "tensortune.h"')); // past the prelude, which has every width
  assert.ok(kernel.includes('tt_v4') && !/tt_v(8|16)/.test(kernel), 'the kernel is C of 4-lane vectors');
  const measurer = new LocalMeasurer(target, { timeoutMs: 5000, repeat: 1, minRepeatMs: 1, buildJobs: 2, seed: 3 });
  try {
    const [outcome] = await measurer.measure(conv, [defaults]);
    assert.is(outcome.error, null, outcome.message);
  } finally {
    await measurer.close();
  }
  assert.equal([...new Set(calls)], ['render', 'link']);
});

test('a model: compiled through the record with its default schedules, runs, and matches the reference', async () => {
  const target = parseTarget('trace -lanes=4');
  const onnx = path.join(work, 'conv.onnx');
  writeFileSync(onnx, new OnnxModelBuilder().input('x', [1, 8, 10, 10]).float('w', [16, 8, 3, 3], uniform(16 * 8 * 9, 5, 0))
    .node('Conv', ['x', 'w'], ['c'], { pads: [1, 1, 1, 1], kernel_shape: [3, 3] }).node('Relu', ['c'], ['y']).output('y').build());
  const graph = loadOnnx(onnx).graph;
  calls.length = 0;
  const outDir = path.join(work, 'conv-trace');
  const result = await compileModel({ name: 'conv', graph, target, outDir, cacheDir: path.join(work, 'cache') });
  assert.equal([...new Set(calls)], ['defaults', 'model', 'identity'], 'default schedules, the runtime object, the manifest\'s fingerprint');
  assert.is(readManifest(outDir).target, 'trace -lanes=4');
  const x = uniform(8 * 10 * 10, 7, 0);
  const input = path.join(work, 'x.bin');
  await writeFloat32File(input, x);
  const outputs = path.join(work, 'out');
  await runBench({ model: result.library, params: result.params, repeat: 1, number: 1, minRepeatMs: 0, threads: 1, inputs: { x: input }, saveOutputs: outputs });
  const got = await readFloat32File(path.join(outputs, 'output.bin'));
  const [ref] = runGraph(graph, new Map([['x', x]]));
  assert.is(got.length, ref.length);
  let err = 0, peak = 0;
  for (let i = 0; i < ref.length; i++) { err = Math.max(err, Math.abs(got[i] - ref[i])); peak = Math.max(peak, Math.abs(ref[i])); }
  assert.ok(peak > 0 && err <= 1e-4 * peak, `max abs error ${err} > 1e-4 x ${peak}`);
});

test('unregistered again: the kind is unknown once more', () => {
  unregister?.();
  unregister = undefined;
  assert.is(refusal(() => parseTarget('trace')), `target: unsupported target kind 'trace'; expected ${BUILT_IN}`);
  assert.throws(() => kindOf({ kind: 'trace', text: 'trace -lanes=4' }), /of no registered target kind/);
});

test.after(() => {
  unregister?.();
  rmSync(work, { recursive: true, force: true });
});
test.run();
