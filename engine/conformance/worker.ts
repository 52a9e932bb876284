// A conformance worker thread (run.ts starts them): it imports cases and compiles batches
// (pipeline.ts) on its own event loop, so that a case looping in our own code (import,
// graph passes, partition, lowering, code generation) can be stopped: the runner terminates
// a worker whose heartbeat stops, or whose job runs past its limit, and starts another.
// The graphs of the cases it imported stay here, by case name, for the batch that compiles
// them; a case it does not hold (a fresh worker, after a split) is imported again.

import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import type { OnnxModel } from '../frontend/onnx/import';
import { caseDir, type ConformanceCase } from './cases';
import { compileBatch, failureOf, prepareCase, type CompileJob, type Failure, type PreparedInfo } from './pipeline';
import type { CaseResult } from './classify';
import type { Manifest } from '../compile/manifest';

/** A job: import one case, or compile a batch of cases that imported. */
export type WorkerJob = { kind: 'prepare'; dir: string; case: ConformanceCase } | { kind: 'compile'; dir: string; cases: ConformanceCase[]; job: CompileJob };

export type WorkerRequest = (WorkerJob & { id: number }) | { kind: 'forget'; names: string[] };

export type WorkerReply =
  | { id: number; kind: 'prepare'; result: CaseResult } | { id: number; kind: 'prepare'; info: PreparedInfo }
  | { id: number; kind: 'compile'; manifest: Manifest } | { id: number; kind: 'compile'; failure: Failure };

export type WorkerMessage = { beat: true } | { ready: true } | WorkerReply;

const port = parentPort!;
const { beatMs, preload } = workerData as { beatMs: number; preload?: string };
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a test's stub of the pipeline, loaded by path
if (preload) require(preload);
const models = new Map<string, OnnxModel>();

async function handle(req: WorkerJob & { id: number }): Promise<WorkerReply> {
  if (req.kind === 'prepare') {
    const p = prepareCase(req.dir, req.case);
    if ('name' in p) return { id: req.id, kind: 'prepare', result: p };
    models.set(req.case.name, p.model);
    return { id: req.id, kind: 'prepare', info: p.info };
  }
  const batch: OnnxModel[] = [];
  for (const c of req.cases) {
    let m = models.get(c.name);
    if (!m) {
      const p = prepareCase(req.dir, c);
      if ('name' in p) return { id: req.id, kind: 'compile', failure: { outcome: 'crash', reason: `${c.name} imported once and then not: ${p.outcome}: ${p.reason ?? ''}` } };
      models.set(c.name, (m = p.model));
    }
    batch.push(m);
  }
  try {
    return { id: req.id, kind: 'compile', manifest: await compileBatch(batch, req.job) };
  } catch (e) {
    return { id: req.id, kind: 'compile', failure: failureOf(e, path.join(caseDir(req.dir, req.cases[0].name), 'model.onnx')) };
  }
}

port.on('message', (req: WorkerRequest) => {
  if (req.kind === 'forget') {
    for (const n of req.names) models.delete(n);
    return;
  }
  handle(req).then((reply) => port.postMessage(reply), (e: unknown) => {
    // prepareCase classifies what it throws; anything else here is ours (a crash of the whole job).
    const failure: Failure = { outcome: 'crash', reason: `${e instanceof Error ? e.name : 'error'}: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}` };
    port.postMessage(req.kind === 'prepare' ? { id: req.id, kind: 'prepare', result: { name: req.case.name, operator: req.case.operator, ...failure } } : { id: req.id, kind: 'compile', failure });
  });
});
setInterval(() => port.postMessage({ beat: true }), beatMs);
port.postMessage({ ready: true });
