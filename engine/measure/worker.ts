// The measurement worker driver: keeps one native/measure/tt_measure process, sends it one
// command at a time (protocol in native/README.md), and enforces each command's timeout by
// killing the process. A crash or hang costs only the worker: the next command starts a
// fresh one, and the caller gets an error result, never an exception.
//
// node:child_process rather than execa: this is a long-lived process spoken to line by
// line; execa's strengths (one-shot runs, buffered output, rejected promises) do not apply.

import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import * as path from 'node:path';
import { nativeBinary } from '../native/build';
import { ABI_VERSION } from '../runtime/abi';

export interface MeasureBuffer {
  /** 'in': read from `file` (raw float32 LE) if given, else filled with
   *  uniform(size, seed, stream = this buffer's index) from engine/runtime/random.ts.
   *  'out': filled with NaN before the runs, written to `file` (if given) after them. */
  kind: 'in' | 'out';
  /** Number of float32 elements. */
  size: number;
  file?: string;
  /** Evicted from the caches before each run when the request flushes. */
  cold?: boolean;
}

export interface MeasureRequest {
  /** The kernel library; its symbol has the type tt_kernel_fn (native/include/tensortune.h).
   *  A device library also exports <symbol>_setup, _finish and _error. */
  lib: string;
  symbol: string;
  /** The kernel's arguments, in order. */
  buffers: MeasureBuffer[];
  /** The whole command (load, warm-up, all runs, writing outputs); then the worker is killed. */
  timeoutMs: number;
  /** As TVM's time_evaluator (defaults 1, 1, 0, 1). */
  number?: number;
  repeat?: number;
  minRepeatMs?: number;
  warmup?: number;
  /** Evict the buffers marked `cold` from the caches before each run, or every buffer but
   *  the first when none is marked (forces number 1). Ignored for a device library. */
  flush?: boolean;
  /** Seed of the random inputs, uint32 (default 0). */
  seed?: number;
  /** > 0: the worker runs its host-rate probe this long (ms) before and after the timed
   *  runs, and the result carries both rates (host-rate.ts). */
  probeMs?: number;
}

/** compile_error: a device library (native/README.md, "Device libraries") could not build
 *  its device program in its setup hook (an OpenCL build log, say). */
export type MeasureError = 'compile_error' | 'runtime_error' | 'timeout';

export type MeasureResult =
  | { costs_ms: number[]; number: number; /** The probe's rates before and after the runs, when asked for. */ host_rate?: [number, number] }
  | { error: MeasureError; message: string };

export interface WorkerOptions {
  /** OMP_NUM_THREADS of the worker (default 1). */
  threads?: number;
  /** The tt_measure binary; default nativeBinary('tt_measure'). */
  binary?: string;
  /** How long a fresh worker may take to say it is ready (default 10 s). */
  startTimeoutMs?: number;
}

interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  error?: Error;
}

/** One tt_measure process and its stdout split into lines. */
class WorkerProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<ExitInfo>;
  private exitInfo?: ExitInfo;
  private lines: string[] = [];
  private partial = '';
  private waiter?: () => void;
  private stderrTail = '';

  constructor(binary: string, threads: number) {
    this.child = spawn(binary, [], {
      stdio: ['pipe', 'pipe', 'pipe'],
      // TT_PARENT_PID: the worker dies with this process, even one killed by SIGKILL (native/README.md).
      // OMP_NUM_THREADS: the threads of each candidate's pool (native/include/tt_pool.h).
      env: { ...process.env, OMP_NUM_THREADS: String(threads), TT_PARENT_PID: String(process.pid) },
    });
    this.child.stdout!.setEncoding('utf8');
    this.child.stdout!.on('data', (chunk: string) => {
      const parts = (this.partial + chunk).split('\n');
      this.partial = parts.pop()!;
      this.lines.push(...parts);
      this.wake();
    });
    this.child.stderr!.setEncoding('utf8');
    this.child.stderr!.on('data', (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-2000);
    });
    this.child.stdin!.on('error', () => {}); // EPIPE after a crash; 'close' reports the crash
    this.exited = new Promise((resolve) => {
      const done = (info: ExitInfo): void => {
        if (this.exitInfo) return;
        this.exitInfo = info;
        this.wake();
        resolve(info);
      };
      this.child.on('error', (error) => done({ code: null, signal: null, error }));
      this.child.on('close', (code, signal) => done({ code, signal }));
    });
  }

  /** The next line the worker wrote, or undefined once it has exited. */
  async nextLine(): Promise<string | undefined> {
    for (;;) {
      if (this.lines.length > 0) return this.lines.shift();
      if (this.exitInfo) return undefined;
      await new Promise<void>((resolve) => (this.waiter = resolve));
    }
  }

  private wake(): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.();
  }

  get alive(): boolean {
    return this.exitInfo === undefined;
  }

  send(text: string): void {
    this.child.stdin!.write(text);
  }

  async kill(): Promise<void> {
    this.child.kill('SIGKILL');
    await this.exited;
  }

  /** While idle the worker must not keep the Node process alive. */
  setRef(on: boolean): void {
    const streams = [this.child.stdin, this.child.stdout, this.child.stderr] as unknown as (Socket | null)[];
    if (on) {
      this.child.ref();
      for (const s of streams) s?.ref?.();
    } else {
      this.child.unref();
      for (const s of streams) s?.unref?.();
    }
  }

  /** "killed by SIGSEGV" / "exited with code 1", plus what it wrote on stderr. */
  describeExit(): string {
    const info = this.exitInfo;
    let what = 'still running';
    if (info?.error) what = `could not be run: ${info.error.message}`;
    else if (info?.signal) what = `killed by ${info.signal}`;
    else if (info) what = `exited with code ${info.code}`;
    const tail = this.stderrTail.trim();
    return tail ? `${what}; stderr: ${tail}` : what;
  }
}

