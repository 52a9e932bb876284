// One device reached through one runner: its worker build (tt_remote cross-compiled for
// the target), installing it through the runner when the device lacks it or holds a
// different build, one live session at a time (reopened after the worker exits), and the
// device's identity (info) for the hardware fingerprint.

import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { spawn } from 'node:child_process';
import { buildNative, memoAsync } from '../native/build';
import { kindOf, type Target } from '../target';
import { installCommand, INSTALLED_LINE, NOT_INSTALLED, startCommand, type Runner } from './runner';
import { DeviceError, RemoteSession, type DeviceInfo, type Hello, type Reply } from './session';

/** The worker for a target's architecture, and what identifies its bytes. */
export interface WorkerBuild {
  path: string;
  bytes: Buffer;
  /** sha256 hex: the installed file's name. */
  sha: string;
  /** FNV-1a-64 hex, as tt_remote reports its own file in the hello. */
  fnv: string;
}

/** FNV-1a-64 as tt_common.c computes it (tt_fnv1a64), written here to match it bit for bit. */
function fnv1a64(data: Buffer): string {
  let h = 0xcbf29ce484222325n;
  const prime = 0x100000001b3n;
  const mask = 0xffffffffffffffffn;
  for (const b of data) h = ((h ^ BigInt(b)) * prime) & mask;
  return h.toString(16).padStart(16, '0');
}

const builds = memoAsync<WorkerBuild>();

/**
 * tt_remote built with the target's compiler: the -mtriple cross compiler
 * (`aarch64-linux-gnu-gcc`), else this machine's. Linked dynamically against the device's
 * libc: it dlopens kernel libraries that link libc (and libpthread) themselves, and a static
 * glibc program cannot share one libc with what it dlopens. So the device needs a glibc at
 * least as new as the cross toolchain's.
 */
export function workerBuild(target: Target): Promise<WorkerBuild> {
  const cc = target.ccPrefix ? `${target.ccPrefix}gcc` : undefined;
  return builds(cc ?? '', async () => {
    const file = await buildNative('tt_remote', { cc });
    const bytes = await fs.readFile(file);
    // FNV over a large binary in BigInt is slow-ish (about 0.3 s per MB); the worker is ~100 KB.
    return { path: file, bytes, sha: createHash('sha256').update(bytes).digest('hex'), fnv: fnv1a64(bytes) };
  });
}

export interface DeviceOptions {
  /** How long a runner may take to start the worker (default 60 s: ssh handshakes, emulators). */
  startTimeoutMs?: number;
  /** Progress lines (installing the worker). */
  log?: (line: string) => void;
}

/** Runs a command through the runner with `input` on its stdin; its stdout and how it ended. */
function runOnce(line: string, input: Buffer, timeoutMs: number): Promise<{ stdout: string; stderr: string; code: number | null; error?: string }> {
  return new Promise((resolve) => {
    const child = spawn('sh', ['-c', line], { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    let stdout = '', stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c; });
    child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr = (stderr + c).slice(-2000); });
    child.stdin.on('error', () => {});
    const timer = setTimeout(() => { try { process.kill(-child.pid!, 'SIGKILL'); } catch { child.kill('SIGKILL'); } }, timeoutMs);
    child.on('error', (e) => { clearTimeout(timer); resolve({ stdout, stderr, code: null, error: e.message }); });
    child.on('close', (code) => { clearTimeout(timer); resolve({ stdout, stderr, code }); });
    child.stdin.end(input);
  });
}

export class RemoteDevice {
  private session?: RemoteSession;
  private seq = 0;
  /** Why the device is out of the pool; undefined while it serves. */
  deadReason?: string;
  /** Requests it answered (candidates measured, models run). */
  answered = 0;

  constructor(readonly runner: Runner, readonly index: number, private readonly target: Target, private readonly opts: DeviceOptions = {}) {}

  get label(): string {
    return `device ${this.index + 1} (${this.runner.where}: ${this.runner.template})`;
  }

  get alive(): boolean {
    return this.deadReason === undefined;
  }

  /** The pid the worker reports (a local pid for qemu-user and local shells). */
  get workerPid(): number | undefined {
    return this.session?.alive ? this.session.hello?.pid : undefined;
  }

  markDead(reason: string): void {
    this.deadReason ??= reason;
    this.session?.kill();
    this.session = undefined;
  }

  /** A live session, starting (and installing) the worker when there is none. DeviceError when it cannot. */
  async connect(): Promise<RemoteSession> {
    if (this.deadReason !== undefined) throw new DeviceError(`${this.label}: ${this.deadReason}`);
    if (this.session?.alive) return this.session;
    const build = await workerBuild(this.target);
    const timeoutMs = this.opts.startTimeoutMs ?? 60_000;
    for (let attempt = 0; ; attempt++) {
      const session = new RemoteSession(startCommand(this.runner, build.path, build.sha), this.label);
      const hello = await session.start(timeoutMs, this.runner.emulator ? undefined : NOT_INSTALLED);
      const stale = hello !== 'not-installed' && hello.self_fnv !== build.fnv;
      if (hello !== 'not-installed' && !stale) {
        session.unref();
        this.session = session;
        return session;
      }
      if (stale) session.kill();
      if (hello === 'not-installed' && attempt > 0) {
        throw new DeviceError(`${this.label}: the worker was installed, but starting it does not find it (does the device's $HOME change between commands?)`);
      }
      if (attempt > 0 || this.runner.emulator) {
        throw new DeviceError(`${this.label}: the worker the device runs is not the build installed (its file hashes to ${(hello as Hello).self_fnv}, expected ${build.fnv})`);
      }
      await this.install(build, timeoutMs);
    }
  }

  private async install(build: WorkerBuild, timeoutMs: number): Promise<void> {
    this.opts.log?.(`${this.label}: installing the measurement worker (${build.bytes.length} bytes, ${build.sha.slice(0, 16)})`);
    const r = await runOnce(installCommand(this.runner, build.sha, build.bytes.length), build.bytes, timeoutMs);
    if (r.code !== 0 || !r.stdout.includes(INSTALLED_LINE)) {
      const why = r.error ?? `the runner exited with code ${r.code}`;
      const tail = r.stderr.trim().split('\n').slice(-3).join(' | ');
      throw new DeviceError(`${this.label}: installing the worker failed: ${why}${tail ? `; stderr: ${tail}` : ''}`);
    }
  }

  /** One request on a live session; DeviceError when the device does not answer. */
  async request(verb: string, fields: readonly (string | [string, Buffer])[], timeoutMs: number): Promise<{ reply: Reply; payloads: Buffer[] }> {
    const session = await this.connect();
    session.ref();
    try {
      const r = await session.request(verb, `${verb[0]}${++this.seq}`, fields, timeoutMs);
      this.answered++;
      return r;
    } catch (e) {
      this.session = undefined;
      throw e;
    } finally {
      session.unref();
    }
  }

  /** What the device says it is (for the hardware fingerprint). */
  async info(): Promise<DeviceInfo> {
    // A kind whose record has runner.describe (OpenCL): the device lists its platforms and devices too.
    const describe = kindOf(this.target).runner.describe;
    const fields: (string | [string, Buffer])[] = describe ? [['lib', await describe.library(this.target)], `symbol ${describe.symbol}`] : [];
    const { reply } = await this.request('info', fields, 60_000);
    return reply as unknown as DeviceInfo;
  }

  async close(): Promise<void> {
    const s = this.session;
    this.session = undefined;
    if (s) {
      s.ref();
      await s.close();
    }
  }
}
