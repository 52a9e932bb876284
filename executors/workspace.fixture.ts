// Test helpers for the executors: a one-network workspace (a small ONNX conv net and a
// config on the machine's plain `llvm` target) and the console lines an executor prints.

import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { NetBuilder } from '../engine/frontend/builder';
import { writeOnnxFile } from '../engine/frontend/onnx/export';

export const NET_CONFIG = `records: records
outDir: out
targets:
  cpu:
    target: llvm
networks:
  net:
    model: net.onnx
`;

/** `<dir>/net.onnx` (conv -> relu, then pool and dense unless `convOnly`) and `<dir>/tensortune.config.yaml` (`config`). */
export function writeNetWorkspace(dir: string, opts: { convOnly?: boolean; config?: string } = {}): void {
  const b = new NetBuilder({ batch: 1, layout: 'NCHW', imageSize: 8, seed: 1, randomStats: true, weights: 'random' });
  const conv = b.relu(b.conv2d(b.input(4), 'conv', { channels: opts.convOnly ? 8 : 16, kernel: [3, 3], padding: [1, 1] }));
  b.graph.outputs = [opts.convOnly ? conv : b.dense(b.flatten(b.globalAvgPool(conv)), 'fc', 10)];
  writeOnnxFile(path.join(dir, 'net.onnx'), b.graph);
  writeFileSync(path.join(dir, 'tensortune.config.yaml'), opts.config ?? NET_CONFIG);
}

/** The lines console.log, .warn and .error print while `fn` runs; `onLine` sees each as it comes. */
export async function captureConsole<T>(fn: () => Promise<T>, onLine: (line: string) => void = () => undefined): Promise<{ value: T; lines: string[] }> {
  const lines: string[] = [];
  const { log, warn, error } = console;
  const push = (...a: unknown[]): void => { for (const line of a.join(' ').split('\n')) { lines.push(line); onLine(line); } };
  Object.assign(console, { log: push, warn: push, error: push });
  try {
    return { value: await fn(), lines };
  } finally {
    Object.assign(console, { log, warn, error });
  }
}
