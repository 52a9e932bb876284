// A target kind added as one module, as a new backend would be: `trace -lanes=N`, a CPU
// device of N float lanes (1, 4, 8 or 16) that builds C kernels without -march (portable
// code for any x86-64 or AArch64 of this architecture). Its hooks use the C renderer and
// the thread pool as `llvm` does, and note each call in `calls`, so a test sees which parts
// of the engine went through the record. Registered by registry.test.ts.

import { C_DIALECT, KERNEL_CFLAGS } from '../codegen/c';
import { UserError } from '../errors';
import { poolObject } from '../native/build';
import type { TargetKind } from './kind';
import { renderCpuCandidate } from './llvm';

const LANES = [1, 4, 8, 16];

/** What the engine asked of the kind, in order: 'parse', 'identity', 'defaults', 'render', 'link', 'model'. */
export const calls: string[] = [];

export const TRACE_KIND: TargetKind = {
  name: 'trace',
  family: 'cpu',
  dialect: C_DIALECT,
  label: 'trace CPU',
  example: 'trace -lanes=4',
  parse: ({ text, parts, where, host, hostWhere }) => {
    calls.push('parse');
    if (host !== undefined) throw new UserError(`${hostWhere}: a trace target is its own host`);
    let lanes = 4;
    for (const opt of parts.slice(1)) {
      const m = /^-lanes=(\d+)$/.exec(opt);
      if (!m || !LANES.includes(Number(m[1]))) throw new UserError(`${where}: bad option '${opt}' in "${text}"; expected -lanes=N with N one of ${LANES.join(', ')}`);
      lanes = Number(m[1]);
    }
    return { text: `trace -lanes=${lanes}`, kind: 'trace', mattr: [], vectorLanes: lanes, cflags: [] };
  },
  identity: (target) => {
    calls.push('identity');
    return JSON.stringify({ trace: target.text, arch: process.arch });
  },
  defaultOptions: (target) => {
    calls.push('defaults');
    return { vectorLanes: target.vectorLanes };
  },
  candidate: {
    render: (dag, steps, target, packable, symbol) => {
      calls.push('render');
      return renderCpuCandidate(dag, steps, target, packable, symbol);
    },
    cflags: KERNEL_CFLAGS,
    link: async (compiler) => {
      calls.push('link');
      return { objects: [await poolObject(compiler)], libs: [] };
    },
  },
  model: {
    cpu: {
      cflags: KERNEL_CFLAGS,
      runtimeObject: (compiler) => {
        calls.push('model');
        return poolObject(compiler);
      },
    },
  },
  runner: { tune: false, benchmark: false },
};
