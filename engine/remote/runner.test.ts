// Runner lines are filled in literally: `$$`, `$&`, `` $` `` and `$'` in a command or a path
// reach the device's shell as they are, and each install writes its own temporary file.
// Run through this machine's `sh -c` as the "device", with a HOME whose name holds them.

import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { INSTALLED_LINE, installCommand, installedName, parseRunner, runnerLine, startCommand } from './runner';
import { shellQuote } from './session';

const work = mkdtempSync(path.join(tmpdir(), 'tt-runner-test-'));
const NASTY = "a$$b$&c$`d$'e";
const home = path.join(work, `home ${NASTY}`);
mkdirSync(home);
/** A shell "device" whose HOME is the awkward folder. */
const runner = parseRunner(`env HOME=${shellQuote(home)} sh -c {command}`, '--runner');

function sh(line: string, stdin?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', line], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    // A command that reads no input may exit before its stdin is written: that EPIPE is
    // the command's business (its exit code and output are what the tests check).
    child.stdin.on('error', () => {});
    child.stdin.end(stdin ?? '');
  });
}

test('a command holding $$, $&, $` and $\' reaches the device shell literally', async () => {
  const file = path.join(work, `data ${NASTY}.txt`);
  writeFileSync(file, 'the bytes');
  const command = `cat ${shellQuote(file)}; printf '%s' ${shellQuote(NASTY)}`;
  const line = runnerLine(runner, command);
  assert.ok(line.includes(shellQuote(command)), line);
  const r = await sh(line);
  assert.is(r.stderr, '');
  assert.is(r.code, 0);
  assert.is(r.stdout, `the bytes${NASTY}`);
});

test('each install line has its own temporary name (a random part and the device pid), not a shared ".$"', () => {
  const names = [1, 2].map(() => {
    const m = /t="\$d\/\.tt_remote-[0-9a-f]{16}\.([0-9a-f]{12})\.\$\$"/.exec(installCommand(runner, 'f'.repeat(64), 10));
    assert.ok(m, 'the temporary file name keeps the device shell\'s $$');
    return m![1];
  });
  assert.is.not(names[0], names[1]);
});

test('two installs at once into a HOME holding those characters: both succeed, the worker runs, no temporary file is left', async () => {
  const worker = '#!/bin/sh\necho worker-here "$0"\n';
  const sha = '0123456789abcdef'.repeat(4);
  const results = await Promise.all([1, 2].map(() => sh(installCommand(runner, sha, Buffer.byteLength(worker)), worker)));
  for (const r of results) {
    assert.is(r.code, 0, r.stderr);
    assert.is(r.stdout.trim(), INSTALLED_LINE);
  }
  const dir = path.join(home, '.cache', 'tensortune');
  assert.equal(readdirSync(dir), [installedName(sha)]);
  assert.is(readFileSync(path.join(dir, installedName(sha)), 'utf8'), worker);
  const started = await sh(startCommand(runner, '/not/used', sha));
  assert.is(started.code, 0, started.stderr);
  assert.is(started.stdout.trim(), `worker-here ${path.join(dir, installedName(sha))}`);
});

test('an install that receives the wrong size fails in one line and leaves no temporary file', async () => {
  const sha = 'fedcba9876543210'.repeat(4);
  const r = await sh(installCommand(runner, sha, 100), 'short');
  assert.is(r.code, 3);
  assert.is(r.stderr.trim(), 'tt_remote install: received 5 bytes, expected 100');
  assert.not.ok(readdirSync(path.join(home, '.cache', 'tensortune')).some((n) => n.includes(installedName(sha))));
});

test.after(() => rmSync(work, { recursive: true, force: true }));
test.run();
