// Compiles of the same kernel at once, in one process (the conformance runner's lanes, two
// models compiled side by side) share the object cache without stepping on each other's
// temporary files: every compile succeeds and the object is cached once.

import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Graph } from '../graph/graph';
import { parseTarget } from '../target';
import { compileModel } from './model';

const dir = mkdtempSync(path.join(tmpdir(), 'tt-cache-race-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

test('eight concurrent compiles of one kernel into a fresh cache all succeed', async () => {
  const cacheDir = path.join(dir, 'cache');
  const graph = (): Graph => { const g = new Graph(); g.outputs = [g.op('relu', [g.input('x', [64])])]; return g; };
  const results = await Promise.all(Array.from({ length: 8 }, (_, i) =>
    compileModel({ name: `m${i}`, graph: graph(), target: parseTarget('llvm'), outDir: path.join(dir, `out${i}`), cacheDir }).then(() => 'ok', (e: Error) => e.message)));
  assert.equal(results, new Array(8).fill('ok'));
  const objects = readdirSync(path.join(cacheDir, 'objects'));
  assert.is(objects.filter((f) => f.endsWith('.o')).length, 1, objects.join(', '));
  assert.ok(!objects.some((f) => f.includes('.tmp-')), `no temporary file left: ${objects.join(', ')}`);
});

test.run();