const SYMBOL = /^[A-Za-z_][A-Za-z0-9_]*$/;
const TIMEOUT = Symbol('timeout');

function nonNegInt(name: string, v: number | undefined, min: number, max = 1e9): number | undefined {
  if (v !== undefined && !(Number.isInteger(v) && v >= min && v <= max))
    throw new RangeError(`measure request: ${name} must be an integer in [${min}, ${max}], got ${v}`);
  return v;
}

function safePath(name: string, p: string): string {
  if (/[\r\n]/.test(p) || p === '') throw new RangeError(`measure request: ${name} must be a path without line breaks`);
  return path.resolve(p);
}

/** The command block for one request (validated: a bad request is a programming error). */
function encode(id: string, req: MeasureRequest): string {
  if (!SYMBOL.test(req.symbol)) throw new RangeError(`measure request: bad symbol '${req.symbol}'`);
  if (req.buffers.length === 0) throw new RangeError('measure request: no buffers');
  if (!(req.timeoutMs > 0) || !Number.isFinite(req.timeoutMs))
    throw new RangeError(`measure request: timeoutMs must be positive, got ${req.timeoutMs}`);
  const lines = [`run ${id}`, `lib ${safePath('lib', req.lib)}`, `symbol ${req.symbol}`];
  req.buffers.forEach((b, i) => {
    nonNegInt(`buffers[${i}].size`, b.size, 0, 2 ** 34);
    lines.push(`${b.kind === 'out' ? 'out' : 'in'} ${b.size}${b.file ? ` ${safePath(`buffers[${i}].file`, b.file)}` : ''}`);
  });
  const fields: [string, number | undefined][] = [
    ['number', nonNegInt('number', req.number, 1)],
    ['repeat', nonNegInt('repeat', req.repeat, 1)],
    ['warmup', nonNegInt('warmup', req.warmup, 0)],
    ['seed', nonNegInt('seed', req.seed, 0, 0xffffffff)],
  ];
  for (const [key, v] of fields) if (v !== undefined) lines.push(`${key} ${v}`);
  if (req.minRepeatMs !== undefined) {
    if (!(req.minRepeatMs >= 0 && req.minRepeatMs <= 1e7))
      throw new RangeError(`measure request: minRepeatMs must be in [0, 1e7], got ${req.minRepeatMs}`);
    lines.push(`min_repeat_ms ${req.minRepeatMs}`);
  }
  if (req.flush !== undefined) lines.push(`flush ${req.flush ? 1 : 0}`);
  if (req.flush) req.buffers.forEach((b, i) => { if (b.cold) lines.push(`cold ${i}`); });
  if (req.probeMs !== undefined) {
    if (!(req.probeMs >= 0 && req.probeMs <= 1000))
      throw new RangeError(`measure request: probeMs must be in [0, 1000], got ${req.probeMs}`);
    lines.push(`probe_ms ${req.probeMs}`);
  }
  lines.push('end', '');
  return lines.join('\n');
}

interface Reply {
  id?: string;
  ok?: boolean;
  costs_ms?: number[];
  number?: number;
  host_rate?: unknown;
  error?: string;
  message?: string;
}

/** The reply's probe rates, when it holds two positive numbers. */
function hostRate(v: unknown): [number, number] | undefined {
  return Array.isArray(v) && v.length === 2 && v.every((x) => typeof x === 'number' && x > 0) ? [v[0] as number, v[1] as number] : undefined;
}

