// One connection to native/remote/tt_remote on a device: the runner's process (`sh -c` of
// the runner line), the worker's hello, and its framed request/response protocol
// (native/README.md, "tt_remote"): text lines, and byte payloads whose length the line
// before them gives, in both directions.
//
// What can go wrong is told apart here. A reply, even a failure (runtime_error, timeout:
// the worker replies before it dies of a crash or of its own alarm), is the candidate's
// outcome. No reply at all (the stream ends, garbage, no answer in time) is the device's
// failure: a DeviceError, and the session is dead. node:child_process rather than execa:
// a long-lived process spoken to in frames. The frame reader is written here: the protocol
// is ours (native/README.md), a line-or-length reader over a Buffer.

import { spawn, type ChildProcess } from 'node:child_process';
import { ABI_VERSION } from '../runtime/abi';

/** The protocol version this host speaks (TT_REMOTE_PROTOCOL in tt_remote.c). */
export const REMOTE_PROTOCOL = 1;

/** The device (runner, connection, worker) failed, not the candidate. */
export class DeviceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeviceError';
  }
}

export interface Hello {
  tt_remote: number;
  abi_version: number;
  pid: number;
  machine: string;
  threads: number;
  /** FNV-1a-64 of the worker's own file (hex), for the install check. */
  self_fnv: string;
}

export interface DeviceInfo {
  machine: string;
  sysname: string;
  release: string;
  cpu: string;
  cpu_implementer: string;
  cpu_part: string;
  features: string;
  cores: number;
  /** What the info request's describe library wrote (an OpenCL target: tt_cl_describe's JSON). */
  described?: unknown;
  /** Why the describe library could not say (no ICD loader, no device). */
  describe_error?: string;
}

/** A reply line; `outputs` lists the byte sizes of the payloads that follow it. */
export interface Reply {
  id?: string;
  ok?: boolean;
  error?: string;
  message?: string;
  runs_ms?: number[];
  number?: number;
  threads?: number;
  cpu_ms?: number;
  outputs?: number[];
  [key: string]: unknown;
}

const TIMEOUT = Symbol('timeout');

/** Quotes one word for a POSIX shell (single quotes; written here: one line, and no
 *  dependency in the package does it). */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** A running runner process with its stdout as a byte stream read line by line or by length. */
export class RemoteSession {
  private readonly child: ChildProcess;
  private buf: Buffer = Buffer.alloc(0);
  /** Chunks not yet joined into buf: a large output is joined once, not once per chunk. */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private waiter?: () => void;
  private ended = false;
  private killed = false;
  private stderrTail = '';
  private exit?: string;
  hello?: Hello;

