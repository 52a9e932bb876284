// compile picks direct conv or Winograd per layer: on small networks of two 3x3 stride-1
// conv layers with hand-made records, the layer whose Winograd record is faster runs as
// Winograd (its weight transformed into params.bin), the other stays direct; a layer with
// a Winograd record only runs Winograd; without records, or with a direct record only (and
// no --strict), TVM's channel rule decides. Compile
// says which, and the compiled model computes the network.

import { mkdtempSync, rmSync } from 'node:fs';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { NetBuilder } from '../frontend/builder';
import { loadModel } from '../frontend/load';
import { writeOnnxFile } from '../frontend/onnx/export';
import { extractTasks, type Task } from '../graph/extract';
import type { Graph } from '../graph/graph';
import { runGraph } from '../graph/run';
import { runBench } from '../native/bench';
import { appendRecords } from '../records/log';
import { RECORD_FORMAT_VERSION, type TuningRecord } from '../records/record';
import { readFloat32File, writeFloat32File } from '../runtime/rawfile';
import { uniform } from '../runtime/random';
import { defaultSchedule } from '../schedule/defaults';
import { hardwareFingerprint, parseTarget } from '../target';
import { compareOutput, WINOGRAD_TOLERANCE } from '../measure/verify';
import { winogradByDefault } from './choose-winograd';
import type { CompileResult } from './model';
import { compileNetwork } from '../app/compile';

const dir = mkdtempSync(path.join(tmpdir(), 'tt-choose-winograd-'));
const target = parseTarget('llvm -mcpu=native');
const fingerprint = hardwareFingerprint(target);

// data 1x10x10x8 -> conv 3x3 (16) + bias + relu -> conv 3x3 (16) + bias: both eligible, 10x10 outputs (F(2x2, 3x3)).
const b = new NetBuilder({ batch: 1, layout: 'NHWC', imageSize: 10, seed: 4, randomStats: false, weights: 'random' });
let x = b.input(8);
x = b.relu(b.bias(b.conv2d(x, 'conv1', { channels: 16, kernel: [3, 3], padding: [1, 1] }), 'conv1_bias'));
x = b.bias(b.conv2d(x, 'conv2', { channels: 16, kernel: [3, 3], padding: [1, 1] }), 'conv2_bias');
b.graph.outputs = [x];
const model = path.join(dir, 'two-convs.onnx');
writeOnnxFile(model, b.graph);

const rec = (task: Task, ms: number): TuningRecord => ({
  v: RECORD_FORMAT_VERSION, engine: '0.1.0', key: task.key, desc: task.desc, target: target.text, fingerprint,
  steps: defaultSchedule(task.dag, { vectorLanes: target.vectorLanes }), costs_ms: [ms], error: null, seed: 0, time: new Date().toISOString(),
});

/** The compiled model against the graph's reference runner (its convs direct), on a seeded input of `size` floats. */
async function assertComputesGraph(compiled: CompileResult, graph: Graph, size: number, name: string): Promise<void> {
  const input = uniform(size, 9, 0);
  const inFile = path.join(dir, `${name}-input.bin`);
  await writeFloat32File(inFile, input);
  const saved = path.join(dir, `${name}-saved`);
  await runBench({ model: compiled.library, params: compiled.params, repeat: 1, number: 1, threads: 1, inputs: { [graph.nodes[0].name]: inFile }, saveOutputs: saved });
  const got = await readFloat32File(path.join(saved, (await fs.readdir(saved))[0]));
  const [want] = runGraph(graph, new Map([[graph.nodes[0].name, input]]));
  const cmp = compareOutput(got, want, WINOGRAD_TOLERANCE);
  assert.ok(cmp.ok, cmp.ok ? '' : cmp.message);
}

test('extraction: one Winograd alternative per eligible layer, only when asked', () => {
  const graph = loadModel({ model }).graph;
  assert.is(extractTasks(graph).length, 2);
  const tasks = extractTasks(graph, { winograd: true });
  assert.equal(tasks.map((t) => t.desc), [
    'conv2d_nhwc+add+relu 1x10x10x8 -> 1x10x10x16', 'conv2d_nhwc+add 1x10x10x16 -> 1x10x10x16',
    'conv2d_winograd_nhwc+add+relu 1x10x10x8 -> 1x10x10x16', 'conv2d_winograd_nhwc+add 1x10x10x16 -> 1x10x10x16',
  ]);
  assert.equal(tasks.slice(2).map((t) => t.alternative?.of), [tasks[0].key, tasks[1].key]);
  assert.equal(tasks[2].shapes[1], [4, 4, 8, 16], 'F(2x2, 3x3): 10 is not a multiple of 4');
});

