// One vocabulary for tasks, alternatives and kernels (docs/tuning.md, "Terms"): on a
// network with two 3x3 stride-1 convs (each with a Winograd alternative on CPU targets) and
// two subgraphs without a reduction, `tasks`, `tune` and `compile` count the same 4 tasks
// and 2 alternatives, and compile's kernels add up to its tasks plus the kernels of no task.

import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeTinyModel } from '../../e2e/tiny-model';
import { describeKernels, kernelCounts } from './counts';
import { spawnCli } from './spawn.fixture';

test('kernels of tasks, tuned or not, and of no task', () => {
  const c = kernelCounts([
    { key: 'a', schedule: 'tuned' }, { key: 'b', schedule: 'default' }, { key: 't', schedule: 'default' }, { key: 'w', schedule: 'tuned' },
  ], new Set(['a', 'b', 'w', 'x']));
  assert.equal(c, { kernels: 4, tuned: 2, untunedTasks: 1, noTask: 1 });
  assert.is(describeKernels(c), '4 kernels: 3 of tasks (2 tuned, 1 default), 1 of no task (default schedules)');
});

test('tasks, tune and compile of a network with Winograd alternatives count alike', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tt-cli-counts-'));
  const model = path.join(dir, 'tiny.onnx');
  const records = path.join(dir, 'tiny.jsonl');
  writeTinyModel(model, 3);

  const tasks = await spawnCli(['tasks', model]).done;
  assert.is(tasks.code, 0, tasks.err);
  assert.match(tasks.out, /^4 tasks, sum of weights 4; on CPU targets tune also searches 2 Winograd alternatives of them/m);

  const tune = await spawnCli(['tune', model, '--records', records, '--trials-per-task', '1', '--policy', 'random', '--confirm', '0'], { CI: '' }).done;
  assert.is(tune.code, 0, tune.err);
  assert.match(tune.out, /tiny\.onnx: 4 tasks and 2 Winograd alternatives, 0 measurement\(s\) resumed/);
  const rows = tune.out.split('\n').filter((l) => /^\|\s+\d+ \|/.test(l)).slice(-6).map((l) => l.split('|').map((c) => c.trim())[6]);
  assert.equal(rows, ['1', '1', '1', '1', 'alt 0', 'alt 1'], 'an alternative shares the weight of the task it implements');

  const out = path.join(dir, 'out');
  const compile = await spawnCli(['compile', model, '--records', records, '--out', out]).done;
  assert.is(compile.code, 0, compile.err);
  assert.match(compile.out, /^records: all 4 task\(s\) tuned/m);
  const manifest = JSON.parse(readFileSync(path.join(out, 'manifest.json'), 'utf8')) as { kernels: unknown[]; records: { tuned: number; default: number } };
  // The 4 tasks (a Winograd layer runs its alternative's kernel in its task's place) and the input transpose and the flatten.
  assert.is(manifest.kernels.length, 6);
  assert.equal([manifest.records.tuned, manifest.records.default], [4, 2]);
  assert.match(compile.out, /^the model's 6 kernels: 4 of tasks \(4 tuned, 0 default\), 2 of no task \(default schedules\)$/m);
});

test.run();
