// The executors report failures as the CLI does (executors/run.ts `reporting`): one line,
// `{ success: false }`. Here: `nx tune` on a target the compiler rejects stops after the
// first batches with the fail-fast line of engine/search/fail-fast.ts, and logs nothing.

import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExecutorContext } from '@nx/devkit';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeNetWorkspace } from './workspace.fixture';
import tuneExecutor from './tune/executor';

const dir = mkdtempSync(path.join(tmpdir(), 'tt-executor-fail-fast-'));
const CONFIG = `records: records
outDir: out
targets:
  bogus:
    target: llvm -mcpu=nonexistent-cpu
budgets:
  small: { trials: 40, batchSize: 2, policy: random }
networks:
  net:
    model: net.onnx
`;

/** console.log/warn/error lines while `fn` runs. */
async function capture<T>(fn: () => Promise<T>): Promise<{ value: T; out: string[]; err: string[] }> {
  const out: string[] = [], err: string[] = [];
  const { log, warn, error } = console;
  console.log = (...a: unknown[]) => { out.push(a.join(' ')); };
  console.warn = (...a: unknown[]) => { err.push(a.join(' ')); };
  console.error = (...a: unknown[]) => { err.push(a.join(' ')); };
  try {
    return { value: await fn(), out, err };
  } finally {
    Object.assign(console, { log, warn, error });
  }
}

test.after(() => rmSync(dir, { recursive: true, force: true }));

test('nx tune on a target the compiler rejects: one line with the error class and the compiler message, success false, nothing logged', async () => {
  writeNetWorkspace(dir, { config: CONFIG });
  const ctx = { root: dir, cwd: dir, isVerbose: false, projectName: 'net' } as unknown as ExecutorContext;
  const r = await capture(() => tuneExecutor({ config: 'tensortune.config.yaml', network: 'net', configTarget: 'bogus', budget: 'small' }, ctx));
  assert.equal(r.value, { success: false }, [...r.out, ...r.err].join('\n'));
  assert.is(r.err.length, 1, r.err.join('\n'));
  assert.match(r.err[0], /^tensortune tune: stopped: all \d+ candidates of the first \d+ batches failed with compile_error and none succeeded on target "llvm -mcpu=nonexistent-cpu" \(nothing was written to [^)]+\); first message: .*error.*nonexistent-cpu/);
  assert.not.match(r.err[0], /\n/);
  const store = path.join(dir, 'records');
  const logs = existsSync(store) ? readdirSync(store, { recursive: true }).map(String).filter((f) => f.endsWith('.jsonl')) : [];
  for (const log of logs) assert.is(statSync(path.join(store, log)).size, 0, `${log} holds no error records`);
});

test.run();
