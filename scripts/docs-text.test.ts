// The README and docs/ are product documentation: they state rules and facts and name the
// record or script behind a figure; they never count development sessions, cite test seeds by
// number, or send the reader to a path outside the repository (a clone has nothing there).

import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const ROOT = path.resolve(__dirname, '..');
const FORBIDDEN = /session [0-9]|seed 0[0-9]|seed-0[0-9]/i;

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? markdownFiles(path.join(dir, e.name))
    : e.name.endsWith('.md') ? [path.join(dir, e.name)] : []));
}

/** The links in `line` (of a file in `dir`) whose relative target lies outside the repository: a clone has nothing there. */
function outside(line: string, dir: string): string[] {
  return [...line.matchAll(/\]\(((?:\.\.\/)+[^)\s#]*)/g)].map((m) => m[1]).filter((p) => path.relative(ROOT, path.resolve(dir, p)).startsWith('..'));
}

test('README.md and docs/ count no sessions, cite no seeds and do not point outside the repository', () => {
  const files = [path.join(ROOT, 'README.md'), ...markdownFiles(path.join(ROOT, 'docs'))];
  const hits = files.flatMap((f) => readFileSync(f, 'utf8').split('\n').map((line, i) => ({ f, i, line }))
    .filter((x) => FORBIDDEN.test(x.line) || outside(x.line, path.dirname(x.f)).length > 0))
    .map((x) => `${path.relative(ROOT, x.f)}:${x.i + 1}: ${x.line.trim()}`);
  assert.equal(hits, []);
});

test('the patterns catch what they are for', () => {
  for (const bad of ['in session 33', 'Session 12 ran', 'the seed 002 conv', 'seed-004']) assert.ok(FORBIDDEN.test(bad), bad);
  for (const good of ['two ONNX Runtime sessions', 'seeded weights', '--seed 0']) assert.not.ok(FORBIDDEN.test(good), good);
  const docs = path.join(ROOT, 'docs');
  assert.equal(outside('see [the design](../../DESIGN.md)', docs), ['../../DESIGN.md']);
  assert.equal(outside('[records](../bench/results/) and [README](../README.md#add-it)', docs), []);
  assert.equal(outside('extends: ../../tensortune.config.yaml', docs), [], 'a path in an example is not a link');
});

test.run();
