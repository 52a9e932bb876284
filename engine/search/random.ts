// The `random` policy: random annotations of random sketches, valid and never measured
// before, without a cost model — the baseline that shows what the model buys.

import type { Step } from '../schedule/steps';
import { SpacePolicy, type SpaceOptions } from './candidates';
import { Rng } from './rng';
import type { PolicyContext } from './types';

export class RandomPolicy extends SpacePolicy {
  readonly name = 'random' as const;
  private readonly rng: Rng;

  constructor(ctx: PolicyContext, opts: SpaceOptions = {}) {
    super(ctx, opts);
    this.rng = new Rng(ctx.seed);
  }

  nextBatch(n: number): Step[][] {
    return this.space.randomBatch(n, this.rng).map((b) => b.steps);
  }
}
