// End to end: Ctrl-C under Nx. The packed plugin in a fresh workspace with the tiny ONNX
// network and a budget far too large to finish; `nx tune` runs in a process group of its
// own, and once it has reported rounds the group gets a real SIGINT, as a terminal's Ctrl-C
// sends it to nx, its task's process, the measurement worker and the compilers alike. Twice
// in a row: the second run resumes from the first's trials and keeps its own. Each time the
// task says it is stopping and prints the summary line `tensortune tune` prints, every
// trial it reported is in the store log (the batch in flight is dropped, never half
// written or recorded as the interrupt's failures), and no process of the group is left.
// nx writes into a pipe (a FIFO), as in CI or `nx tune | tee`: after a SIGINT Nx discards
// what its task prints, and the task writes its last lines to nx's own stdout
// (executors/interrupt.ts), which a pipe, a file or a terminal lets it open. Then once more
// in a terminal (util-linux `script` gives nx a pseudo-terminal, and a Ctrl-C typed into it
// makes the terminal signal nx): Nx runs the task in a pseudo-terminal of its own and exits
// before the task has finished, and the task's last lines still reach that terminal.

import { spawn } from 'node:child_process';
import { closeSync, constants, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Socket } from 'node:net';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { skip } from '../engine/skip.fixture';
import { e2e, KEEP, sh } from './harness';
import { writeTinyModel } from './tiny-model';

const { base, env: NX_ENV, packAndInstall } = e2e('tensortune-interrupt-e2e-');
const ws = path.join(base, 'ws');

// Rounds of two candidates (random proposals: no search to wait for), far more trials than a test waits for.
const CONFIG = `records: .tensortune/records
targets:
  cpu:
    target: llvm -mcpu=native
    threads: 1
budgets:
  long:
    trialsPerTask: 400
    measuresPerRound: 2
    policy: random
    confirm: 0
networks:
  tiny:
    model: models/tiny/tiny.onnx
`;

const log = path.join(ws, '.tensortune', 'records', 'tiny.cpu.jsonl');
const records = (): { error: string | null; message?: string }[] => (existsSync(log) ? readFileSync(log, 'utf8') : '')
  .split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as { error: string | null; message?: string });

/** The trials of the rounds a tune reported in `out` (`task 3 (…): 2 trial(s), 0 error(s), …`). */
const reportedTrials = (out: string): number => [...out.matchAll(/^(?:warm-up )?task \d+ \(.*\): (\d+) trial\(s\), \d+ error\(s\)/gm)]
  .reduce((a, m) => a + Number(m[1]), 0);

const groupGone = (pgid: number): boolean => {
  try {
    process.kill(-pgid, 0);
    return false;
  } catch {
    return true;
  }
};

/**
 * `nx tune tiny -c cpu-long` in a process group of its own; once `rounds` rounds are
 * reported, SIGINT to the whole group. Its output, exit code, and the output up to the signal.
 */
function interruptedTune(rounds: number): Promise<{ code: number | null; out: string; before: string; pgid: number }> {
  const fifo = path.join(base, `out-${rounds}.fifo`);
  rmSync(fifo, { force: true });
  assert.is(sh('mkfifo', [fifo], base).status, 0, 'mkfifo');
  // The read end first, non-blocking, so opening the write end does not wait; EOF once every writer closed it.
  const reader = new Socket({ fd: openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK), readable: true, writable: false });
  const writer = openSync(fifo, 'w');
  const nxBin = path.join(ws, 'node_modules', 'nx', 'dist', 'bin', 'nx.js');
  const child = spawn(process.execPath, [nxBin, 'tune', 'tiny', '-c', 'cpu-long'], { cwd: ws, env: { ...process.env, ...NX_ENV }, detached: true, stdio: ['ignore', writer, writer] });
  closeSync(writer);
  let out = '';
  let before: string | undefined;
  reader.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    const n = [...out.matchAll(/^(?:warm-up )?task \d+ \(.*\): \d+ trial\(s\)/gm)].length;
    if (before === undefined && n >= rounds) {
      before = out;
      process.kill(-child.pid!, 'SIGINT');
    }
  });
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve(code));
  });
  const drained = new Promise<void>((resolve) => reader.on('end', () => resolve()));
  return Promise.all([exited, drained]).then(([code]) => {
    if (before === undefined) throw new Error(`nx tune ended before ${rounds} round(s) (exit ${code}):\n${out.slice(-3000)}`);
    return { code, out: out.replace(/\x1b\[[0-9;]*m/g, ''), before, pgid: child.pid! };
  });
}

/**
 * `nx tune tiny -c cpu-long` in a terminal: `script` runs a shell that runs nx, then waits a
 * little as a user's shell outlives nx; once `rounds` rounds are shown, a Ctrl-C is typed.
 * What the terminal showed, and nx's exit code.
 */
