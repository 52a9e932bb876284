#!/usr/bin/env node
// npm test's test runs: the unit tests, then (if they pass) the end-to-end suite and the ONNX
// node conformance suite (engine/conformance/), as package.json's test:unit, test:e2e and
// test:conformance scripts select them; then every skipped test with its reason, and one
// closing line summed over the runs: `N passed, N failed, N skipped`. Skips are listed by
// what is missing: one `skipped: <cause>` line per missing tool, its tests under it.
//
// The unit and end-to-end files run in TENSORTUNE_TEST_JOBS uvu processes at once (default:
// the machine's cores, at most 2), each taking the next group of files as one finishes;
// a group's output is printed whole when it ends, so files never interleave. Most tests
// wait on a C compiler, a child process or Nx, so two processes keep both cores busy. The
// end-to-end suites pack the plugin; it is built once here first (TENSORTUNE_E2E_BUILT), so
// that two suites never rebuild dist/ at the same time. The conformance suite runs alone
// (it compiles in two lanes of its own).
//
// uvu counts a test that returned early as passed. A test that cannot run here says so
// through skip() (engine/skip.fixture.ts), which prints `skip: <test>: <reason>`; each such
// line moves one test from passed to skipped. uvu's own skips (test.skip) count as skipped.
// uvu prints a failure's details under its file, in the middle of the output; they are
// printed again at the end, so that a log cut to its last lines (a CI page) still names the
// failing file and test.
'use strict';
const { spawn } = require('node:child_process');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const scripts = require(path.join(root, 'package.json')).scripts;
const bin = path.join(root, 'node_modules', '.bin');

/** Runs a command line through the shell (as npm would, node_modules/.bin first on PATH); `live`: its output passed through as it comes. */
function runCommand(name, command, { live = true, env = {} } = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, {
      cwd: root, shell: true, stdio: ['inherit', 'pipe', 'pipe'],
      env: { ...process.env, ...env, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}` },
    });
    let text = '';
    child.stdout.on('data', (d) => { if (live) process.stdout.write(d); text += d; });
    child.stderr.on('data', (d) => { if (live) process.stderr.write(d); text += d; });
    child.on('close', (code, signal) => resolve({ name, code: code ?? 1, signal, text }));
  });
}

/** Runs one package.json script. */
const run = (name, opts) => runCommand(name, scripts[name], opts);

/** Undo the shell's escapes inside a double-quoted word. */
const unquote = (s) => s.replace(/\\([\\"$`])/g, '$1');

/**
 * The files a `uvu -r tsx DIR "PATTERN" [-i "IGNORE"]` script selects, found as uvu finds
 * them (uvu/parse), relative to DIR; undefined for a script of another shape.
 */
