// The README and docs/ are product documentation: they state rules and facts and name the
// record or script behind a figure; they never count development sessions, cite test seeds by
// number, or send the reader to the sibling folder outside the repository that a clone lacks.

import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const ROOT = path.resolve(__dirname, '..');
// The sibling folder's name is assembled, so this file does not itself point at it.
const SIBLING = ['..', 'shared'].join('/');
const FORBIDDEN = new RegExp(`session [0-9]|seed 0[0-9]|seed-0[0-9]|${SIBLING.replace(/[./]/g, '\\$&')}`, 'i');

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? markdownFiles(path.join(dir, e.name))
    : e.name.endsWith('.md') ? [path.join(dir, e.name)] : []));
}

test('README.md and docs/ count no sessions, cite no seeds and do not point outside the repository', () => {
  const files = [path.join(ROOT, 'README.md'), ...markdownFiles(path.join(ROOT, 'docs'))];
  const hits = files.flatMap((f) => readFileSync(f, 'utf8').split('\n').map((line, i) => ({ f, i, line })).filter((x) => FORBIDDEN.test(x.line)))
    .map((x) => `${path.relative(ROOT, x.f)}:${x.i + 1}: ${x.line.trim()}`);
  assert.equal(hits, []);
});

test('the pattern catches what it is for', () => {
  for (const bad of ['in session 33', 'Session 12 ran', 'the seed 002 conv', 'seed-004', `see ${SIBLING}/DESIGN.md`]) assert.ok(FORBIDDEN.test(bad), bad);
  for (const good of ['two ONNX Runtime sessions', 'seeded weights', '--seed 0']) assert.not.ok(FORBIDDEN.test(good), good);
});

test.run();
