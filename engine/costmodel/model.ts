// The learned cost model: one gradient-boosted tree model shared by every task of a tuning
// session, trained on the measured programs of all tasks, as TVM's XGBModel
// (apache/tvm python/tvm/auto_scheduler/cost_model/xgb_model.py):
//  - a program is its per-store feature rows (features.ts); its score is the sum of the
//    rows' outputs (the pack-sum objective, gbdt.ts);
//  - the label is the throughput normalised per task, best_cost(task) / cost, so 1 is the
//    task's best program and an error is 0; labels are recomputed at every training, so a
//    new best rescales the whole task;
//  - samples are weighted by their label (TVM's choice: fast programs matter most), plus a
//    small floor so that slow and failing programs still teach the model something;
//  - it is retrained from scratch on every update, with the number of trees capped by a
//    time budget, and until enough programs are measured it returns random scores (TVM's
//    warm-up behaviour: its first round of every task is random sampling).

import type { Task } from '../graph/extract';
import { measuredCost } from '../records/best';
import type { TuningRecord } from '../records/record';
import { ScheduleError, State } from '../schedule/state';
import type { Step } from '../schedule/steps';
import type { MeasuredState } from '../records/outcome';
import type { CostModel } from './types';
import { UserError } from '../errors';
import { FEATURE_VERSION, NUM_FEATURES, stateFeatures } from './features';
import { GBDT, rng, type GBDTParams } from './gbdt';

export interface LearnedCostModelOptions {
  /** Valid measured programs needed before the model trains (TVM: tasks × 64); random scores before. Default 64. */
  minSamples?: number;
  /** Seed of the random scores and of the trees' subsampling. */
  seed?: number;
  /** Tree parameters (gbdt.ts DEFAULT_GBDT_PARAMS otherwise). */
  gbdt?: Partial<GBDTParams>;
  /** Wall-time cap of one training (ms): no more trees are added after it. Default 1000. */
  trainBudgetMs?: number;
  /** Sample weight = max(label, weightFloor). Default 0.05. */
  weightFloor?: number;
}

interface Sample { rows: Float32Array[]; cost: number | null }

/**
 * The model's training data as JSON: per task, each program's feature rows and its cost
 * (null: an error). Stamped with the feature version, so that a warm start from data of
 * another version is refused instead of training on vectors that describe nothing.
 */
export interface CostModelData {
  feature_version: number;
  num_features: number;
  tasks: { key: string; samples: { rows: number[][]; cost: number | null }[] }[];
}

interface TaskData { samples: Sample[]; best: number }

export interface TrainStats {
  samples: number;
  tasks: number;
  rows: number;
  trees: number;
  /** Feature extraction is not included; this is the tree building alone. */
  trainMs: number;
}

/** Steps → feature rows for `task`; null when the steps do not replay or lower (an invalid schedule). */
export function programFeatures(task: Task, steps: readonly Step[]): Float32Array[] | null {
  try {
    return stateFeatures(State.replay(task.dag, steps));
  } catch (e) {
    if (e instanceof ScheduleError) return null;
    throw e;
  }
}

export class LearnedCostModel implements CostModel {
  private readonly data = new Map<string, TaskData>();
  private model?: GBDT;
  private readonly random: () => number;
  private readonly opts: Required<Omit<LearnedCostModelOptions, 'gbdt'>> & { gbdt: Partial<GBDTParams> };
  private stats?: TrainStats;

  constructor(opts: LearnedCostModelOptions = {}) {
    this.opts = {
      minSamples: opts.minSamples ?? 64,
      seed: opts.seed ?? 43,
      gbdt: opts.gbdt ?? {},
      trainBudgetMs: opts.trainBudgetMs ?? 1000,
      weightFloor: opts.weightFloor ?? 0.05,
    };
    this.random = rng(this.opts.seed ^ 0x5eed);
  }

  /** Whether predictions come from a trained model (false: random scores). */
  get trained(): boolean {
    return this.model !== undefined;
  }

  /** Figures of the last training, if any. */
  get lastTraining(): TrainStats | undefined {
    return this.stats;
  }

  update(task: Task, measured: readonly MeasuredState[]): void {
    this.add(task, measured);
    this.train();
  }

  /** Add measurements without training (then call train()). Steps that no longer replay are dropped. */
  add(task: Task, measured: readonly MeasuredState[]): number {
    let d = this.data.get(task.key);
    if (!d) { d = { samples: [], best: Infinity }; this.data.set(task.key, d); }
    let added = 0;
    for (const m of measured) {
      const rows = programFeatures(task, m.steps);
      if (!rows || rows.length === 0) continue;
      const cost = m.cost_ms !== null && Number.isFinite(m.cost_ms) && m.cost_ms > 0 ? m.cost_ms : null;
      d.samples.push({ rows, cost });
      if (cost !== null) d.best = Math.min(d.best, cost);
      added++;
    }
    return added;
  }

