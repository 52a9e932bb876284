// What every policy needs around the builder: random sampling of valid states, the
// lowering check that rejects invalid states before they are measured, and the set of
// programs already measured or proposed (by canonical step string).

import { gpuProgram } from '../codegen/gpu';
import { lowerOnce } from '../codegen/lower';
import type { ComputeDAG } from '../ir/dag';
import { ScheduleError } from '../schedule/state';
import { stepsKey, type Step } from '../schedule/steps';
import type { RecordGenome } from '../records/record';
import { buildState, GenomeSource, genomeToJson, NO_FALLBACK, RandomSource, type Built, type Genome } from './annotate';
import type { Rng } from './rng';
import { generateSketches, type GpuSpace, type Sketch } from './sketch';
import { generateGpuSketches } from './sketch-gpu';
import { kindOf } from '../target';
import type { MeasuredState, PolicyContext, PolicyName, SearchPolicy } from './types';
import { availableParallelism } from 'node:os';

export interface SpaceOptions {
  /** Cores of the target (rfactor rule, parallel granularity); default: this machine's. */
  numCores?: number;
}

export class SearchSpace {
  readonly dag: ComputeDAG;
  readonly sketches: readonly Sketch[];
  /** Canonical strings of everything measured or already proposed. */
  private readonly seen = new Set<string>();
  /** How each proposed state was built, by canonical string. */
  private readonly genomes = new Map<string, Genome>();
  private readonly lowerable = new Map<string, boolean>();
  private readonly vectorLanes: number;
  /** GPU targets: the device whose rules and limits the space follows (sketch-gpu.ts). */
  readonly gpu?: GpuSpace;

  constructor(ctx: PolicyContext, opts: SpaceOptions = {}) {
    this.dag = ctx.task.dag;
    this.vectorLanes = ctx.target.vectorLanes;
    // The target kind's record chooses the rules: a GPU kind's space (its limits and device rules), else the CPU sketch rules.
    const space = kindOf(ctx.target).gpuSpace?.(ctx.target);
    if (space) {
      this.gpu = { params: space.params, mali: space.mali };
      this.sketches = generateGpuSketches(this.dag, { gpu: space.params, mali: space.mali });
    } else {
      this.sketches = generateSketches(this.dag, { numCores: opts.numCores ?? availableParallelism() });
    }
    for (const m of ctx.measured) this.seen.add(stepsKey(m.steps));
  }

  /** A random annotation of a random sketch; null when the sampled values are invalid. */
  sample(rng: Rng): Built | null {
    return this.tryBuild(() => buildState(this.dag, this.sketches, rng.int(this.sketches.length), new RandomSource(rng, this.vectorLanes)));
  }

  /** `f`'s state, or null when its values make an invalid one (ScheduleError). */
  tryBuild(f: () => Built | null): Built | null {
    try {
      return f();
    } catch (e) {
      if (e instanceof ScheduleError) return null;
      throw e;
    }
  }

  isSeen(key: string): boolean {
    return this.seen.has(key);
  }

  markSeen(steps: readonly Step[]): void {
    this.seen.add(stepsKey(steps));
  }

  /** Mark a built state proposed: seen from now on, and its genome remembered for its record. */
  propose(b: Built, key = stepsKey(b.steps)): void {
    this.seen.add(key);
    this.genomes.set(key, b.genome);
  }

  genomeOf(steps: readonly Step[]): RecordGenome | undefined {
    const g = this.genomes.get(stepsKey(steps));
    return g && genomeToJson(g);
  }

  /**
   * A measured state rebuilt from the genome its record carries, or null when that genome
   * does not reproduce the recorded steps exactly (a record from other sketch rules, or
   * edited by hand): records are data, and only the builder makes steps.
   */
  rebuild(m: MeasuredState): Built | null {
    const g = m.genome;
    if (!g || !Number.isInteger(g.sketch) || g.sketch < 0 || g.sketch >= this.sketches.length) return null;
    const b = this.tryBuild(() => buildState(this.dag, this.sketches, g.sketch, new GenomeSource(new Map(Object.entries(g.values)), NO_FALLBACK)));
    return b && stepsKey(b.steps) === stepsKey(m.steps) ? b : null;
  }

  notify(measured: readonly MeasuredState[]): void {
    for (const m of measured) this.markSeen(m.steps);
  }

  /**
   * The state replays and lowers (local buffers within codegen's limits; on a GPU, launches
   * within the device's threads, shared memory and vthread limits: gpuProgram). Cached by
   * key. The kernel is lowerOnce's, which the cost model's features reuse.
   */
  lowers(b: Built, key = stepsKey(b.steps)): boolean {
    let ok = this.lowerable.get(key);
    if (ok === undefined) {
      try {
        const kernel = lowerOnce(b.state);
        if (this.gpu) gpuProgram(b.state, kernel, this.gpu.params);
        ok = true;
      } catch {
        // A candidate that codegen rejects is never measured, whatever the reason.
        ok = false;
      }
      this.lowerable.set(key, ok);
    }
    return ok;
  }

  /** Up to `n` new valid random states, never seen before (they are marked seen). */
  randomBatch(n: number, rng: Rng, maxAttempts = Math.max(64, n * 40)): Built[] {
    const out: Built[] = [];
    for (let attempt = 0; attempt < maxAttempts && out.length < n; attempt++) {
      const b = this.sample(rng);
      if (!b) continue;
      const key = stepsKey(b.steps);
      if (this.seen.has(key) || !this.lowers(b, key)) continue;
      this.propose(b, key);
      out.push(b);
    }
    return out;
  }
}

/** What the policies share around their space: deduplication of what was measured, and the genome of each proposal for its record. */
export abstract class SpacePolicy implements SearchPolicy {
  abstract readonly name: PolicyName;
  readonly space: SearchSpace;

  constructor(ctx: PolicyContext, opts: SpaceOptions = {}) {
    this.space = new SearchSpace(ctx, opts);
  }

  abstract nextBatch(n: number): Step[][];

  notify(measured: readonly MeasuredState[]): void {
    this.space.notify(measured);
  }

  genomeOf(steps: readonly Step[]): RecordGenome | undefined {
    return this.space.genomeOf(steps);
  }
}
