// The contracts between the auto-scheduler's parts, so each can be built and tested on
// its own: the search policy proposes step lists, the measurer builds, runs and verifies
// them, the records module logs every outcome, the cost model learns from the outcomes,
// and the task scheduler shares the budget between tasks. The policy's contract is here;
// the measurer's is in measure/types.ts, the cost model's in costmodel/types.ts and the
// outcomes in records/outcome.ts (re-exported here), each below the search that uses them.
//
//   task scheduler --(task, n)--> SearchPolicy.nextBatch --> Measurer.measure
//        ^                              ^    (CostModel.predict)     |
//        |                              |                           v
//        +------ latency per task ------+---- notify / update <-- outcomes -> records

import type { Task } from '../graph/extract';
import type { Step } from '../schedule/steps';
import type { Target } from '../target';
import type { CostModel } from '../costmodel/types';
import type { MeasureDevice, MeasureOptions } from '../measure/types';
import type { MeasuredState, RecordGenome } from '../records/outcome';

export type { CostModel } from '../costmodel/types';
export type { MeasureDevice, MeasureOptions, Measurer } from '../measure/types';
export type { ErrorClass, MeasuredState, MeasureOutcome } from '../records/outcome';

export type PolicyName = 'evolutionary' | 'ga' | 'random' | 'grid';

export interface PolicyContext {
  task: Task;
  target: Target;
  /** The shared cost model (ignored by 'random' and 'grid'). */
  costModel: CostModel;
  /** Everything already measured for this task (from records when resuming). */
  measured: readonly MeasuredState[];
  /** Seed of the policy's random generator. */
  seed: number;
}

/** Proposes schedules for one task. */
export interface SearchPolicy {
  readonly name: PolicyName;
  /** Up to `n` valid step lists never measured before (fewer when the space is exhausted). */
  nextBatch(n: number): Step[][];
  /**
   * nextBatch, computed in slices with `pause` awaited between them, so that it can run
   * while a measurement is in flight (the task scheduler's prefetch). Optional: a policy
   * whose batches are cheap has none.
   */
  nextBatchAsync?(n: number, pause: () => Promise<void>): Promise<Step[][]>;
  /** Tell the policy what its last batch measured. */
  notify(measured: readonly MeasuredState[]): void;
  /** How the policy built a step list it proposed (recorded, so a resumed search can evolve it). */
  genomeOf?(steps: readonly Step[]): RecordGenome | undefined;
}

/** Options of tuneNetwork (engine/app/tune.ts), the entry point of `tensortune tune` and the Nx tune executor. */
export interface TuneNetworkOptions {
  /** What to tune (ModelSpec of engine/frontend/load.ts: builtin name or model file, batch, layout). */
  model: import('../frontend/load').ModelSpec;
  /** Target string, e.g. "llvm -mcpu=native". */
  target: string;
  /** GPU targets: the host target string (default "llvm", this machine; a cross host is refused: tune measures here). */
  host?: string;
  /** The record log measurements are appended to; tuning resumes from it. */
  records: string;
  /** Further logs read (never written): tasks they already cover are warm-started or skipped. */
  readRecords?: string[];
  /** A task whose kernel arguments need more bytes than this is refused before measuring (compile/memory-plan.ts MemoryLimit; default 4 GiB). */
  memoryLimit?: { bytes: number; raise: string };
  /** Budgets: total trials, trials per task, wall-clock seconds (any combination; first reached stops). */
  trials?: number;
  trialsPerTask?: number;
  timeLimitS?: number;
  /** Stop a task after this many trials without improvement (TVM's early_stopping). */
  earlyStopping?: number;
  /** Candidates measured per round (TVM's num_measures_per_round). */
  batchSize?: number;
  /** Candidates in each task's warm-up round (default DEFAULT_WARMUP_TRIALS of task-scheduler.ts, at most a round). */
  warmupTrials?: number;
  policy?: PolicyName;
  measure?: Partial<MeasureOptions>;
  /** Measure on this device instead of this machine (engine/remote/open.ts). */
  device?: MeasureDevice;
  seed?: number;
  /** The config budget the records are tagged with (`nx tune -c <budget>`). */
  budget?: string;
  /** Human-readable progress lines (task table, estimated latency). */
  log?: (line: string) => void;
  /** Machine-readable progress (`--json` prints one JSON line per event). */
  onEvent?: (event: TuneEvent) => void;
  /** Abort (Ctrl-C): stop after the in-flight batch, records intact. */
  signal?: AbortSignal;
  /** Search the next task's batch while this one is built (task-scheduler.ts; default true). */
  prefetch?: boolean;
  /**
   * The confirmation pass (tune.ts confirmBest): at the end of a run that measured something,
   * each task's this many fastest schedules and its default are timed twice more (default
   * CONFIRM_TOP, 3; 0: none).
   */
  confirm?: number;
  /**
   * The network pass (app/network-pass.ts): after the confirmation pass of a whole
   * network's tune on this machine's CPU, each task's confirmed schedules and its default are
   * timed again inside the compiled network (`--network-pass`; default false: on this repo's
   * dev box it picked no faster schedules than the confirmation pass, docs/tuning.md).
   */
  networkPass?: boolean;
}

export type TuneEvent =
  | { type: 'start'; tasks: { id: number; key: string; desc: string; weight: number; flops: number; measured: number }[] }
  | { type: 'skip'; task: number; reason: string }
  | { type: 'round'; task: number; trials: number; best_ms: number | null; errors: number; total_trials: number; estimated_ms: number | null }
  | { type: 'done'; total_trials: number; estimated_ms: number | null; wall_s: number; reason: string };

export interface TuneNetworkResult {
  /** `alternativeOf`: for an alternative (a Winograd form), the key of the task it implements. */
  tasks: { key: string; desc: string; weight: number; trials: number; best_ms: number | null; alternativeOf?: string }[];
  /** Trials measured in this run (not counting resumed ones). */
  trials: number;
  /** Σ weight × best latency over tasks (ms); null while any task has no valid measurement. */
  estimatedMs: number | null;
  wallS: number;
  /** Why tuning stopped: 'budget', 'time', 'early-stop', 'aborted', 'done'. */
  reason: string;
  /** What the network pass did, when it ran. */
  networkPass?: { variants: number; tasks: number; records: number; seconds: number };
  /** Of wallS, the seconds spent inside the measurer (building, running and verifying candidates), where known. */
  timing?: { measureS: number };
}
