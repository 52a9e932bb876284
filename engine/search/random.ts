// The `random` policy: random annotations of random sketches, valid and never measured
// before, without a cost model — the baseline that shows what the model buys.

import type { RecordGenome } from '../records/record';
import type { Step } from '../schedule/steps';
import { SearchSpace, type SpaceOptions } from './candidates';
import { Rng } from './rng';
import type { MeasuredState, PolicyContext, SearchPolicy } from './types';

export class RandomPolicy implements SearchPolicy {
  readonly name = 'random' as const;
  readonly space: SearchSpace;
  private readonly rng: Rng;

  constructor(ctx: PolicyContext, opts: SpaceOptions = {}) {
    this.space = new SearchSpace(ctx, opts);
    this.rng = new Rng(ctx.seed);
  }

  nextBatch(n: number): Step[][] {
    return this.space.randomBatch(n, this.rng).map((b) => b.steps);
  }

  notify(measured: readonly MeasuredState[]): void {
    this.space.notify(measured);
  }

  genomeOf(steps: readonly Step[]): RecordGenome | undefined {
    return this.space.genomeOf(steps);
  }
}
