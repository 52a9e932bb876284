// The import structure (docs/architecture.md, "Layers"): no two source files import each
// other, directly or through others, and the folders (engine/<folder>, engine/<file>.ts,
// and the Nx side's plugin/, executors/, generators/; bench/ and scripts/ on top) import
// downwards only, but for the upward imports UPWARD names, each with its reason there.
// Tests and fixtures are left out: they may reach anywhere.

import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const ROOT = path.join(__dirname, '..');
const DIRS = ['engine', 'plugin', 'executors', 'generators', 'bench', 'scripts'];

/** [from folder, to folder, the file that imports, the file imported]: the upward imports docs/architecture.md names. */
const UPWARD: readonly [string, string, string, string][] = [
  ['plugin', 'executors', 'plugin/pre-tasks.ts', 'executors/options.ts'],
];

function sources(): string[] {
  const out: string[] = [];
  const visit = (dir: string): void => {
    for (const e of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = path.posix.join(dir, e.name);
      if (e.isDirectory()) { if (e.name !== 'node_modules' && e.name !== 'fixtures') visit(rel); continue; }
      if (/\.ts$/.test(e.name) && !/\.(test|fixture|e2e)\.ts$|\.d\.ts$/.test(e.name)) out.push(rel);
    }
  };
  for (const d of DIRS) visit(d);
  return out;
}

/** Each source file's imports of other source files (import, export from, import(), require). */
function importGraph(): Map<string, Set<string>> {
  const files = sources();
  const known = new Set(files);
  const graph = new Map<string, Set<string>>();
  for (const f of files) {
    const to = new Set<string>();
    for (const { fileName } of ts.preProcessFile(readFileSync(path.join(ROOT, f), 'utf8'), true, true).importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const base = path.posix.normalize(path.posix.join(path.posix.dirname(f), fileName)).replace(/\.js$/, '');
      const hit = [`${base}.ts`, `${base}/index.ts`].find((c) => known.has(c));
      if (hit && hit !== f) to.add(hit);
    }
    graph.set(f, to);
  }
  return graph;
}

/** The strongly connected components of more than one node (Tarjan). */
function circles(graph: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  const index = new Map<string, number>(), low = new Map<string, number>(), stack: string[] = [], on = new Set<string>();
  const out: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next); low.set(v, next++); stack.push(v); on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) { visit(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)); } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const c: string[] = [];
      for (let w = stack.pop()!; ; w = stack.pop()!) { on.delete(w); c.push(w); if (w === v) break; }
      if (c.length > 1) out.push(c.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

const folderOf = (f: string): string => {
  const parts = f.split('/');
  return parts[0] === 'engine' ? parts.slice(0, 2).join('/') : parts[0];
};

const files = importGraph();

test('no source files import each other, directly or through others', () => {
  assert.equal(circles(files), []);
});

test('folders import downwards, but for the upward imports named in docs/architecture.md', () => {
  const folders = new Map<string, Set<string>>();
  const upward = new Set(UPWARD.map(([a, b]) => `${a} -> ${b}`));
  for (const [f, to] of files) {
    for (const t of to) {
      const [a, b] = [folderOf(f), folderOf(t)];
      if (a === b || upward.has(`${a} -> ${b}`)) continue;
      if (!folders.has(a)) folders.set(a, new Set());
      folders.get(a)!.add(b);
    }
  }
  assert.equal(circles(folders), []);
  for (const [a, b, from, to] of UPWARD) {
    assert.ok(files.get(from)?.has(to), `${from} no longer imports ${to}: strike it from UPWARD and docs/architecture.md`);
    const reaches = (x: string, seen = new Set<string>()): boolean => x === a || [...folders.get(x) ?? []].some((y) => !seen.has(y) && (seen.add(y), reaches(y, seen)));
    assert.ok(reaches(b), `${a} -> ${b} is not upward (nothing in ${b} leads back to ${a}): strike it from UPWARD`);
    const others = [...files].filter(([f]) => folderOf(f) === a).flatMap(([f, t]) => [...t].filter((x) => folderOf(x) === b && !(f === from && x === to)).map((x) => `${f} -> ${x}`));
    assert.equal(others, [], `more imports from ${a} into ${b} than the one named`);
  }
});

test.run();