function terminalTune(rounds: number): Promise<{ code: number | null; out: string; before: string; pgid: number }> {
  const typescript = path.join(base, `terminal-${rounds}.txt`);
  rmSync(typescript, { force: true });
  const nxBin = path.join(ws, 'node_modules', 'nx', 'dist', 'bin', 'nx.js');
  // The trap keeps the shell (in nx's process group) alive through the Ctrl-C; nx's own handlers
  // replace it. The shell then waits (30 s at most) until the test saw the summary.
  const stop = path.join(base, `terminal-${rounds}.stop`);
  const shell = `trap : INT; '${process.execPath}' '${nxBin}' tune tiny -c cpu-long; echo "nx exited $?"; ` +
    `for i in $(seq 150); do [ -e '${stop}' ] && break; sleep 0.2; done`;
  const child = spawn('script', ['-qefc', shell, typescript], { cwd: ws, env: { ...process.env, ...NX_ENV, SHELL: '/bin/bash' }, detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
  let before: string | undefined;
  const shown = (): string => (existsSync(typescript) ? readFileSync(typescript, 'utf8') : '').replace(/\x1b\[[0-9;?]*[a-zA-Z]/g, '').replace(/\r/g, '');
  const poll = setInterval(() => {
    const out = shown();
    if (before === undefined && [...out.matchAll(/^(?:warm-up )?task \d+ \(.*\): \d+ trial\(s\)/gm)].length >= rounds) {
      before = out;
      child.stdin!.write('\x03');
    }
    if (before !== undefined && /tuning stopped \(aborted\)/.test(out)) writeFileSync(stop, '');
  }, 200);
  return new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve(code));
  }).then(() => {
    clearInterval(poll);
    const out = shown();
    if (before === undefined) throw new Error(`nx tune ended before ${rounds} round(s):\n${out.slice(-3000)}`);
    const code = /nx exited (\d+)$/m.exec(out);
    return { code: code ? Number(code[1]) : null, out, before, pgid: child.pid! };
  });
}

/** One interrupted run: its checks, and the trials it kept. */
async function interruptAndCheck(rounds: number, resumedFrom: number, how: 'pipe' | 'terminal' = 'pipe'): Promise<number> {
  const run = await (how === 'pipe' ? interruptedTune : terminalTune)(rounds);
  const tail = run.out.slice(-3000);
  assert.is(run.code, 130, `nx exits as interrupted:\n${tail}`);
  assert.match(run.out, `${resumedFrom} measurement(s) resumed`, tail);
  // In a terminal the task's `stopping` line goes to its own pseudo-terminal, which Nx has stopped copying.
  if (how === 'pipe') assert.match(run.out, /tensortune tune: stopping \(SIGINT\): the batch in flight is dropped/, `the task says it stops:\n${tail}`);
  const summary = /tuning stopped \(aborted\): (\d+) new trial\(s\) in [\d.]+ s(?: \([^)]*\))?; /.exec(run.out);
  assert.ok(summary, `the summary line is printed:\n${tail}`);
  const kept = Number(summary![1]);
  const all = records();
  assert.is(all.length, resumedFrom + kept, 'the store log holds what it held and the trials the summary counts');
  assert.ok(kept >= reportedTrials(run.before), `every trial reported before the signal (${reportedTrials(run.before)}) is in the store (${kept})`);
  assert.ok(kept > 0);
  assert.equal(all.filter((r) => /SIG(INT|TERM)|interrupt/i.test(r.message ?? '')), [], 'no failure the signal caused is recorded');
  assert.not.ok(existsSync(`${log}.lock`), 'the log is not left locked');
  for (let i = 0; i < 100 && !groupGone(run.pgid); i++) await new Promise((r) => setTimeout(r, 100));
  assert.ok(groupGone(run.pgid), 'no process of the run (worker, compiler) is left');
  return kept;
}

test('pack the plugin and install it with nx into a workspace with a network and a long budget', () => {
  packAndInstall(ws, 'tensortune-interrupt-e2e');
  mkdirSync(path.join(ws, 'models', 'tiny'), { recursive: true });
  writeFileSync(path.join(ws, 'nx.json'), `${JSON.stringify({ plugins: ['tensortune/plugin'], cacheDirectory: '.nx/cache', neverConnectToCloud: true }, null, 2)}\n`);
  writeFileSync(path.join(ws, 'tensortune.config.yaml'), CONFIG);
  writeTinyModel(path.join(ws, 'models', 'tiny', 'tiny.onnx'), 3);
});

test('Ctrl-C to nx tune, twice: each run keeps its trials, prints its summary, and the second resumes from the first', async () => {
  const first = await interruptAndCheck(2, 0);
  await interruptAndCheck(1, first);
});

test('Ctrl-C to nx tune in a terminal: the summary reaches the terminal after nx exited, and the trials are kept', async () => {
  if (sh('sh', ['-c', 'command -v script'], base).status !== 0) return skip('nx tune in a terminal', 'util-linux `script` is not installed');
  await interruptAndCheck(1, records().length, 'terminal');
});

test.after(() => {
  if (!KEEP) rmSync(base, { recursive: true, force: true });
});

test.run();
