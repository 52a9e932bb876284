// What every end-to-end suite needs to drive a workspace as a user would: a temp folder,
// npm and nx run in it (synchronously, or without blocking this process while the
// loopback remote cache server runs in it), the plugin packed and installed from its
// tarball, and the tasks of an nx run read from its output.

import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const REPO = path.resolve(__dirname, '..');
export const NX_VERSION = (JSON.parse(readFileSync(path.join(REPO, 'node_modules', 'nx', 'package.json'), 'utf8')) as { version: string }).version;
/** TENSORTUNE_E2E_KEEP=1 keeps the suites' temp folders for a look afterwards. */
export const KEEP = process.env.TENSORTUNE_E2E_KEEP === '1';

const uncoloured = (s: string): string => s.replace(/\x1b\[[0-9;]*m/g, '');

export function sh(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): SpawnSyncReturns<string> {
  const r = spawnSync(cmd, args, { cwd, env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.error) throw r.error;
  return r;
}

export interface E2e {
  /** The suite's temp folder. */
  readonly base: string;
  /** nx's environment in every workspace of the suite (no daemon, no cloud, no colours, the suite's own native cache). */
  readonly env: NodeJS.ProcessEnv;
  /** `nx ...` in `dir`: stdout + stderr without colours, and the exit code. */
  nx(dir: string, args: string[], env?: NodeJS.ProcessEnv): { code: number | null; out: string };
  /** `nx ...` without blocking this process (the remote cache server runs in it). */
  nxAsyncResult(dir: string, args: string[], env?: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string }>;
  /** nxAsyncResult that must succeed: its output; else it rejects with the output's end. */
  nxAsync(dir: string, args: string[], env?: NodeJS.ProcessEnv): Promise<string>;
  /** Builds and packs the repository into the suite's folder: the tarball's path and its file list. */
  pack(): { tarball: string; files: string[] };
  /** pack(), then writes `dir`'s package.json (nx and the tarball) and installs it; the pack's file list. */
  packAndInstall(dir: string, name: string): string[];
}

export function e2e(prefix: string): E2e {
  const base = mkdtempSync(path.join(tmpdir(), prefix));
  const env: NodeJS.ProcessEnv = {
    NX_DAEMON: 'false', NX_NO_CLOUD: 'true', NX_TUI: 'false', CI: 'true', NX_INTERACTIVE: 'false',
    NX_SKIP_NX_CACHE: '', NX_SELF_HOSTED_REMOTE_CACHE_SERVER: '', TENSORTUNE_DEVICE: '', TENSORTUNE_REQUIRE_CACHED_TUNE: '',
    // The kernel object cache and the native tools: shared by the suite's workspaces, kept out of the repo.
    TENSORTUNE_CACHE_DIR: path.join(base, 'tensortune-cache'),
    FORCE_COLOR: '0',
  };
  const nxBin = (dir: string): string => path.join(dir, 'node_modules', 'nx', 'dist', 'bin', 'nx.js');
  const nxAsyncResult = (dir: string, args: string[], extra: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; out: string }> =>
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [nxBin(dir), ...args], { cwd: dir, env: { ...process.env, ...env, ...extra } });
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => { out += d; });
      child.stderr.setEncoding('utf8').on('data', (d: string) => { out += d; });
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, out: uncoloured(out) }));
    });
  // Destructured by the suites: no `this`.
  const pack = (): { tarball: string; files: string[] } => {
    // npm test builds once before running the suites side by side (two builds of dist/ at once would race).
    if (process.env.TENSORTUNE_E2E_BUILT !== '1') {
      const build = sh('npm', ['run', 'build', '--silent'], REPO);
      if (build.status !== 0) throw new Error(`npm run build failed:\n${build.stderr}${build.stdout}`);
    }
    const packed = sh('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', base], REPO);
    if (packed.status !== 0) throw new Error(`npm pack failed:\n${packed.stderr}`);
    const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
    return { tarball: path.join(base, info.filename), files: info.files.map((f) => f.path) };
  };
  return {
    base, env, pack,
    nx(dir, args, extra = {}) {
      const r = sh(process.execPath, [nxBin(dir), ...args], dir, { ...env, ...extra });
      return { code: r.status, out: uncoloured(`${r.stdout}\n${r.stderr}`) };
    },
    nxAsyncResult,
    async nxAsync(dir, args, extra = {}) {
      const { code, out } = await nxAsyncResult(dir, args, extra);
      if (code !== 0) throw new Error(`nx ${args.join(' ')} exited ${code}:\n${out.slice(-4000)}`);
      return out;
    },
    packAndInstall(dir, name) {
      const { tarball, files } = pack();
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify({
        name, private: true, devDependencies: { nx: NX_VERSION, tensortune: `file:${path.relative(dir, tarball)}` },
      }, null, 2)}\n`);
      // Everything but the tarball comes from npm's cache (the repository's own install
      // filled it); install scripts are skipped (onnxruntime-node's downloads GPU files).
      const install = sh('npm', ['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], dir, { ONNXRUNTIME_NODE_INSTALL: 'skip' });
      if (install.status !== 0) throw new Error(`npm install failed:\n${install.stderr}`);
      return files;
    },
  };
}

/** The tasks of an nx run, from its `> nx run project:target` lines: which ran, which came from a cache (and which from the remote one). */
export function tasksOf(out: string): { ran: string[]; cached: string[]; remote: string[] } {
  const ran: string[] = [], cached: string[] = [], remote: string[] = [];
  for (const m of out.matchAll(/^> nx run (\S+)(?:\s+(\[[^\]]+\]))?\s*$/gm)) {
    const [, id, mark] = m;
    const task = id.split(':').slice(0, 2).join(':'); // project:target, without a configuration
    if (!mark) { ran.push(task); continue; }
    cached.push(task);
    if (/remote/.test(mark)) remote.push(task);
  }
  return { ran: ran.sort(), cached: cached.sort(), remote: remote.sort() };
}
