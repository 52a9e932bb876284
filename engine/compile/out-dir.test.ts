// Compiles into one output folder at once: every one succeeds, the folder holds one
// complete model (the files of one compile, never a mix), and nothing is left beside it;
// the leftovers of compiles that died (another pid, or this pid in an earlier process) are
// swept, a live compile's are not. Three child processes race their renames; then three
// real `tensortune compile --out D` at once.

import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnCli } from '../cli/spawn.fixture';
import { OnnxModelBuilder } from '../frontend/onnx/model-builder';
import { findCompiler } from '../native/build';
import { replaceOutDir } from './out-dir';
import { skip } from '../skip.fixture';

const work = mkdtempSync(path.join(tmpdir(), 'tt-out-dir-test-'));
const CHILD = path.join(__dirname, 'out-dir-child.fixture.ts');

function run(args: readonly string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args]);
    let out = '', err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => { out += d; });
    child.stderr.setEncoding('utf8').on('data', (d: string) => { err += d; });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

/** The pid of a process that has exited. */
function deadPid(): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', '']);
    child.on('error', reject);
    child.on('close', () => resolve(child.pid!));
  });
}

const siblings = (parent: string, base: string): string[] => readdirSync(parent).filter((n) => n.startsWith(`.${base}.`)).sort();

test('three processes replacing one folder at once: all succeed, one complete model in place, nothing left beside it', async () => {
  const parent = path.join(work, 'race');
  mkdirSync(parent);
  const outDir = path.join(parent, 'D');
  for (let round = 0; round < 2; round++) {
    const barrier = path.join(work, `barrier-${round}`);
    mkdirSync(barrier);
    const tags = ['a', 'b', 'c'].map((t) => `${t}${round}`);
    const results = await Promise.all(tags.map((tag) => run([outDir, tag, barrier, '3'])));
    for (const [i, r] of results.entries()) {
      assert.is(r.err, '', `round ${round}, ${tags[i]}: nothing on stderr`);
      assert.is(r.code, 0);
      assert.is(r.out, `${tags[i]} done\n`);
    }
    assert.equal(readdirSync(outDir).sort(), ['manifest.json', 'model.so', 'params.bin']);
    const contents = new Set(readdirSync(outDir).map((f) => readFileSync(path.join(outDir, f), 'utf8')));
    assert.is(contents.size, 1, 'the files of one compile');
    assert.ok(tags.includes([...contents][0]));
    assert.equal(siblings(parent, 'D'), [], 'no .D.new-* or .D.old-* left');
  }
});

test('leftovers of dead compiles are swept, this pid\'s from an earlier process too; a live compile\'s are kept', async () => {
  const parent = path.join(work, 'sweep');
  mkdirSync(parent);
  const outDir = path.join(parent, 'D');
  const dead = await deadPid();
  const stale = [`.D.new-${dead}-aaaaaa`, `.D.old-${dead}-bbbbbb`, `.D.new-${process.pid}-cccccc`, `.D.old-${process.pid}-dddddd`];
  const live = `.D.new-${process.ppid}-eeeeee`; // the test runner's parent: alive throughout
  for (const name of [...stale, live]) {
    mkdirSync(path.join(parent, name));
    writeFileSync(path.join(parent, name, 'model.so'), 'partial');
  }
  await replaceOutDir(outDir, async (dir) => { writeFileSync(path.join(dir, 'manifest.json'), '{}'); });
  assert.equal(siblings(parent, 'D'), [live]);
  assert.equal(readdirSync(outDir), ['manifest.json']);
});

test('a fill that fails leaves the old folder in place and nothing beside it', async () => {
  const parent = path.join(work, 'fail');
  mkdirSync(parent);
  const outDir = path.join(parent, 'D');
  await replaceOutDir(outDir, async (dir) => { writeFileSync(path.join(dir, 'model.so'), 'old'); });
  try {
    await replaceOutDir(outDir, async (dir) => { writeFileSync(path.join(dir, 'model.so'), 'new'); throw new Error('link failed'); });
    assert.unreachable();
  } catch (e) {
    assert.is((e as Error).message, 'link failed');
  }
  assert.is(readFileSync(path.join(outDir, 'model.so'), 'utf8'), 'old');
  assert.equal(siblings(parent, 'D'), []);
});

test('three `tensortune compile --out D` at once: each exits 0 with no stack, D holds one whole model, no leftovers', async () => {
  try {
    await findCompiler();
  } catch (e) {
    skip('three concurrent compiles', (e as Error).message);
    return;
  }
  const dir = path.join(work, 'cli');
  mkdirSync(dir);
  const model = path.join(dir, 'add.onnx');
  writeFileSync(model, new OnnxModelBuilder(13).input('a', [1, 8]).input('b', [1, 8]).node('Add', ['a', 'b'], ['y']).output('y').build());
  const outDir = path.join(dir, 'D');
  const results = await Promise.all([1, 2, 3].map(() => spawnCli(['compile', model, '--out', outDir], { TMPDIR: work }).done));
  for (const r of results) {
    assert.is(r.code, 0, r.err);
    assert.not.match(r.err, /ENOTEMPTY|\n\s+at /);
    assert.match(r.out, /wrote .*model\.so/);
  }
  assert.equal(readdirSync(outDir).sort(), ['manifest.json', 'model.c', 'model.so', 'params.bin']);
  assert.equal(siblings(dir, 'D'), []);
  const manifest = JSON.parse(readFileSync(path.join(outDir, 'manifest.json'), 'utf8')) as { inputs: { name: string }[] };
  assert.equal(manifest.inputs.map((i) => i.name), ['a', 'b']);
});

test.after(() => rmSync(work, { recursive: true, force: true }));
test.run();
