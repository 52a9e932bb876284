// One version: package.json's, taken by the records, the fingerprint, `--version` and the
// plugin through engine/version.ts, and written as a literal nowhere else in the sources.

import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { main } from './cli';
import { fingerprintReport } from './cli/fingerprint';
import { makeRecord } from './records/make';
import { ENGINE_VERSION } from './version';
import { PLUGIN_VERSION } from '../plugin/package-info';

const ROOT = path.join(__dirname, '..');
const PACKAGE_VERSION = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

test('ENGINE_VERSION is package.json\'s version, and the plugin\'s', () => {
  assert.is(ENGINE_VERSION, PACKAGE_VERSION);
  assert.is(PLUGIN_VERSION, PACKAGE_VERSION);
});

test('a record, the fingerprint and --version carry it', async () => {
  const record = makeRecord({ steps: [], costs_ms: [1], error: null, build_ms: 0, run_ms: 0 }, { task: { key: 'k', desc: 'd' }, target: 'llvm', fingerprint: 'f', seed: 0 });
  assert.is(record.engine, PACKAGE_VERSION);
  assert.is((await fingerprintReport(['llvm'])).engine, PACKAGE_VERSION);
  let out = '';
  assert.is(await main(['--version'], { out: (t) => { out += t; }, err: () => {} }), 0);
  assert.is(out, `tensortune ${PACKAGE_VERSION}\n`);
});

test('no source but engine/version.ts\'s reader writes the version as a literal', () => {
  const literal = new RegExp(`['"\`]${PACKAGE_VERSION.replace(/\./g, '\\.')}['"\`]`);
  const found: string[] = [];
  const visit = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, e.name);
      if (e.isDirectory()) { if (e.name !== 'node_modules' && e.name !== 'fixtures') visit(file); continue; }
      if (!/\.ts$/.test(e.name) || /\.(test|fixture)\.ts$|\.d\.ts$/.test(e.name)) continue;
      if (literal.test(readFileSync(file, 'utf8'))) found.push(path.relative(ROOT, file));
    }
  };
  for (const dir of ['engine', 'plugin', 'executors', 'generators']) visit(path.join(ROOT, dir));
  assert.equal(found, []);
});

test.run();