  /** Retrain from scratch on everything held; a no-op until minSamples valid programs exist. */
  train(): void {
    const rows: Float32Array[] = [];
    const samples: number[][] = [];
    const labels: number[] = [];
    let valid = 0;
    for (const d of this.data.values()) {
      for (const s of d.samples) {
        const y = s.cost === null || !Number.isFinite(d.best) ? 0 : d.best / s.cost;
        if (s.cost !== null) valid++;
        samples.push(s.rows.map((r) => rows.push(r) - 1));
        labels.push(y);
      }
    }
    if (valid < this.opts.minSamples || new Set(labels).size < 2) return;
    const weights = labels.map((y) => Math.max(y, this.opts.weightFloor));
    const model = GBDT.train({ rows, samples, labels, weights }, { seed: this.opts.seed, timeBudgetMs: this.opts.trainBudgetMs, ...this.opts.gbdt });
    this.model = model;
    this.stats = { samples: samples.length, tasks: this.data.size, rows: rows.length, trees: model.numTrees, trainMs: model.info.ms };
  }

  predict(_task: Task, states: readonly State[]): number[] {
    const model = this.model;
    if (!model) return states.map(() => this.random());
    return states.map((s) => {
      let rows: Float32Array[];
      try {
        rows = stateFeatures(s);
      } catch (e) {
        if (e instanceof ScheduleError) return -Infinity;
        throw e;
      }
      return rows.length === 0 ? -Infinity : model.predictSample(rows);
    });
  }

  /** The training data held (for a later warmStartFromData), stamped with FEATURE_VERSION. */
  trainingData(): CostModelData {
    return {
      feature_version: FEATURE_VERSION, num_features: NUM_FEATURES,
      tasks: [...this.data.entries()].map(([key, d]) => ({ key, samples: d.samples.map((x) => ({ rows: x.rows.map((r) => [...r]), cost: x.cost })) })),
    };
  }

  /**
   * Warm start from saved training data (trainingData()), then train once; returns the programs
   * added. `source` names the data in the one-line UserError that refuses data of another
   * feature version or layout.
   */
  warmStartFromData(data: CostModelData, source: string): number {
    if (data.feature_version !== FEATURE_VERSION) {
      throw new UserError(`${source}: feature_version is ${JSON.stringify(data.feature_version)}, expected ${FEATURE_VERSION} (cost-model data of another engine's features; warm-start from the record log instead)`);
    }
    const short = data.tasks.flatMap((t) => t.samples.flatMap((x) => x.rows)).find((r) => r.length !== NUM_FEATURES);
    if (data.num_features !== NUM_FEATURES || short) {
      throw new UserError(`${source}: ${short ? `a feature row has ${short.length} entries` : `num_features is ${data.num_features}`}, expected ${NUM_FEATURES}`);
    }
    let added = 0;
    for (const t of data.tasks) {
      let d = this.data.get(t.key);
      if (!d) { d = { samples: [], best: Infinity }; this.data.set(t.key, d); }
      for (const x of t.samples) {
        d.samples.push({ rows: x.rows.map((r) => Float32Array.from(r)), cost: x.cost });
        if (x.cost !== null) d.best = Math.min(d.best, x.cost);
        added++;
      }
    }
    this.train();
    return added;
  }

  /**
   * Warm start from a record log: every record whose workload key is one of `tasks` is
   * added (errors as zero-throughput programs), then the model trains once. Records of
   * other workloads are counted, not used.
   */
  warmStart(records: Iterable<TuningRecord>, tasks: Iterable<Task>): { used: number; otherTasks: number; invalid: number } {
    const byKey = new Map<string, Task>();
    for (const t of tasks) byKey.set(t.key, t);
    const grouped = new Map<string, MeasuredState[]>();
    let otherTasks = 0, invalid = 0;
    for (const r of records) {
      if (!byKey.has(r.key)) { otherTasks++; continue; }
      let list = grouped.get(r.key);
      if (!list) grouped.set(r.key, (list = []));
      list.push({ steps: r.steps, cost_ms: measuredCost(r) });
    }
    let used = 0;
    for (const [key, list] of grouped) {
      const n = this.add(byKey.get(key)!, list);
      used += n;
      invalid += list.length - n;
    }
    this.train();
    return { used, otherTasks, invalid };
  }
}