  /** Starts `sh -c line`; `label` names the device in messages. */
  constructor(readonly line: string, readonly label: string) {
    // Its own process group, so that a kill takes the runner's children (ssh, qemu) too.
    this.child = spawn('sh', ['-c', line], { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    this.child.stdout!.on('data', (chunk: Buffer) => {
      this.pending.push(chunk);
      this.pendingBytes += chunk.length;
      this.wake();
    });
    this.child.stdout!.on('end', () => { this.ended = true; this.wake(); });
    this.child.stderr!.setEncoding('utf8');
    this.child.stderr!.on('data', (c: string) => { this.stderrTail = (this.stderrTail + c).slice(-2000); });
    this.child.stdin!.on('error', () => {}); // EPIPE when the device went away: the read side reports it
    this.child.on('error', (e) => { this.exit = `could not be started: ${e.message}`; this.ended = true; this.wake(); });
    this.child.on('close', (code, signal) => {
      this.exit = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      this.ended = true;
      this.wake();
    });
  }

  get alive(): boolean {
    return !this.ended && !this.killed;
  }

  /** "exited with code 255; stderr: ssh: connect to host ...". */
  describeEnd(): string {
    const tail = this.stderrTail.trim().split('\n').slice(-3).join(' | ');
    return `${this.exit ?? 'closed its output'}${tail ? ` (stderr: ${tail})` : ''}`;
  }

  private flatten(): void {
    if (this.pending.length === 0) return;
    this.buf = Buffer.concat([this.buf, ...this.pending]);
    this.pending = [];
    this.pendingBytes = 0;
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }

  /** 'end' may come before 'close': gives the exit status a moment to arrive, for the message. */
  private async settle(): Promise<void> {
    if (!this.exit) await Promise.race([new Promise<void>((r) => this.child.once('close', () => r())), new Promise((r) => setTimeout(r, 1000))]);
  }

  private async waitData(deadline: Promise<typeof TIMEOUT>): Promise<boolean> {
    if (this.ended) return false;
    const r = await Promise.race([new Promise<void>((resolve) => (this.waiter = resolve)), deadline]);
    return r !== TIMEOUT;
  }

  /** The next line (without '\n'); undefined when the stream ends or the deadline passes. */
  private async readLine(deadline: Promise<typeof TIMEOUT>): Promise<string | undefined | typeof TIMEOUT> {
    for (;;) {
      this.flatten();
      const nl = this.buf.indexOf(10);
      if (nl >= 0) {
        const line = this.buf.subarray(0, nl).toString('utf8');
        this.buf = this.buf.subarray(nl + 1);
        return line;
      }
      if (this.ended) { await this.settle(); return undefined; }
      if (!(await this.waitData(deadline))) {
        if (!this.ended) return TIMEOUT;
      }
    }
  }

  private async readBytes(n: number, deadline: Promise<typeof TIMEOUT>): Promise<Buffer | undefined | typeof TIMEOUT> {
    for (;;) {
      if (this.buf.length + this.pendingBytes >= n) {
        this.flatten();
        const out = Buffer.from(this.buf.subarray(0, n));
        this.buf = this.buf.subarray(n);
        return out;
      }
      if (this.ended) { await this.settle(); return undefined; }
      if (!(await this.waitData(deadline))) {
        if (!this.ended) return TIMEOUT;
      }
    }
  }

  private deadline(ms: number): { promise: Promise<typeof TIMEOUT>; cancel: () => void } {
    let timer: NodeJS.Timeout | undefined;
    const promise = new Promise<typeof TIMEOUT>((resolve) => { timer = setTimeout(() => resolve(TIMEOUT), ms); });
    return { promise, cancel: () => clearTimeout(timer) };
  }

  private fail(why: string): never {
    this.kill();
    throw new DeviceError(`${this.label}: ${why}`);
  }

  /**
   * Waits for the worker's hello. `notInstalled` is a line the runner's start script prints
   * instead of starting a worker it does not have (returned as 'not-installed').
   */
  async start(timeoutMs: number, notInstalled?: string): Promise<Hello | 'not-installed'> {
    const d = this.deadline(timeoutMs);
    try {
      const line = await this.readLine(d.promise);
      if (line === TIMEOUT) this.fail(`no answer from the worker within ${timeoutMs / 1000} s of starting the runner`);
      if (line === undefined) this.fail(`the runner ended before the worker said hello: it ${this.describeEnd()}`);
      if (notInstalled !== undefined && line.trim() === notInstalled) {
        this.kill();
        return 'not-installed';
      }
      let hello: Partial<Hello> | undefined;
      try {
        hello = JSON.parse(line) as Partial<Hello>;
      } catch { /* below */ }
      if (!hello || typeof hello !== 'object' || typeof hello.tt_remote !== 'number') {
        this.fail(`the device answered '${line.slice(0, 120)}' instead of the tt_remote hello (is {command} run by a shell on the device?)`);
      }
      if (hello.tt_remote !== REMOTE_PROTOCOL) this.fail(`its tt_remote speaks protocol ${hello.tt_remote}, this tensortune ${REMOTE_PROTOCOL}`);
      if (hello.abi_version !== ABI_VERSION) this.fail(`its tt_remote speaks native ABI ${hello.abi_version}, this tensortune ${ABI_VERSION}`);
      this.hello = hello as Hello;
      return this.hello;
    } finally {
      d.cancel();
    }
  }

  /**
   * Sends one request (`fields`: text lines or [name, payload] pairs) and reads its reply
   * and the payloads that follow it. A DeviceError when no well-formed reply comes in
   * `timeoutMs`; the session is dead after a DeviceError and after a failure reply
   * (the worker exits after a crash or a timeout).
   */
  async request(verb: string, id: string, fields: readonly (string | [string, Buffer])[], timeoutMs: number): Promise<{ reply: Reply; payloads: Buffer[] }> {
    if (!this.alive) this.fail(`the runner ${this.describeEnd()}`);
    const parts: Buffer[] = [Buffer.from(`${verb} ${id}\n`)];
    for (const f of fields) {
      if (typeof f === 'string') parts.push(Buffer.from(`${f}\n`));
      else parts.push(Buffer.from(`${f[0]} ${f[1].length}\n`), f[1]);
    }
    parts.push(Buffer.from('end\n'));
    this.child.stdin!.write(Buffer.concat(parts));
    const d = this.deadline(timeoutMs);
    try {
      const line = await this.readLine(d.promise);
      if (line === TIMEOUT) this.fail(`no reply to ${verb} ${id} within ${(timeoutMs / 1000).toFixed(0)} s (runner killed)`);
      if (line === undefined) this.fail(`the connection ended during ${verb} ${id}: the runner ${this.describeEnd()}`);
      let reply: Reply | undefined;
      try {
        reply = JSON.parse(line) as Reply;
      } catch { /* below */ }
      if (!reply || reply.id !== id) this.fail(`expected the reply to ${verb} ${id}, got '${line.slice(0, 160)}'`);
      if (reply.ok === false && reply.error === 'bad_request') this.fail(`the worker refused ${verb} ${id}: ${reply.message ?? ''}`);
      const payloads: Buffer[] = [];
      for (const n of reply.ok && Array.isArray(reply.outputs) ? reply.outputs : []) {
        const b = await this.readBytes(n, d.promise);
        if (b === TIMEOUT) this.fail(`the outputs of ${verb} ${id} did not arrive within ${(timeoutMs / 1000).toFixed(0)} s`);
        if (b === undefined) this.fail(`the connection ended in the outputs of ${verb} ${id}: the runner ${this.describeEnd()}`);
        payloads.push(b);
      }
      // After a crash or its own timeout the worker says it is exiting: the next request needs a new session.
      if (reply.exiting === true) this.kill();
      return { reply, payloads };
    } finally {
      d.cancel();
    }
  }

  /** Asks the worker to quit and waits a moment; kills the runner if it lingers. */
  async close(): Promise<void> {
    if (this.ended) return;
    this.child.stdin!.end('quit\n');
    const closed = new Promise<void>((r) => this.child.once('close', () => r()));
    const t = setTimeout(() => this.kill(), 3000);
    await closed;
    clearTimeout(t);
  }

  /** SIGKILL to the runner's process group (ssh, qemu and what they started). */
  kill(): void {
    this.killed = true;
    if (this.child.pid === undefined || this.child.exitCode !== null || this.child.signalCode !== null) return;
    try {
      process.kill(-this.child.pid, 'SIGKILL');
    } catch {
      this.child.kill('SIGKILL');
    }
  }

  /** Let the Node process exit while the session is idle. */
  unref(): void {
    this.child.unref();
    for (const s of [this.child.stdin, this.child.stdout, this.child.stderr] as unknown as { unref?: () => void }[]) s?.unref?.();
  }

  ref(): void {
    this.child.ref();
    for (const s of [this.child.stdin, this.child.stdout, this.child.stderr] as unknown as { ref?: () => void }[]) s?.ref?.();
  }
}