async function filesOf(script) {
  const m = /^uvu -r tsx (\S+) "((?:[^"\\]|\\.)*)"(?: -i "((?:[^"\\]|\\.)*)")?$/.exec(script.trim());
  if (!m) return undefined;
  const [, dir, pattern, ignore] = m;
  const { parse } = require('uvu/parse');
  const { suites } = await parse(dir, unquote(pattern), { cwd: root, ignore: ignore === undefined ? undefined : unquote(ignore) });
  return { dir, files: suites.map((s) => s.name.split(path.sep).join('/')).sort() };
}

const escapeRegex = (s) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** Processes run at once: TENSORTUNE_TEST_JOBS, else the cores, at most 2. */
function jobs() {
  const asked = Number(process.env.TENSORTUNE_TEST_JOBS);
  if (Number.isInteger(asked) && asked >= 1) return asked;
  return Math.max(1, Math.min(2, require('node:os').availableParallelism?.() ?? require('node:os').cpus().length));
}

/**
 * One script's files in `jobs()` uvu processes, each taking the next group (`first` files
 * lead, alone: the longest suites, started at once); one result per group, its output
 * printed when it ends. A script whose files cannot be listed runs as it is.
 */
async function runParallel(name, { groupSize, first = [], env = {} }) {
  const listed = await filesOf(scripts[name]);
  if (!listed || listed.files.length === 0) return [await run(name, { env })];
  const lead = first.filter((f) => listed.files.includes(f));
  const rest = listed.files.filter((f) => !lead.includes(f));
  const groups = [...lead.map((f) => [f])];
  for (let i = 0; i < rest.length; i += groupSize) groups.push(rest.slice(i, i + groupSize));
  const results = [];
  let next = 0;
  const worker = async () => {
    while (next < groups.length) {
      const group = groups[next++];
      const pattern = `^(${group.map(escapeRegex).join('|')})$`;
      const result = await runCommand(name, `uvu -r tsx ${listed.dir} "${pattern}"`, { live: false, env });
      process.stdout.write(result.text);
      results.push(result);
    }
  };
  await Promise.all(Array.from({ length: Math.min(jobs(), groups.length) }, worker));
  return results;
}

const plain = (s) => s.replace(/\x1b\[[0-9;]*m/g, '');

/** uvu's totals and our skip lines in one run's output. */
function tally(result) {
  const text = plain(result.text);
  const num = (label) => {
    const m = new RegExp(`^\\s*${label}:\\s+(\\d+)\\s*$`, 'm').exec(text);
    return m ? Number(m[1]) : undefined;
  };
  const skips = [...text.matchAll(/^skip: (.*)$/gm)].map((m) => m[1]);
  const total = num('Total'), passed = num('Passed'), uvuSkipped = num('Skipped');
  if (total === undefined || passed === undefined) {
    // uvu did not get to its summary (a file failed to load, a crash): one failure for the run.
    return { passed: 0, failed: 1, skips, uvuSkipped: 0, unfinished: true };
  }
  return { passed: passed - skips.length, failed: total - passed, skips, uvuSkipped: uvuSkipped ?? 0, unfinished: false };
}

/** Lines of a failure block printed again at the end, at most. */
const FAILURE_LINES = 40;

/**
 * Each failing file's name with uvu's failure details under it. uvu prints a file's name,
 * then its line of dots ending in `(passed / total)` (a test's own output, such as our skip
 * lines, may come between), then, where the two differ, the details of each failure up to
 * the next file's name or the totals.
 */
function failures(result) {
  const lines = plain(result.text).split('\n');
  const isFile = (line) => /^\S+\.(?:test|e2e|conformance)\.ts$/.test(line.trim());
  const isEnd = (line) => isFile(line) || /^\s*Total:/.test(line);
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    if (!isFile(lines[i])) continue;
    let j = i + 1, count = null;
    for (; j < lines.length && !isEnd(lines[j]); j++) if ((count = /\((\d+) \/ (\d+)\)\s*$/.exec(lines[j]))) break;
    if (!count || count[1] === count[2]) continue;
    const details = [];
    for (j++; j < lines.length && !isEnd(lines[j]); j++) details.push(lines[j]);
    while (details.length && !details[details.length - 1].trim()) details.pop();
    while (details.length && !details[0].trim()) details.shift();
    const file = lines[i].trim();
    const cut = details.length > FAILURE_LINES ? [...details.slice(0, FAILURE_LINES), `  ... (${details.length - FAILURE_LINES} more lines above, under ${file})`] : details;
    blocks.push(`failed: ${file} (${count[1]} of ${count[2]} passed)`, ...cut);
  }
  return blocks;
}

/**
 * What a skip reason says is missing: from its first clause that says so ("no OpenCL
 * platform: ...", "no CUDA driver: ...", "aarch64-linux-gnu-gcc not installed ..."), so that
 * the tests one missing tool stops share it whatever context their reasons start with.
 */
function causeOf(reason) {
  const parts = reason.split(': ');
  const i = parts.findIndex((p) => /^no\b|not installed|not found|cannot be (?:loaded|found)/i.test(p));
  return i <= 0 ? reason : parts.slice(i).join(': ');
}

/** `skip: <test>: <reason>` payloads -> one `skipped: <cause>` line per cause, its tests listed under it. */
function skippedLines(skips) {
  const byCause = new Map();
  for (const s of skips) {
    const at = s.indexOf(': ');
    const [test, reason] = at < 0 ? [s, 'no reason given'] : [s.slice(0, at), s.slice(at + 2)];
    const cause = causeOf(reason);
    if (!byCause.has(cause)) byCause.set(cause, []);
    byCause.get(cause).push(test);
  }
  return [...byCause].flatMap(([cause, tests]) => [
    `skipped: ${cause}${tests.length > 1 ? ` (${tests.length} tests)` : ''}`,
    ...tests.map((test) => `  ${test}`),
  ]);
}

async function main() {
  const runs = [];
  const steps = ['test:unit', 'test:e2e', 'test:conformance'];
  const done = new Set();
  for (const name of steps) {
    let results;
    if (name === 'test:unit') {
      results = await runParallel(name, { groupSize: 8 });
    } else if (name === 'test:e2e') {
      const build = await run('build', { live: false });
      if (build.code !== 0) process.stdout.write(build.text);
      // The new-workspace suite installs Nx and the tarball into an empty workspace: the longest, so it starts first.
      results = await runParallel(name, { groupSize: 1, first: ['new-workspace.e2e.ts'], env: build.code === 0 ? { TENSORTUNE_E2E_BUILT: '1' } : {} });
    } else {
      results = [await run(name)];
    }
    for (const result of results) runs.push({ ...result, ...tally(result) });
    done.add(name);
    if (name === 'test:unit' && results.some((r) => r.code !== 0)) break;
  }
  const sum = (k) => runs.reduce((a, r) => a + r[k], 0);
  const skips = runs.flatMap((r) => r.skips);
  const lines = ['', ...runs.flatMap(failures)];
  for (const r of runs) if (r.unfinished) lines.push(`${r.name} stopped before its summary (exit ${r.signal ?? r.code})`);
  if (done.size < steps.length) lines.push(`${steps.filter((s) => !done.has(s)).join(' and ')} not run: test:unit failed`);
  lines.push(...skippedLines(skips));
  const uvuSkipped = sum('uvuSkipped');
  if (uvuSkipped > 0) lines.push(`skipped: ${uvuSkipped} test(s) marked test.skip`);
  // The conformance suite's own summary (`conformance: P/N passed (x%), ...`), again next to the closing line.
  for (const r of runs) for (const m of plain(r.text).matchAll(/^conformance: \d+\/\d+ passed.*$/gm)) lines.push(m[0]);
  lines.push(`${sum('passed')} passed, ${sum('failed')} failed, ${skips.length + uvuSkipped} skipped`);
  process.stdout.write(`${lines.join('\n')}\n`);
  process.exitCode = runs.every((r) => r.code === 0) ? 0 : 1;
}

if (require.main === module) main();

module.exports = { failures, tally, filesOf, skippedLines, runParallel };