/** A measurement worker: `run` one request at a time (calls queue up), `close` at the end. */
export class MeasureWorker {
  private proc?: WorkerProcess;
  private queue: Promise<unknown> = Promise.resolve();
  private seq = 0;
  private starts = 0;
  private closed = false;

  constructor(private readonly opts: WorkerOptions = {}) {}

  /** How many times a worker process was started again after a crash or a timeout. */
  get restarts(): number {
    return Math.max(0, this.starts - 1);
  }

  /** The current process id, if one is running. */
  get pid(): number | undefined {
    return this.proc?.child.pid;
  }

  run(req: MeasureRequest): Promise<MeasureResult> {
    const result = this.queue.then(() => this.runNow(req));
    this.queue = result.catch(() => undefined);
    return result;
  }

  /** Asks the worker to quit (and kills it if it does not within 2 s). */
  async close(): Promise<void> {
    this.closed = true;
    await this.queue;
    const worker = this.proc;
    this.proc = undefined;
    if (!worker) return;
    worker.setRef(true);
    worker.send('quit\n');
    worker.child.stdin!.end();
    const timer = setTimeout(() => worker.child.kill('SIGKILL'), 2000);
    await worker.exited;
    clearTimeout(timer);
  }

  private async start(): Promise<WorkerProcess> {
    const binary = this.opts.binary ?? (await nativeBinary('tt_measure'));
    const worker = new WorkerProcess(binary, this.opts.threads ?? 1);
    this.starts++;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<typeof TIMEOUT>((resolve) => {
      timer = setTimeout(() => resolve(TIMEOUT), this.opts.startTimeoutMs ?? 10_000);
    });
    const line = await Promise.race([worker.nextLine(), deadline]);
    clearTimeout(timer);
    const fail = async (why: string): Promise<never> => {
      await worker.kill();
      throw new Error(`tt_measure (${binary}) did not start: ${why}`);
    };
    if (line === TIMEOUT) return fail('no ready line in time');
    if (line === undefined) return fail(worker.describeExit());
    let hello: { ready?: boolean; abi_version?: number };
    try {
      hello = JSON.parse(line) as typeof hello;
    } catch {
      return fail(`unexpected first line '${line}'`);
    }
    if (!hello.ready) return fail(`unexpected first line '${line}'`);
    if (hello.abi_version !== ABI_VERSION)
      return fail(`it speaks native ABI version ${hello.abi_version}, this tensortune expects ${ABI_VERSION}`);
    return worker;
  }

  private async runNow(req: MeasureRequest): Promise<MeasureResult> {
    if (this.closed) throw new Error('MeasureWorker: run() after close()');
    const id = `m${++this.seq}`;
    const command = encode(id, req);
    if (!this.proc?.alive) this.proc = await this.start(); // also replaces one that died idle
    const worker = this.proc;
    worker.setRef(true);
    try {
      worker.send(command);
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<typeof TIMEOUT>((resolve) => {
        timer = setTimeout(() => resolve(TIMEOUT), req.timeoutMs);
      });
      const line = await Promise.race([worker.nextLine(), deadline]);
      clearTimeout(timer);
      const what = `${req.symbol} from ${req.lib}`;
      if (line === TIMEOUT) {
        this.proc = undefined;
        await worker.kill();
        return { error: 'timeout', message: `${what} did not finish within ${req.timeoutMs} ms (worker killed)` };
      }
      if (line === undefined) {
        this.proc = undefined;
        return { error: 'runtime_error', message: `the worker died running ${what}: ${worker.describeExit()}` };
      }
      let reply: Reply;
      try {
        reply = JSON.parse(line) as Reply;
      } catch {
        reply = {};
      }
      if (reply.id !== id) {
        this.proc = undefined;
        await worker.kill();
        throw new Error(`tt_measure protocol error: expected the reply to ${id}, got '${line}'`);
      }
      if (reply.ok && Array.isArray(reply.costs_ms)) {
        const rate = hostRate(reply.host_rate);
        return { costs_ms: reply.costs_ms, number: reply.number ?? req.number ?? 1, ...(rate ? { host_rate: rate } : {}) };
      }
      if (reply.error === 'runtime_error' || reply.error === 'compile_error')
        return { error: reply.error, message: reply.message ?? reply.error.replace('_', ' ') };
      throw new Error(`tt_measure rejected the command for ${what}: ${reply.message ?? line}`);
    } finally {
      this.proc?.setRef(false);
    }
  }
}
