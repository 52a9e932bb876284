// Search policies by name: `evolutionary` (default, guided by the cost model), `random`
// and `grid` (baselines at equal budget, as the AutoTVM seed's tuner choice).

import type { SpaceOptions } from './candidates';
import { EvolutionaryPolicy, type EvolutionOptions } from './evolutionary';
import { GridPolicy } from './grid';
import { RandomPolicy } from './random';
import type { PolicyContext, PolicyName, SearchPolicy } from './types';

/** Every policy name, for option checks. */
export const POLICY_NAMES: readonly PolicyName[] = ['evolutionary', 'random', 'grid'];

export function createPolicy(name: PolicyName, ctx: PolicyContext, opts: EvolutionOptions & SpaceOptions = {}): SearchPolicy {
  switch (name) {
    case 'evolutionary': return new EvolutionaryPolicy(ctx, opts);
    case 'random': return new RandomPolicy(ctx, opts);
    case 'grid': return new GridPolicy(ctx, opts);
  }
}
