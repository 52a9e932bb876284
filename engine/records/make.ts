// A record line from one measurement outcome (what the tuner appends after each batch).

import { ENGINE_VERSION } from '../version';
import type { MeasureOutcome } from './outcome';
import { RECORD_FORMAT_VERSION, type RecordGenome, type TuningRecord } from './record';

export interface RecordContext {
  task: { key: string; desc: string };
  /** Canonical target string and hardware fingerprint of the machine that measured. */
  target: string;
  fingerprint: string;
  seed: number;
  /** Threads the candidates ran on (CPU targets). */
  threads?: number;
  policy?: string;
  /** The config budget of an `nx tune` run. */
  budget?: string;
  /** The confirmation pass of a 'confirm' record. */
  pass?: string;
  /** Where that pass timed it: 'network' for the network pass (app/network-pass.ts). */
  scope?: 'network';
  /** Default: now. */
  time?: Date;
}

/** Messages longer than this are cut (the schema's limit is 8192). */
const MAX_MESSAGE = 4000;

/** `genome`: how the search built the outcome's steps, when the policy knows. */
export function makeRecord(outcome: MeasureOutcome, ctx: RecordContext, genome?: RecordGenome): TuningRecord {
  // A timing that is not a finite time > 0 (a coarse timer, a bad device reply) is a failed
  // run, not the fastest schedule; keeping it as an error keeps the rest of the batch appendable.
  const badCost = outcome.error === null ? outcome.costs_ms.find((c) => !Number.isFinite(c) || c <= 0) : undefined;
  if (badCost !== undefined) outcome = { ...outcome, costs_ms: [], error: 'runtime_error', message: `the run was timed at ${badCost} ms; a run must take a finite time > 0` };
  const record: TuningRecord = {
    v: RECORD_FORMAT_VERSION, engine: ENGINE_VERSION, key: ctx.task.key, desc: ctx.task.desc.slice(0, 1024),
    target: ctx.target, fingerprint: ctx.fingerprint, steps: outcome.steps,
    costs_ms: outcome.error === null ? outcome.costs_ms : [], error: outcome.error,
    seed: ctx.seed, time: (ctx.time ?? new Date()).toISOString(),
  };
  if (outcome.message) record.message = outcome.message.length > MAX_MESSAGE ? `${outcome.message.slice(0, MAX_MESSAGE)}...` : outcome.message;
  if (ctx.threads !== undefined) record.threads = ctx.threads;
  if (ctx.policy) record.policy = ctx.policy;
  if (ctx.budget) record.budget = ctx.budget;
  if (ctx.pass) record.pass = ctx.pass;
  if (ctx.scope) record.scope = ctx.scope;
  if (genome) record.genome = genome;
  return record;
}
