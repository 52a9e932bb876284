// What the CPU (annotate.ts) and GPU (annotate-gpu.ts) annotation builders share: the
// walk over a sketch's stages, a State each step is applied to as it is emitted, and the
// genome of the values asked of the ParamSource (with each value's spec, for mutation).

import type { ComputeDAG } from '../ir/dag';
import { ScheduleError, State } from '../schedule/state';
import type { Step } from '../schedule/steps';
import type { Built, ParamKind, ParamSource, ParamSpec, ParamValue, TileFits } from './params';
import { MAX_INNERMOST_FACTOR } from './factors';
import type { Plan, Sketch } from './sketch';

export abstract class StepBuilder {
  protected readonly state: State;
  private readonly steps: Step[] = [];
  private readonly values = new Map<string, ParamValue>();
  private readonly specs = new Map<string, ParamSpec>();
  /** The auto_unroll_max_step values `unroll` chooses from. */
  protected abstract readonly unrollSteps: readonly number[];

  constructor(
    protected readonly dag: ComputeDAG, protected readonly sketch: Sketch,
    private readonly index: number, private readonly src: ParamSource,
  ) {
    this.state = new State(dag);
  }

  /** The steps of stage `x`'s plan `p` (any plan but `inline`). */
  protected abstract buildStage(x: string, p: Plan): void;

  build(): Built {
    const names = this.dag.computeStages.map((t) => t.name);
    // Inline first, so every later decision sees the inlined structure; then consumers before producers.
    for (const x of names) if (this.plan(x).k === 'inline') this.emit({ s: 'compute_inline', stage: x });
    for (let i = names.length - 1; i >= 0; i--) {
      const p = this.plan(names[i]);
      if (p.k !== 'inline') this.buildStage(names[i], p);
    }
    this.state.validate();
    return { steps: this.steps, state: this.state, genome: { sketch: this.index, values: this.values }, specs: this.specs };
  }

  protected plan(x: string): Plan {
    return this.sketch.plans.get(x)!;
  }

  protected emit(st: Step): void {
    this.state.apply(st);
    this.steps.push(st);
  }

  protected tileOf(key: string, extent: number, parts: number, maxInner = MAX_INNERMOST_FACTOR, vector = false, fits?: TileFits, padded = false): readonly number[] {
    const v = this.src.tile(key, extent, parts, maxInner, vector, fits, padded);
    if (fits && !fits(v)) throw new ScheduleError(`${key}: tile [${v.join(', ')}] exceeds the device's limits`);
    this.values.set(key, v);
    this.specs.set(key, { kind: 'tile', extent, parts, maxInner, ...(fits ? { fits } : {}), ...(padded ? { padded } : {}) });
    return v;
  }

  protected choiceOf(key: string, kind: Exclude<ParamKind, 'tile'>, n: number): number {
    const v = n <= 1 ? 0 : this.src.choice(key, kind, n);
    if (n > 1) {
      this.values.set(key, v);
      this.specs.set(key, { kind, n });
    }
    return v;
  }

  /**
   * The stages of a multi-level tiling plan: `t`, the stage tiled (`<x>.local` after the
   * plan's cache_write, emitted here), and `c`, the stage that follows its tiles (`x` after
   * the cache_write, else the plan's consumer).
   */
  protected tiledStages(x: string, p: { consumer?: string; cacheWrite: boolean }): { t: string; c: string | undefined } {
    if (!p.cacheWrite) return { t: x, c: p.consumer };
    this.emit({ s: 'cache_write', stage: x });
    return { t: `${x}.local`, c: x };
  }

  /** Fuse `loops` (consecutive) into one and return its name. */
  protected fuse(stage: string, loops: readonly string[]): string {
    if (loops.length >= 2) this.emit({ s: 'fuse', stage, iters: [...loops] });
    return loops.join('@');
  }

  /** auto_unroll_max_step, one of `unrollSteps`, on the stage's outermost loop. */
  protected unroll(stage: string, key: string): void {
    const first = this.state.stage(stage).leaves[0];
    const v = this.unrollSteps[this.choiceOf(key, 'unroll', this.unrollSteps.length)];
    this.emit({ s: 'pragma', stage, iter: first, pragma: 'auto_unroll_max_step', value: v });
  }
}