test('compile: Winograd for the layer whose record is faster, direct for the other; the model computes the network', async () => {
  const graph = loadModel({ model }).graph;
  const [d1, d2, w1, w2] = extractTasks(graph, { winograd: true });
  const records = path.join(dir, 'records.jsonl');
  // Layer 1: Winograd 1 ms < direct 2 ms. Layer 2: Winograd 3 ms > direct 1 ms.
  await appendRecords(records, [rec(d1, 2), rec(w1, 1), rec(d2, 1), rec(w2, 3)]);
  const logs: string[] = [];
  const out = path.join(dir, 'model');
  const compiled = await compileNetwork({ model, target: target.text, outDir: out, cacheDir: path.join(dir, 'cache'), records: [records], log: (l) => logs.push(l) });
  const line = logs.find((l) => l.startsWith('winograd: '));
  assert.ok(line, logs.join('\n'));
  assert.match(line!, /^winograd: 1 of 2 eligible layer\(s\) use Winograd/);
  assert.match(line!, /\n {2}conv2d_winograd_nhwc\+add\+relu 1x10x10x8 -> 1x10x10x16 \(x1\): 1\.000 ms vs direct 2\.000 ms$/);
  assert.equal(compiled.kernels.map((k) => k.key).sort(), [w1.key, d2.key].sort());
  assert.ok(compiled.kernels.every((k) => k.schedule === 'tuned'));

  await assertComputesGraph(compiled, graph, 10 * 10 * 8, 'first');

  // --no winograd (the option off): both layers direct.
  const direct = await compileNetwork({ model, target: target.text, outDir: out, cacheDir: path.join(dir, 'cache'), records: [records], winograd: false });
  assert.equal(direct.kernels.map((k) => k.key).sort(), [d1.key, d2.key].sort());
});

test('compile reads the records once: a broken line is reported once, not once per choice', async () => {
  const [d1, d2, w1, w2] = extractTasks(loadModel({ model }).graph, { winograd: true });
  const records = path.join(dir, 'broken.jsonl');
  await appendRecords(records, [rec(d1, 2), rec(w1, 1), rec(d2, 1), rec(w2, 3)]);
  await fs.appendFile(records, '{"key": "torn\n');
  const warnings: string[] = [];
  const compiled = await compileNetwork({ model, target: target.text, outDir: path.join(dir, 'broken'), cacheDir: path.join(dir, 'cache'), records: [records], warn: (m) => warnings.push(m) });
  assert.equal(compiled.kernels.map((k) => k.key).sort(), [w1.key, d2.key].sort(), 'the readable records still decide');
  assert.is(warnings.filter((w) => /broken line/.test(w)).length, 1, warnings.join('\n'));
  assert.match(warnings[0], /broken\.jsonl: skipped 1 broken line\(s\) \(line 5\)/);
});

// data 1x6x6x8 -> conv 3x3 (96) + relu -> conv 3x3 (16): TVM's rule picks the 96-channel layer only.
const b2 = new NetBuilder({ batch: 1, layout: 'NHWC', imageSize: 6, seed: 5, randomStats: false, weights: 'random' });
let y = b2.input(8);
y = b2.relu(b2.conv2d(y, 'wide', { channels: 96, kernel: [3, 3], padding: [1, 1] }));
y = b2.conv2d(y, 'narrow', { channels: 16, kernel: [3, 3], padding: [1, 1] });
b2.graph.outputs = [y];
const model2 = path.join(dir, 'wide-narrow.onnx');
writeOnnxFile(model2, b2.graph);

test('no records: Winograd by TVM\'s rule (64 < output channels < 512, <= 512 at 16 lanes), and the model computes the network', async () => {
  const channels = [64, 65, 128, 256, 511, 512, 1024];
  assert.equal(channels.map((co) => winogradByDefault(co, 8)), [false, true, true, true, true, false, false], 'AVX2: TVM\'s range');
  assert.equal(channels.map((co) => winogradByDefault(co, 16)), [false, true, true, true, true, true, false], 'AVX-512: 512 channels too');
  const graph = loadModel({ model: model2 }).graph;
  const [, d2, w1] = extractTasks(graph, { winograd: true });
  const logs: string[] = [];
  const out = path.join(dir, 'model2');
  const compiled = await compileNetwork({ model: model2, target: target.text, outDir: out, cacheDir: path.join(dir, 'cache'), log: (l) => logs.push(l) });
  const line = logs.find((l) => l.startsWith('winograd: '));
  assert.ok(line, logs.join('\n'));
  assert.match(line!, /^winograd: 1 of 2 eligible layer\(s\) use Winograd\n {2}conv2d_winograd_nhwc\+relu 1x6x6x8 -> 1x6x6x96 \(x1\): no records, 96 output channels/);
  assert.equal(compiled.kernels.map((k) => k.key).sort(), [w1.key, d2.key].sort());
  assert.ok(compiled.kernels.every((k) => k.schedule === 'default'));
  await assertComputesGraph(compiled, graph, 6 * 6 * 8, 'second');
});

test('a Winograd record only: Winograd runs, whatever the rule says; a direct record only: the rule decides, and --strict keeps it direct', async () => {
  const graph = loadModel({ model: model2 }).graph;
  const [d1, d2, w1, w2] = extractTasks(graph, { winograd: true });
  const records = path.join(dir, 'records2.jsonl');
  // The 96-channel layer (Winograd by the rule) has only a direct record, the 16-channel one (direct by the rule) only a Winograd record.
  await appendRecords(records, [rec(d1, 1), rec(w2, 1)]);
  const logs: string[] = [];
  const compiled = await compileNetwork({ model: model2, target: target.text, outDir: path.join(dir, 'model3'), cacheDir: path.join(dir, 'cache'), records: [records], log: (l) => logs.push(l) });
  assert.equal(compiled.kernels.map((k) => k.key).sort(), [w1.key, w2.key].sort());
  assert.equal(compiled.kernels.find((k) => k.key === w1.key)!.schedule, 'default');
  // The rule's range as the log words it on this machine: AVX-512 (16 lanes) takes in 512 channels.
  const RULE = target.vectorLanes >= 16 ? '64 < channels <= 512 at 16 lanes' : '64 < channels < 512';
  assert.match(logs.find((l) => l.startsWith('winograd: '))!, new RegExp(
    '^winograd: 2 of 2 eligible layer\\(s\\) use Winograd\n' +
    ` {2}conv2d_winograd_nhwc\\+relu 1x6x6x8 -> 1x6x6x96 \\(x1\\): no Winograd record \\(direct 1\\.000 ms\\), 96 output channels \\(Winograd without its record when ${RULE}\\)\n` +
    ' {2}conv2d_winograd_nhwc 1x6x6x96 -> 1x6x6x16 \\(x1\\): 1\\.000 ms, the direct conv has no record$'));
  await assertComputesGraph(compiled, graph, 6 * 6 * 8, 'direct-only');

  // --strict wants a record for every kernel that runs: with records for both layers' direct tasks, both stay direct.
  const strictRecords = path.join(dir, 'records2-strict.jsonl');
  await appendRecords(strictRecords, [rec(d1, 1), rec(d2, 1)]);
  const strictLogs: string[] = [];
  const strict = await compileNetwork({ model: model2, target: target.text, outDir: path.join(dir, 'model3-strict'), cacheDir: path.join(dir, 'cache'), records: [strictRecords], strict: true, log: (l) => strictLogs.push(l) });
  assert.equal(strict.kernels.map((k) => k.key).sort(), [d1.key, d2.key].sort());
  assert.ok(strict.kernels.every((k) => k.schedule !== 'default'), JSON.stringify(strict.kernels));
  assert.match(strictLogs.find((l) => l.startsWith('winograd: '))!, /^winograd: 0 of 2 eligible layer\(s\) use Winograd$/);
});

test.after(() => rmSync(dir, { recursive: true, force: true }));

test.run();
